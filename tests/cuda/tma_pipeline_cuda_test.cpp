// Issue 14: the GEMM kernels that Plan::tma (and Plan::producers) produce through
// the lowering (src/passes/tma_pipeline.h) compile through NVRTC for sm_90a without
// a GPU (label cuda): tma copies, mbarriers, wgmma, setmaxnreg for producer roles,
// no spills; each prints its ptxas report. TmaPipelineGpu.* run them through GEMM's
// front door on a GPU against the FP64 oracle (C poisoned with NaN for beta = 0),
// bf16 and fp16, ragged shapes, and persistent grids; they skip, visibly, without one.
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "check/checked_run.h"
#include "compiler/compile.h"
#include "dsl/dsl.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_precision.h"
#include "ops/gemm_reference.h"
#include "plan/default_plan.h"
#include "target/cuda/cuda_driver.h"
#include "target/cuda/cuda_kernel.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel {
namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A wgmma tile plan with tma stages; producers 0 or 1 (a producer warpgroup).
Plan tma_plan(GemmPrecision precision, int64_t bm, int64_t bn, int warpgroups, int window, int producers) {
  Plan p = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, precision, "sm_90");
  set_gemm_tile(p, bm, bn, precision == GemmPrecision::TF32 ? 32 : 64);  // 128-byte lines
  p.workers = warpgroups, p.worker_rows = warpgroups, p.worker_cols = 1;
  p.window = window;
  p.async_copy = false;
  p.tma = true;
  p.producers = producers;
  return p;
}

struct Variant {
  int64_t bm, bn;
  int warpgroups, window, producers;
};
const Variant kVariants[] = {{128, 128, 2, 3, 0}, {128, 128, 2, 4, 1}, {128, 256, 2, 3, 1},
                             {128, 256, 2, 4, 0}, {64, 128, 1, 4, 1}, {256, 128, 4, 4, 1},
                             {192, 192, 3, 4, 1}, {192, 128, 3, 4, 1}};

TEST(TmaPipelineCompile, ProducedGemmsCompileForSm90aWithoutSpills) {
  for (const Variant& v : kVariants) {
    Plan plan = tma_plan(GemmPrecision::BF16, v.bm, v.bn, v.warpgroups, v.window, v.producers);
    SCOPED_TRACE(plan.to_string());
    validate_plan(plan);
    CompiledGroup g = compile_to_group(gemm_kernel(DType::BF16), plan, CompileOptions{});
    ASSERT_EQ(g.tma.loops_converted, 1) << g.tma.skipped_reason;
    auto kernel = compile_cuda(g.program, "sm_90");
    const CudaCompileInfo& info = kernel->info();
    std::printf("[ptxas] tma %s: %d regs, spills %d/%d B, %lld B smem, %d threads, %.0f ms\n",
                plan.to_string().c_str(), info.nvrtc.registers, info.nvrtc.spill_stores, info.nvrtc.spill_loads,
                (long long)info.source.shared_bytes, info.source.threads, info.nvrtc.compile_ms);
    EXPECT_EQ(info.nvrtc.arch, "sm_90a");
    EXPECT_EQ(info.source.threads, (v.warpgroups + v.producers) * 128);
    EXPECT_EQ(info.nvrtc.spill_stores, 0) << info.nvrtc.log;
    EXPECT_EQ(info.nvrtc.spill_loads, 0) << info.nvrtc.log;
    EXPECT_FALSE(has(info.nvrtc.log, "C7508")) << info.nvrtc.log;  // setmaxnreg honoured
    const std::string& ptx = info.nvrtc.ptx;
    for (const char* instruction : {"cp.async.bulk.tensor.2d", "mbarrier.try_wait.parity", "mbarrier.expect_tx",
                                    "wgmma.mma_async", "wgmma.wait_group.sync.aligned 1"})
      EXPECT_TRUE(has(ptx, instruction)) << instruction;
    EXPECT_FALSE(has(ptx, "cp.async.cg")) << "a staging copy was left to cp.async";
    // C = A B + beta C reads C through the stage's 16-byte row pieces, a piece's
    // loads before its stores (cuda_emit.cpp, staged_run); edge tiles 4 elements at
    // a time (emit_staged_loop).
    EXPECT_TRUE(has(info.source.code, "[v] = *(const float4*)(gp + v * gstep + 0);")) << info.source.code;
    EXPECT_TRUE(has(info.source.code, "; e0 += 512) {")) << info.source.code;
    EXPECT_TRUE(has(ptx, "ld.global.v4.f32")) << "16-byte loads of C";
    if (v.producers) {
      EXPECT_TRUE(has(ptx, "setmaxnreg.dec.sync.aligned.u32 40"));
      EXPECT_TRUE(has(ptx, "setmaxnreg.inc.sync.aligned.u32"));
    }
  }
}

// Small random integers for A (m x k) and B (k x n), exact in bf16 and in fp32
// sums, and their product in fp64: the sim's programs below must match it exactly.
struct SmallProduct {
  std::vector<float> a, b;
  std::vector<double> ab;
};
SmallProduct small_product(int64_t m, int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> small(-3, 3);
  SmallProduct p{std::vector<float>(m * k), std::vector<float>(k * n), std::vector<double>(m * n)};
  for (std::vector<float>* v : {&p.a, &p.b})
    for (float& x : *v) x = static_cast<float>(small(rng));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk) p.ab[i * n + j] += double(p.a[i * k + kk]) * p.b[kk * n + j];
  return p;
}

// A kernel that reads its output's positions in the staged epilogue (EwOp::Index
// in a run with C's load): C = alpha A B + beta C on and below the diagonal, C
// unchanged above it (beta = 0: the plain product). Index ops need each element's
// row and column in the staged store's per-element blocks (cuda_emit.cpp,
// emit_piece_ops).
TileKernel masked_product_kernel() {
  KernelBuilder kb("masked_product");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym lda = kb.size("lda"), ldb = kb.size("ldb"), ldc = kb.size("ldc");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", M, K, lda, Access::In);
  Tensor B = kb.tensor("B", K, N, ldb, Access::In);
  Tensor C = kb.tensor("C", M, N, ldc, Access::InOut);
  std::string alpha = kb.scalar("alpha"), beta = kb.scalar("beta");
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile acc = kb.pipeline(ceil_div(K, BK), kb.constant(0.0, BM, BN), [&](Sym k, Tile partial) {
      return kb.mma(kb.load(A, i * BM, k * BK, BM, BK), kb.load(B, k * BK, j * BN, BK, BN), partial);
    });
    acc = kb.mul(acc, kb.scalar_value(alpha));
    kb.if_(
        ScalarCond{beta, CmpOp::EQ, 0.0}, [&] { kb.store(C, i * BM, j * BN, acc); },
        [&] {
          Tile c = kb.load(C, i * BM, j * BN, BM, BN);
          Tile row = kb.add(kb.index(0, BM, BN), kb.index_value(i * BM, BM, BN));
          Tile col = kb.add(kb.index(1, BM, BN), kb.index_value(j * BN, BM, BN));
          Tile sum = kb.add(acc, kb.mul(c, kb.scalar_value(beta)));
          kb.store(C, i * BM, j * BN, kb.select(kb.cmp(CmpOp::GE, row, col), sum, c));
        });
  });
  TileKernel kernel = kb.finish();
  kernel.tensors[0].dtype = DType::BF16;
  kernel.tensors[1].dtype = DType::BF16;
  return kernel;
}

TEST(TmaPipelineCompile, PositionsInTheStagedEpilogueCompile) {
  Plan plan = tma_plan(GemmPrecision::BF16, 128, 128, 2, 4, 1);
  CompiledGroup g = compile_to_group(masked_product_kernel(), plan, CompileOptions{});
  ASSERT_EQ(g.tma.loops_converted, 1) << g.tma.skipped_reason;
  auto kernel = compile_cuda(g.program, "sm_90");
  const CudaCompileInfo& info = kernel->info();
  EXPECT_TRUE(has(info.source.code, "[v] = *(const float4*)(gp + v * gstep + 0);")) << info.source.code;
  EXPECT_EQ(info.nvrtc.spill_stores, 0) << info.nvrtc.log;
  // The same GroupIR on the sim, race-free and exact (small integers; beta 0: C
  // NaN-poisoned, every element stored by the branch without the mask).
  const int64_t m = 136, n = 200, k = 72;
  for (double beta : {0.0, 0.5}) {
    SmallProduct p = small_product(m, n, k, static_cast<uint64_t>(beta * 8 + 1));
    std::vector<float> c(m * n);
    std::mt19937_64 rng(static_cast<uint64_t>(beta * 8 + 3));
    std::uniform_int_distribution<int> small(-3, 3);
    for (float& x : c) x = static_cast<float>(small(rng));
    const std::vector<float> c_in = c;
    if (beta == 0) std::fill(c.begin(), c.end(), NAN);
    LaunchArgs args;
    args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
    args.scalars = {{"alpha", 2.0}, {"beta", beta}};
    args.tensors = {{"A", p.a.data()}, {"B", p.b.data()}, {"C", c.data()}};
    SimResult r = run_sim(g.program, args);
    EXPECT_EQ(r.race_count, 0) << (r.races.empty() ? "" : r.races[0].message);
    int64_t wrong = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double s = p.ab[i * n + j], c_ij = c_in[i * n + j];
        const double want = beta == 0 ? 2 * s : i >= j ? 2 * s + beta * c_ij : c_ij;
        wrong += !(c[i * n + j] == want);
      }
    EXPECT_EQ(wrong, 0) << "beta " << beta;
  }
}

// A product scaled in place, stored, then read again past a branch: C = alpha A B,
// D = C (flag 0) or 2 C. The run that scales and stores C leaves the registers D
// reads, so it keeps the register form; the scaled product of the GEMM's own
// epilogue, read by nothing after, goes through the stage (unused_after_run).
TileKernel reread_product_kernel() {
  KernelBuilder kb("reread_product");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym lda = kb.size("lda"), ldb = kb.size("ldb"), ldc = kb.size("ldc");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", M, K, lda, Access::In);
  Tensor B = kb.tensor("B", K, N, ldb, Access::In);
  Tensor C = kb.tensor("C", M, N, ldc, Access::Out);
  Tensor D = kb.tensor("D", M, N, ldc, Access::Out);
  std::string alpha = kb.scalar("alpha"), flag = kb.scalar("flag");
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile acc = kb.pipeline(ceil_div(K, BK), kb.constant(0.0, BM, BN), [&](Sym k, Tile partial) {
      return kb.mma(kb.load(A, i * BM, k * BK, BM, BK), kb.load(B, k * BK, j * BN, BK, BN), partial);
    });
    acc = kb.mul(acc, kb.scalar_value(alpha));
    kb.store(C, i * BM, j * BN, acc);
    kb.if_(
        ScalarCond{flag, CmpOp::EQ, 0.0}, [&] { kb.store(D, i * BM, j * BN, acc); },
        [&] { kb.store(D, i * BM, j * BN, kb.add(acc, acc)); });
  });
  TileKernel kernel = kb.finish();
  kernel.tensors[0].dtype = DType::BF16;
  kernel.tensors[1].dtype = DType::BF16;
  return kernel;
}

TEST(TmaPipelineCompile, OnlyRunsWhoseResultsAreNotReadAgainGoThroughTheStage) {
  const Plan plan = tma_plan(GemmPrecision::BF16, 128, 128, 2, 4, 1);
  const std::regex registers(R"(f(\d+)\[i \+ 0\] = f\1\[i \+ 0\] \* s_alpha;)");
  const std::regex staged(R"(float v(\d+) = s\.x;[^{}]*v\1 = v\1 \* s_alpha;)");
  const CompiledGroup g = compile_to_group(reread_product_kernel(), plan, CompileOptions{});
  const std::string reread = compile_cuda(g.program, "sm_90")->info().source.code;
  EXPECT_TRUE(std::regex_search(reread, registers)) << reread;
  EXPECT_FALSE(std::regex_search(reread, staged)) << reread;
  const std::string product =
      compile_cuda(compile_to_group(gemm_kernel(DType::BF16, false, GemmBeta::Zero), plan, CompileOptions{}).program,
                   "sm_90")->info().source.code;
  EXPECT_TRUE(std::regex_search(product, staged)) << product;
  EXPECT_FALSE(std::regex_search(product, registers)) << product;
  // The reread program on the sim: race-free and exact (small integers, C and D
  // NaN-poisoned).
  const int64_t m = 136, n = 200, k = 40;
  for (double flag : {0.0, 1.0}) {
    SmallProduct p = small_product(m, n, k, static_cast<uint64_t>(flag + 5));
    std::vector<float> c(m * n, NAN), d(m * n, NAN);
    LaunchArgs args;
    args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
    args.scalars = {{"alpha", 3.0}, {"flag", flag}};
    args.tensors = {{"A", p.a.data()}, {"B", p.b.data()}, {"C", c.data()}, {"D", d.data()}};
    SimResult r = run_sim(g.program, args);
    EXPECT_EQ(r.race_count, 0) << (r.races.empty() ? "" : r.races[0].message);
    int64_t wrong = 0;
    for (int64_t e = 0; e < m * n; ++e) wrong += !(c[e] == 3 * p.ab[e]) + !(d[e] == (flag == 0 ? 3 : 6) * p.ab[e]);
    EXPECT_EQ(wrong, 0) << "flag " << flag;
  }
}

// The persistent grid (Plan::persistent: one group per SM, tiles in bands of 8 rows)
// over the warp-specialized plan: the tile loop around both roles.
Plan persistent_plan(GemmPrecision precision, int groups, int band) {
  Plan p = tma_plan(precision, 128, 256, 2, 4, 1);
  p.persistent = groups, p.tile_band = band;
  return p;
}

TEST(TmaPipelineCompile, PersistentWarpSpecializedGemmCompiles) {
  Plan plan = persistent_plan(GemmPrecision::BF16, 132, 8);
  CompiledGroup g = compile_to_group(gemm_kernel(DType::BF16), plan, CompileOptions{});
  ASSERT_EQ(g.program.grid.size(), 1u);
  auto kernel = compile_cuda(g.program, "sm_90");
  const CudaCompileInfo& info = kernel->info();
  std::printf("[ptxas] persistent %s: %d regs, spills %d/%d B, %lld B smem, %d threads, %.0f ms\n",
              plan.to_string().c_str(), info.nvrtc.registers, info.nvrtc.spill_stores, info.nvrtc.spill_loads,
              (long long)info.source.shared_bytes, info.source.threads, info.nvrtc.compile_ms);
  EXPECT_EQ(info.nvrtc.spill_stores, 0) << info.nvrtc.log;
  EXPECT_EQ(info.nvrtc.spill_loads, 0) << info.nvrtc.log;
  EXPECT_FALSE(has(info.nvrtc.log, "C7508")) << info.nvrtc.log;
  // The tile's coordinates (divisions of the tile loop's variable) are computed once
  // per tile, not in each k step's copies: the producer is one thread, and three
  // 64-bit divisions a step left the tensor cores waiting (4096^3 bf16 ran at 0.68x
  // cuBLAS persistent against 0.79x without).
  std::istringstream lines(info.source.code);
  int coordinate_lines = 0;
  for (std::string line; std::getline(lines, line);)
    if (has(line, "const int r = ")) {
      ++coordinate_lines;
      EXPECT_FALSE(has(line, "tsl_floordiv(") || has(line, "tsl_mod(")) << line;
    }
  EXPECT_EQ(coordinate_lines, 2);  // the boxes of A and B
  // C = alpha A B + beta C (beta != 0) reads C through the stage here too: each
  // tile's load of C overwrites what the previous tile's left (unused_after_run).
  EXPECT_TRUE(has(info.source.code, "[v] = *(const float4*)(gp + v * gstep + 0);")) << info.source.code;
}

// Split-K's kernel under the warp-specialized tma plan (a ticket in the consumer
// role: a named barrier of its threads), and the two-kernel form's slice and sum
// kernels, compile without spills; the fused kernel's last slice may spill a few
// registers in its sum (each step's 64 loads in flight beside the 64 sums, under
// the 168 registers a 384-thread block is compiled for), never more.
TEST(TmaPipelineCompile, SplitKKernelsCompile) {
  Plan plan = tma_plan(GemmPrecision::BF16, 128, 128, 2, 4, 1);
  CompiledGroup g = compile_to_group(gemm_split_k_kernel(DType::BF16), plan, CompileOptions{});
  ASSERT_EQ(g.tma.loops_converted, 1) << g.tma.skipped_reason;
  CompiledGroup gf = compile_to_group(gemm_split_k_fused_kernel(DType::BF16), plan, CompileOptions{});
  ASSERT_EQ(gf.tma.loops_converted, 1) << gf.tma.skipped_reason;
  const TileKernel sum = split_k_sum_kernel();
  const std::map<std::string, int64_t> sizes = {{"M", 16}, {"N", 4096}, {"ldc", 4096}, {"S", 4},
                                                {"sps", 16 * 4096}, {"ldp", 4096}};
  CompiledGroup gs = compile_to_group(sum, default_plan(sum, TargetKind::Cuda, sizes), CompileOptions{});
  EXPECT_NE(compile_cuda(gf.program, "sm_90")->info().source.code.find("barrier.sync 15, 256;"), std::string::npos);
  for (const GroupProgram* p : {&g.program, &gf.program, &gs.program}) {
    auto kernel = compile_cuda(*p, "sm_90");
    const CudaCompileInfo& info = kernel->info();
    std::printf("[ptxas] split-K: %d regs, spills %d/%d B, %d threads\n", info.nvrtc.registers,
                info.nvrtc.spill_stores, info.nvrtc.spill_loads, info.source.threads);
    const int spill_bound = p == &gf.program ? 64 : 0;
    EXPECT_LE(info.nvrtc.spill_stores, spill_bound) << info.nvrtc.log;
    EXPECT_LE(info.nvrtc.spill_loads, spill_bound) << info.nvrtc.log;
  }
}

// A launch's tensor maps fetch 256 bytes around an L2 miss only where the rows of
// every map start on 256-byte boundaries (tma_l2_promotion_bytes).
TEST(TmaL2Promotion, TwoHundredFiftySixOnlyWhereEveryMapsRowsStartOnBoundaries) {
  EXPECT_EQ(tma_l2_promotion_bytes({{0x10000, 2048}, {0x20000, 16384}}), 256);  // bf16 K = 1024, N = 8192
  EXPECT_EQ(tma_l2_promotion_bytes({{0x10000, 2048}, {0x20000, 6000}}), 128);   // N = 3000: B's rows off
  EXPECT_EQ(tma_l2_promotion_bytes({{0x10000, 6000}, {0x20000, 2048}}), 128);   // A's rows off
  EXPECT_EQ(tma_l2_promotion_bytes({{0x10080, 2048}, {0x20000, 2048}}), 128);   // A starts off a boundary
  EXPECT_EQ(tma_l2_promotion_bytes({{0x10000, 384}}), 128);                     // 128-byte lines, not 256
}

// ---- on a GPU ----

#define REQUIRE_GPU()                                                  \
  do {                                                                 \
    std::string why;                                                   \
    if (!cuda_gpu_available(&why)) GTEST_SKIP() << "no GPU: " << why; \
  } while (0)

// One GEMM through the front door (host arrays) against the FP64 oracle of the
// stored (rounded) inputs: the complete output, within the precision's bound.
void expect_gemm(const Plan& plan, GemmPrecision precision, int64_t m, int64_t n, int64_t k, float beta,
                 int split_k = 0) {
  SCOPED_TRACE(plan.to_string() + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
               " beta " + std::to_string(beta));
  std::mt19937_64 rng(static_cast<uint64_t>(m * 131 + n * 7 + k));
  std::vector<float> a(m * k), b(k * n), c(m * n);
  fill_random(a, rng);
  fill_random(b, rng);
  fill_random(c, rng);
  for (float& x : a) x = round_to_storage(precision, x);
  for (float& x : b) x = round_to_storage(precision, x);
  if (beta == 0) std::fill(c.begin(), c.end(), NAN);  // every element must be written
  const int64_t lda = std::max<int64_t>(k, 1);  // BLAS's rule: at least 1, even for K = 0
  std::vector<double> oracle = gemm_oracle(m, n, k, 1.5, a.data(), lda, b.data(), n, beta, c.data(), n);
  GemmOptions o;
  o.target = TargetKind::Cuda;
  o.precision = precision;
  o.plan = plan;
  o.split_k = split_k;
  GemmReport r = gemm(m, n, k, 1.5f, a.data(), lda, b.data(), n, beta, c.data(), n, o);
  EXPECT_EQ(r.plan.tma, true);
  EXPECT_EQ(r.split_k, gemm_split_k_slices(plan, m, n, k, o));
  if (split_k > 1 && k > 0) EXPECT_GT(r.split_k, 1);
  double err = gemm_relative_error(m, n, c.data(), n, oracle);
  EXPECT_LE(err, precision_error_bound(precision, k));
}

TEST(TmaPipelineGpu, EveryVariantMatchesTheOracleOnRaggedShapes) {
  REQUIRE_GPU();
  // Row strides must be multiples of 16 bytes (8 elements) for the tensor maps.
  const std::tuple<int64_t, int64_t, int64_t> shapes[] = {
      {128, 128, 64}, {200, 136, 328}, {70, 8, 1000}, {1, 8, 8}, {513, 264, 776}, {1000, 1000, 1000}, {16, 4096, 512}};
  for (GemmPrecision precision : {GemmPrecision::BF16, GemmPrecision::F16})
    for (const Variant& v : kVariants)
      for (auto [m, n, k] : shapes)
        for (float beta : {0.0f, 0.5f})
          expect_gemm(tma_plan(precision, v.bm, v.bn, v.warpgroups, v.window, v.producers), precision, m, n, k, beta);
}

// tf32: B transposed into scratch first, then read K-major (gemm.cpp, transposes_b);
// any K and N (the transposed copy's rows are padded to 128-byte lines: gemm_transposed_b_ld).
TEST(TmaPipelineGpu, Tf32VariantsMatchTheOracleOnRaggedShapes) {
  REQUIRE_GPU();
  const std::tuple<int64_t, int64_t, int64_t> shapes[] = {
      {128, 128, 64}, {200, 136, 328}, {70, 9, 1001}, {1, 8, 8}, {513, 261, 777}, {1000, 1000, 1000}, {64, 64, 0}};
  for (const Variant& v : kVariants)
    for (auto [m, n, k] : shapes)
      for (float beta : {0.0f, 0.5f})
        expect_gemm(tma_plan(GemmPrecision::TF32, v.bm, v.bn, v.warpgroups, v.window, v.producers),
                    GemmPrecision::TF32, m, n, k, beta);
}

// Two small ragged shapes per variant (bf16): quick enough for compute-sanitizer.
TEST(TmaPipelineGpu, SmallShapesForSanitizers) {
  REQUIRE_GPU();
  for (const Variant& v : kVariants)
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{200, 136, 328}, {70, 8, 1000}})
      for (GemmPrecision p : {GemmPrecision::BF16, GemmPrecision::TF32})
        for (float beta : {0.0f, 0.5f})  // C read through the stage too
          expect_gemm(tma_plan(p, v.bm, v.bn, v.warpgroups, v.window, v.producers), p, m, n, k, beta);
}

// 7 groups walk 4x8 .. 8x4 tiles several each; 132 groups: one tile each or none.
TEST(TmaPipelineGpu, PersistentGridsMatchTheOracle) {
  REQUIRE_GPU();
  for (auto [groups, band] : {std::pair{7, 3}, {132, 8}, {1, 1}})
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1000, 1000, 520}, {513, 2056, 136}, {70, 8, 1000}})
      for (float beta : {0.0f, 0.5f})
        expect_gemm(persistent_plan(GemmPrecision::BF16, groups, band), GemmPrecision::BF16, m, n, k, beta);
}

// Host arrays reach the device with rows padded to 16 bytes, whatever K and N.
TEST(TmaPipelineGpu, KZeroAndRowStridesOffSixteenBytes) {
  REQUIRE_GPU();
  Plan plan = tma_plan(GemmPrecision::BF16, 128, 128, 2, 3, 1);
  expect_gemm(plan, GemmPrecision::BF16, 64, 64, 0, 0.0f);   // no stage at all: C = beta C
  expect_gemm(plan, GemmPrecision::BF16, 64, 67, 67, 0.0f);  // rows of A and B: 134 bytes
}

// Split-K (GemmOptions::split_k) under warp-specialized tma plans: slices whose
// last one overhangs K, few and many, beta 0 (NaN-poisoned C) and not, N on and off
// the partials' padded rows (gemm_split_partials_ld).
TEST(TmaPipelineGpu, SplitKMatchesTheOracle) {
  REQUIRE_GPU();
  for (const Variant& v : {kVariants[1], kVariants[2], kVariants[6], kVariants[7]})
    for (auto [m, n, k, split] : {std::tuple<int64_t, int64_t, int64_t, int>{70, 136, 1000, 3}, {16, 4096, 4096, 4},
                                  {200, 264, 2000, 5}, {1, 8, 700, 11}, {70, 137, 1000, 3}})
      for (float beta : {0.0f, 0.5f})
        expect_gemm(tma_plan(GemmPrecision::BF16, v.bm, v.bn, v.warpgroups, v.window, v.producers),
                    GemmPrecision::BF16, m, n, k, beta, split);
}

// Split-K in one kernel (gemm_split_k_fused_kernel: a ticket in the consumer role,
// the sum in the slice that draws the last) against the FP64 evaluator, under the
// tma plans with and without a producer: C NaN-poisoned when beta = 0, every
// counter back at 0 (run_checked compares them exactly).
TEST(TmaPipelineGpu, FusedSplitKMatchesTheEvaluator) {
  REQUIRE_GPU();
  const TileKernel kernel = gemm_split_k_fused_kernel(DType::BF16);
  for (int producers : {0, 1}) {
    Kernel compiled = compile(kernel, tma_plan(GemmPrecision::BF16, 128, 128, 2, 4, producers));
    for (auto [m, n, k, s, ks] : {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{70, 136, 1000, 3, 384},
                                  {200, 264, 2000, 5, 448}, {1, 8, 700, 11, 64}, {300, 120, 128, 2, 64}})
      for (double beta : {0.0, 0.5}) {
        const int64_t tiles = (m + 127) / 128 * ((n + 127) / 128);
        CheckedRun r = run_checked(compiled, {{"M", m}, {"N", n}, {"K", k}, {"S", s}, {"KS", ks}, {"Q", tiles}},
                                   {{"beta", beta}}, uint64_t(m + n + k), {}, beta == 0 ? std::set<std::string>{"C"}
                                                                                    : std::set<std::string>{});
        EXPECT_TRUE(r.ok) << producers << " producers, " << m << "x" << n << "x" << k << " S " << s << " beta "
                          << beta << ": worst " << r.worst << " bound " << r.bound;
      }
  }
}

// The masked product against the FP64 evaluator, on shapes with whole and edge tiles.
TEST(TmaPipelineGpu, PositionsInTheStagedEpilogueMatchTheEvaluator) {
  REQUIRE_GPU();
  Kernel compiled = compile(masked_product_kernel(), tma_plan(GemmPrecision::BF16, 128, 128, 2, 4, 1));
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{256, 384, 128}, {200, 136, 328}, {513, 264, 96}}) {
    for (double beta : {0.0, 0.5}) {
      CheckedRun r = run_checked(compiled, {{"M", m}, {"N", n}, {"K", k}}, {{"beta", beta}}, uint64_t(m + n + k), {},
                                 beta == 0 ? std::set<std::string>{"C"} : std::set<std::string>{});
      EXPECT_TRUE(r.ok) << m << "x" << n << "x" << k << " beta " << beta << ": worst " << r.worst << " bound "
                        << r.bound;
    }
  }
}

// The reread product on the GPU against the FP64 evaluator (C and D NaN-poisoned).
TEST(TmaPipelineGpu, ARunWhoseResultIsReadAgainMatchesTheEvaluator) {
  REQUIRE_GPU();
  Kernel compiled = compile(reread_product_kernel(), tma_plan(GemmPrecision::BF16, 128, 128, 2, 4, 1));
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{256, 384, 128}, {200, 136, 328}})
    for (double flag : {0.0, 1.0}) {
      CheckedRun r = run_checked(compiled, {{"M", m}, {"N", n}, {"K", k}}, {{"flag", flag}}, uint64_t(m + k), {},
                                 {"C", "D"});
      EXPECT_TRUE(r.ok) << m << "x" << n << "x" << k << " flag " << flag << ": worst " << r.worst;
    }
}

}  // namespace
}  // namespace tessel

#else
TEST(TmaPipelineCompile, Skipped) { GTEST_SKIP() << "tessel was built without the CUDA toolkit"; }
#endif
