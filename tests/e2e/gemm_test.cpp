// GEMM end to end through the front door, on cpu and sim: the complete output
// against the FP64 oracle, fresh random inputs, NaN-poisoned C when beta == 0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ops/gemm.h"
#include "ops/gemm_reference.h"
#include "plan/machine.h"
#include "target/cpu/cpu_support.h"

namespace tessel {
namespace {

struct Case {
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
};

std::string describe(const Case& c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
         " ld " + std::to_string(c.lda) + "/" + std::to_string(c.ldb) + "/" +
         std::to_string(c.ldc) + " alpha " + std::to_string(c.alpha) + " beta " +
         std::to_string(c.beta);
}

// Runs one case and returns the output; checks error, races and that elements
// outside the M x N window (the ldc padding) are untouched.
std::vector<float> run_case(const Case& c, const GemmOptions& options, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> a(c.m * c.lda), b(c.k * c.ldb), out(c.m * c.ldc);
  fill_random(a, rng);
  fill_random(b, rng);
  fill_random(out, rng);
  if (c.beta == 0)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) out[i * c.ldc + j] = NAN;
  std::vector<float> before = out;
  std::vector<double> want =
      gemm_oracle(c.m, c.n, c.k, c.alpha, a.data(), c.lda, b.data(), c.ldb, c.beta, out.data(), c.ldc);
  GemmReport r = gemm(c.m, c.n, c.k, c.alpha, a.data(), c.lda, b.data(), c.ldb, c.beta,
                      out.data(), c.ldc, options);
  double err = gemm_relative_error(c.m, c.n, out.data(), c.ldc, want);
  EXPECT_LE(err, gemm_error_bound(c.k)) << describe(c) << " plan " << r.plan.to_string();
  EXPECT_EQ(r.races, 0) << describe(c) << (r.race_messages.empty() ? "" : ": " + r.race_messages[0]);
  int64_t padding_written = 0;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = c.n; j < c.ldc; ++j)
      padding_written += std::memcmp(&out[i * c.ldc + j], &before[i * c.ldc + j], sizeof(float)) != 0;
  EXPECT_EQ(padding_written, 0) << "elements beyond N written, " << describe(c);
  return out;
}

// One plan on the cpu (with `threads`; 0: every core) and on the simulator (0 races).
void run_plan_on_cpu_and_sim(const Case& c, const Plan& plan, int threads, uint64_t seed) {
  GemmOptions cpu, sim;
  cpu.threads = threads;
  cpu.plan = plan;
  sim.target = TargetKind::Sim;
  sim.plan = plan;
  run_case(c, cpu, seed);
  run_case(c, sim, seed);
}

Case packed(int64_t m, int64_t n, int64_t k, float alpha, float beta) {
  return Case{m, n, k, std::max<int64_t>(k, 1), std::max<int64_t>(n, 1), std::max<int64_t>(n, 1),
              alpha, beta};
}

const Case kSeedShapes[] = {
    packed(32, 32, 32, 1.0f, 0.0f),      packed(128, 128, 128, 1.5f, 0.5f),
    packed(512, 512, 512, 1.0f, 0.0f),   packed(1024, 1024, 1024, -0.5f, 2.0f),
    packed(256, 1024, 128, 1.0f, 1.0f),  packed(1024, 128, 256, 0.75f, 0.0f),
    packed(127, 193, 61, 1.25f, -1.0f),  packed(513, 257, 129, 1.0f, 0.0f),
};

// Random shapes in 1..300 with random alpha, beta (a quarter with beta = 0) and
// leading dimensions up to 7 elements wider than the row.
std::vector<Case> random_cases(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> size(1, 300), pad(0, 7);
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  std::vector<Case> cases;
  for (int i = 0; i < count; ++i) {
    Case c;
    c.m = size(rng), c.n = size(rng), c.k = size(rng);
    c.lda = c.k + pad(rng), c.ldb = c.n + pad(rng), c.ldc = c.n + pad(rng);
    c.alpha = scale(rng);
    c.beta = (i % 4 == 0) ? 0.0f : scale(rng);
    cases.push_back(c);
  }
  return cases;
}

TEST(GemmCpu, SeedShapesWithBarrierPlanningOnAndOff) {
  for (const Case& c : kSeedShapes) {
    GemmOptions on, off;
    off.coalesce_barriers = false;
    std::vector<float> with = run_case(c, on, 1), without = run_case(c, off, 1);
    ASSERT_EQ(0, std::memcmp(with.data(), without.data(), with.size() * sizeof(float)))
        << "barrier planning changed the output of " << describe(c);
  }
}

// Each case with barrier planning on and off: identical bits.
TEST(GemmCpu, RandomShapesAlphaBetaLeadingDims) {
  uint64_t seed = 100;
  GemmOptions on, off;
  off.coalesce_barriers = false;
  for (const Case& c : random_cases(200, 7)) {
    std::vector<float> with = run_case(c, on, seed), without = run_case(c, off, seed);
    ASSERT_EQ(0, std::memcmp(with.data(), without.data(), with.size() * sizeof(float)))
        << "barrier planning changed the output of " << describe(c);
    ++seed;
  }
}

// One plan run by one thread or two: the same bits. (The default plans differ by
// thread count: up to two threads read A and B in place up to larger shapes, so the
// plan is pinned to the four-thread default, packed.)
TEST(GemmCpu, MultiThreadedMatchesSingleThreadedBitForBit) {
  Case c = packed(300, 290, 280, 1.0f, 0.5f);
  GemmOptions one, two;
  one.threads = 1;
  two.threads = 2;
  one.plan = two.plan = default_gemm_plan(TargetKind::Cpu, c.m, c.n, c.k, GemmPrecision::F32, "", 4);
  ASSERT_FALSE(one.plan->direct) << one.plan->to_string();
  ASSERT_GT(one.plan->workers, 1) << one.plan->to_string();
  std::vector<float> x = run_case(c, one, 3), y = run_case(c, two, 3);
  ASSERT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * sizeof(float)));
}

// A default plan asked for by name keeps its worker grid: 13 parts of whole 12-row
// blocks over a tile 184 columns wide, which no grid of whole 12x32 atoms divides.
// (Re-chosen, the grid was 1x1: one worker ran the whole tile while the others held
// nothing, and at 3000x2000x1000 the scratch check, counting a whole-tile part per
// worker, refused the plan.)
TEST(GemmCpu, RequestedDefaultPlanKeepsItsWorkerGrid) {
  Case c = packed(300, 1100, 256, 1.0f, 0.0f);
  GemmOptions o;
  o.threads = 1;
  o.plan = default_gemm_plan(TargetKind::Cpu, c.m, c.n, c.k, GemmPrecision::F32, "", 1);
  ASSERT_GT(o.plan->workers, 1) << o.plan->to_string();
  ASSERT_NE(o.plan->tile("BN") % 32, 0) << o.plan->to_string();
  run_case(c, o, 5);
  std::vector<float> a(1, 1.0f), b(1, 1.0f), out(1);
  GemmReport r = gemm(1, 1, 1, 1.0f, a.data(), 1, b.data(), 1, 0.0f, out.data(), 1, o);
  EXPECT_EQ(r.plan.worker_rows, o.plan->workers) << r.plan.to_string();
  EXPECT_EQ(r.plan.worker_cols, 1) << r.plan.to_string();
}

// A call with the last call's shape re-points the bound launch (gemm.cpp's
// LastCall): new buffers, alpha and beta each time must all reach the kernel.
TEST(GemmCpu, RepeatedShapeWithNewBuffersAndScalars) {
  GemmOptions o;
  const float scalars[][2] = {{1.0f, 0.0f}, {-0.5f, 2.0f}, {1.5f, 0.0f}, {0.25f, -1.0f}};
  uint64_t seed = 40;
  for (const auto& [alpha, beta] : scalars) run_case(Case{37, 45, 29, 31, 47, 50, alpha, beta}, o, ++seed);
}

// The cpu's default plans on small and ragged shapes, for two threads (one reads
// larger shapes in place too; two split products of 300K multiply-adds or more:
// CpuSmallShapes.SplitAmongThreadsInEqualRowsOrColumns): M and K up to 128 and N up
// to 256 are one block of exactly that extent (no padding, no guarded copy), and when
// all three are, A and B are read in place (Plan::direct: no packing); otherwise the edges go
// through the guarded copy (B's panel path, and the rows of A and C). On the cpu
// against the oracle, and the same plan's GroupIR on the simulator with the race
// detector.
TEST(GemmCpu, DefaultPlansOfRaggedShapesOnCpuAndSim) {
  uint64_t seed = 900;
  for (const Case& c : {packed(13, 40, 7, 1.0f, 0.0f), packed(25, 33, 61, -1.5f, 0.0f),
                        packed(50, 70, 60, 0.5f, 1.25f), Case{37, 45, 129, 131, 47, 50, 1.0f, 0.0f},
                        packed(96, 33, 17, 1.0f, 0.0f), Case{31, 17, 9, 40, 19, 18, 0.75f, -0.5f},
                        packed(1, 1, 1, 2.0f, 0.0f), Case{5, 130, 3, 7, 133, 131, 1.0f, 0.0f},
                        packed(3, 300, 5, 1.0f, 0.0f), packed(48, 48, 48, 1.0f, 0.0f),
                        Case{60, 64, 70, 73, 70, 64, -0.5f, 0.0f}})
  for (int threads : {2, 4}) {
    // B within 1 MiB: read in place on up to two threads; on four, only within the
    // exact sizes (packed plans otherwise).
    Plan p = default_gemm_plan(TargetKind::Cpu, c.m, c.n, c.k, GemmPrecision::F32, "", threads);
    // Read in place with N past 32 but within 64: one column block, 8 x 48 or 6 x 64,
    // unless the edge takes the 1 to 4 columns past 32 as dot products (AVX-512;
    // CpuSmallShapes.ColumnsJustPast32TakeTheWideAtomOrADotProductRest).
    const bool dot_rest = cpu_vector_lanes() == 16 && c.n <= 36 && cpu_edge_dot_columns(c.m, c.n, c.k);
    if (p.direct && c.n > 32 && c.n <= 64) {
      EXPECT_EQ(p.atom_m, dot_rest ? 12 : c.n <= 48 ? 8 : 6) << describe(c);
      EXPECT_EQ(p.atom_n, dot_rest ? 32 : c.n <= 48 ? 48 : 64) << describe(c);
    }
    if (c.k <= 128) { EXPECT_EQ(p.tile("BK"), c.k) << describe(c); }
    if (c.m <= 128) { EXPECT_EQ(p.tile("BM"), c.m) << describe(c); }
    if (c.n <= 256) { EXPECT_EQ(p.tile("BN"), c.n) << describe(c); }
    EXPECT_EQ(p.direct, threads == 2 || (c.m <= 128 && c.n <= 256 && c.k <= 128)) << describe(c) << threads;
    GemmOptions cpu, sim;
    cpu.threads = 1;
    sim.target = TargetKind::Sim;
    sim.plan = p;
    run_case(c, cpu, seed);
    run_case(c, sim, seed);
    ++seed;
  }
}

// Plan::direct on tiles that the shapes leave ragged: the micro-kernel reads A and
// B in place only in blocks wholly inside them; blocks across the edge take the
// scalar loop. On the cpu and (0 races) on the simulator.
TEST(GemmCpu, ReadInPlaceOnRaggedTiles) {
  uint64_t seed = 950;
  Plan p = default_gemm_plan(TargetKind::Cpu, 24, 40, 16);
  ASSERT_TRUE(p.direct);
  p.sizes.clear();  // the default fixes 24 x 40 x 16 (Plan::sizes)
  for (const Case& c : {packed(13, 29, 7, -0.75f, 0.0f), Case{50, 70, 37, 40, 75, 71, 1.25f, 0.5f},
                        packed(25, 41, 17, 1.0f, 0.0f)}) {
    run_plan_on_cpu_and_sim(c, p, 0, seed++);
  }
  // Four workers on a 2x2 grid, each reading its part of A and B in place (the
  // 12 x 32 atom: the default's 6 x 64 for N = 64 leaves no two columns of parts).
  Plan four = default_gemm_plan(TargetKind::Cpu, 48, 64, 37);
  four.workers = 4;
  four.sizes.clear();
  four.atom_m = 12;
  four.atom_n = 32;
  for (const Case& c :
       {packed(48, 64, 37, 1.0f, 0.0f), packed(47, 60, 37, 0.5f, 1.5f), packed(30, 70, 20, 1.0f, 0.0f)}) {
    GemmOptions cpu;
    cpu.plan = four;
    EXPECT_NE(explain_gemm(c.m, c.n, c.k, cpu).find("workers 4 grid 2x2"), std::string::npos);
    run_plan_on_cpu_and_sim(c, four, 0, seed++);
  }
}

// Two threads on a product with no equal split (M and N odd): with AVX-512 the rows
// go in groups of ceil(M / 2), the last one short (its edge block runs in masked
// vectors); elsewhere one group. On the cpu with two threads and on the simulator.
TEST(GemmCpu, TwoThreadsSplitOddRowsWhereEdgesAreVectors) {
  uint64_t seed = 990;
  for (const Case& c : {packed(127, 193, 61, 1.0f, 0.0f), Case{93, 93, 93, 97, 95, 94, -0.5f, 1.5f}}) {
    Plan p = default_gemm_plan(TargetKind::Cpu, c.m, c.n, c.k, GemmPrecision::F32, "", 2);
    EXPECT_EQ(p.tile("BM"), cpu_vector_lanes() == 16 ? (c.m + 1) / 2 : c.m) << describe(c);
    run_plan_on_cpu_and_sim(c, p, 2, seed++);
  }
}

TEST(GemmCpu, ZeroKScalesCByBeta) {
  run_case(packed(17, 33, 0, 1.0f, 0.5f), GemmOptions{}, 5);
  run_case(packed(17, 33, 0, 1.0f, 0.0f), GemmOptions{}, 6);  // C becomes 0, NaN gone
}

TEST(GemmCpu, EmptyOutputIsANoOp) {
  float c = 3.0f;
  gemm(0, 1, 5, 1.0f, nullptr, 5, nullptr, 1, 0.0f, nullptr, 1);
  gemm(1, 0, 5, 1.0f, nullptr, 5, nullptr, 1, 0.0f, &c, 1);
  EXPECT_EQ(c, 3.0f);
}

TEST(GemmSim, SeedShapesThatFitTheSimulator) {
  for (const Case& c : {kSeedShapes[0], kSeedShapes[1], kSeedShapes[6]}) {
    GemmOptions on, off;
    on.target = off.target = TargetKind::Sim;
    off.coalesce_barriers = false;
    std::vector<float> with = run_case(c, on, 2), without = run_case(c, off, 2);
    ASSERT_EQ(0, std::memcmp(with.data(), without.data(), with.size() * sizeof(float)))
        << describe(c);
  }
}

// The seed report's configuration: a 64x64x32 tile, 256 workers, copy batch 4.
TEST(GemmSim, SeedConfiguration256Workers) {
  for (const Case& c : {packed(128, 128, 128, 1.0f, 0.0f), packed(127, 193, 61, 0.5f, 1.5f)}) {
    for (bool coalesce : {true, false}) {
      GemmOptions o;
      o.target = TargetKind::Sim;
      o.coalesce_barriers = coalesce;
      Plan p;
      p.tiles = {{"BM", 64}, {"BN", 64}, {"BK", 32}}; p.workers = 256, p.copy_batch = 4;
      o.plan = p;
      run_case(c, o, 9);
    }
  }
}

// Every tenth random case, on the simulator with the race detector, 4 and 7
// workers (7: not a divisor of the tile; surplus workers only copy).
TEST(GemmSim, RandomSubsetWithRaceDetector) {
  std::vector<Case> cases = random_cases(200, 7);
  uint64_t seed = 500;
  for (size_t i = 0; i < cases.size(); i += 10) {
    Case c = cases[i];
    c.m = 1 + c.m % 64, c.n = 1 + c.n % 64, c.k = 1 + c.k % 64;  // keep the interpreter quick
    c.lda = c.k + (c.lda % 5), c.ldb = c.n + (c.ldb % 5), c.ldc = c.n + (c.ldc % 5);
    GemmOptions on, off;
    on.target = off.target = TargetKind::Sim;
    off.coalesce_barriers = false;
    Plan p = default_gemm_plan(TargetKind::Sim, c.m, c.n, c.k);
    p.workers = (i / 10) % 2 ? 7 : 4;
    on.plan = off.plan = p;
    std::vector<float> with = run_case(c, on, seed), without = run_case(c, off, seed);
    ASSERT_EQ(0, std::memcmp(with.data(), without.data(), with.size() * sizeof(float))) << describe(c);
    ++seed;
  }
}

}  // namespace
}  // namespace tessel
