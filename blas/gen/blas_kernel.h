// The GEMM that libtessel_blas.so ships, in the DSL (blas_gen.cpp compiles it at build
// time; tests/blas also runs it through the public API):
//   C = alpha * op(A) * op(B) + beta * C, row-major C [M, N] with strides (ldc, 1);
//   op(A) [M, K] is A stored as is (strides lda, 1) or transposed (A stored [K, M]:
//   strides 1, lda); op(B) [K, N] likewise with ldb. Everything, the accumulator
//   included, in `dt` (f32 or f64). beta == 0 never reads C. Sizes M, N, K, lda, ldb,
//   ldc; scalars alpha, beta; tile parameters BM, BN, BK; tensors A, B, C.
// The BLAS front door maps column-major calls onto it (C^T = op(B)^T op(A)^T).
#pragma once
#include "ir/tile_ir.h"

namespace tessel {
TileKernel blas_gemm_kernel(DType dt, bool trans_a, bool trans_b);
}  // namespace tessel
