// Running a hand-written GroupIR program on the cpu target and on the sim against a
// double-precision reference: inputs random (never zero), every output poisoned
// with NaN first, the complete output compared (and storage no logical element
// maps to must come back still poisoned), the sim's race count required to be 0.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "ops/gemm_precision.h"
#include "runtime/tensor_check.h"
#include "target/cpu/cpu_jit.h"
#include "target/sim/sim.h"

namespace tessel::testing {

// One tensor argument in its storage type (f32, f64, or the bits of bf16 / f16).
struct HostTensor {
  TensorParam param;
  TensorLayout layout;
  std::vector<unsigned char> bytes;

  int64_t offset(const std::vector<int64_t>& index) const {
    int64_t off = 0;
    for (size_t d = 0; d < index.size(); ++d) off += index[d] * layout.strides[d];
    return off;
  }
  double at(int64_t off) const {
    switch (param.dtype) {
      case DType::F32: { float x; std::memcpy(&x, &bytes[off * 4], 4); return x; }
      case DType::F64: { double x; std::memcpy(&x, &bytes[off * 8], 8); return x; }
      case DType::BF16: { uint16_t h; std::memcpy(&h, &bytes[off * 2], 2); return bf16_to_float(h); }
      case DType::F16: { uint16_t h; std::memcpy(&h, &bytes[off * 2], 2); return f16_to_float(h); }
    }
    return NAN;
  }
  void set(int64_t off, double v) {
    switch (param.dtype) {
      case DType::F32: { float x = static_cast<float>(v); std::memcpy(&bytes[off * 4], &x, 4); return; }
      case DType::F64: std::memcpy(&bytes[off * 8], &v, 8); return;
      case DType::BF16: { uint16_t h = float_to_bf16(static_cast<float>(v)); std::memcpy(&bytes[off * 2], &h, 2); return; }
      case DType::F16: { uint16_t h = float_to_f16(static_cast<float>(v)); std::memcpy(&bytes[off * 2], &h, 2); return; }
    }
  }
  double operator()(const std::vector<int64_t>& index) const { return at(offset(index)); }
  // Every index tuple of the shape, the last dimension fastest.
  void for_each(const std::function<void(const std::vector<int64_t>&)>& f) const {
    std::vector<int64_t> i(layout.shape.size(), 0);
    for (int64_t e : layout.shape)
      if (e == 0) return;
    while (true) {
      f(i);
      int d = static_cast<int>(i.size()) - 1;
      while (d >= 0 && ++i[d] == layout.shape[d]) i[d--] = 0;
      if (d < 0) return;
    }
  }
};

using Tensors = std::map<std::string, HostTensor>;
// Fills `out[name]` for every output tensor: the expected value at each index tuple,
// in for_each's order, computed in double from the inputs.
using Reference = std::function<void(const Tensors& in, std::map<std::string, std::vector<double>>& out)>;

struct GroupCase {
  std::string text;  // GroupIR
  std::map<std::string, int64_t> sizes;
  std::map<std::string, double> scalars;
  Reference reference;
  double tolerance = 2e-6;  // |got - want| <= tolerance * max(1, |want|)
  // When set: |got - want| <= tolerance * |want| + absolute instead (for values
  // spanning many magnitudes).
  bool relative = false;
  double absolute = 0;
  double lo = -1, hi = 1;   // inputs uniform in [lo, hi], never 0
  std::map<std::string, std::pair<double, double>> ranges;  // per tensor, overrides lo/hi
  std::function<void(Tensors&)> edit_inputs;  // after the random fill: special values
  int threads = 2;
  bool sim = true;  // also on the sim (races and values)
};

inline Tensors make_tensors(const GroupProgram& p, const GroupCase& c, uint64_t seed) {
  Tensors t;
  std::mt19937_64 rng(seed);
  for (const TensorParam& param : p.tensors) {
    HostTensor h;
    h.param = param;
    h.layout = check_tensor(param, c.sizes);
    // At least one element's room, so that an empty tensor still has a pointer.
    h.bytes.assign(std::max<int64_t>(1, h.layout.elements) * dtype_bytes(param.dtype), 0);
    for (int64_t e = 0; e < std::max<int64_t>(1, h.layout.elements); ++e) h.set(e, NAN);
    if (param.access != Access::Out) {
      auto range = c.ranges.count(param.name) ? c.ranges.at(param.name) : std::make_pair(c.lo, c.hi);
      std::uniform_real_distribution<double> u(range.first, range.second);
      h.for_each([&](const std::vector<int64_t>& i) {
        double v = 0;
        while (v == 0) v = u(rng);
        h.set(h.offset(i), v);
      });
    }
    t.emplace(param.name, std::move(h));
  }
  return t;
}

inline LaunchArgs launch_args(Tensors& t, const GroupCase& c) {
  LaunchArgs a;
  a.sizes = c.sizes;
  a.scalars = c.scalars;
  for (auto& [name, h] : t) a.tensors[name] = reinterpret_cast<float*>(h.bytes.data());
  return a;
}

// Compares every output tensor with the reference; `where` names the target.
inline void expect_outputs(const Tensors& before, const Tensors& after, const GroupCase& c,
                           const std::string& where) {
  std::map<std::string, std::vector<double>> want;
  c.reference(before, want);
  for (const auto& [name, h] : after) {
    if (h.param.access == Access::In) continue;
    ASSERT_TRUE(want.count(name)) << "the reference gives no values for output " << name;
    const std::vector<double>& w = want.at(name);
    std::vector<bool> covered(std::max<int64_t>(1, h.layout.elements), false);
    size_t n = 0;
    int bad = 0;
    h.for_each([&](const std::vector<int64_t>& i) {
      ASSERT_LT(n, w.size()) << name << ": the reference has too few values";
      int64_t off = h.offset(i);
      covered[off] = true;
      double got = h.at(off), exp = w[n++];
      const double allowed = c.relative ? c.tolerance * std::fabs(exp) + c.absolute
                                        : c.tolerance * std::max(1.0, std::fabs(exp));
      bool ok = std::isfinite(got) ? std::fabs(got - exp) <= allowed
                                   : (std::isnan(exp) ? std::isnan(got) : got == exp);
      if (!ok && bad++ < 8) {
        std::string idx;
        for (int64_t x : i) idx += (idx.empty() ? "" : ", ") + std::to_string(x);
        ADD_FAILURE() << where << ": " << name << "[" << idx << "] = " << got << ", want " << exp;
      }
    });
    EXPECT_EQ(n, w.size()) << name << ": the reference has more values than the tensor";
    EXPECT_EQ(bad, 0) << where << ": " << bad << " wrong elements of " << name;
    // Storage between the logical elements (row gaps) must stay poisoned.
    for (int64_t e = 0; e < h.layout.elements; ++e)
      if (!covered[e] && !std::isnan(h.at(e))) {
        ADD_FAILURE() << where << ": " << name << " element " << e << " is outside the tensor but was written";
        break;
      }
  }
}

// Parses, verifies, and runs `c` on the cpu target and (with c.sim) on the sim.
inline GroupProgram run_group_case(const GroupCase& c, uint64_t seed = 7) {
  GroupProgram p = parse_group_program(c.text);
  verify_group_program(p);
  Tensors inputs = make_tensors(p, c, seed);
  if (c.edit_inputs) c.edit_inputs(inputs);
  {
    Tensors t = inputs;
    auto kernel = compile_cpu(p);
    kernel->run(launch_args(t, c), c.threads);
    expect_outputs(inputs, t, c, "cpu");
  }
  if (c.sim) {
    Tensors t = inputs;
    SimResult r = run_sim(p, launch_args(t, c));
    EXPECT_EQ(r.race_count, 0) << (r.races.empty() ? "" : r.races[0].message);
    expect_outputs(inputs, t, c, "sim");
  }
  return p;
}

// Only the sim's race check (for programs whose data the sim does not model).
inline void expect_no_races(const std::string& text, const GroupCase& c) {
  GroupProgram p = parse_group_program(text);
  verify_group_program(p);
  Tensors t = make_tensors(p, c, 7);
  SimResult r = run_sim(p, launch_args(t, c));
  EXPECT_EQ(r.race_count, 0) << (r.races.empty() ? "" : r.races[0].message);
}

}  // namespace tessel::testing
