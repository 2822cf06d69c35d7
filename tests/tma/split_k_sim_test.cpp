// Split-K (src/ops/gemm_kernel.h): K cut into S slices whose fp32 partial products a
// second kernel sums in a fixed order. Both kernels' GroupIR, under the Hopper plans
// the cuda front door gives them (wgmma, tma stages, a producer) and under the sim's
// fma plans, run on the sim race checker with 0 races, and the pair's result is
// exact on small integers (C NaN-poisoned when beta = 0, the partials NaN-poisoned
// too), on ragged shapes where the last slice overhangs K. The front door's choice
// of slices is checked where it must and must not split.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../sim/race_assertions.h"
#include "split_plans.h"
#include "compiler/compile.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "plan/default_plan.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel {
namespace {

using test::races_text;
using test::split_sim_plan;
using test::split_wgmma_plan;
using test::worst_gemm_error;

struct Shape {
  int64_t m, n, k, slices, slice_k;
};

// Runs the split and the sum on the sim; the largest difference from the exact
// C = A B + beta C0, and the races of both launches.
void expect_exact(const GroupProgram& split, const Shape& s, double beta, const std::string& what) {
  std::mt19937_64 rng(uint64_t(s.m * 31 + s.n * 7 + s.k));
  std::uniform_int_distribution<int> small(-3, 3);
  const int64_t ldp = gemm_split_partials_ld(s.n);  // as the front door lays the partials out
  std::vector<float> a(s.m * s.k), b(s.k * s.n), p(s.slices * s.m * ldp, NAN), c(s.m * s.n);
  for (float& x : a) x = float(small(rng));
  for (float& x : b) x = float(small(rng));
  for (float& x : c) x = beta == 0 ? NAN : float(small(rng));
  const std::vector<float> c0 = c;
  SimOptions o;
  o.max_races_recorded = 1 << 12;
  LaunchArgs args;
  args.sizes = {{"M", s.m}, {"N", s.n}, {"K", s.k}, {"lda", s.k}, {"ldb", s.n},
                {"S", s.slices}, {"KS", s.slice_k}, {"sps", s.m * ldp}, {"ldp", ldp}};
  args.tensors = {{"A", a.data()}, {"B", b.data()}, {"P", p.data()}};
  SimResult r = run_sim(split, args, o);
  EXPECT_EQ(r.race_count, 0) << what << races_text(r).substr(0, 2000);

  const TileKernel sum_kernel = split_k_sum_kernel();
  std::map<std::string, int64_t> sizes = {{"M", s.m}, {"N", s.n}, {"ldc", s.n}, {"S", s.slices},
                                          {"sps", s.m * ldp}, {"ldp", ldp}};
  CompiledGroup sum = compile_to_group(sum_kernel, default_plan(sum_kernel, TargetKind::Sim, sizes), CompileOptions{});
  LaunchArgs sum_args;
  sum_args.sizes = sizes;
  sum_args.scalars = {{"alpha", 1.0}, {"beta", beta}};
  sum_args.tensors = {{"P", p.data()}, {"C", c.data()}};
  SimResult rs = run_sim(sum.program, sum_args, o);
  EXPECT_EQ(rs.race_count, 0) << what << races_text(rs).substr(0, 2000);

  EXPECT_EQ(worst_gemm_error(s.m, s.n, s.k, beta, a, b, c0, c), 0.0) << what << " beta " << beta;
}

TEST(SplitKSim, HopperPlansSlicesAndSumExactRaceFree) {
  // Slices of whole k tiles (64); the last overhangs K in the ragged shapes.
  const Shape shapes[] = {{70, 130, 300, 3, 128}, {64, 64, 320, 5, 64}, {130, 72, 200, 2, 128}};
  for (int producers : {0, 1}) {
    Plan plan = split_wgmma_plan(producers);
    CompiledGroup g = compile_to_group(gemm_split_k_kernel(DType::BF16), plan, CompileOptions{});
    EXPECT_EQ(g.tma.loops_converted, 1) << g.tma.skipped_reason;
    for (const Shape& s : shapes)
      for (double beta : {0.0, 2.0})
        expect_exact(g.program, s, beta, plan.to_string() + " " + std::to_string(s.m) + "x" +
                                             std::to_string(s.n) + "x" + std::to_string(s.k));
  }
  // The default plans' three-consumer tiles split too (1536x1536x6144: 192x192 in two).
  const Plan plan = split_wgmma_plan(1, 192, 192);
  CompiledGroup g = compile_to_group(gemm_split_k_kernel(DType::BF16), plan, CompileOptions{});
  EXPECT_EQ(g.tma.loops_converted, 1) << g.tma.skipped_reason;
  for (const Shape& s : {Shape{200, 130, 300, 3, 128}, Shape{192, 192, 320, 2, 192}})
    expect_exact(g.program, s, 0.0, plan.to_string() + " " + std::to_string(s.m));
}

TEST(SplitKSim, SimPlansSlicesAndSumExactRaceFree) {
  const Shape shapes[] = {{33, 47, 29, 3, 16}, {5, 3, 100, 4, 32}, {16, 16, 8, 1, 8}};
  CompiledGroup g = compile_to_group(gemm_split_k_kernel(DType::F32), split_sim_plan(), CompileOptions{});
  for (const Shape& s : shapes)
    for (double beta : {0.0, -1.0}) expect_exact(g.program, s, beta, "sim " + std::to_string(s.k));
}

// fp32 on cuda splits under its fma plans (cp.async stages, 4x4 register blocks):
// the default plan of a few-tile, long-K shape, run on small shapes.
TEST(SplitKSim, CudaFmaPlanSlicesAndSumExactRaceFree) {
  const Plan plan = default_gemm_plan(TargetKind::Cuda, 40, 700, 3000, GemmPrecision::F32, "sm_90");
  GemmOptions o;
  o.target = TargetKind::Cuda;
  ASSERT_GT(gemm_split_k_slices(plan, 40, 700, 3000, o), 1) << plan.to_string();
  ASSERT_EQ(plan.atom, AtomKind::Fma) << plan.to_string();
  const int64_t bk = plan.tile("BK");
  const Shape shapes[] = {{40, 70, 5 * bk + 3, 3, 2 * bk}, {33, 32, 4 * bk, 2, 2 * bk}};
  CompiledGroup g = compile_to_group(gemm_split_k_kernel(DType::F32), plan, CompileOptions{});
  for (const Shape& s : shapes)
    for (double beta : {0.0, 0.5}) expect_exact(g.program, s, beta, plan.to_string() + " k " + std::to_string(s.k));
}

// 16-bit shapes under 2^27 multiply-adds run mma.sync plans of small blocks, which
// split since the twenty-sixth session: the default plan of a few-tile, long-K shape
// (4 tiles of 32x32), run on small shapes.
TEST(SplitKSim, CudaMmaSyncPlanSlicesAndSumExactRaceFree) {
  const Plan plan = default_gemm_plan(TargetKind::Cuda, 64, 64, 16384, GemmPrecision::BF16, "sm_90");
  GemmOptions o;
  o.target = TargetKind::Cuda;
  o.precision = GemmPrecision::BF16;
  ASSERT_GT(gemm_split_k_slices(plan, 64, 64, 16384, o), 1) << plan.to_string();
  ASSERT_EQ(plan.atom, AtomKind::MmaSync) << plan.to_string();
  const int64_t bk = plan.tile("BK");
  const Shape shapes[] = {{40, 50, 5 * bk + 3, 3, 2 * bk}, {32, 32, 4 * bk, 2, 2 * bk}};
  CompiledGroup g = compile_to_group(gemm_split_k_kernel(DType::BF16), plan, CompileOptions{});
  for (const Shape& s : shapes)
    for (double beta : {0.0, 0.5}) expect_exact(g.program, s, beta, plan.to_string() + " k " + std::to_string(s.k));
}

// The fused kernel (gemm_split_k_fused_kernel) on the sim: the groups run in an
// order each seed shuffles, so each seed has another slice draw a tile's last
// ticket. C must come out the same to the bit whatever the order (the sum runs in
// slice order), exact on small integers, with 0 races and every counter back at 0.
void expect_fused_exact(const GroupProgram& fused, const Shape& s, double beta, const std::string& what) {
  std::mt19937_64 rng(uint64_t(s.m * 31 + s.n * 7 + s.k));
  std::uniform_int_distribution<int> small(-3, 3);
  std::uniform_real_distribution<float> real(-1, 1);
  const int64_t ldp = gemm_split_partials_ld(s.n), tiles = 64;  // more counters than tiles: a spare stays 0
  std::vector<float> a(s.m * s.k), b(s.k * s.n), c0(s.m * s.n);
  for (bool integers : {true, false}) {
    for (float& x : a) x = integers ? float(small(rng)) : real(rng);
    for (float& x : b) x = integers ? float(small(rng)) : real(rng);
    for (float& x : c0) x = beta == 0 ? NAN : float(small(rng));
    std::vector<float> first;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      std::vector<float> c = c0, p(s.slices * s.m * ldp, NAN), t(tiles, 0.0f);  // t: u32 zeros
      SimOptions o;
      o.seed = seed;
      o.max_races_recorded = 1 << 12;
      LaunchArgs args;
      args.sizes = {{"M", s.m}, {"N", s.n}, {"K", s.k}, {"lda", s.k}, {"ldb", s.n}, {"ldc", s.n},
                    {"S", s.slices}, {"KS", s.slice_k}, {"sps", s.m * ldp}, {"ldp", ldp}, {"Q", tiles}};
      args.scalars = {{"alpha", 1.0}, {"beta", beta}};
      args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}, {"P", p.data()}, {"T", t.data()}};
      SimResult r = run_sim(fused, args, o);
      EXPECT_EQ(r.race_count, 0) << what << races_text(r).substr(0, 2000);
      for (float x : t) EXPECT_EQ(x, 0.0f) << what << ": a counter was left at a ticket";
      if (first.empty()) first = c;
      EXPECT_EQ(0, std::memcmp(first.data(), c.data(), c.size() * sizeof(float)))
          << what << ": seed " << seed << " summed C differently";
      if (!integers) continue;
      EXPECT_EQ(worst_gemm_error(s.m, s.n, s.k, beta, a, b, c0, c), 0.0)
          << what << " beta " << beta << " seed " << seed;
    }
  }
}

TEST(SplitKSim, FusedSumsInTheLastSliceExactRaceFreeInAnyOrder) {
  for (int producers : {0, 1}) {
    Plan plan = split_wgmma_plan(producers);
    CompiledGroup g = compile_to_group(gemm_split_k_fused_kernel(DType::BF16), plan, CompileOptions{});
    EXPECT_EQ(g.tma.loops_converted, 1) << g.tma.skipped_reason;
    for (const Shape& s : {Shape{70, 130, 300, 3, 128}, Shape{130, 72, 200, 2, 128}})
      for (double beta : {0.0, 2.0}) expect_fused_exact(g.program, s, beta, plan.to_string());
  }
  CompiledGroup g = compile_to_group(gemm_split_k_fused_kernel(DType::F32), split_sim_plan(), CompileOptions{});
  for (const Shape& s : {Shape{33, 47, 29, 3, 16}, Shape{5, 3, 100, 4, 32}, Shape{16, 16, 8, 1, 8}})
    for (double beta : {0.0, -1.0}) expect_fused_exact(g.program, s, beta, "sim " + std::to_string(s.k));
}

// The partials' rows start on 128-byte lines (32 floats), with no more padding than
// that; the tests above run the kernels at this leading dimension, the padding NaN.
TEST(SplitKSim, PartialRowsStartOnLines) {
  for (int64_t n : {1, 4, 31, 32, 33, 1000, 1001, 4096}) {
    const int64_t ldp = gemm_split_partials_ld(n);
    EXPECT_EQ(ldp % 32, 0) << n;
    EXPECT_GE(ldp, n);
    EXPECT_LT(ldp, n + 32);
  }
}

// Default plans on cuda split few-tile, long-K shapes and leave full ones alone;
// an explicit count is honoured in whole k tiles; other targets refuse one.
TEST(SplitKSim, FrontDoorSplitsFewTileLongKShapesOnly) {
  auto slices = [](int64_t m, int64_t n, int64_t k) {
    Plan p = default_gemm_plan(TargetKind::Cuda, m, n, k, GemmPrecision::BF16, "sm_90");
    return gemm_split_k_slices(p, m, n, k);
  };
  EXPECT_GE(slices(16, 4096, 4096), 4);  // 32 tiles of 128x128: 4 slices fill 128 SMs
  EXPECT_GE(slices(256, 2048, 16384), 4);
  EXPECT_EQ(slices(4096, 4096, 4096), 1);
  EXPECT_EQ(slices(1024, 1024, 1024), 1);
  EXPECT_EQ(slices(4096, 4096, 256), 1);
  EXPECT_EQ(slices(2048, 1536, 6144), 1);  // 128 tiles of 128x192: more than half the device
  EXPECT_EQ(slices(1536, 1536, 6144), 2);  // 64 of 192x192: two slices fill 128 multiprocessors
  // Small blocks (mma.sync, 32x32): a wave is four a multiprocessor.
  EXPECT_EQ(slices(64, 64, 16384), 16);      // 4 tiles
  EXPECT_GE(slices(200, 200, 3000), 4);      // 49 tiles of 47 k tiles
  EXPECT_EQ(slices(200, 200, 400), 1);       // 7 k tiles: a second launch does not pay
  EXPECT_EQ(slices(256, 256, 256), 1);
  Plan p = default_gemm_plan(TargetKind::Cuda, 16, 4096, 4096, GemmPrecision::BF16, "sm_90");
  GemmOptions o;
  o.target = TargetKind::Cuda;
  o.split_k = 1;
  EXPECT_EQ(gemm_split_k_slices(p, 16, 4096, 4096, o), 1);
  o.split_k = 3;  // 64 k tiles in slices of 22: 3
  EXPECT_EQ(gemm_split_k_slices(p, 16, 4096, 4096, o), 3);
  o.split_k = 100;  // at most one k tile a slice
  EXPECT_EQ(gemm_split_k_slices(p, 16, 4096, 4096, o), 64);
  std::vector<float> a(4, 1), b(4, 1), c(4);
  GemmOptions cpu;
  cpu.split_k = 2;
  EXPECT_THROW(gemm(2, 2, 2, 1, a.data(), 2, b.data(), 2, 0, c.data(), 2, cpu), Error);
  cpu.split_k = -1;
  EXPECT_THROW(gemm(2, 2, 2, 1, a.data(), 2, b.data(), 2, 0, c.data(), 2, cpu), Error);
}

}  // namespace
}  // namespace tessel
