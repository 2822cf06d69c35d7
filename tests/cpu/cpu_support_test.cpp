// What emitted units call in tessel (cpu_support.h). The fp32 micro-kernels built into
// tessel (cpu_microkernel.h: cpu_prebuilt_microkernel, src/target/cpu/cpu_microkernel_prebuilt.inc):
// the file is what the emitter writes, each kernel on each ISA this CPU runs matches
// the scalar reference (NaN in B's columns past NR and in an overwritten C block; C's
// columns past NR untouched), and an emitted unit calls them through tessel's table
// instead of compiling them. cpu_mma_edge against the reference, reading nothing
// outside its rows and columns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hand_gemm.h"
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
  ASSERT_EQ(cpu_prebuilt_count, 2 * (16 + 16 + 8 + 6));
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

using UkrFn = void (*)(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t, int);

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
          auto f = reinterpret_cast<UkrFn>(table[kCpuSupportPrebuiltBase + index]);
          std::vector<float> a(mr * lda), b(std::max<int64_t>(kc, 1) * ldb), c(mr * ldc);
          for (float& x : a) x = u(rng);
          for (int64_t k = 0; k < kc; ++k)
            for (int64_t j = 0; j < ldb; ++j) b[k * ldb + j] = j < nr ? u(rng) : NAN;
          for (float& x : c) x = u(rng);
          for (int overwrite : {0, 1}) {
            if (overwrite)
              for (int64_t r = 0; r < mr; ++r)
                for (int64_t j = 0; j < nr; ++j) c[r * ldc + j] = NAN;
            std::vector<float> want = c;
            cpu_microkernel_reference(mr, nr, kc, a.data(), lda, b.data(), ldb, want.data(), ldc, overwrite);
            f(kc, a.data(), b.data(), c.data(), ldc, lda, ldb, overwrite);
            int bad = 0;
            for (int64_t r = 0; r < mr; ++r)
              for (int64_t j = 0; j < ldc; ++j) {
                float got = c[r * ldc + j], w = want[r * ldc + j];
                bool ok = j < nr ? std::abs(got - w) <= 1e-5f * (1 + std::abs(w)) : got == w;
                if (!ok && bad++ < 5)
                  ADD_FAILURE() << cpu_isa_info(isa).name << " " << mr << "x" << nr << " kc " << kc
                                << " (overwrite " << overwrite << "): C[" << r << ", " << j << "] = " << got
                                << ", want " << w;
              }
            ++checked;
          }
        }
  }
  EXPECT_GT(checked, 0);
}

// A unit whose blocks are in the set and whose k loop is long binds them from the
// table and emits no kernel of its own; a block outside it (8 columns) is still
// emitted into the unit, and so is every block of a short k loop.
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
  EXPECT_NE(src.find("static void tsl_ukr_10x8_"), std::string::npos) << src;
  plan.bk = kCpuPrebuiltMinK - 1;
  const std::string short_k = emit_cpu(hand_gemm_program(plan), CpuIsa::Avx512);
  EXPECT_EQ(short_k.find("(tsl_ukr_fn)table["), std::string::npos) << short_k;
  EXPECT_NE(short_k.find("static void tsl_ukr_10x32_"), std::string::npos) << short_k;
}

// The edge block of an in-place product: only rows x cols of A's rows, B's columns
// and C are touched (everything else NaN: a read of it would show in C, a write
// outside would change it), accumulating and overwriting, against the reference.
TEST(CpuSupport, MmaEdgeMatchesTheReferenceInsideItsBlock) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  auto edge = reinterpret_cast<void (*)(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t,
                                        int64_t, int64_t, int)>(cpu_support_table()[1]);
  ASSERT_EQ(edge, &cpu_mma_edge);
  const int64_t cases[][3] = {{5, 7, 9}, {1, 1, 1}, {11, 31, 61}, {3, 2, 0}, {0, 4, 3}, {4, 0, 3}};
  for (const auto& [rows, cols, kc] : cases) {
    const int64_t lda = kc + 3, ldb = cols + 5, ldc = cols + 2;
    std::vector<float> a((rows + 1) * lda, NAN), b((kc + 1) * ldb, NAN), c((rows + 1) * ldc, NAN);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < kc; ++k) a[r * lda + k] = u(rng);
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t j = 0; j < cols; ++j) b[k * ldb + j] = u(rng);
    for (int overwrite : {0, 1}) {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) c[r * ldc + j] = overwrite ? NAN : u(rng);
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
            ADD_FAILURE() << rows << "x" << cols << " kc " << kc << " (overwrite " << overwrite << "): C[" << r
                          << ", " << j << "] = " << got << ", want " << w;
        }
    }
  }
}

}  // namespace
}  // namespace tessel::testing
