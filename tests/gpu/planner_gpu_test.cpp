// The planner's measuring on the GPU (src/plan/measure.h): candidates of a bf16 GEMM
// (tests/plan/gemm_bf16.tir) and of softmax, among them tma copies with and without a
// producer and a persistent grid, timed with device-resident tensors, each checked
// once against the FP64 evaluator (outputs NaN-poisoned first). Skipped without a GPU.
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA
#include <cmath>
#include <fstream>
#include <sstream>

#include "ir/tile_text.h"
#include "ops/library.h"
#include "plan/candidates.h"
#include "plan/cost_model.h"
#include "plan/dispatch.h"
#include "plan/measure.h"
#include "target/cuda/cuda_driver.h"

namespace tessel {
namespace {

TileKernel gemm_bf16() {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/tests/plan/gemm_bf16.tir");
  std::stringstream s;
  s << in.rdbuf();
  return parse_tile_kernel(s.str());
}

void expect_measured(const TileKernel& k, const std::map<std::string, int64_t>& sizes) {
  CandidateBounds b;
  b.persistent_groups = 2;  // a persistent grid at a small shape
  Ranking r = rank_candidates(k, TargetKind::Cuda, sizes, fallback_calibration(TargetKind::Cuda, 1), 1, b);
  ASSERT_GE(r.ranked.size(), 3u);
  // The model's best 3, and the best-ranked of each Hopper axis.
  std::vector<Plan> plans;
  for (size_t i = 0; i < 3; ++i) plans.push_back(r.ranked[i].candidate->plan);
  bool tma[2] = {false, false}, persistent = false;
  for (const RankedCandidate& c : r.ranked) {
    const Plan& p = c.candidate->plan;
    if (p.tma && !tma[p.producers > 0]) {
      tma[p.producers > 0] = true;
      plans.push_back(p);
    } else if (!p.tma && p.persistent > 0 && !persistent) {
      persistent = true;
      plans.push_back(p);
    }
  }
  std::vector<Kernel> kernels;
  for (const Plan& p : plans) kernels.push_back(compile(k, p));
  MeasureOptions o;
  o.rounds = 3, o.trials = 2, o.min_run_us = 200;
  std::vector<Measured> m = measure_paired(kernels, sizes, o);
  ASSERT_EQ(m.size(), kernels.size());
  for (size_t i = 0; i < m.size(); ++i) {
    SCOPED_TRACE(k.name + ": " + plans[i].to_string());
    EXPECT_TRUE(m[i].checked);
    EXPECT_TRUE(m[i].ok) << "rel_err " << m[i].rel_err << " bound " << m[i].bound << " " << m[i].error;
    EXPECT_TRUE(std::isfinite(m[i].us) && m[i].us > 0) << m[i].us;
    std::printf("[plan] %s %s: %.2f us\n", k.name.c_str(), plans[i].to_string().c_str(), m[i].us);
  }
}

TEST(PlanGpu, MeasuresDeviceResidentCandidatesCheckedAgainstTheOracle) {
  std::string why;
  if (!cuda_gpu_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  expect_measured(gemm_bf16(), {{"M", 130}, {"N", 72}, {"K", 136}});  // N, K: tensor-map rows
  expect_measured(softmax_kernel(), {{"M", 70}, {"N", 300}});
}

}  // namespace
}  // namespace tessel

#else
TEST(PlanGpu, NeedsTheCudaToolkit) { GTEST_SKIP() << "built without the CUDA toolkit"; }
#endif
