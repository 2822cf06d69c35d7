#include "check/checked_run.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <span>

#include "eval/evaluate.h"
#include "ops/gemm_precision.h"
#include "tessel/error.h"

namespace tessel {

void default_strides(const std::vector<TensorParam>& tensors, std::map<std::string, int64_t>& sizes) {
  const SymbolLookup lookup = lookup_in(sizes);
  for (const TensorParam& t : tensors) {
    int64_t inner = 1;
    for (int d = t.rank() - 1; d >= 0; --d) {
      const Expr& s = t.strides[d];
      if (s->kind == ExprKind::Sym && !sizes.count(s->name)) sizes[s->name] = inner;
      inner *= std::max<int64_t>(1, expr_eval(t.shape[d], lookup));
    }
  }
}

double check_bound(const TileKernel& kernel, DType output, const std::map<std::string, int64_t>& sizes) {
  const SymbolLookup lookup = lookup_in(sizes);
  int64_t depth = 1;
  double narrow_input = 0;
  for (const TensorParam& t : kernel.tensors) {
    for (const Expr& e : t.shape) depth = std::max(depth, expr_eval(e, lookup));
    if (t.access != Access::Out && unit_roundoff(t.dtype) > unit_roundoff(DType::F32))
      narrow_input = std::max(narrow_input, unit_roundoff(t.dtype) / 4);
  }
  return error_bound(DType::F32, output, depth) + narrow_input;
}

std::map<std::string, HostTensor> random_tensors(const std::vector<TensorParam>& tensors,
                                                 const std::map<std::string, int64_t>& sizes,
                                                 uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::map<std::string, HostTensor> out;
  for (const TensorParam& t : tensors) {
    HostTensor h;
    h.layout = check_tensor(t, sizes);
    size_t n = std::max<int64_t>(1, h.layout.elements);
    h.data.resize(n);
    for (float& x : h.data)
      x = t.access == Access::Out ? std::numeric_limits<float>::quiet_NaN() : dist(rng);
    if (t.dtype == DType::U32) std::fill(h.data.begin(), h.data.end(), 0.0f);  // a ticket's counter starts at 0
    h.oracle.assign(h.data.begin(), h.data.end());
    out[t.name] = std::move(h);
  }
  return out;
}

std::map<std::string, double> random_scalars(const std::vector<ScalarParam>& scalars,
                                             std::map<std::string, double> given, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5ca1a7);
  std::uniform_real_distribution<double> dist(0.5, 1.5);
  for (const auto& [n, v] : given) {
    bool known = false;
    for (const ScalarParam& s : scalars) known |= s.name == n;
    if (!known) user_error(ErrorKind::InvalidArgument, "the kernel has no scalar parameter " + n);
  }
  for (const ScalarParam& s : scalars)
    if (!given.count(s.name)) given[s.name] = dist(rng);
  return given;
}

CheckedRun run_checked(const Kernel& kernel, std::map<std::string, int64_t> sizes,
                       const std::map<std::string, double>& scalars, uint64_t seed,
                       const LaunchOptions& options, const std::set<std::string>& poison) {
  const TileKernel& k = kernel.tile_kernel();
  default_strides(k.tensors, sizes);
  auto tensors = random_tensors(k.tensors, sizes, seed);
  for (const std::string& name : poison) {
    if (!tensors.count(name)) user_error(ErrorKind::InvalidArgument, "the kernel has no tensor " + name + " to poison");
    HostTensor& h = tensors[name];
    std::fill(h.data.begin(), h.data.end(), std::numeric_limits<float>::quiet_NaN());
    h.oracle.assign(h.data.begin(), h.data.end());
  }
  KernelArgs args;
  args.sizes = sizes;
  args.scalars = random_scalars(k.scalars, scalars, seed);
  // 16-bit tensors (the cuda target's) travel as 16-bit storage: the random values
  // are rounded to it and the oracle reads the rounded ones; written ones come back
  // widened to float.
  auto sixteen = [](DType t) { return t == DType::BF16 || t == DType::F16; };
  std::map<std::string, std::vector<uint16_t>> narrow;
  for (const TensorParam& t : k.tensors) {
    if (!sixteen(t.dtype)) continue;
    HostTensor& h = tensors[t.name];
    std::vector<uint16_t>& n = narrow[t.name];
    n.resize(h.data.size());
    for (size_t i = 0; i < n.size(); ++i) {
      n[i] = t.dtype == DType::BF16 ? float_to_bf16(h.data[i]) : float_to_f16(h.data[i]);
      h.data[i] = t.dtype == DType::BF16 ? bf16_to_float(n[i]) : f16_to_float(n[i]);
      h.oracle[i] = h.data[i];
    }
  }
  for (const TensorParam& t : k.tensors) {
    HostTensor& h = tensors[t.name];
    TensorArg a;
    a.data = sixteen(t.dtype) ? static_cast<void*>(narrow[t.name].data()) : static_cast<void*>(h.data.data());
    a.dtype = t.dtype;
    a.shape = h.layout.shape;
    a.strides = h.layout.strides;
    args.tensors[t.name] = a;
  }
  // Sizes the tensors bind are given twice; the launch checks that they agree.
  CheckedRun out;
  out.launch = kernel.launch(args, options);
  for (auto& [name, n] : narrow) {
    const TensorParam* t = k.find_tensor(name);
    if (t->access == Access::In) continue;
    HostTensor& h = tensors[name];
    for (size_t i = 0; i < n.size(); ++i) h.data[i] = t->dtype == DType::BF16 ? bf16_to_float(n[i]) : f16_to_float(n[i]);
  }

  EvalArgs ea;
  ea.sizes = sizes;
  ea.tiles = kernel.plan().tiles;
  ea.scalars = args.scalars;
  for (auto& [name, h] : tensors) ea.tensors[name] = std::span<double>(h.oracle);
  evaluate(k, ea);
  out.ok = out.launch.races == 0;
  for (const TensorParam& t : k.tensors) {
    if (t.access == Access::In) continue;
    const HostTensor& h = tensors[t.name];
    double e = relative_error(std::span<const float>(h.data), std::span<const double>(h.oracle));
    if (t.dtype == DType::U32)  // counters (4-byte words in the float array) match exactly, or not at all
      for (size_t i = 0; i < h.data.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &h.data[i], 4);
        if (u != h.oracle[i]) e = std::numeric_limits<double>::infinity();
      }
    double b = check_bound(k, t.dtype, sizes);
    out.rel_err[t.name] = e;
    out.worst = std::max(out.worst, e);
    out.bound = std::max(out.bound, b);
    out.ok &= e <= b;
  }
  return out;
}

}  // namespace tessel
