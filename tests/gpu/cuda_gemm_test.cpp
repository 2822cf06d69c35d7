// GEMM on the GPU through the cuda target, every precision, against an FP64 oracle
// computed from the stored (rounded) inputs, over the complete output. Inputs are
// fresh random non-zero numbers; with beta == 0, C is NaN-poisoned first; C's
// padding columns (ldc > N) hold a sentinel that must survive. Without a GPU every
// test here is skipped, visibly.
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "compiler/compile.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_reference.h"
#include "plan/machine.h"
#include "target/cuda/cuda_driver.h"
#include "target/cuda/cuda_kernel.h"
#include "target/cuda/cuda_memory.h"

namespace tessel {
namespace {

constexpr float kSentinel = -12345.0f;

// GTEST_SKIP returns only from the function it is written in, so this is a macro:
// the test body itself must return.
#define REQUIRE_GPU()                                                  \
  do {                                                                 \
    std::string why;                                                   \
    if (!cuda_gpu_available(&why)) GTEST_SKIP() << "no GPU: " << why; \
  } while (0)

struct Case {
  int64_t m, n, k;
  GemmPrecision p;
  double alpha, beta;
  int64_t pad;  // extra elements per row of A, B and C (0, or 3 to misalign rows)
};

std::string name(const Case& c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + " " +
         precision_name(c.p) + " alpha " + std::to_string(c.alpha) + " beta " + std::to_string(c.beta) +
         " pad " + std::to_string(c.pad);
}

// Packs fp32 values as the precision stores them.
std::vector<char> stored(const std::vector<float>& v, GemmPrecision p) {
  DType t = storage_dtype(p);
  std::vector<char> out(v.size() * dtype_bytes(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&out[i * 4], &v[i], 4);
    } else {
      uint16_t h = t == DType::BF16 ? float_to_bf16(v[i]) : float_to_f16(v[i]);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

// One case's inputs (fresh random, rounded to the storage type; C NaN-poisoned when
// beta == 0, padding columns holding a sentinel) and its FP64 oracle.
struct Prepared {
  std::vector<float> A, B, C;
  std::vector<double> oracle;
};

Prepared prepare(const Case& c, uint64_t seed) {
  const int64_t lda = std::max<int64_t>(1, c.k + c.pad), ldb = c.n + c.pad, ldc = c.n + c.pad;
  std::mt19937_64 rng(seed);
  Prepared in;
  in.A.resize(c.m * lda), in.B.resize(c.k * ldb), in.C.resize(c.m * ldc);
  fill_random(in.A, rng);
  fill_random(in.B, rng);
  fill_random(in.C, rng);
  for (float& x : in.A) x = round_to_storage(c.p, x);  // the oracle sees what the GPU sees
  for (float& x : in.B) x = round_to_storage(c.p, x);
  for (int64_t r = 0; r < c.m; ++r)
    for (int64_t j = 0; j < ldc; ++j)
      if (j >= c.n) in.C[r * ldc + j] = kSentinel;
      else if (c.beta == 0) in.C[r * ldc + j] = NAN;
  in.oracle = gemm_oracle(c.m, c.n, c.k, c.alpha, in.A.data(), lda, in.B.data(), ldb, c.beta, in.C.data(), ldc);
  return in;
}

// Runs one case on device pointers (the kernel sees the real leading dimensions)
// with the given plan (null: the default) and returns C; fails on padding damage.
// shift: A and B start that many bytes into their buffers; *ran: the call's report.
std::vector<float> run_prepared(const Case& c, const Prepared& in, const Plan* plan, size_t shift = 0,
                                GemmReport* ran = nullptr, bool stream_k = false) {
  const int64_t lda = std::max<int64_t>(1, c.k + c.pad), ldb = c.n + c.pad, ldc = c.n + c.pad;
  const std::vector<float>& C = in.C;
  std::vector<char> a = stored(in.A, c.p), b = stored(in.B, c.p);
  DeviceBuffer da(std::max<size_t>(a.size(), 16) + shift), db(std::max<size_t>(b.size(), 16) + shift),
      dc(C.size() * 4);
  da.upload(a.data(), a.size(), shift);
  db.upload(b.data(), b.size(), shift);
  dc.upload(C.data(), C.size() * 4);
  GemmOptions o;
  o.target = TargetKind::Cuda;
  o.precision = c.p;
  o.device_pointers = true;
  o.stream_k = stream_k;
  if (plan) o.plan = *plan;
  const char* pa = static_cast<const char*>(da.get()) + shift;
  const char* pb = static_cast<const char*>(db.get()) + shift;
  GemmReport r = gemm(c.m, c.n, c.k, float(c.alpha), reinterpret_cast<const float*>(pa), lda,
                      reinterpret_cast<const float*>(pb), ldb, float(c.beta), static_cast<float*>(dc.get()), ldc, o);
  if (ran) *ran = r;
  cuda_synchronize();
  std::vector<float> out(C.size());
  dc.download(out.data(), out.size() * 4);
  int64_t damaged = 0;
  for (int64_t r = 0; r < c.m; ++r)
    for (int64_t j = c.n; j < ldc; ++j) damaged += out[r * ldc + j] != kSentinel;
  EXPECT_EQ(damaged, 0) << name(c) << ": padding columns written";
  return out;
}

double run_case(const Case& c, uint64_t seed) {
  Prepared in = prepare(c, seed);
  std::vector<float> out = run_prepared(c, in, nullptr);
  return gemm_relative_error(c.m, c.n, out.data(), c.n + c.pad, in.oracle);
}

void check(const Case& c, uint64_t seed) {
  double err = run_case(c, seed), bound = precision_error_bound(c.p, c.k);
  EXPECT_LE(err, bound) << name(c);
  std::printf("[gpu] %-52s rel_err %.3g (bound %.3g)\n", name(c).c_str(), err, bound);
}

// 16-bit default plans on sm_90 stage through tensor maps where the rows allow it
// or the work pays for copying the operands to 16-byte rows first (tma_operand in
// gemm.cpp); smaller shapes with other rows keep cp.async. Every run matches the
// oracle, and each case runs twice on fresh inputs: the second call takes the
// repeated-call path, which must copy the new operands again. Few-tile, long-K
// shapes split K (split-K: a second kernel sums the slices).
TEST(CudaGemm, DefaultSixteenBitPlansTakeTmaWhereRowsAllow) {
  EXPECT_TRUE(default_gemm_plan(TargetKind::Cuda, 1024, 1024, 1024, GemmPrecision::BF16, "sm_90").tma);
  EXPECT_TRUE(default_gemm_plan(TargetKind::Cuda, 16, 4096, 4096, GemmPrecision::F16, "sm_90").tma);
  EXPECT_TRUE(default_gemm_plan(TargetKind::Cuda, 1000, 1000, 1001, GemmPrecision::BF16, "sm_90").tma);
  EXPECT_FALSE(default_gemm_plan(TargetKind::Cuda, 520, 264, 770, GemmPrecision::BF16, "sm_90").tma);
  EXPECT_FALSE(default_gemm_plan(TargetKind::Cuda, 512, 512, 512, GemmPrecision::F32, "sm_90").tma);
  // The tile with the fewest estimated waves of work (choose_wgmma_tile): 1536^3
  // fills one wave with 96 128x192 tiles, where 72 of 128x256 leave 60
  // multiprocessors idle; 1024^3 with 128 64x128 tiles; 4096^3 keeps the widest;
  // three consumer warpgroups: 3000^3 in 256 192x192 tiles (two waves: the work of
  // 128x192's three at a higher rate; 128x256 needs three of larger tiles), 6000x1024
  // in 256 192x128 ones (two waves, where 128x192 needs three). Past a wave, the last
  // wave's fill (kWgmmaLastWaveFloor) and the refitted rates moved these (bf16 on the
  // H200, twenty-eighth session: old tile -> new, x cuBLAS): 5312x4952x1448 128x256 ->
  // 192x192 0.87 -> 0.94, 4168x1400x2304 128x192 -> 192x128 0.69 -> 0.78,
  // 3456x2984x5496 128x128 -> 128x256 0.65 -> 0.79, 1696x2696x2432 128x192 -> 192x128
  // 0.66 -> 0.78.
  auto tile = [](int64_t m, int64_t n, int64_t k) {
    Plan p = default_gemm_plan(TargetKind::Cuda, m, n, k, GemmPrecision::BF16, "sm_90");
    return std::to_string(p.tile("BM")) + "x" + std::to_string(p.tile("BN")) + "/" + std::to_string(p.workers);
  };
  if (cuda_multiprocessors() == 132) {
    EXPECT_EQ(tile(1536, 1536, 1536), "128x192/2");
    EXPECT_EQ(tile(1024, 1024, 1024), "64x128/1");
    EXPECT_EQ(tile(1280, 1280, 1280), "128x128/2");
    EXPECT_EQ(tile(4096, 4096, 4096), "128x256/2");
    EXPECT_EQ(tile(3000, 3000, 3000), "192x192/3");
    EXPECT_EQ(tile(6000, 1024, 2048), "192x128/3");
    EXPECT_EQ(tile(5312, 4952, 1448), "192x192/3");
    EXPECT_EQ(tile(4168, 1400, 2304), "192x128/3");
    EXPECT_EQ(tile(3456, 2984, 5496), "128x256/2");
    EXPECT_EQ(tile(1696, 2696, 2432), "192x128/3");
  }
  REQUIRE_GPU();
  if (default_cuda_arch() != "sm_90") GTEST_SKIP() << "wgmma needs sm_90; this GPU is " << default_cuda_arch();
  struct Run {
    Case c;
    size_t shift;
    bool tma;
    bool split = false;
  };
  const Run runs[] = {{{520, 264, 776, GemmPrecision::BF16, 1.5, 0, 0}, 0, true},
                      {{16, 4096, 4096, GemmPrecision::BF16, 1.0, 0, 0}, 0, true, true},
                      {{24, 4096, 3000, GemmPrecision::F16, 0.5, -1.0, 3}, 2, true, true},  // copied and split
                      {{520, 264, 776, GemmPrecision::F16, 1.5, 0.5, 8}, 0, true},     // rows of 16-byte multiples
                      {{520, 264, 776, GemmPrecision::BF16, 1.5, 0, 3}, 0, true},      // rows off 16 bytes: copied
                      {{520, 264, 776, GemmPrecision::BF16, 1.5, 0.5, 0}, 2, true},    // A and B off 16 bytes: copied
                      {{520, 264, 770, GemmPrecision::BF16, 1.5, 0.5, 0}, 0, false, true},  // K off 8, too small
                                                                                           // to copy: mma.sync, split
                      {{1000, 1000, 1001, GemmPrecision::BF16, 1.0, 0, 0}, 0, true},   // A copied
                      {{777, 1001, 1003, GemmPrecision::F16, -0.5, 2.0, 0}, 2, true},  // A and B copied
                      {{1024, 1024, 1024, GemmPrecision::F16, -1.0, 0, 0}, 0, true},
                      {{1536, 1530, 136, GemmPrecision::BF16, 1.0, 0, 0}, 0, true},   // 128x192 tiles
                      {{2900, 2950, 72, GemmPrecision::BF16, 1.0, 0.5, 0}, 0, true},  // 192x192 tiles
                      {{5900, 1000, 72, GemmPrecision::F16, -1.0, 0, 0}, 0, true}};   // 192x128 tiles
  uint64_t seed = 77;
  for (const Run& run : runs)
    for (int call = 0; call < 2; ++call) {
      Prepared in = prepare(run.c, seed++);
      GemmReport ran;
      std::vector<float> out = run_prepared(run.c, in, nullptr, run.shift, &ran);
      EXPECT_EQ(ran.plan.tma, run.tma) << name(run.c) << " shift " << run.shift << ": " << ran.plan.to_string();
      if (run.tma) {
        EXPECT_EQ(ran.plan.atom, AtomKind::Wgmma) << ran.plan.to_string();
      }
      EXPECT_EQ(ran.split_k > 1, run.split) << name(run.c) << ": split_k " << ran.split_k;
      double err = gemm_relative_error(run.c.m, run.c.n, out.data(), run.c.n + run.c.pad, in.oracle);
      EXPECT_LE(err, precision_error_bound(run.c.p, run.c.k))
          << name(run.c) << " shift " << run.shift << " call " << call;
    }
}

const GemmPrecision kAll[] = {GemmPrecision::F32, GemmPrecision::TF32, GemmPrecision::BF16, GemmPrecision::F16};

// The default plan of `c` has `atom` and splits K (no GPU needed).
void expect_default_plan_splits(const Case& c, AtomKind atom) {
  GemmOptions o;
  o.target = TargetKind::Cuda;
  o.precision = c.p;
  Plan plan = default_gemm_plan(TargetKind::Cuda, c.m, c.n, c.k, c.p, "sm_90");
  EXPECT_EQ(plan.atom, atom) << name(c);
  EXPECT_GT(gemm_split_k_slices(plan, c.m, c.n, c.k, o), 1) << name(c) << ": " << plan.to_string();
}

// Stream-K (GemmOptions::stream_k) on the default 16-bit plans' tiles: 64x128 (one
// tile of 256x256x4096 shared by 64 groups; rows off 16 bytes, copied; beta read),
// 128x192 (1024x5000x3000, 216 tiles on 132 groups), 192x192 (2900x2950x72: one k
// step a tile, ranges of whole tiles), rows padded to 16 bytes. C poisoned at beta 0;
// two calls each on fresh inputs, the second on the bound launch, whose tile
// counters the first must have left at 0.
TEST(CudaGemm, StreamKMatchesTheOracle) {
  REQUIRE_GPU();
  if (default_cuda_arch() != "sm_90") GTEST_SKIP() << "wgmma needs sm_90; this GPU is " << default_cuda_arch();
  const Case cases[] = {{256, 256, 4096, GemmPrecision::BF16, 1.0, 0, 0},
                        {1000, 1000, 1001, GemmPrecision::F16, -0.5, 2.0, 0},
                        {1024, 5000, 3000, GemmPrecision::BF16, 1.0, 0, 0},
                        {2900, 2950, 72, GemmPrecision::BF16, 1.0, 0.5, 0},
                        {520, 264, 776, GemmPrecision::F16, 1.5, 0.5, 8}};
  uint64_t seed = 501;
  for (const Case& c : cases)
    for (int call = 0; call < 2; ++call) {
      Prepared in = prepare(c, seed++);
      GemmReport ran;
      std::vector<float> out = run_prepared(c, in, nullptr, 0, &ran, /*stream_k=*/true);
      EXPECT_GT(ran.stream_k_groups, 0) << name(c) << ": " << ran.plan.to_string();
      EXPECT_EQ(ran.split_k, 1) << name(c);
      double err = gemm_relative_error(c.m, c.n, out.data(), c.n + c.pad, in.oracle);
      EXPECT_LE(err, precision_error_bound(c.p, c.k)) << name(c) << " call " << call;
    }
}

// Two calls of `c` through the front door (the second reusing the slices'
// scratch): each splits and matches the oracle.
void check_split_twice(const Case& c, uint64_t& seed) {
  for (int call = 0; call < 2; ++call) {
    Prepared in = prepare(c, seed++);
    GemmReport ran;
    std::vector<float> out = run_prepared(c, in, nullptr, 0, &ran);
    EXPECT_GT(ran.split_k, 1) << name(c);
    double err = gemm_relative_error(c.m, c.n, out.data(), c.n + c.pad, in.oracle);
    EXPECT_LE(err, precision_error_bound(c.p, c.k)) << name(c) << " call " << call;
  }
}

// fp32's fma plans split K where few tiles meet a long K (choose_split_k): the
// default plans of these shapes split, and the result matches the oracle: C
// poisoned (beta 0) and read (beta != 0), rows off 16 bytes (pad 3), a last slice
// that overhangs K. Two calls each, the second reusing the slices' scratch.
TEST(CudaGemm, Fp32FewTilesLongKSplits) {
  const Case cases[] = {{32, 1024, 8192, GemmPrecision::F32, 1.0, 0, 0},
                        {40, 700, 3000, GemmPrecision::F32, -0.5, 1.5, 3},
                        {128, 512, 2047, GemmPrecision::F32, 2.0, 0, 0}};
  for (const Case& c : cases) expect_default_plan_splits(c, AtomKind::Fma);
  REQUIRE_GPU();
  uint64_t seed = 901;
  for (const Case& c : cases) check_split_twice(c, seed);
}

// Few-tile, long-K shapes on small blocks (mma.sync for 16-bit and tf32 under 2^27
// multiply-adds, fp32's 32x32 fma tiles) split since the twenty-sixth session.
TEST(CudaGemm, SmallBlocksFewTilesLongKSplit) {
  const Case cases[] = {{64, 64, 16384, GemmPrecision::BF16, 1.0, 0, 0},
                        {33, 130, 6000, GemmPrecision::F16, -0.5, 1.5, 3},
                        {100, 100, 5001, GemmPrecision::BF16, 2.0, 0, 8},
                        {16, 2048, 4096, GemmPrecision::F32, 1.0, 0, 0},
                        {64, 96, 8000, GemmPrecision::TF32, 1.0, 0.5, 0}};
  for (const Case& c : cases)
    expect_default_plan_splits(c, c.p == GemmPrecision::F32 ? AtomKind::Fma : AtomKind::MmaSync);
  REQUIRE_GPU();
  uint64_t seed = 951;
  for (const Case& c : cases) check_split_twice(c, seed);
}

TEST(CudaGemm, SeedShapesEveryPrecision) {
  REQUIRE_GPU();
  const int64_t shapes[][3] = {{32, 32, 32},     {128, 128, 128},  {512, 512, 512},  {1024, 1024, 1024},
                               {256, 1024, 128}, {1024, 128, 256}, {127, 193, 61},   {513, 257, 129}};
  uint64_t seed = 1;
  for (GemmPrecision p : kAll)
    for (auto& s : shapes) check({s[0], s[1], s[2], p, 1.0, 0.0, 0}, seed++);
}

TEST(CudaGemm, BetaAlphaAndMisalignedRows) {
  REQUIRE_GPU();
  uint64_t seed = 100;
  for (GemmPrecision p : kAll) {
    check({200, 136, 72, p, 0.75, 0.5, 0}, seed++);
    check({200, 136, 72, p, -1.5, 0.0, 3}, seed++);   // odd leading dimensions: fp32 4-byte, 16-bit scalar copies
    check({129, 257, 100, p, 1.0, 2.0, 8}, seed++);   // aligned padding: vector copies
    check({1, 1, 1, p, 1.0, 0.0, 0}, seed++);
    check({3, 5, 0, p, 1.0, 0.5, 0}, seed++);         // K = 0: C = beta * C
  }
}

// Rows off 16 bytes but on 4 (even leading dimensions of 16-bit operands, any of
// fp32) take 4-byte async copies; a base off 4 bytes (shift 2: 16-bit only) the
// scalar ones. Small shapes below the size that copies operands to 16-byte rows
// first; each run against the oracle, C NaN-poisoned where beta is 0.
TEST(CudaGemm, RowsOnFourBytesCopyAsynchronously) {
  REQUIRE_GPU();
  uint64_t seed = 400;
  for (GemmPrecision p : kAll)
    for (size_t shift : {size_t(0), size_t(4), size_t(2)}) {
      if (shift == 2 && dtype_bytes(storage_dtype(p)) == 4) continue;  // fp32 elements sit on 4 bytes
      for (const Case& c : {Case{250, 130, 250, p, 1.0, 0.0, 0}, Case{100, 98, 102, p, 0.75, 0.5, 2},
                            Case{33, 70, 18, p, -1.0, 0.0, 4}}) {
        Prepared in = prepare(c, seed++);
        std::vector<float> out = run_prepared(c, in, nullptr, shift);
        double err = gemm_relative_error(c.m, c.n, out.data(), c.n + c.pad, in.oracle);
        EXPECT_LE(err, precision_error_bound(p, c.k)) << name(c) << " shift " << shift;
      }
    }
}

// The wgmma atom (sm_90) under every tile class and window (W = 2 with sync and with
// async copies, W = 3, 4 async, where one mma stays in flight): each plan's complete
// output against one oracle per case, and every window bit for bit equal to
// window 1 (pipelining must not reorder arithmetic). Odd leading dimensions take the
// scalar copy path into the swizzled buffers, even ones the 4-byte path; aligned
// ones the 16-byte paths.
TEST(CudaGemm, WgmmaPlansEveryWindow) {
  REQUIRE_GPU();
  struct Tile {
    int64_t bm, bn;
    int warpgroups;
  };
  const Tile tiles[] = {{64, 64, 1}, {128, 128, 2}, {256, 128, 4}, {128, 64, 1}, {128, 256, 2}, {128, 192, 2},
                        {192, 192, 3}, {192, 128, 3}};
  const Case cases[] = {{32, 32, 32, GemmPrecision::BF16, 1, 0, 0},      {128, 128, 128, GemmPrecision::F16, 1, 0, 0},
                        {512, 512, 512, GemmPrecision::BF16, 1, 0, 0},   {1024, 1024, 1024, GemmPrecision::BF16, 1, 0, 0},
                        {256, 1024, 128, GemmPrecision::F16, 1, 0, 0},   {1024, 128, 256, GemmPrecision::BF16, 1, 0, 0},
                        {127, 193, 61, GemmPrecision::BF16, 1, 0, 0},    {513, 257, 129, GemmPrecision::F16, 1, 0, 0},
                        {300, 200, 100, GemmPrecision::BF16, 0.75, 0.5, 3}, {200, 136, 72, GemmPrecision::F16, -1.5, 0, 8},
                        {250, 130, 250, GemmPrecision::BF16, 1, 0, 0}};  // rows on 4 bytes: 4-byte async copies
  uint64_t seed = 5000;
  for (const Case& c : cases) {
    Prepared in = prepare(c, seed++);
    for (const Tile& t : tiles) {
      std::vector<float> first;
      for (auto [window, async] : {std::pair{1, false}, {2, false}, {2, true}, {3, true}, {4, true}}) {
        Plan plan = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, c.p);
        ASSERT_EQ(plan.atom, AtomKind::Wgmma);
        plan.tiles["BM"] = t.bm, plan.tiles["BN"] = t.bn, plan.workers = t.warpgroups;
        plan.window = window;
        plan.async_copy = async;
        plan.tma = false;  // the thread copies (tensor maps: TmaPipelineGpu)
        plan.producers = 0;
        std::vector<float> out = run_prepared(c, in, &plan);
        double err = gemm_relative_error(c.m, c.n, out.data(), c.n + c.pad, in.oracle);
        double bound = precision_error_bound(c.p, c.k);
        EXPECT_LE(err, bound) << name(c) << " " << plan.to_string();
        if (window == 1) {
          first = out;
          std::printf("[gpu] wgmma %-44s %-40s rel_err %.3g (bound %.3g)\n", name(c).c_str(),
                      plan.to_string().c_str(), err, bound);
        } else {
          EXPECT_EQ(std::memcmp(out.data(), first.data(), out.size() * 4), 0)
              << name(c) << " " << plan.to_string() << ": bits differ from window 1";
        }
      }
    }
  }
}

// Tile widths that are no multiple of B's 64-column panels (wgmma n 240, 208, 176,
// 80), under the default plans' tensor maps and producer warpgroup: B's last panel is
// copied whole; ragged and aligned shapes, beta read and C NaN-poisoned.
TEST(CudaGemm, TileWidthsOffThePanelsMatchTheOracle) {
  REQUIRE_GPU();
  const std::tuple<int64_t, int64_t, int> tiles[] = {{128, 240, 2}, {128, 208, 2}, {192, 176, 3}, {64, 80, 1}};
  const Case cases[] = {{1000, 1000, 700, GemmPrecision::BF16, 1, 0, 0},
                        {517, 999, 333, GemmPrecision::F16, 1, 0, 0},
                        {256, 480, 128, GemmPrecision::BF16, 0.5, -1.5, 0},
                        {300, 200, 100, GemmPrecision::F16, 1, 2, 8}};
  uint64_t seed = 7100;
  for (const Case& c : cases) {
    Prepared in = prepare(c, seed++);
    for (auto [bm, bn, warpgroups] : tiles) {
      Plan plan = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, c.p);
      ASSERT_TRUE(plan.tma) << plan.to_string();
      plan.tiles["BM"] = bm, plan.tiles["BN"] = bn;
      plan.workers = plan.worker_rows = warpgroups, plan.worker_cols = 1;
      std::vector<float> out = run_prepared(c, in, &plan);
      const double err = gemm_relative_error(c.m, c.n, out.data(), c.n + c.pad, in.oracle);
      EXPECT_LE(err, precision_error_bound(c.p, c.k)) << name(c) << " " << plan.to_string();
    }
  }
}

// Clusters (Plan::cluster): pairs (and fours) of blocks along the tile rows share
// B's boxes (a 192 x 128 tile: A's, along the tile columns), each copying a part
// multicast to all. Tile counts that are odd run a block past the edge, which
// stages zeros and stores nothing; a 128-wide tile splits its B box by columns, a
// 192-wide one by rows. Ragged and aligned shapes,
// beta read and C NaN-poisoned, misaligned rows.
TEST(CudaGemm, ClusterPlansMatchTheOracle) {
  REQUIRE_GPU();
  const std::tuple<int64_t, int64_t, int> tiles[] = {{128, 256, 2}, {128, 192, 2}, {128, 128, 2}, {64, 80, 2},
                                                     {192, 128, 2}, {128, 256, 4}};
  const Case cases[] = {{517, 999, 333, GemmPrecision::F16, 1, 0, 0},
                        {300, 480, 128, GemmPrecision::BF16, 0.5, -1.5, 0},
                        {100, 200, 1000, GemmPrecision::F16, 1, 2, 8}};
  uint64_t seed = 7300;
  for (const Case& c : cases) {
    Prepared in = prepare(c, seed++);
    for (auto [bm, bn, cluster] : tiles) {
      Plan plan = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, c.p);
      ASSERT_TRUE(plan.tma && plan.producers > 0 && plan.persistent == 0) << plan.to_string();
      plan.tiles["BM"] = bm, plan.tiles["BN"] = bn;
      plan.workers = plan.worker_rows = static_cast<int>(bm / 64), plan.worker_cols = 1;
      plan.cluster = cluster;
      GemmReport ran;
      std::vector<float> out = run_prepared(c, in, &plan, 0, &ran);
      EXPECT_EQ(ran.plan.cluster, cluster) << name(c) << " " << ran.plan.to_string();
      const double err = gemm_relative_error(c.m, c.n, out.data(), c.n + c.pad, in.oracle);
      EXPECT_LE(err, precision_error_bound(c.p, c.k)) << name(c) << " " << plan.to_string();
      std::printf("[gpu] cluster %-44s %-40s rel_err %.3g\n", name(c).c_str(), plan.to_string().c_str(), err);
    }
  }
}

// The fp32 tiles: 128x64x32 through tensor maps (kFmaMid*) from K = 192 where the
// 64x64 tiles are more than one wave, whatever the class, with four stages from K =
// 512; else 64x64x16 (up to 1024^2 outputs) or 128x128 (K from 512: 32-deep).
TEST(CudaGemm, DefaultFp32TilesByDepthAndWaveFill) {
  if (cuda_multiprocessors() != 132) GTEST_SKIP() << "the picks below assume 132 multiprocessors";
  auto tile = [](int64_t m, int64_t n, int64_t k) {
    Plan p = default_gemm_plan(TargetKind::Cuda, m, n, k, GemmPrecision::F32, "sm_90");
    return std::to_string(p.tile("BM")) + "x" + std::to_string(p.tile("BN")) + "x" + std::to_string(p.tile("BK")) +
           "/" + std::to_string(p.window);
  };
  EXPECT_EQ(tile(4096, 4096, 4096), "128x64x32/4");
  EXPECT_EQ(tile(5000, 3000, 2500), "128x64x32/4");
  EXPECT_EQ(tile(2816, 1536, 520), "128x64x32/4");
  EXPECT_EQ(tile(4096, 4000, 1024), "128x64x32/4");     // N ends inside a tile
  EXPECT_EQ(tile(3000, 2000, 1500), "128x64x32/4");
  EXPECT_EQ(tile(1000, 1000, 1000), "128x64x32/4");     // 256 of 64x64
  EXPECT_EQ(tile(3000, 3000, 300), "128x64x32/3");
  EXPECT_EQ(tile(1000, 1000, 200), "128x64x32/3");
  EXPECT_EQ(tile(3000, 3000, 128), "128x128x8/2");      // K below 192 (and 512)
  EXPECT_EQ(tile(1000, 1000, 128), "64x64x16/2");
  EXPECT_EQ(tile(1024, 512, 1024), "64x64x16/2");       // 128 of 64x64: one wave
  EXPECT_EQ(tile(512, 512, 512), "64x64x16/2");
  EXPECT_EQ(tile(512, 512, 4096), "64x64x16/2");          // not the largest class
}

// The default fp32 kernels with 32-deep k tiles through tensor maps, 128x64 tiles
// (kFmaMid*) with three and four stages: ragged M, N and K (the last k tile partial),
// rows on 16 bytes and off them, beta on and off. (The 128x128 and 256x128 tiles: the
// test after.)
TEST(CudaGemm, DeepFp32TilesMatchTheOracle) {
  REQUIRE_GPU();
  const Case cases[] = {{1100, 1000, 600, GemmPrecision::F32, 1, 0, 0},
                        {1031, 1029, 531, GemmPrecision::F32, 0.5, 2, 3},
                        {1030, 1100, 1000, GemmPrecision::F32, -1, 0.25, 8},
                        {998, 1002, 250, GemmPrecision::F32, 1, 0, 0},
                        {2816, 1536, 520, GemmPrecision::F32, 1, 0, 0},
                        {2790, 1527, 611, GemmPrecision::F32, 0.5, 1.5, 3}};
  uint64_t seed = 9100;
  std::set<std::string> tiles;
  for (const Case& c : cases) {
    const Plan plan = default_gemm_plan(TargetKind::Cuda, c.m, c.n, c.k, c.p);
    ASSERT_EQ(plan.tile("BK"), 32) << name(c);
    ASSERT_EQ(plan.atom, AtomKind::Fma) << name(c);
    tiles.insert(std::to_string(plan.tile("BM")) + "x" + std::to_string(plan.tile("BN")) + "/" +
                 std::to_string(plan.window));
    check(c, seed++);
  }
  EXPECT_EQ(tiles, (std::set<std::string>{"128x64/3", "128x64/4"}))
      << "on this GPU (" << cuda_multiprocessors() << " multiprocessors)";
}

// The fma atom's operands staged by tensor maps (Plan::tma): 128-byte-swizzled
// lines, B in panels of 32 columns, the leader thread refilling each stage once
// every worker released it. Same FMAs in the same order as the thread copies: the
// same bits, and within the oracle's bound. The three deep tiles, two to four stages.
void check_fma_through_tensor_maps(const Case& c, uint64_t seed) {
  Prepared in = prepare(c, seed);
  for (auto [bm, bn] : {std::pair<int64_t, int64_t>{256, 128}, {128, 128}, {128, 64}})
    for (int window : {2, 3, 4}) {
      Plan plan = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, c.p);
      ASSERT_EQ(plan.atom, AtomKind::Fma);
      plan.tiles["BM"] = bm;
      plan.tiles["BN"] = bn;
      plan.atom_m = plan.atom_n = bm * bn / plan.workers >= 64 ? 8 : 4;  // as the defaults had them
      plan.tma = false;
      plan.async_copy = true;
      const std::vector<float> copied = run_prepared(c, in, &plan);
      plan.tma = true;
      plan.window = window;
      const std::vector<float> out = run_prepared(c, in, &plan);
      const double err = gemm_relative_error(c.m, c.n, out.data(), c.n + c.pad, in.oracle);
      EXPECT_LE(err, precision_error_bound(c.p, c.k)) << name(c) << " " << plan.to_string();
      EXPECT_EQ(std::memcmp(out.data(), copied.data(), out.size() * 4), 0)
          << name(c) << " " << plan.to_string() << ": bits differ from the thread copies";
    }
}

// Ragged M, N and K, rows off 16 bytes (gemm() copies such operands for the tensor
// maps), beta read and C NaN-poisoned.
TEST(CudaGemm, FmaAtomThroughTensorMapsMatchesThreadCopies) {
  REQUIRE_GPU();
  check_fma_through_tensor_maps({1031, 1029, 531, GemmPrecision::F32, 0.5, 2, 3}, 9300);
  check_fma_through_tensor_maps({2800, 1530, 520, GemmPrecision::F32, 1, 0, 0}, 9301);
}

// Small ones, quick enough for compute-sanitizer: one stage partial, K below one
// k tile, rows on 16 bytes and off them.
TEST(CudaGemm, FmaAtomThroughTensorMapsSmallShapes) {
  REQUIRE_GPU();
  check_fma_through_tensor_maps({300, 200, 100, GemmPrecision::F32, -1, 0.25, 8}, 9302);
  check_fma_through_tensor_maps({37, 45, 5, GemmPrecision::F32, 1, 0, 0}, 9303);
  check_fma_through_tensor_maps({130, 70, 77, GemmPrecision::F32, 1, 0, 3}, 9304);
}

// The default fp32 plans of the deep tiles take tensor maps on sm_90 where the rows
// allow it or the work pays for copying the operands (as 16-bit ones do).
TEST(CudaGemm, DeepFp32DefaultsStageThroughTensorMaps) {
  auto plan = [](int64_t m, int64_t n, int64_t k) {
    return default_gemm_plan(TargetKind::Cuda, m, n, k, GemmPrecision::F32, "sm_90a");
  };
  EXPECT_TRUE(plan(4096, 4096, 4096).tma);
  EXPECT_EQ(plan(4096, 4096, 4096).window, 4);
  EXPECT_TRUE(plan(3000, 2000, 1500).tma);
  EXPECT_TRUE(plan(1031, 1029, 531).tma);  // off 16 bytes, but past 2^27 multiply-adds
  EXPECT_FALSE(plan(3000, 3000, 128).tma);  // 8-deep tiles: cp.async
  EXPECT_TRUE(plan(1000, 1000, 1000).tma);  // 128x64 tiles (kFmaMid*)
  EXPECT_EQ(plan(1000, 1000, 1000).window, 4);
  EXPECT_EQ(plan(2000, 2000, 256).window, 3);
  EXPECT_FALSE(default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::F32, "sm_80").tma);
}

// Register-level double buffering of the fragments (Plan::frag_buffers 2) changes
// when operands reach registers, not the arithmetic: the same bits as one set, and
// within the oracle's bound, for the fma and mma.sync atoms.
TEST(CudaGemm, DoubleBufferedFragmentsAreBitIdentical) {
  REQUIRE_GPU();
  const Case cases[] = {{513, 257, 129, GemmPrecision::F32, 1, 0, 0},  {1024, 1024, 1024, GemmPrecision::F32, 1, 0, 0},
                        {127, 193, 61, GemmPrecision::F32, 0.5, 2, 3}, {513, 257, 129, GemmPrecision::TF32, 1, 0, 0},
                        {1500, 1100, 64, GemmPrecision::TF32, 1, 0, 0},  // mma.sync's large class (wgmma from 2^27)
                        {513, 257, 129, GemmPrecision::BF16, 1, 0, 0},
                        {700, 600, 203, GemmPrecision::F16, 1, 0.5, 8}};  // K off 8: no tma, mma.sync
  uint64_t seed = 7000;
  for (const Case& c : cases) {
    Prepared in = prepare(c, seed++);
    Plan plan = default_gemm_plan(TargetKind::Cuda, c.m, c.n, c.k, c.p);
    ASSERT_NE(plan.atom, AtomKind::Wgmma) << name(c);
    std::vector<float> one = run_prepared(c, in, &plan);
    plan.frag_buffers = 2;
    std::vector<float> two = run_prepared(c, in, &plan);
    double err = gemm_relative_error(c.m, c.n, two.data(), c.n + c.pad, in.oracle);
    EXPECT_LE(err, precision_error_bound(c.p, c.k)) << name(c);
    EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * 4), 0) << name(c) << ": bits differ";
    std::printf("[gpu] frag x2 %-44s %-50s rel_err %.3g\n", name(c).c_str(), plan.to_string().c_str(), err);
  }
}

TEST(CudaGemm, RandomShapes) {
  REQUIRE_GPU();
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> size(1, 700);
  std::uniform_int_distribution<int> pad(0, 5);
  for (int i = 0; i < 24; ++i) {
    GemmPrecision p = kAll[i % 4];
    check({size(rng), size(rng), size(rng), p, 1.0, i % 3 == 0 ? 0.5 : 0.0, pad(rng)}, 1000 + i);
  }
}

// The host-array front door: packs, rounds, copies back; C's padding untouched.
// A call with the last call's shape re-points the bound launch's flat arguments
// (gemm.cpp's LastCall, BoundLaunch on device pointers): each call's new buffers,
// alpha and beta must reach the kernel.
TEST(CudaGemm, RepeatedShapeWithNewBuffersAndScalars) {
  REQUIRE_GPU();
  const double scalars[][2] = {{1.0, 0.0}, {-0.5, 2.0}, {1.5, 0.0}, {0.25, -1.0}};
  uint64_t seed = 90;
  for (const auto& [alpha, beta] : scalars) check({77, 45, 29, GemmPrecision::F32, alpha, beta, 3}, seed++);
}

TEST(CudaGemm, HostArraysRoundTrip) {
  REQUIRE_GPU();
  for (GemmPrecision p : kAll) {
    int64_t m = 77, n = 65, k = 50, ldc = n + 2;
    std::mt19937_64 rng(5);
    std::vector<float> A(m * k), B(k * n), C(m * ldc, kSentinel);
    fill_random(A, rng);
    fill_random(B, rng);
    for (float& x : A) x = round_to_storage(p, x);
    for (float& x : B) x = round_to_storage(p, x);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j) C[r * ldc + j] = NAN;
    auto oracle = gemm_oracle(m, n, k, 1.0, A.data(), k, B.data(), n, 0.0, C.data(), ldc);
    GemmOptions o;
    o.target = TargetKind::Cuda;
    o.precision = p;
    o.time_device = true;
    GemmReport r = gemm(m, n, k, 1.0f, A.data(), k, B.data(), n, 0.0f, C.data(), ldc, o);
    EXPECT_GT(r.device_us, 0);
    EXPECT_LE(gemm_relative_error(m, n, C.data(), ldc, oracle), precision_error_bound(p, k)) << precision_name(p);
    for (int64_t r2 = 0; r2 < m; ++r2) EXPECT_EQ(C[r2 * ldc + n], kSentinel);
  }
}

// A kernel compiles first as its aligned variant (emit_cuda's assume_aligned): every
// tensor on 16 bytes, every row stride a multiple of 16 bytes. A launch off that runs
// the general variant: decided at bind (a row stride, a tensor), and again at
// execute, for a tensor moved off 16 bytes after bind (CudaLaunch says a caller may
// move them). Each run's complete output against the oracle, C NaN-poisoned.
TEST(CudaGemm, LaunchesOffSixteenBytesRunTheGeneralVariant) {
  REQUIRE_GPU();
  const int64_t m = 70, n = 52, k = 44;
  Plan plan = default_gemm_plan(TargetKind::Cuda, m, n, k, GemmPrecision::F32);
  CompiledGroup g = compile_to_group(gemm_kernel(DType::F32), plan, CompileOptions{});
  auto kernel = compile_cuda(g.program);
  ASSERT_TRUE(kernel->info().source.assume_aligned);
  ASSERT_EQ(kernel->info().source.aligned_tensors, (std::vector<int>{0, 1, 2}));
  struct Run {
    int64_t lda;
    size_t bind_shift, run_shift;  // bytes into A's buffer at bind and at execute
    bool aligned_at_bind;
  };
  uint64_t seed = 31;
  for (Run r : {Run{k, 0, 0, true}, Run{k + 1, 0, 0, false}, Run{k, 4, 4, false}, Run{k, 0, 8, true},
                Run{k, 0, 16, true}}) {
    SCOPED_TRACE("lda " + std::to_string(r.lda) + ", A at +" + std::to_string(r.bind_shift) + " at bind, +" +
                 std::to_string(r.run_shift) + " at execute");
    std::mt19937_64 rng(seed++);
    std::vector<float> A(m * r.lda), B(k * n), C(m * n, NAN);
    fill_random(A, rng);
    fill_random(B, rng);
    const std::vector<double> oracle = gemm_oracle(m, n, k, 1.5, A.data(), r.lda, B.data(), n, 0.0, C.data(), n);
    DeviceBuffer da(A.size() * 4 + 16), db(B.size() * 4), dc(C.size() * 4);
    da.upload(A.data(), A.size() * 4, r.run_shift);
    db.upload(B.data(), B.size() * 4);
    dc.upload(C.data(), C.size() * 4);
    LaunchArgs args;
    args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", r.lda}, {"ldb", n}, {"ldc", n}};
    args.scalars = {{"alpha", 1.5}, {"beta", 0.0}};
    args.tensors = {{"A", reinterpret_cast<float*>(static_cast<char*>(da.get()) + r.bind_shift)},
                    {"B", static_cast<float*>(db.get())},
                    {"C", static_cast<float*>(dc.get())}};
    CudaLaunch l = kernel->bind(args);
    EXPECT_EQ(l.runs == kernel.get(), r.aligned_at_bind);
    l.tensors[0] = reinterpret_cast<uint64_t>(da.get()) + r.run_shift;
    kernel->execute(l);
    cuda_synchronize();
    dc.download(C.data(), C.size() * 4);
    EXPECT_LE(gemm_relative_error(m, n, C.data(), n, oracle), precision_error_bound(GemmPrecision::F32, k));
  }
}

// tf32 and bf16 against the unrounded fp32 inputs: the rounding the issue expects.
TEST(CudaGemm, ReducedPrecisionErrorAgainstFp32Inputs) {
  REQUIRE_GPU();
  for (GemmPrecision p : {GemmPrecision::TF32, GemmPrecision::BF16, GemmPrecision::F16}) {
    int64_t m = 256, n = 256, k = 256;
    std::mt19937_64 rng(9);
    std::vector<float> A(m * k), B(k * n), C(m * n, NAN);
    fill_random(A, rng);
    fill_random(B, rng);
    auto oracle = gemm_oracle(m, n, k, 1.0, A.data(), k, B.data(), n, 0.0, C.data(), n);
    GemmOptions o;
    o.target = TargetKind::Cuda;
    o.precision = p;
    gemm(m, n, k, 1.0f, A.data(), k, B.data(), n, 0.0f, C.data(), n, o);
    double err = gemm_relative_error(m, n, C.data(), n, oracle);
    std::printf("[gpu] %s vs fp32 inputs: rel_err %.3g\n", precision_name(p), err);
    EXPECT_LE(err, 1e-2) << precision_name(p);
    EXPECT_GE(err, 1e-5) << precision_name(p) << ": suspiciously exact for reduced precision";
  }
}

}  // namespace
}  // namespace tessel

#else
TEST(CudaGemm, Skipped) { GTEST_SKIP() << "tessel was built without the CUDA toolkit"; }
#endif
