// The lowered GEMM's plans and one check of a GEMM program on the sim, shared by
// the pass tests that run gemm_kernel's GroupIR.
#pragma once
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "ir/group_ir.h"
#include "ops/gemm_reference.h"
#include "plan/plan.h"
#include "target/sim/sim.h"

namespace tessel {

inline Plan sim_plan(int64_t bm, int64_t bn, int64_t bk, int workers, int rows, int cols, int batch) {
  Plan p;
  p.target = TargetKind::Sim;
  p.tiles = {{"BM", bm}, {"BN", bn}, {"BK", bk}};
  p.workers = workers, p.worker_rows = rows, p.worker_cols = cols;
  p.copy_batch = batch;
  return p;
}

// Runs a GEMM program on sim: zero races and the complete output within the
// FP64 oracle's bound, C poisoned with NaN (alpha 1.5, beta 0).
inline void check_on_sim(const GroupProgram& p, int64_t m, int64_t n, int64_t k) {
  std::mt19937_64 rng(m * 131 + n * 7 + k);
  std::vector<float> a(m * k), b(k * n), c(m * n, NAN);
  fill_random(a, rng);
  fill_random(b, rng);
  LaunchArgs args;
  args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
  args.scalars = {{"alpha", 1.5}, {"beta", 0.0}};
  args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
  std::vector<double> want = gemm_oracle(m, n, k, 1.5, a.data(), k, b.data(), n, 0.0, c.data(), n);
  SimResult r = run_sim(p, args);
  EXPECT_EQ(r.race_count, 0) << (r.races.empty() ? "" : r.races[0].message);
  EXPECT_LE(gemm_relative_error(m, n, c.data(), n, want), gemm_error_bound(k));
}

}  // namespace tessel
