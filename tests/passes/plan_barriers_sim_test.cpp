// plan_barriers judged by the sim: the planned program is race free and computes
// exactly what the unplanned one does; GEMMs also match an FP64 oracle. Each
// removal test is paired with a check that the sim does see the race when the
// fence the planner keeps is removed by hand, so a planner that dropped it fails.
#include <gtest/gtest.h>

#include <cmath>

#include "examples.h"
#include "sim_check.h"

namespace tessel::test {
namespace {

// C (M x N) against A (M x kk) * B (kk x N) in double, for the first kk of K.
void expect_gemm(const SimRun& run, int64_t m, int64_t n, int64_t k, int64_t kk,
                 int64_t lda, int64_t ldb, int64_t ldc) {
  const auto &a = run.tensors.at("A"), &b = run.tensors.at("B"), &c = run.tensors.at("C");
  int bad = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t p = 0; p < kk; ++p) ref += double(a[i * lda + p]) * double(b[p * ldb + j]);
      double got = c[i * ldc + j];
      if (!(std::fabs(got - ref) <= 1e-4 * (1 + std::fabs(ref)))) ++bad;
    }
  EXPECT_EQ(bad, 0) << "elements off the FP64 oracle (K = " << k << ")";
}

std::map<std::string, int64_t> gemm_sizes(int64_t m, int64_t n, int64_t k) {
  return {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
}

int races(const GroupProgram& p, const std::map<std::string, int64_t>& sizes) {
  return static_cast<int>(run_on_sim(p, sizes, 7).result.race_count);
}

TEST(PlanBarriersSim, AlignedGemmIsRaceFreeAndExact) {
  auto sizes = gemm_sizes(128, 64, 96);
  PlannedPair r = plan_and_run(aligned_gemm(), sizes, 11);
  EXPECT_TRUE(r.ok()) << r.why();
  expect_gemm(r.after, 128, 64, 96, 96, 96, 64, 64);
  EXPECT_EQ(count_fences_executed(r.planned, [&](const std::string& s, int64_t* v) {
              *v = sizes.at(s);
              return true;
            }),
            2 * 3 + 1);
}

TEST(PlanBarriersSim, RaggedGemmIsRaceFreeAndExact) {
  PlannedPair r = plan_and_run(ragged_gemm(), gemm_sizes(70, 45, 64), 13);
  EXPECT_TRUE(r.ok()) << r.why();
  expect_gemm(r.after, 70, 45, 64, 64, 64, 45, 45);
}

// The fence the planner keeps in the K loop (before the mma) is needed.
TEST(PlanBarriersSim, AlignedGemmWithoutTheKeptFenceRaces) {
  GroupProgram p = aligned_gemm();
  plan_barriers(p);
  auto& body = p.body[1].bodies[0];
  ASSERT_EQ(body[2].kind, GroupOpKind::Fence);
  body.erase(body.begin() + 2);
  EXPECT_GT(races(p, gemm_sizes(64, 64, 64)), 0);
}

TEST(PlanBarriersSim, WorkerCountsWithAndWithoutAWholeSubgroup) {
  struct Workers { int n, rows, cols; };
  for (Workers w : {Workers{256, 16, 16}, Workers{96, 8, 8}, Workers{100, 8, 8}, Workers{33, 4, 8}}) {
    PlannedPair r = plan_and_run(aligned_gemm(w.n, w.rows, w.cols), gemm_sizes(64, 128, 64), w.n);
    EXPECT_TRUE(r.ok()) << w.n << " workers: " << r.why();
    EXPECT_EQ(r.stats.static_after, 3) << w.n;
    expect_gemm(r.after, 64, 128, 64, 64, 64, 128, 128);
  }
}

TEST(PlanBarriersSim, DoubleBufferedLoopIsRaceFreeWithOneFencePerIteration) {
  const int64_t t = 3;
  std::map<std::string, int64_t> sizes = {{"M", 8}, {"N", 8}, {"K", 4 * (t + 1)}, {"T", t}};
  PlannedPair r = plan_and_run(double_buffered(false), sizes, 5);
  EXPECT_TRUE(r.ok()) << r.why();
  EXPECT_EQ(r.stats.dynamic_after, "L0 + 2");
  expect_gemm(r.after, 8, 8, 4 * (t + 1), 4 * t, 4 * (t + 1), 8, 8);
}

// Slot-level aliasing is what lets the loop drop its fences: with the prefetch
// into the slot the mma reads, the pass keeps the cut, and without it the sim
// sees the race.
TEST(PlanBarriersSim, DoubleBufferedLoopWithEqualSlotsNeedsItsCut) {
  std::map<std::string, int64_t> sizes = {{"M", 8}, {"N", 8}, {"K", 16}, {"T", 3}};
  PlannedPair r = plan_and_run(double_buffered(true), sizes, 5);
  EXPECT_TRUE(r.ok()) << r.why();
  GroupProgram p = r.planned;
  auto& body = p.body[4].bodies[0];
  ASSERT_EQ(p.body[4].kind, GroupOpKind::For);
  ASSERT_EQ(body[2].kind, GroupOpKind::Fence);
  body.erase(body.begin() + 2);
  EXPECT_GT(races(p, sizes), 0);
}

TEST(PlanBarriersSim, NativeBarrierProgramStaysRaceFree) {
  GroupProgram p = aligned_gemm(64, 8, 8);
  p.body[1].bodies[0][1].kind = GroupOpKind::Barrier;
  PlannedPair r = plan_and_run(p, gemm_sizes(64, 64, 64), 3);
  EXPECT_TRUE(r.ok()) << r.why();
  EXPECT_EQ(r.stats.static_after, 3);  // the barrier is no fence; the other three stay
}

}  // namespace
}  // namespace tessel::test
