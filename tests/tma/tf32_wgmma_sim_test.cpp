// tf32 on the wgmma atom (src/ops/gemm.cpp, transposes_b): the front door transposes
// B into scratch (transpose_kernel) and runs gemm_kernel's b_transposed variant,
// whose B the lowering stages K-major (one row panel of 32 fp32 a line) and the tma
// pass copies from the transposed source. Both kernels' GroupIR, under the plans
// the cuda front door gives them, run on the sim race checker with 0 races, exact on
// small integers (outputs NaN-poisoned), on ragged shapes. The GPU half is in
// tests/cuda/tma_pipeline_cuda_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../sim/race_assertions.h"
#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "target/sim/sim.h"

namespace tessel {
namespace {

using test::races_text;

TEST(Tf32WgmmaPlan, LargeTf32GemmsTakeWgmmaWithTmaAndAProducer) {
  Plan p = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::TF32, "sm_90");
  EXPECT_EQ(p.atom, AtomKind::Wgmma) << p.to_string();
  EXPECT_TRUE(p.tma) << p.to_string();
  EXPECT_EQ(p.producers, 1) << p.to_string();
  EXPECT_EQ(p.tile("BK"), 32) << p.to_string();  // 128-byte lines of fp32
  // Below the wgmma size, and off sm_90, tf32 stays on mma.sync.
  EXPECT_EQ(default_gemm_plan(TargetKind::Cuda, 200, 200, 200, GemmPrecision::TF32, "sm_90").atom, AtomKind::MmaSync);
  EXPECT_EQ(default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::TF32, "sm_80").atom,
            AtomKind::MmaSync);
}

// B^T's rows start on 128-byte lines (32 floats), with no more padding than that:
// tensor maps would take 16 bytes, but rows off the line ran tf32 2500x3500x1500 at
// 0.73 of cuBLAS against 0.83 on the H200.
TEST(Tf32WgmmaPlan, TransposedBRowsStartOnLines) {
  for (int64_t k : {1, 31, 32, 33, 70, 1500, 3000, 4096}) {
    const int64_t ld = gemm_transposed_b_ld(k);
    EXPECT_EQ(ld * 4 % 128, 0) << k;
    EXPECT_GE(ld, k);
    EXPECT_LT(ld - k, 32) << k;
  }
  EXPECT_EQ(gemm_transposed_b_ld(0), 32);  // an empty K still gets a row
}

TEST(Tf32WgmmaSim, TransposedBGemmIsExactAndRaceFree) {
  for (bool producer : {true, false}) {
    Plan plan = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::TF32, "sm_90");
    set_gemm_tile(plan, 128, 128, 32);  // a smaller tile keeps the sim quick
    plan.producers = producer ? 1 : 0;
    CompiledGroup g = compile_to_group(gemm_kernel(DType::F32, /*b_transposed=*/true), plan, CompileOptions{});
    const std::string text = print_group_program(g.program);
    ASSERT_NE(text.find("rowpanels panel 32"), std::string::npos) << text;  // B K-major
    ASSERT_NE(text.find("tma #"), std::string::npos) << text;

    // Ragged: a partial tile and k step; B^T as the front door lays it out.
    const int64_t m = 150, n = 136, k = 70, ldbt = gemm_transposed_b_ld(k);
    std::mt19937_64 rng(uint64_t(m * 31 + n * 7 + k + producer));
    std::uniform_int_distribution<int> small(-3, 3);
    std::vector<float> a(m * k), bt(n * ldbt, NAN), c(m * n, NAN);
    for (float& x : a) x = float(small(rng));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk) bt[j * ldbt + kk] = float(small(rng));
    SimOptions o;
    o.max_races_recorded = 1 << 12;
    LaunchArgs args;
    args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", ldbt}, {"ldc", n}};
    args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
    args.tensors = {{"A", a.data()}, {"B", bt.data()}, {"C", c.data()}};
    SimResult r = run_sim(g.program, args, o);
    EXPECT_EQ(r.race_count, 0) << plan.to_string() << races_text(r).substr(0, 2000);
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t kk = 0; kk < k; ++kk) want += double(a[i * k + kk]) * bt[j * ldbt + kk];
        const float got = c[i * n + j];
        worst = std::max(worst, std::isnan(got) ? INFINITY : std::fabs(got - want));
      }
    EXPECT_EQ(worst, 0.0) << plan.to_string();
  }
}

TEST(Tf32WgmmaSim, TransposeIsExactAndRaceFree) {
  CompiledGroup g = compile_to_group(transpose_kernel(), gemm_transpose_plan(), CompileOptions{});
  const int64_t rows = 70, cols = 300, ldx = 301, ldy = gemm_transposed_b_ld(rows);  // ragged tiles both ways
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(rows * ldx), y(cols * ldy, NAN);
  for (float& v : x) v = u(rng);
  LaunchArgs args;
  args.sizes = {{"R", rows}, {"C", cols}, {"ldx", ldx}, {"ldy", ldy}};
  args.tensors = {{"X", x.data()}, {"Y", y.data()}};
  SimResult r = run_sim(g.program, args, SimOptions{});
  EXPECT_EQ(r.race_count, 0) << races_text(r).substr(0, 2000);
  int64_t wrong = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) wrong += !(y[j * ldy + i] == x[i * ldx + j]);
  EXPECT_EQ(wrong, 0);
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = rows; i < ldy; ++i) EXPECT_TRUE(std::isnan(y[j * ldy + i])) << "wrote past the rows";
}

}  // namespace
}  // namespace tessel
