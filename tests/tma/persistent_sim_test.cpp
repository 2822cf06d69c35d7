// Plan::persistent (src/passes/persistent_tiles.h): a 1-D grid of at most
// `persistent` groups, each walking the output tiles in banded order, alone and
// under the pipeline passes (cp.async windows; tma stages counted across tiles, with
// and without a producer role). Every program runs on the sim: 0 races (two groups
// on one tile would race on C) and the complete output exact (C poisoned with NaN:
// a tile no group computes shows).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "check/checked_run.h"
#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_precision.h"
#include "ops/library.h"
#include "plan/default_plan.h"
#include "target/sim/sim.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

// C = A B + beta C on small integers (exact), C NaN-poisoned when beta = 0.
double sim_error(const GroupProgram& p, int64_t m, int64_t n, int64_t k, double beta, int64_t* races,
                 std::string* first_race) {
  std::mt19937_64 rng(static_cast<uint64_t>(m * 131 + n * 7 + k));
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<float> a(m * k + 1), b(k * n + 1), c(m * n), c0(m * n);
  for (float& x : a) x = static_cast<float>(small(rng));
  for (float& x : b) x = static_cast<float>(small(rng));
  for (float& x : c0) x = beta == 0 ? NAN : static_cast<float>(small(rng));
  c = c0;
  LaunchArgs args;
  args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
  args.scalars = {{"alpha", 1.0}, {"beta", beta}};
  args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
  SimResult r = run_sim(p, args);
  *races = r.race_count;
  *first_race = r.races.empty() ? "" : r.races[0].message;
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = beta == 0 ? 0.0 : beta * c0[i * n + j];  // c0 is NaN at beta 0
      for (int64_t kk = 0; kk < k; ++kk) s += double(a[i * k + kk]) * b[kk * n + j];
      worst = std::max(worst, std::isnan(c[i * n + j]) ? INFINITY : std::fabs(c[i * n + j] - s));
    }
  return worst;
}

void expect_exact(const Plan& plan, DType ab, const std::vector<std::tuple<int64_t, int64_t, int64_t>>& shapes) {
  validate_plan(plan);
  CompiledGroup g = compile_to_group(gemm_kernel(ab), plan, CompileOptions{});
  ASSERT_EQ(g.program.grid.size(), 1u) << print_group_program(g.program);
  if (plan.tma) {
    EXPECT_EQ(g.tma.loops_converted, 1) << g.tma.skipped_reason;
  }
  for (auto [m, n, k] : shapes)
    for (double beta : {0.0, 2.0}) {
      int64_t races = 0;
      std::string first;
      double err = sim_error(g.program, m, n, k, beta, &races, &first);
      EXPECT_EQ(races, 0) << plan.to_string() << " " << m << "x" << n << "x" << k << "\n" << first;
      EXPECT_EQ(err, 0.0) << plan.to_string() << " " << m << "x" << n << "x" << k << " beta " << beta;
    }
}

Plan sim_plan() {
  Plan p;
  p.target = TargetKind::Sim;
  set_gemm_tile(p, 16, 16, 8);
  p.workers = 4, p.worker_rows = 2, p.worker_cols = 2;
  return p;
}

// 3x3, 5x4 and 1x7 tiles; fewer groups than tiles, one group, more groups than tiles.
const std::vector<std::tuple<int64_t, int64_t, int64_t>> kShapes = {{33, 47, 29}, {70, 50, 40}, {9, 100, 17}};

TEST(PersistentSim, EveryTileOnceInBandedOrder) {
  for (int groups : {1, 3, 5, 64})
    for (int band : {1, 2, 3, 8}) {
      Plan p = sim_plan();
      p.persistent = groups, p.tile_band = band;
      expect_exact(p, DType::F32, kShapes);
    }
}

TEST(PersistentSim, UnderThePipelineAndTmaPasses) {
  for (int groups : {2, 5}) {
    Plan async = sim_plan();
    async.persistent = groups, async.tile_band = 2, async.window = 3, async.async_copy = true;
    expect_exact(async, DType::F32, kShapes);
    for (int producers : {0, 1})
      for (int window : {2, 3}) {
        Plan p = sim_plan();
        p.persistent = groups, p.tile_band = 2, p.window = window, p.tma = true, p.producers = producers;
        expect_exact(p, DType::F32, kShapes);
      }
  }
}

TEST(PersistentSim, WgmmaWithAProducerRoleAcrossTiles) {
  for (int producers : {0, 1}) {
    Plan p = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16, "sm_90");
    set_gemm_tile(p, 64, 64, 64);
    p.workers = 1, p.worker_rows = 1, p.worker_cols = 1;
    p.window = 3, p.async_copy = false, p.tma = true, p.producers = producers;
    p.persistent = 3, p.tile_band = 2;
    expect_exact(p, DType::BF16, {{130, 200, 300}, {64, 64, 64}});
  }
}

// A 3-D grid: the batch dimension decodes slowest.
TEST(PersistentSim, BatchedGemmThroughThePublicApi) {
  const std::map<std::string, int64_t> sizes = {{"batch", 3}, {"M", 17}, {"N", 12}, {"K", 30}};
  for (int groups : {1, 4}) {
    TileKernel k = batched_gemm_kernel();
    Plan p = default_plan(k, TargetKind::Sim, sizes);
    p.tiles["BM"] = 8, p.tiles["BN"] = 8, p.tiles["BK"] = 8;
    p.persistent = groups, p.tile_band = 2, p.window = 2, p.tma = true;
    fit_worker_grid(k, p);
    CheckedRun r = run_checked(compile(k, p), sizes, {}, 5);
    EXPECT_TRUE(r.ok) << p.to_string() << ": rel_err " << r.worst << " bound " << r.bound;
    EXPECT_EQ(r.launch.races, 0);
  }
}

}  // namespace
}  // namespace tessel
