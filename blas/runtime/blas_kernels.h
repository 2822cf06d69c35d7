// The kernels libtessel_blas.so carries: units that tessel's cpu target emitted at
// build time (blas/gen/blas_gen.cpp), compiled into the library, and the table that
// describes them (blas_table.inc, written by the generator, included once by
// blas_gemm.cpp).
//
// Each kernel computes, for one group (a BM x BN block of C), the row-major
//   C = alpha * op(A) * op(B) + beta * C       (beta == 0: C is not read)
// with op(A) [M, K] stored as is (strides lda, 1) or transposed (strides 1, lda), op(B)
// [K, N] likewise, C [M, N] (ldc, 1), in f32 or f64, with guarded edges, so any M, N, K
// >= 1 runs. Its entry points are those of a cpu unit (target/cpu/cpu_emit.h).
#pragma once
#include <cstdint>

namespace tessel::blas {

// The canonical parameter orders the table's index arrays refer to.
enum CanonicalSize { kM, kN, kK, kLda, kLdb, kLdc };  // sizes
enum CanonicalTensor { kA, kB, kC };                  // tensors
enum CanonicalScalar { kAlpha, kBeta };               // scalars

struct BlasKernel {
  int f64, trans_a, trans_b;
  int64_t bm, bn, bk;
  // The program's parameters, in its order, as canonical indices.
  int n_sizes, sizes[8];
  int n_tensors, tensors[3];
  int n_scalars, scalars[2];
  void (*group)(const int64_t* sizes, const double* scalars, float* const* tensors, const int64_t* coord,
                float* scratch);
  int64_t (*scratch_floats)();
  void (*bind)(void* const* table);  // once, before the first group (cpu_support.h)
  void (*grid)(const int64_t* canonical_sizes, int64_t* extents);  // 2 extents, the last fastest
};

// The kernels for one vector ISA (target/cpu/cpu_isa.h names).
struct BlasKernelSet {
  const char* isa;
  const BlasKernel* kernels;
  int count;
};

}  // namespace tessel::blas
