// The producer role's rule on global memory (src/passes/tma_pipeline.cpp): a
// consumer role has no fences, so a global access may follow a global write only on
// another tensor or in a window provably apart from the written one. A kernel that
// writes a tile's product into one half of its band of C and then updates the other
// half (load, add, store) passes under a producer and runs exact and race-free on
// the sim; the same kernel with the second window overlapping the first is refused,
// naming both ops.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../sim/race_assertions.h"
#include "compiler/compile.h"
#include "dsl/dsl.h"
#include "split_plans.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel {
namespace {

using test::races_text;
using test::split_wgmma_plan;

// C is M x 2N: tile (i, j) owns columns [2 j BN, 2 j BN + 2 BN). The first BN get
// A B; the BN from `second` (in units of BN / 4) get their old value plus A B.
TileKernel two_windows_kernel(int64_t second) {
  KernelBuilder kb("two_windows");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", M, K, K, Access::In);
  Tensor B = kb.tensor("B", K, N, N, Access::In);
  Tensor C = kb.tensor("C", M, N * 2, N * 2, Access::InOut);
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile acc = kb.pipeline(ceil_div(K, BK), kb.constant(0.0, BM, BN), [&](Sym k, Tile partial) {
      return kb.mma(kb.load(A, i * BM, k * BK, BM, BK), kb.load(B, k * BK, j * BN, BK, BN), partial);
    });
    kb.store(C, i * BM, j * BN * 2, acc);
    Sym at = j * BN * 2 + BN / 4 * second;
    kb.store(C, i * BM, at, kb.add(kb.load(C, i * BM, at, BM, BN), acc));
  });
  TileKernel kernel = kb.finish();
  kernel.tensors[0].dtype = DType::BF16;
  kernel.tensors[1].dtype = DType::BF16;
  return kernel;
}

TEST(RoleWindowsSim, AWindowApartFromTheWrittenOnePassesAndRunsExact) {
  const Plan plan = split_wgmma_plan(1, 128, 128);
  CompiledGroup g = compile_to_group(two_windows_kernel(4), plan, CompileOptions{});
  EXPECT_EQ(g.tma.loops_converted, 1) << g.tma.skipped_reason;
  const int64_t m = 130, n = 200, k = 70;  // ragged: 2 x 2 tiles
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<float> a(m * k), b(k * n), c0(m * 2 * n);
  for (float& x : a) x = float(small(rng));
  for (float& x : b) x = float(small(rng));
  for (float& x : c0) x = float(small(rng));
  std::vector<float> c = c0;
  LaunchArgs args;
  args.sizes = {{"M", m}, {"N", n}, {"K", k}};
  args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
  SimResult r = run_sim(g.program, args, SimOptions{});
  EXPECT_EQ(r.race_count, 0) << races_text(r).substr(0, 2000);
  // Column x of row i: tile column jt = x / 256 owns [256 jt, 256 jt + 256); its
  // first 128 are A B, the next 128 old + A B (B's columns past N read as 0).
  int64_t wrong = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t x = 0; x < 2 * n; ++x) {
      const int64_t within = x % 256, col = x / 256 * 128 + within % 128;
      double product = 0;
      for (int64_t kk = 0; kk < k && col < n; ++kk) product += double(a[i * k + kk]) * b[kk * n + col];
      const double want = within < 128 ? product : c0[i * 2 * n + x] + product;
      wrong += c[i * 2 * n + x] != want;
    }
  EXPECT_EQ(wrong, 0);
}

TEST(RoleWindowsSim, AnOverlappingWindowIsRefusedNamingTheWrite) {
  const Plan plan = split_wgmma_plan(1, 128, 128);
  for (int64_t second : {0, 2, 3}) {  // the same window, half and a quarter of it again
    try {
      compile_to_group(two_windows_kernel(second), plan, CompileOptions{});
      ADD_FAILURE() << "a window " << second << " quarters on passed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Plan) << e.what();
      EXPECT_NE(std::string(e.what()).find("after a global write it may overlap (op #"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace tessel
