// Attention with 16-bit inputs on the cuda target's plans (the mma.sync atom, warps
// along the rows): the shapes the tests use, and one checked launch. The inputs are
// random values rounded to the inputs' dtype (so the oracle sees what the kernel
// sees), O is poisoned with NaN first, and the complete O is compared with the FP64
// evaluator of the kernel's TileIR, whose cast rounds the probabilities as the
// kernel does; the bound is error_bound(f32, dtype, depth), the rounding of p being
// at the dtype's precision. Shared by tests/kernels (the program on the sim),
// tests/cuda (NVRTC) and tests/gpu (the device).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "check/checked_run.h"
#include "eval/evaluate.h"
#include "ops/library.h"
#include "plan/default_plan.h"

namespace tessel::test {

struct AttentionShape {
  const char* name;
  int64_t b, hq, hkv, sq, skv, d;
};

inline std::map<std::string, int64_t> attention_sizes(const AttentionShape& s) {
  return {{"B", s.b}, {"Hq", s.hq}, {"Hkv", s.hkv}, {"Sq", s.sq}, {"Skv", s.skv}, {"D", s.d}};
}

// Ragged Sq and Skv (no multiple of a tile), apart; GQA groups of 2 and 3 and MHA;
// head_dim 64 and 128; one query row; fewer keys than one block; a head_dim that is
// not a power of two.
inline std::vector<AttentionShape> attention_shapes() {
  return {
      {"gqa2_d64", 2, 4, 2, 77, 93, 64},   {"gqa3_d64_short_kv", 1, 3, 1, 45, 21, 64},
      {"mha_d128", 1, 2, 2, 70, 135, 128}, {"gqa2_d128_one_query", 2, 2, 1, 1, 23, 128},
      {"mha_d64_tiny_kv", 1, 2, 2, 19, 5, 64}, {"mha_d80", 1, 2, 2, 33, 40, 80},
  };
}

struct AttentionCase {
  std::string name;
  AttentionMask mask;
  DType dtype;
  AttentionShape shape;
};

inline void PrintTo(const AttentionCase& c, std::ostream* os) { *os << c.name; }

inline std::vector<AttentionCase> attention_cases(bool with_f16 = true) {
  std::vector<AttentionCase> out;
  for (DType t : {DType::BF16, DType::F16})
    if (t == DType::BF16 || with_f16)
    for (AttentionMask m : {AttentionMask::None, AttentionMask::Causal})
      for (const AttentionShape& s : attention_shapes())
        out.push_back({std::string(dtype_name(t)) + (m == AttentionMask::Causal ? "_causal_" : "_full_") + s.name, m,
                       t, s});
  return out;
}

struct AttentionCheck {
  double rel_err = 0, bound = 0;
  int64_t nan_or_inf = 0;  // elements of O that are not finite (poison left, or a bad value)
  bool ok() const { return nan_or_inf == 0 && rel_err <= bound; }
};

// Fresh inputs for `kernel` at `sizes` (strides defaulted), rounded to each input's
// dtype; O poisoned with NaN. `run` launches the kernel on them (host arrays); then
// the complete O is compared with the evaluator at the plan's tiles.
inline AttentionCheck check_attention(
    const TileKernel& kernel, const std::map<std::string, int64_t>& tiles, std::map<std::string, int64_t> sizes,
    uint64_t seed,
    const std::function<void(const std::map<std::string, int64_t>&, const std::map<std::string, double>&,
                             std::map<std::string, HostTensor>&)>& run) {
  default_strides(kernel.tensors, sizes);
  std::map<std::string, HostTensor> tensors = random_tensors(kernel.tensors, sizes, seed);
  for (const TensorParam& t : kernel.tensors) {
    if (t.access == Access::Out) continue;
    HostTensor& h = tensors[t.name];
    for (size_t i = 0; i < h.data.size(); ++i) {
      h.data[i] = static_cast<float>(round_to_dtype(h.data[i], t.dtype));
      h.oracle[i] = h.data[i];
    }
  }
  const double d = static_cast<double>(sizes.at("D"));
  std::map<std::string, double> scalars = {{"scale", 1.0 / std::sqrt(d)}};
  run(sizes, scalars, tensors);
  EvalArgs ea;
  ea.sizes = sizes;
  ea.tiles = tiles;
  ea.scalars = scalars;
  for (auto& [name, h] : tensors) ea.tensors[name] = std::span<double>(h.oracle);
  evaluate(kernel, ea);
  const HostTensor& o = tensors.at("O");
  AttentionCheck c;
  for (float x : o.data) c.nan_or_inf += !std::isfinite(x);
  c.rel_err = relative_error(std::span<const float>(o.data), std::span<const double>(o.oracle));
  c.bound = check_bound(kernel, DType::F32, sizes);
  return c;
}

}  // namespace tessel::test
