// The row-major GEMM every BLAS entry point comes down to (blas_abi.cpp maps
// column-major calls onto it: C^T = op(B)^T op(A)^T):
//   C = alpha * op(A) * op(B) + beta * C,  C [m, n] with row stride ldc,
//   op(A) [m, k]: A stored [m, k] (trans_a false, row stride lda) or [k, m] (true),
//   op(B) [k, n]: B stored [k, n] (row stride ldb) or [n, k].
// Arguments are already checked. m or n of 0 does nothing; alpha == 0 or k == 0 only
// scales C (beta == 0 writes zeros, beta == 1 leaves C alone); beta == 0 never reads C.
// Otherwise one of the compiled kernels (blas_kernels.h) runs over its grid on
// blas::threads() threads. Safe to call from many threads at once.
#pragma once
#include <cstdint>

namespace tessel::blas {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// The vector ISA whose kernels run: TESSEL_CPU_ISA (avx512, avx2, sse) when set and
// the CPU runs it, else the widest the CPU runs; chosen on the first call.
const char* isa_name();

}  // namespace tessel::blas
