// Runs a GEMM GroupProgram on the cpu target and checks the complete output
// against an FP64 oracle. Inputs are fresh random numbers; C's padding (columns
// cols .. ld) is poisoned and must come back untouched; with beta == 0 all of C is
// poisoned with NaN first (beta == 0 must never read C).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "target/cpu/cpu_jit.h"

namespace tessel::testing {

struct GemmCase {
  int64_t m, n, k;
  double alpha, beta;
  int threads = 1;
  bool dense = false;  // A's and B's rows one after another (lda = K, ldb = N); else padded
};

// Error bound per element: 1e-5 * sqrt(K) relative to the sum of magnitudes
// |alpha| * sum_k |a_ik b_kj| + |beta c_ij| (fp32 rounding grows about like sqrt(K)).
// `run` runs the program on the arguments (the cpu kernel, or the simulator).
inline void check_gemm_run(const std::function<void(const LaunchArgs&)>& run, const GemmCase& g, uint32_t seed) {
  const int64_t lda = g.dense ? g.k : g.k + 3, ldb = g.dense ? g.n : g.n + 5, ldc = g.n + 2;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  // C has two guard rows past row M, and columns N .. ldc in every row: writes past
  // the tensor's edge (a ragged tile's block) land there and are caught below.
  constexpr int64_t kGuardRows = 2;
  std::vector<float> A(g.m * lda), B(g.k * ldb), C((g.m + kGuardRows) * ldc);
  for (float& x : A) x = u(rng);
  for (float& x : B) x = u(rng);
  for (float& x : C) x = g.beta == 0 ? std::nanf("") : u(rng);
  const float pad = -12345.5f;  // columns n .. ldc of every row, and the guard rows
  for (int64_t r = 0; r < g.m + kGuardRows; ++r)
    for (int64_t c = r < g.m ? g.n : 0; c < ldc; ++c) C[r * ldc + c] = pad;
  std::vector<float> C0 = C;

  LaunchArgs args;
  args.sizes = {{"M", g.m}, {"N", g.n}, {"K", g.k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}};
  args.scalars = {{"alpha", g.alpha}, {"beta", g.beta}};
  args.tensors = {{"A", A.data()}, {"B", B.data()}, {"C", C.data()}};
  run(args);

  const double tol = 1e-5 * std::sqrt(static_cast<double>(std::max<int64_t>(g.k, 1)));
  int64_t bad = 0;
  for (int64_t r = 0; r < g.m; ++r) {
    for (int64_t c = 0; c < g.n; ++c) {
      double dot = 0, mag = 0;
      for (int64_t kk = 0; kk < g.k; ++kk) {
        double p = static_cast<double>(A[r * lda + kk]) * B[kk * ldb + c];
        dot += p;
        mag += std::abs(p);
      }
      double c0 = g.beta == 0 ? 0 : C0[r * ldc + c];
      double want = g.alpha * dot + g.beta * c0;
      double scale = std::abs(g.alpha) * mag + std::abs(g.beta * c0) + 1e-30;
      double got = C[r * ldc + c];
      if (!(std::abs(got - want) <= tol * scale) && bad++ < 5)
        ADD_FAILURE() << "C[" << r << ", " << c << "] = " << got << ", want " << want << " ("
                      << g.m << "x" << g.n << "x" << g.k << ")";
    }
    for (int64_t c = g.n; c < ldc; ++c)
      if (std::memcmp(&C[r * ldc + c], &pad, sizeof pad) != 0 && bad++ < 5)
        ADD_FAILURE() << "padding C[" << r << ", " << c << "] was written";
  }
  for (int64_t e = g.m * ldc; e < (g.m + kGuardRows) * ldc; ++e)
    if (std::memcmp(&C[e], &pad, sizeof pad) != 0 && bad++ < 5)
      ADD_FAILURE() << "guard row " << e / ldc << " column " << e % ldc << " was written";
  EXPECT_EQ(bad, 0) << "wrong elements in " << g.m << "x" << g.n << "x" << g.k;
}

inline void check_gemm(const CpuKernel& kernel, const GemmCase& g, uint32_t seed) {
  check_gemm_run([&](const LaunchArgs& args) { kernel.run(args, g.threads); }, g, seed);
}

}  // namespace tessel::testing
