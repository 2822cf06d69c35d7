// Attention with bf16 and f16 inputs on the GPU (the mma.sync atom, warps along the
// rows): every case of tests/cuda/attention_cases.h (ragged Sq and Skv, causal and
// not, GQA, head_dim 64, 80 and 128) with the default cuda plan and with plan
// variants, on fresh random inputs rounded to the dtype, O poisoned with NaN, the
// complete O compared with the FP64 evaluator of the kernel's TileIR
// (src/check/checked_run.h). Skipped without a GPU.
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "../cuda/attention_cases.h"
#include "../cuda/cuda_library_cases.h"
#include "check/checked_run.h"
#include "target/cuda/cuda_driver.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

bool no_gpu(std::string* why) { return !cuda_gpu_available(why); }

void expect_matches(const TileKernel& k, const Plan& plan, const std::map<std::string, int64_t>& sizes,
                    uint64_t seed) {
  Kernel compiled = compile(k, plan);
  const double scale = 1.0 / std::sqrt(static_cast<double>(sizes.at("D")));
  CheckedRun r = run_checked(compiled, sizes, {{"scale", scale}}, seed);
  std::printf("[attention] %-24s %s: rel_err %.3g (bound %.3g)\n", k.name.c_str(), plan.to_string().c_str(), r.worst,
              r.bound);
  EXPECT_TRUE(r.ok) << k.name << " (" << plan.to_string() << "): rel_err " << r.worst << ", bound " << r.bound;
}

class AttentionGpu : public ::testing::TestWithParam<test::AttentionCase> {};

TEST_P(AttentionGpu, DefaultPlanMatchesTheEvaluator) {
  std::string why;
  if (no_gpu(&why)) GTEST_SKIP() << "no GPU: " << why;
  const test::AttentionCase& c = GetParam();
  TileKernel k = attention_kernel(c.mask, c.dtype);
  std::map<std::string, int64_t> sizes = test::attention_sizes(c.shape);
  Plan plan = default_plan(k, TargetKind::Cuda, sizes);
  ASSERT_EQ(plan.atom, AtomKind::MmaSync) << plan.to_string();
  expect_matches(k, plan, sizes, 51);
}

INSTANTIATE_TEST_SUITE_P(Kernels, AttentionGpu, ::testing::ValuesIn(test::attention_cases()),
                         [](const auto& info) { return info.param.name; });

// Other schedules of the same kernel (bf16: f16 differs only in the mma
// instruction; three shapes): narrower key blocks with a deeper pipeline, two
// warps; 128 query rows over 4 warps (two 16-row tiles each) and over 8 warps;
// synchronous copies without pipelining.
class AttentionGpuPlans : public ::testing::TestWithParam<test::AttentionCase> {};

TEST_P(AttentionGpuPlans, PlanVariantsMatchTheEvaluator) {
  std::string why;
  if (no_gpu(&why)) GTEST_SKIP() << "no GPU: " << why;
  const test::AttentionCase& c = GetParam();
  TileKernel k = attention_kernel(c.mask, c.dtype);
  std::map<std::string, int64_t> sizes = test::attention_sizes(c.shape);
  const Plan def = default_plan(k, TargetKind::Cuda, sizes);
  std::vector<std::function<void(Plan&)>> changes = {
      [](Plan& p) { p.tiles["BN"] = 32, p.workers = 2, p.window = 3; },
      [](Plan& p) { p.tiles["BM"] = 128, p.workers = 4; },
      [](Plan& p) { p.tiles["BM"] = 128, p.workers = 8; },
      [](Plan& p) { p.window = 1, p.async_copy = false; },
  };
  uint64_t seed = 61;
  for (const auto& change : changes) {
    Plan p = def;
    change(p);
    fit_worker_grid(k, p);
    expect_matches(k, p, sizes, seed++);
  }
}

// Three shapes (64 and 128 head_dim, one query row) keep the compiles few.
std::vector<test::AttentionCase> plan_cases() {
  std::vector<test::AttentionCase> out;
  for (const test::AttentionCase& c : test::attention_cases(false)) {
    std::string s = c.shape.name;
    if (s == "gqa2_d64" || s == "mha_d128" || s == "gqa2_d128_one_query") out.push_back(c);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Kernels, AttentionGpuPlans, ::testing::ValuesIn(plan_cases()),
                         [](const auto& info) { return info.param.name; });

// Longer sequences: many key blocks (the online softmax's rescaling over 16+ steps),
// several query blocks on the diagonal (causal), GQA 4:1.
TEST(AttentionGpuLong, ManyBlocksMatchTheEvaluator) {
  std::string why;
  if (no_gpu(&why)) GTEST_SKIP() << "no GPU: " << why;
  for (DType t : {DType::BF16, DType::F16})
    for (AttentionMask m : {AttentionMask::None, AttentionMask::Causal})
      for (int64_t d : {64, 128}) {
        if (t == DType::F16 && d == 64) continue;  // the FP64 oracle is the slow part
        TileKernel k = attention_kernel(m, t);
        std::map<std::string, int64_t> sizes = {{"B", 2}, {"Hq", 8}, {"Hkv", 2}, {"Sq", 1000}, {"Skv", 1031}, {"D", d}};
        expect_matches(k, default_plan(k, TargetKind::Cuda, sizes), sizes, 71);
      }
}

// The text files run through `tessel run`'s path (run_checked) the same way.
TEST(AttentionGpuLong, TextFilesMatchTheEvaluator) {
  std::string why;
  if (no_gpu(&why)) GTEST_SKIP() << "no GPU: " << why;
  for (const char* name : {"attention_bf16", "attention_causal_bf16", "attention_f16", "attention_causal_f16"}) {
    TileKernel k = test::library_kernel(name);
    std::map<std::string, int64_t> sizes = {{"B", 2}, {"Hq", 4}, {"Hkv", 2}, {"Sq", 77}, {"Skv", 93}, {"D", 64}};
    expect_matches(k, default_plan(k, TargetKind::Cuda, sizes), sizes, 81);
  }
}

}  // namespace
}  // namespace tessel

#else
TEST(AttentionGpu, NeedsTheCudaToolkit) { GTEST_SKIP() << "built without the CUDA toolkit"; }
#endif
