// The BLAS library's GEMM kernel (blas/gen/blas_kernel.h) through the public API on
// the cpu target, in f64: the launch takes f64 tensors, and the kernel computes in f64
// (an f32 accumulator would miss the bound below by nine orders of magnitude).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "blas_kernel.h"
#include "ops/gemm.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

TensorArg f64_matrix(double* data, int64_t rows, int64_t cols, std::vector<int64_t> strides) {
  TensorArg t;
  t.data = data;
  t.dtype = DType::F64;
  t.shape = {rows, cols};
  t.strides = std::move(strides);
  return t;
}

TEST(BlasKernel, F64ThroughThePublicApiOnCpu) {
  const int64_t m = 45, n = 70, k = 133;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(testing::Message() << "trans_a " << ta << " trans_b " << tb);
      Plan plan = default_gemm_plan(TargetKind::Cpu, m, n, k);
      Kernel kernel = compile(blas_gemm_kernel(DType::F64, ta, tb), plan);
      const int64_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 1, ldc = n + 3;
      std::mt19937_64 rng(7);
      std::uniform_real_distribution<double> u(-1, 1);
      std::vector<double> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), c(m * ldc);
      for (double& x : a) x = u(rng);
      for (double& x : b) x = u(rng);
      for (double& x : c) x = std::numeric_limits<double>::quiet_NaN();  // beta == 0: never read
      KernelArgs args;
      args.tensors["A"] = f64_matrix(a.data(), m, k, ta ? std::vector<int64_t>{1, lda} : std::vector<int64_t>{lda, 1});
      args.tensors["B"] = f64_matrix(b.data(), k, n, tb ? std::vector<int64_t>{1, ldb} : std::vector<int64_t>{ldb, 1});
      args.tensors["C"] = f64_matrix(c.data(), m, n, {ldc, 1});
      args.scalars = {{"alpha", 1.0 / 3}, {"beta", 0.0}};
      kernel.launch(args);
      int bad = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0, mag = 0;
          for (int64_t l = 0; l < k; ++l) {
            double x = (ta ? a[l * lda + i] : a[i * lda + l]) * (tb ? b[j * ldb + l] : b[l * ldb + j]);
            s += x;
            mag += std::abs(x);
          }
          double want = s / 3, got = c[i * ldc + j];
          double bound = 2 * (k + 2) * std::numeric_limits<double>::epsilon() * mag;
          if (!(std::abs(got - want) <= bound) && bad++ < 3)
            ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", want " << want << " (bound " << bound << ")";
        }
      EXPECT_EQ(bad, 0);
    }
}

// The sim stores tensors as f32, so it still refuses f64 ones.
TEST(BlasKernel, SimRefusesF64Tensors) {
  Plan plan = default_gemm_plan(TargetKind::Sim, 8, 8, 8);
  Kernel kernel = compile(blas_gemm_kernel(DType::F64, false, false), plan);
  std::vector<double> a(64, 1), b(64, 1), c(64, 0);
  KernelArgs args;
  args.tensors["A"] = f64_matrix(a.data(), 8, 8, {8, 1});
  args.tensors["B"] = f64_matrix(b.data(), 8, 8, {8, 1});
  args.tensors["C"] = f64_matrix(c.data(), 8, 8, {8, 1});
  args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
  try {
    kernel.launch(args);
    ADD_FAILURE() << "the sim took f64 tensors";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
  }
}

}  // namespace
}  // namespace tessel
