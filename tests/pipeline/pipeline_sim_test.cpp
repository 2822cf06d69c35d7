// Pipelined GEMMs on the sim with the race detector: every window and both copy
// protocols give zero races and the same bits as the single-buffered W = 1 sync
// program (pipelining moves copies, never arithmetic), within the FP64 oracle's
// bound on the complete output (C is NaN-poisoned when beta == 0).
#include <gtest/gtest.h>

#include "pipeline_util.h"

namespace tessel::test {
namespace {

// Runs `base` with W = 1 sync and then every W in 1..4 with both protocols.
void expect_all_windows_agree(const Shape& s, const Plan& base) {
  GemmInputs in(s, 17);
  GemmRun ref = run_gemm(in, with_window(base, 1, false));
  ASSERT_EQ(ref.report.races, 0) << describe(s);
  std::vector<double> oracle = in.oracle();
  ASSERT_LE(gemm_relative_error(s.m, s.n, ref.c.data(), s.n, oracle), gemm_error_bound(s.k))
      << describe(s);
  for (int w = 1; w <= 4; ++w)
    for (bool async : {false, true}) {
      Plan p = with_window(base, w, async);
      GemmRun r = run_gemm(in, p, 3 + w);  // another worker order per window
      std::string what = describe(s) + ", " + describe(r.report.plan);
      EXPECT_EQ(r.report.races, 0) << what << (r.report.race_messages.empty() ? "" : ": " + r.report.race_messages[0]);
      EXPECT_TRUE(same_bits(r.c, ref.c)) << what << ": differs from W = 1 sync";
      EXPECT_LE(gemm_relative_error(s.m, s.n, r.c.data(), s.n, oracle), gemm_error_bound(s.k)) << what;
    }
}

TEST(PipelineSim, SeedShapes) {
  expect_all_windows_agree({32, 32, 32, 1.0f, 0.0f}, sim_plan(1, false));
  expect_all_windows_agree({128, 128, 128, 1.5f, 0.5f}, sim_plan(1, false));
  expect_all_windows_agree({127, 193, 61, 1.25f, -1.0f}, sim_plan(1, false));
  expect_all_windows_agree({127, 193, 61, 0.5f, 0.0f}, sim_plan(1, false));
}

// Loops with fewer iterations than the window: the prologue and the prefetches
// reach past K and must read zeros into versions no mma reads.
TEST(PipelineSim, ShortLoops) {
  for (int64_t k : {int64_t{8 * 3 - 3}, int64_t{8 * 2}, int64_t{8 + 1}, int64_t{8}, int64_t{5},
                    int64_t{1}}) {
    expect_all_windows_agree({24, 40, k, 1.0f, 0.0f}, sim_plan(1, false));
    expect_all_windows_agree({17, 9, k, -0.75f, 1.5f}, sim_plan(1, false));
  }
}

// K = 0: the loop never runs, the prologue still copies; C = beta * C.
TEST(PipelineSim, EmptyLoop) {
  expect_all_windows_agree({20, 12, 0, 1.0f, 0.5f}, sim_plan(1, false));
  expect_all_windows_agree({20, 12, 0, 1.0f, 0.0f}, sim_plan(1, false));
}

// Ragged in every dimension, tiles that are not squares, worker counts that do
// not divide the tile (surplus workers only copy) and the seed's 256 workers.
TEST(PipelineSim, RaggedEdgesAndWorkerCounts) {
  expect_all_windows_agree({33, 47, 29, 1.0f, 0.0f}, sim_plan(1, false, 16, 8, 4));
  expect_all_windows_agree({45, 19, 37, 2.0f, -0.5f}, sim_plan(1, false, 8, 16, 8, 7));
  expect_all_windows_agree({127, 193, 61, 1.0f, 0.0f}, sim_plan(1, false, 64, 64, 32, 256));
}

}  // namespace
}  // namespace tessel::test
