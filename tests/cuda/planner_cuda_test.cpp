// The planner on the cuda target, compile-only (NVRTC, no GPU): candidates the
// emitter refuses are not legal, and the model's pick is one that ptxas compiles
// without spilling (plan/dispatch.h).
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA

#include <cstdio>
#include <map>
#include <string>

#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "plan/candidates.h"
#include "plan/cost_model.h"
#include "plan/dispatch.h"
#include "tessel/error.h"

namespace tessel {
namespace {

TEST(PlanCuda, CandidatesAreWhatTheEmitterTakes) {
  const std::map<std::string, int64_t> sizes = {{"M", 1000}, {"N", 1000}, {"K", 1000}};
  CandidateSet set = enumerate_candidates(gemm_kernel(DType::BF16), TargetKind::Cuda, sizes);
  ASSERT_FALSE(set.legal.empty());
  for (const auto& c : set.legal) EXPECT_NE(c->plan.atom, AtomKind::Fma) << c->plan.to_string();  // fma takes f32
  int refused = 0;
  for (const auto& [why, n] : set.rejected) {
    std::printf("[plan] rejected %d: %s\n", n, why.c_str());
    if (why.find("the fma atom") != std::string::npos) refused += n;
  }
  EXPECT_GT(refused, 0) << "the emitter's refusals are counted as rejections";
}

TEST(PlanCuda, SpillingCandidatesAreNotChosen) {
  TileKernel k = gemm_kernel(DType::BF16);
  // 64x256 per warpgroup with synchronous copies spills (ptxas reported 172 bytes).
  Plan spilling = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16, "sm_90");
  set_gemm_tile(spilling, 128, 256, 64);
  spilling.workers = 2, spilling.worker_rows = 2, spilling.worker_cols = 1;
  spilling.window = 2, spilling.async_copy = false, spilling.tma = false, spilling.producers = 0;
  std::string why;
  auto bad = realize_candidate(k, spilling, &why);
  ASSERT_NE(bad, nullptr) << why;
  EXPECT_TRUE(cuda_candidate_spills(*bad));
  auto good = realize_candidate(k, default_gemm_plan(TargetKind::Cuda, 1024, 1024, 1024, GemmPrecision::BF16, "sm_90"),
                                &why);
  ASSERT_NE(good, nullptr) << why;
  EXPECT_FALSE(cuda_candidate_spills(*good));

  PlanChoice choice = choose_plan(k, TargetKind::Cuda, {{"M", 1000}, {"N", 1000}, {"K", 1000}},
                                  fallback_calibration(TargetKind::Cuda, 1), 1, nullptr);
  std::printf("[plan] cuda bf16 1000^3: %s (%s)\n", choice.plan.to_string().c_str(), choice.source.c_str());
  auto chosen = realize_candidate(k, choice.plan, &why);
  ASSERT_NE(chosen, nullptr) << why;
  EXPECT_FALSE(cuda_candidate_spills(*chosen));
}

}  // namespace
}  // namespace tessel

#else
TEST(PlanCuda, Skipped) { GTEST_SKIP() << "tessel was built without the CUDA toolkit"; }
#endif
