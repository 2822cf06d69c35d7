// What emitted units call in tessel (cpu_support.h). The fp32 micro-kernels built into
// tessel (cpu_microkernel.h: cpu_prebuilt_microkernel, src/target/cpu/cpu_microkernel_prebuilt.inc):
// the file is what the emitter writes, each kernel on each ISA this CPU runs matches
// the scalar reference (NaN in B's columns past NR and in an overwritten C block; C's
// columns past NR untouched), and an emitted unit calls them through tessel's table
// instead of compiling them. cpu_mma_edge against the reference, reading nothing
// outside its rows and columns.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hand_gemm.h"
#include "microkernel_check.h"
#include "target/cpu/cpu_emit.h"
#include "target/cpu/cpu_isa.h"
#include "target/cpu/cpu_microkernel.h"
#include "target/cpu/cpu_support.h"

namespace tessel::testing {
namespace {

const std::string kPrebuiltPath = std::string(TESSEL_SOURCE_DIR) + "/src/target/cpu/cpu_microkernel_prebuilt.inc";

// TESSEL_UPDATE_GOLDEN=1 rewrites the file (then rebuild: it is part of the library).
TEST(CpuPrebuilt, SourceIsWhatTheEmitterWrites) {
  const std::string want = emit_cpu_prebuilt_source();
  if (std::getenv("TESSEL_UPDATE_GOLDEN")) std::ofstream(kPrebuiltPath) << want;
  std::ifstream in(kPrebuiltPath);
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_TRUE(got.str() == want) << kPrebuiltPath
                                 << " differs from emit_cpu_prebuilt_source(); TESSEL_UPDATE_GOLDEN=1 "
                                    "test_cpu --gtest_filter=CpuPrebuilt.* rewrites it";
}

struct Shape {
  int64_t nr, max_mr;
};
const Shape kSet[] = {{16, 16}, {32, 16}, {48, 8}, {64, 6}};
const CpuIsa kIsas[] = {CpuIsa::Avx2, CpuIsa::Avx512};

TEST(CpuPrebuilt, EveryKernelOfTheSetHasItsOwnIndex) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  ASSERT_EQ(cpu_prebuilt_count, 2 * (16 + 16 + 8 + 6 + 2));  // each ISA: kernels, the copy, the elementwise loop
#endif
  std::set<int> seen;
  for (CpuIsa isa : kIsas)
    for (const Shape& s : kSet)
      for (int64_t mr = 1; mr <= s.max_mr; ++mr) {
        const int i = cpu_prebuilt_microkernel(mr, s.nr, isa);
        if (cpu_prebuilt_count == 0) {
          EXPECT_EQ(i, -1);
          continue;
        }
        EXPECT_TRUE(i >= 0 && i < cpu_prebuilt_count && seen.insert(i).second)
            << cpu_isa_info(isa).name << " " << mr << "x" << s.nr << ": index " << i;
      }
  // Outside the set: more rows, an NR that is not a multiple of 16, SSE.
  for (int64_t mr = 1; mr <= 16; ++mr) EXPECT_EQ(cpu_prebuilt_microkernel(mr, 32, CpuIsa::Sse), -1);
  for (CpuIsa isa : kIsas)
    for (auto [mr, nr] : {std::pair<int64_t, int64_t>{17, 32}, {9, 48}, {7, 64}, {12, 8}, {12, 24}, {0, 32}, {4, 80}})
      EXPECT_EQ(cpu_prebuilt_microkernel(mr, nr, isa), -1) << mr << "x" << nr;
}

using test::UkrInPlaceFn;

// Every built-in kernel against cpu_microkernel_reference, with A and B at leading
// dimensions wider than their rows (B's extra columns NaN: never read into a result),
// accumulating and overwriting (an overwritten C block is NaN first: never read), and
// kc = 0.
TEST(CpuPrebuilt, EveryKernelMatchesItsReferenceOnEachIsa) {
  if (cpu_prebuilt_count == 0) GTEST_SKIP() << "no built-in micro-kernels in this build (not GCC on x86-64)";
  void* const* table = cpu_support_table();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  int checked = 0;
  for (CpuIsa isa : kIsas) {
    if (static_cast<int>(isa) > static_cast<int>(detected_cpu_isa())) {
      std::printf("[ SKIPPED  ] %s: this CPU does not run it\n", cpu_isa_info(isa).name);
      continue;
    }
    for (const Shape& s : kSet)
      for (int64_t mr = 1; mr <= s.max_mr; ++mr)
        for (int64_t kc : {29, 1, 0, 201}) {
          const int64_t nr = s.nr, lda = kc + 5, ldb = nr + 7, ldc = nr + 3;
          const int index = cpu_prebuilt_microkernel(mr, nr, isa);
          ASSERT_GE(index, 0);
          auto f = reinterpret_cast<UkrInPlaceFn>(table[kCpuSupportPrebuiltBase + index]);
          std::vector<float> a(mr * lda), b(std::max<int64_t>(kc, 1) * ldb), c(mr * ldc);
          for (float& x : a) x = u(rng);
          for (int64_t k = 0; k < kc; ++k)
            for (int64_t j = 0; j < ldb; ++j) b[k * ldb + j] = j < nr ? u(rng) : NAN;
          for (float& x : c) x = u(rng);
          test::expect_microkernel_matches(f, mr, nr, kc, a, lda, b, ldb, c, ldc,
                                           std::string(cpu_isa_info(isa).name) + " " + std::to_string(mr) + "x" +
                                               std::to_string(nr) + " kc " + std::to_string(kc));
          ++checked;
        }
  }
  EXPECT_GT(checked, 0);
}

// A unit whose blocks are in the set and whose k loop is long binds them from the
// table and emits no kernel of its own; a block outside it (8 columns) is still
// emitted into an AVX2 unit (an AVX-512 one runs it in tessel's cpu_mma_edge), and so
// is every block of a short k loop.
TEST(CpuPrebuilt, TheUnitCallsTheBuiltInKernels) {
  if (cpu_prebuilt_count == 0) GTEST_SKIP() << "no built-in micro-kernels in this build";
  HandGemm plan;
  plan.bm = 30, plan.bn = 40, plan.bk = kCpuPrebuiltMinK, plan.atom_m = 12, plan.atom_n = 32;
  const std::string src = emit_cpu(hand_gemm_program(plan), CpuIsa::Avx512);
  // 30 rows: three blocks of 10; 40 columns: one panel of 32, then 8.
  const int index = cpu_prebuilt_microkernel(10, 32, CpuIsa::Avx512);
  EXPECT_NE(src.find("tsl_ukr_10x32_p = (tsl_ukr_fn)table[" + std::to_string(kCpuSupportPrebuiltBase + index) + "]"),
            std::string::npos)
      << src;
  EXPECT_EQ(src.find("static void tsl_ukr_10x32_"), std::string::npos) << src;
  EXPECT_EQ(src.find("static void tsl_ukr_10x8_"), std::string::npos) << src;
  EXPECT_NE(src.find("tsl_mma_blocks((const void*)0, "), std::string::npos) << src;
  plan.atom_n = 16;  // AVX2: 30 rows in three blocks of 10, 40 columns in two panels of 16, then 8
  const std::string avx2 = emit_cpu(hand_gemm_program(plan), CpuIsa::Avx2);
  EXPECT_NE(avx2.find("static void tsl_ukr_10x8_"), std::string::npos) << avx2;
  plan.atom_n = 32;
  plan.bk = kCpuPrebuiltMinK - 1;
  const std::string short_k = emit_cpu(hand_gemm_program(plan), CpuIsa::Avx512);
  EXPECT_EQ(short_k.find("(tsl_ukr_fn)table["), std::string::npos) << short_k;
  EXPECT_NE(short_k.find("static void tsl_ukr_10x32_"), std::string::npos) << short_k;
}

// An edge block's operands for cpu_mma_edge: A (rows x kc) and B (kc x cols) random
// in [-1, 1), with row strides past them and everything else NaN (a read of it would
// show in C); C's block set by fill_c, its surroundings NaN (a write would show).
struct EdgeOperands {
  int64_t rows, cols, kc, lda, ldb, ldc;
  std::vector<float> a, b, c;
  // ldb_, ldc_: B's and C's row strides, 0 for cols + 5 and cols + 2 (gaps NaN-filled)
  EdgeOperands(int64_t rows_, int64_t cols_, int64_t kc_, std::mt19937& rng, int64_t ldb_ = 0, int64_t ldc_ = 0)
      : rows(rows_),
        cols(cols_),
        kc(kc_),
        lda(kc_ + 3),
        ldb(ldb_ > 0 ? ldb_ : cols_ + 5),
        ldc(ldc_ > 0 ? ldc_ : cols_ + 2),
        a((rows_ + 1) * lda, NAN), b((kc_ + 1) * ldb, NAN), c((rows_ + 1) * ldc, NAN) {
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < kc; ++k) a[r * lda + k] = u(rng);
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t j = 0; j < cols; ++j) b[k * ldb + j] = u(rng);
  }
  // C's block NaN where the product overwrites it, else random.
  void fill_c(int overwrite, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j) c[r * ldc + j] = overwrite ? NAN : u(rng);
  }
};

// cpu_mma_edge's operation: (kc, a, b, c, ldc, lda, ldb, rows, cols, overwrite).
using EdgeFn = std::function<void(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t,
                                  int64_t, int)>;

// cpu_mma_edge (through the table), or `edge`, on e's block, accumulating and
// overwriting, against the reference: C's block as the reference has it, everything
// else NaN.
void expect_edge_matches_reference(EdgeOperands& e, std::mt19937& rng, EdgeFn edge = nullptr) {
  if (!edge) {
    auto entry = reinterpret_cast<void (*)(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t,
                                           int64_t, int64_t, int)>(cpu_support_table()[1]);
    ASSERT_EQ(entry, &cpu_mma_edge);
    edge = entry;
  }
  const auto &a = e.a, &b = e.b;
  auto& c = e.c;
  const int64_t rows = e.rows, cols = e.cols, kc = e.kc, lda = e.lda, ldb = e.ldb, ldc = e.ldc;
  for (int overwrite : {0, 1}) {
    e.fill_c(overwrite, rng);
    std::vector<float> want = c;
    if (rows > 0 && cols > 0)
      cpu_microkernel_reference(rows, cols, kc, a.data(), lda, b.data(), ldb, want.data(), ldc, overwrite);
    edge(kc, a.data(), b.data(), c.data(), ldc, lda, ldb, rows, cols, overwrite);
    int bad = 0;
    for (int64_t r = 0; r <= rows; ++r)
      for (int64_t j = 0; j < ldc; ++j) {
        const float got = c[r * ldc + j], w = want[r * ldc + j];
        const bool inside = r < rows && j < cols;
        const bool ok = inside ? std::abs(got - w) <= 1e-5f * (1 + std::abs(w)) : std::isnan(got);
        if (!ok && bad++ < 5)
          ADD_FAILURE() << rows << "x" << cols << " kc " << kc << " ldc " << ldc << " (overwrite " << overwrite
                        << "): C[" << r << ", " << j << "] = " << got << ", want " << w;
      }
  }
}

// The edge block of an in-place product: only rows x cols of A's rows, B's columns
// and C are touched (everything else NaN: a read of it would show in C, a write
// outside would change it), accumulating and overwriting, against the reference.
TEST(CpuSupport, MmaEdgeMatchesTheReferenceInsideItsBlock) {
  std::mt19937 rng(11);
  // With AVX-512 the blocks go in vectors, the last one masked (cpu_support.cpp): up to
  // 16 rows (24 of one vector, whole or half), several row chunks, column groups past
  // 64, and blocks of 2 and 3 rows (B's vectors pinned in registers). Up to
  // kCpuStripMaxK k, strips of rows: several strips, the last one narrower, its last
  // vector whole, in part or 8 lanes and fewer. Past it, one strip of narrow columns
  // (cpu_edge_narrow_strip): 1 and 2 vectors, whole, in part or of 8 lanes, k at each
  // bound, rows of four at a time and a rest. C's rows (ldc = cols + 2) end before a
  // strip's last vector does at 1 to 5, 9 to 13, 17 to 21 and 25 to 29 columns
  // (170x12, 19x5, 18x20, 66x13): accumulating, the next row's first vector is then
  // loaded before the stores.
  const int64_t cases[][3] = {{5, 7, 9},    {1, 1, 1},    {11, 31, 61},  {3, 2, 0},    {0, 4, 3},
                              {4, 0, 3},    {16, 64, 29}, {17, 45, 30},  {13, 130, 7}, {30, 16, 5},
                              {9, 48, 64},  {6, 63, 1},   {2, 60, 9},    {3, 40, 21},  {24, 14, 33},
                              {21, 6, 40},  {49, 12, 19}, {37, 385, 1},  {40, 200, 2}, {50, 27, 3},
                              {29, 100, 4}, {33, 129, 5}, {7, 16, 5},    {61, 8, 2},   {3, 256, 4},
                              {170, 12, 11}, {16, 16, 24}, {19, 5, 6},   {53, 30, 12}, {18, 20, 7},
                              {23, 32, 9},  {66, 13, 13}, {41, 1, 17},   {17, 6, 22}};
  int narrow = 0;
  for (const auto& [rows, cols, kc] : cases) {
    narrow += cpu_edge_narrow_strip(rows, cols, kc);
    EdgeOperands e(rows, cols, kc, rng);
    expect_edge_matches_reference(e, rng);
  }
  EXPECT_EQ(narrow, 9);  // the cases past kCpuStripMaxK above, {49, 12, 19} among them
}

// Strips of rows of 1 to 4 columns (a last vector of 4 lanes, or a scalar for one
// column), up to kCpuStripMaxK k and past it (cpu_edge_narrow_strip), with C's rows
// one after another (ldc = cols: accumulating, the next row's vector is loaded
// before the stores) and apart.
TEST(CpuSupport, MmaEdgeStripsOfNarrowRowsMatchTheReference) {
  std::mt19937 rng(13);
  const int64_t cases[][3] = {{37, 3, 2}, {29, 1, 4}, {20, 4, 5}, {45, 2, 1},  {16, 3, 7},  {16, 2, 6},
                              {5, 3, 1},  {33, 9, 1}, {7, 11, 2}, {21, 12, 3}, {18, 10, 5}, {40, 12, 11}};
  for (const auto& [rows, cols, kc] : cases) {
    EXPECT_TRUE(kc <= kCpuStripMaxK || cpu_edge_narrow_strip(rows, cols, kc)) << rows << "x" << cols << "x" << kc;
    for (int64_t ldc : {cols, cols + 2}) {
      EdgeOperands e(rows, cols, kc, rng, 0, ldc);
      expect_edge_matches_reference(e, rng);
    }
  }
}

// The strips a unit calls itself (cpu_edge_strip, through the table): at every short
// k, one to the most columns (a last vector of 1, 4, 8, 12 and 16 lanes, whole vectors
// before it or not), no rows to past a multiple of 4, C's rows dense and apart, against
// the reference with everything outside NaN. Null outside its bounds and without AVX-512.
TEST(CpuSupport, EdgeStripsMatchTheReference) {
  auto lookup = reinterpret_cast<CpuEdgeStrip (*)(int64_t, int64_t)>(cpu_support_table()[4]);
  ASSERT_EQ(lookup, &cpu_edge_strip);
  const bool avx512 = cpu_features().avx512;
  std::mt19937 rng(17);
  int ran = 0;
  for (int64_t kc = 1; kc <= kCpuStripMaxK; ++kc) {
    const int64_t most = cpu_edge_strip_cols(kc);
    ASSERT_GE(most, 16);
    EXPECT_EQ(lookup(kc, 0), nullptr);
    EXPECT_EQ(lookup(kc, most + 1), nullptr);
    for (int64_t cols : {int64_t{1}, int64_t{3}, int64_t{6}, int64_t{9}, int64_t{12}, int64_t{16}, int64_t{26},
                         most - 7, most}) {
      const CpuEdgeStrip strip = lookup(kc, cols);
      ASSERT_EQ(strip != nullptr, avx512) << kc << " " << cols;
      if (!strip) continue;
      const int64_t v = (cols + 15) / 16;
      const auto tail = static_cast<unsigned short>((1u << (cols - 16 * (v - 1))) - 1);
      const EdgeFn edge = [&](int64_t, const float* a, const float* b, float* c, int64_t ldc, int64_t lda,
                              int64_t ldb, int64_t rows, int64_t, int overwrite) {
        strip(a, b, c, ldc, lda, ldb, rows, tail, overwrite);
      };
      for (int64_t rows : {0, 1, 7, 30})
        for (int64_t ldc : {cols, cols + 3}) {
          EdgeOperands e(rows, cols, kc, rng, 0, ldc);
          expect_edge_matches_reference(e, rng, edge);
          ++ran;
        }
    }
  }
  EXPECT_EQ(lookup(0, 8), nullptr);
  EXPECT_EQ(lookup(kCpuStripMaxK + 1, 8), nullptr);
  EXPECT_EQ(cpu_edge_strip_cols(kCpuStripMaxK + 1), 0);
  if (!avx512) GTEST_SKIP() << "no AVX-512 here: the strips are null (checked), none ran";
  EXPECT_EQ(ran, kCpuStripMaxK * 9 * 8);
}

// Where cpu_edge_narrow_strip draws its lines (its header's rule).
TEST(CpuSupport, NarrowStripsTakeMidKOnOneStripOfColumns) {
  EXPECT_TRUE(cpu_edge_narrow_strip(170, 12, 11));
  EXPECT_TRUE(cpu_edge_narrow_strip(16, 16, kCpuNarrowStripMaxK));
  EXPECT_FALSE(cpu_edge_narrow_strip(16, 16, kCpuNarrowStripMaxK + 1));
  EXPECT_FALSE(cpu_edge_narrow_strip(15, 16, 11));                // too few rows
  EXPECT_FALSE(cpu_edge_narrow_strip(170, 12, kCpuStripMaxK));    // the short-k strips' own
  EXPECT_TRUE(cpu_edge_narrow_strip(100, 32, 12));                // two vectors up to k = 12
  EXPECT_FALSE(cpu_edge_narrow_strip(100, 33, 12));
  EXPECT_FALSE(cpu_edge_narrow_strip(100, 17, 13));
  EXPECT_FALSE(cpu_edge_narrow_strip(100, 0, 12));
  ASSERT_TRUE(cpu_edge_dot_columns(100, 3, 20));
  EXPECT_FALSE(cpu_edge_narrow_strip(100, 3, 20));  // dot products take those
}

// With AVX-512, a block whose columns end 1 to 4 lanes into a vector takes those
// columns as dot products along k where that is cheaper (cpu_edge_dot_columns):
// against an FP64 oracle, with C poisoned where it is overwritten
// and NaN around the block (a read or a write past it shows). The cases straddle the
// choice: k too short for dot products (the masked vector), k past the gathered
// buffer, rows past a multiple of 4, columns 1 to 4 past whole vectors and alone,
// and one column of unit row stride (N = 1, copied whole; the last column says so).
TEST(CpuSupport, MmaEdgeNarrowColumnTailsMatchFp64) {
  std::mt19937 rng(29);
  const int64_t cases[][4] = {{33, 33, 33, 0}, {7, 1, 40, 0},   {40, 18, 64, 0}, {50, 36, 100, 0}, {13, 4, 17, 0},
                              {30, 3, 90, 0},  {65, 65, 65, 0}, {3, 2, 1030, 0}, {1, 49, 23, 0},   {100, 100, 100, 0},
                              {4, 20, 10, 0},  {9, 36, 100, 0}, {50, 1, 200, 1}, {7, 1, 41, 1}};
  int dot = 0, masked = 0;
  for (const auto& [rows, cols, kc, unit_ldb] : cases) {
    (cpu_edge_dot_columns(rows, cols, kc) ? dot : masked) += 1;
    EdgeOperands e(rows, cols, kc, rng, unit_ldb ? 1 : 0);
    const auto &a = e.a, &b = e.b;
    auto& c = e.c;
    const int64_t lda = e.lda, ldb = e.ldb, ldc = e.ldc;
    for (int overwrite : {1, 0}) {
      e.fill_c(overwrite, rng);
      const std::vector<float> before = c;
      cpu_mma_edge(kc, a.data(), b.data(), c.data(), ldc, lda, ldb, rows, cols, overwrite);
      int bad = 0;
      for (int64_t r = 0; r <= rows; ++r)
        for (int64_t j = 0; j < ldc; ++j) {
          const float got = c[r * ldc + j];
          if (r == rows || j >= cols) {
            if (!std::isnan(got) && bad++ < 5) ADD_FAILURE() << "wrote C[" << r << ", " << j << "] past the block";
            continue;
          }
          double want = overwrite ? 0.0 : before[r * ldc + j], mag = std::abs(want);
          for (int64_t k = 0; k < kc; ++k) {
            want += double(a[r * lda + k]) * b[k * ldb + j];
            mag += std::abs(double(a[r * lda + k]) * b[k * ldb + j]);
          }
          // fp32 sums of kc + 1 terms in any order: within (kc + 2) units of 2^-24 of
          // the sum of their magnitudes.
          if (!(std::abs(got - want) <= (kc + 2) * 0x1p-24 * mag) && bad++ < 5)
            ADD_FAILURE() << rows << "x" << cols << " kc " << kc << " (overwrite " << overwrite << "): C[" << r
                          << ", " << j << "] = " << got << ", want " << want;
        }
    }
  }
  EXPECT_GE(dot, 6);  // both sides of the choice
  EXPECT_GE(masked, 4);
}

// The element offset of (r, c) of a window, as cpu_support.h defines the layouts.
int64_t window_offset(const CpuWindow& w, int64_t r, int64_t c) {
  r += w.r0;
  c += w.c0;
  if (w.layout == 0) return r * w.ld + c * w.cs;
  if (w.layout == 1) return (c / w.panel * w.rows + r) * w.panel + c % w.panel;
  return (r / w.panel * w.cols + c) * w.panel + r % w.panel;
}

// Each ISA's built-in window copy against the contract in scalar loops: a window
// wholly inside its bounds (rows into rows, rows into column panels, runs that end
// inside a vector), and windows that cross a bound (source padding, destination
// elements outside left alone: they stay NaN).
TEST(CpuPrebuilt, WindowCopyMatchesTheContractOnEachIsa) {
  if (cpu_prebuilt_count == 0) GTEST_SKIP() << "no built-in functions in this build";
  void* const* table = cpu_support_table();
  using I = int64_t;
  using CopyFn = void (*)(float*, I, I, I, I, I, I, I, I, I, I, float*, I, I, I, I, I, I, I, I, I, I, I, I, float);
  struct Case {
    int64_t rows, cols, src_rb, src_cb, dst_layout, panel, dst_rb, dst_cb;
  };
  const int64_t big = INT64_MAX;
  const Case cases[] = {
      {40, 37, big, big, 0, 1, big, big},    // inside, rows into rows, a ragged last vector
      {33, 96, big, big, 1, 32, big, big},   // inside, packing into panels of 32
      {20, 70, big, big, 1, 48, big, big},   // a last panel cut short
      {40, 37, 35, 30, 0, 1, big, big},      // the source ends inside: padding
      {33, 96, 30, 90, 1, 32, big, big},     // packing at an edge
      {40, 37, big, big, 0, 1, 38, 33},      // the destination ends inside
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  int checked = 0;
  for (CpuIsa isa : kIsas) {
    if (static_cast<int>(isa) > static_cast<int>(detected_cpu_isa())) continue;
    const int index = cpu_prebuilt_copy(isa);
    ASSERT_GE(index, 0) << cpu_isa_info(isa).name;
    auto copy = reinterpret_cast<CopyFn>(table[kCpuSupportPrebuiltBase + index]);
    for (const Case& t : cases) {
      const int64_t src_ld = t.cols + 11, dst_rows = t.rows + 3, dst_cols = (t.cols + 5 + 47) / 48 * 48 + 96;
      std::vector<float> src((t.rows + 4) * src_ld), dst(dst_rows * dst_cols + 4096, NAN);
      for (float& x : src) x = u(rng);
      CpuWindow s{src.data(), 0, src_ld, 1, 0, 0, 1, 2, 3, t.src_rb, t.src_cb};
      CpuWindow d{dst.data(), t.dst_layout, dst_cols, 1, dst_rows, dst_cols, t.panel, 1, t.dst_layout ? 0 : 4,
                  t.dst_rb, t.dst_cb};
      if (t.dst_layout == 1) d.c0 = t.panel;  // starts on the second panel
      std::vector<float> want = dst;
      for (int64_t r = 0; r < t.rows; ++r)
        for (int64_t c = 0; c < t.cols; ++c) {
          if (d.r0 + r >= d.rb || d.c0 + c >= d.cb) continue;
          const bool in = s.r0 + r < s.rb && s.c0 + c < s.cb;
          want[window_offset(d, r, c)] = in ? src[window_offset(s, r, c)] : -7.0f;
        }
      copy(s.base, s.layout, s.ld, s.cs, s.rows, s.cols, s.panel, s.r0, s.c0, s.rb, s.cb, d.base, d.layout, d.ld, d.cs,
           d.rows, d.cols, d.panel, d.r0, d.c0, d.rb, d.cb, t.rows, t.cols, -7.0f);
      int bad = 0;
      for (size_t i = 0; i < dst.size(); ++i)
        if (!(dst[i] == want[i] || (std::isnan(dst[i]) && std::isnan(want[i]))) && bad++ < 5)
          ADD_FAILURE() << cpu_isa_info(isa).name << " " << t.rows << "x" << t.cols << " layout " << t.dst_layout
                        << ": dst[" << i << "] = " << dst[i] << ", want " << want[i];
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

// cpu_mma_blocks runs the blocks of a part as the emitter's loops did: staged
// operands, every started block whole; in place, a block crossing the valid part
// through cpu_mma_edge (everything past the valid part NaN: a read of it shows).
TEST(CpuSupport, MmaBlocksRunsThePartsBlocks) {
  auto ukr = +[](int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t lda, int64_t ldb,
                 int overwrite) { cpu_microkernel_reference(5, 16, kc, a, lda, b, ldb, c, ldc, overwrite); };
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t br = 5, bc = 16, blocks_r = 4, blocks_c = 3, ldb = bc * blocks_c + 4;
  const int64_t ldc = bc * blocks_c + 1, rows = br * blocks_r, cols = bc * blocks_c;
  // kc 3: read in place on AVX-512, the whole part by cpu_mma_edge's strips of rows.
  for (int64_t kc : {23, 3})
    for (int in_place : {0, 1})
      for (auto [rows_valid, cols_valid] :
           {std::pair<int64_t, int64_t>{rows, cols}, {17, 40}, {10, 32}, {3, 7}, {0, 5}}) {
        const int64_t lda = kc + 2;
        std::vector<float> a(rows * lda), b(kc * ldb), c(rows * ldc, NAN);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < lda; ++k) a[r * lda + k] = in_place && r >= rows_valid ? NAN : u(rng);
        for (int64_t k = 0; k < kc; ++k)
          for (int64_t j = 0; j < ldb; ++j) b[k * ldb + j] = in_place && j >= cols_valid ? NAN : u(rng);
        for (int overwrite : {1, 0}) {
          std::vector<float> want = c;
          for (int64_t j = 0; j * bc < cols_valid && j < blocks_c; ++j)
            for (int64_t i = 0; i * br < rows_valid && i < blocks_r; ++i) {
              const int64_t mr = in_place ? std::min(br, rows_valid - i * br) : br;
              const int64_t nr = in_place ? std::min(bc, cols_valid - j * bc) : bc;
              cpu_microkernel_reference(mr, nr, kc, &a[i * br * lda], lda, &b[j * bc], ldb,
                                        &want[i * br * ldc + j * bc], ldc, overwrite);
            }
          cpu_mma_blocks(reinterpret_cast<const void*>(ukr), kc, a.data(), br * lda, b.data(), bc, c.data(), ldc, lda,
                         ldb, br, bc, blocks_r, blocks_c, rows_valid, cols_valid, in_place, overwrite);
          int bad = 0;
          for (size_t i = 0; i < c.size(); ++i) {
            const bool ok = std::isnan(want[i]) ? std::isnan(c[i])
                                                : std::abs(c[i] - want[i]) <= 1e-5f * (1 + std::abs(want[i]));
            if (!ok && bad++ < 5)
              ADD_FAILURE() << "kc " << kc << " in_place " << in_place << " valid " << rows_valid << "x" << cols_valid
                            << " overwrite " << overwrite << ": c[" << i << "] = " << c[i] << ", want " << want[i];
          }
        }
      }
}

// Each ISA's built-in elementwise loop against the operation in scalar loops: every
// op, array or scalar on either side, in place (d is x), a length that ends inside a
// vector; elements past n stay NaN.
TEST(CpuPrebuilt, ElementwiseLoopMatchesItsOperationOnEachIsa) {
  if (cpu_prebuilt_count == 0) GTEST_SKIP() << "no built-in functions in this build";
  using EwFn = void (*)(int64_t, float*, const float*, float, const float*, float, int64_t);
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(0.5f, 2.0f);
  int checked = 0;
  for (CpuIsa isa : kIsas) {
    if (static_cast<int>(isa) > static_cast<int>(detected_cpu_isa())) continue;
    const int index = cpu_prebuilt_elementwise(isa);
    ASSERT_GE(index, 0) << cpu_isa_info(isa).name;
    auto ew = reinterpret_cast<EwFn>(cpu_support_table()[kCpuSupportPrebuiltBase + index]);
    const int64_t n = 4096 + 37;
    for (int64_t op = 0; op <= 4; ++op)
      for (int form = 0; form < 4; ++form) {  // x and y arrays, y scalar, x scalar, x in place
        std::vector<float> x(n + 8), y(n + 8), d(n + 8, NAN);
        for (float& v : x) v = u(rng);
        for (float& v : y) v = u(rng);
        const float xs = -1.5f, ys = 0.75f;
        float* dst = form == 3 ? x.data() : d.data();
        const float* xp = form == 2 ? nullptr : x.data();
        const float* yp = form == 1 ? nullptr : y.data();
        std::vector<float> want(n + 8, NAN);
        for (int64_t e = 0; e < n + 8; ++e) {
          if (e >= n) {
            want[e] = form == 3 ? x[e] : NAN;
            continue;
          }
          const float a = xp ? x[e] : xs, b = yp ? y[e] : ys;
          want[e] = op == 0 ? a + b : op == 1 ? a - b : op == 2 ? a * b : op == 3 ? a / b : a;
        }
        ew(op, dst, xp, xs, yp, ys, n);
        int bad = 0;
        for (int64_t e = 0; e < n + 8; ++e) {
          const float got = dst[e];
          if (!(got == want[e] || (std::isnan(got) && std::isnan(want[e]))) && bad++ < 5)
            ADD_FAILURE() << cpu_isa_info(isa).name << " op " << op << " form " << form << ": d[" << e << "] = " << got
                          << ", want " << want[e];
        }
        ++checked;
      }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace tessel::testing
