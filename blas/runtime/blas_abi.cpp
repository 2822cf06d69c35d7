// The BLAS entry points of libtessel_blas.so (docs/blas.md): sgemm_ and dgemm_ (the
// Fortran ABI: every argument by reference, the two hidden string lengths last) and
// cblas_sgemm and cblas_dgemm. Each checks its arguments as the reference BLAS and
// CBLAS do and reports the first bad one through xerbla_ / cblas_xerbla, looked up
// when the error happens (so a process without one still loads the library), with
// C untouched; then returns quickly where nothing is to be computed, and otherwise
// hands a row-major problem to blas::gemm (blas_gemm.h).
#include <dlfcn.h>

#include <cstdarg>
#include <cstddef>
#include <cstdio>

#include "blas_gemm.h"

namespace tessel::blas {
namespace {

using Xerbla = void (*)(const char* name, const int* info, size_t name_len);
using CblasXerbla = void (*)(int info, const char* routine, const char* form, ...);

// name: "SGEMM " as the reference passes it (6 characters, blank padded).
void report(const char* name, int info) {
  if (auto f = reinterpret_cast<Xerbla>(dlsym(RTLD_DEFAULT, "xerbla_"))) return f(name, &info, 6);
  std::fprintf(stderr, " ** On entry to %.6s parameter number %d had an illegal value\n", name, info);
}

void report_cblas(const char* routine, int info, const char* what, int value) {
  if (auto f = reinterpret_cast<CblasXerbla>(dlsym(RTLD_DEFAULT, "cblas_xerbla")))
    return f(info, routine, "Illegal %s setting, %d\n", what, value);
  std::fprintf(stderr, "Parameter %d to routine %s was incorrect (%s = %d)\n", info, routine, what, value);
}

bool is(char c, char upper) { return c == upper || c == upper + ('a' - 'A'); }
// 'N': as is; 'T' or 'C' (real data: the same): transposed; else invalid.
bool transposed(char c) { return !is(c, 'N'); }
bool valid_trans(char c) { return is(c, 'N') || is(c, 'T') || is(c, 'C'); }
int at_least_1(int x) { return x > 1 ? x : 1; }

// Column-major C [m, n] = alpha op(A) op(B) + beta C is row-major C^T [n, m] =
// alpha op(B)^T op(A)^T + beta C^T: the row-major kernel with the operands swapped,
// each keeping its own transposition.
template <class T>
void fortran_gemm(const char* name, const char* transa, const char* transb, const int* m, const int* n,
                  const int* k, const T* alpha, const T* a, const int* lda, const T* b, const int* ldb,
                  const T* beta, T* c, const int* ldc) {
  const bool ta = transposed(*transa), tb = transposed(*transb);
  const int nrowa = ta ? *k : *m, nrowb = tb ? *n : *k;
  int info = 0;
  if (!valid_trans(*transa)) info = 1;
  else if (!valid_trans(*transb)) info = 2;
  else if (*m < 0) info = 3;
  else if (*n < 0) info = 4;
  else if (*k < 0) info = 5;
  else if (*lda < at_least_1(nrowa)) info = 8;
  else if (*ldb < at_least_1(nrowb)) info = 10;
  else if (*ldc < at_least_1(*m)) info = 13;
  if (info) return report(name, info);
  if (*m == 0 || *n == 0 || ((*alpha == T(0) || *k == 0) && *beta == T(1))) return;
  gemm(tb, ta, *n, *m, *k, *alpha, b, *ldb, a, *lda, *beta, c, *ldc);
}

// CBLAS enum values (cblas.h).
enum { kRowMajor = 101, kColMajor = 102, kNoTrans = 111, kTrans = 112, kConjTrans = 113 };

// Parameter numbers as the reference CBLAS gives them: 1 layout, 2 and 3 the
// transpositions, then the Fortran routine's number plus one, for the Fortran call
// the layout makes. Row-major calls it with the operands swapped (N, M, K, B, ldb,
// A, lda), so there an N < 0 is 4, an M < 0 is 5, a bad ldb is 9 and a bad lda 11.
template <class T>
void cblas_gemm(const char* routine, int layout, int transa, int transb, int m, int n, int k, T alpha,
                const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc) {
  auto valid = [](int t) { return t == kNoTrans || t == kTrans || t == kConjTrans; };
  if (layout != kRowMajor && layout != kColMajor) return report_cblas(routine, 1, "layout", layout);
  if (!valid(transa)) return report_cblas(routine, 2, "TransA", transa);
  if (!valid(transb)) return report_cblas(routine, 3, "TransB", transb);
  const bool ta = transa != kNoTrans, tb = transb != kNoTrans, row = layout == kRowMajor;
  // (rows of A as stored, rows of B as stored, rows of C) in column-major terms, the
  // numbers their leading dimensions are checked against.
  const int need_a = row ? (ta ? m : k) : (ta ? k : m);
  const int need_b = row ? (tb ? k : n) : (tb ? n : k);
  const int need_c = row ? n : m;
  if (row) {
    if (n < 0) return report_cblas(routine, 4, "N", n);
    if (m < 0) return report_cblas(routine, 5, "M", m);
    if (k < 0) return report_cblas(routine, 6, "K", k);
    if (ldb < at_least_1(need_b)) return report_cblas(routine, 9, "ldb", ldb);
    if (lda < at_least_1(need_a)) return report_cblas(routine, 11, "lda", lda);
  } else {
    if (m < 0) return report_cblas(routine, 4, "M", m);
    if (n < 0) return report_cblas(routine, 5, "N", n);
    if (k < 0) return report_cblas(routine, 6, "K", k);
    if (lda < at_least_1(need_a)) return report_cblas(routine, 9, "lda", lda);
    if (ldb < at_least_1(need_b)) return report_cblas(routine, 11, "ldb", ldb);
  }
  if (ldc < at_least_1(need_c)) return report_cblas(routine, 14, "ldc", ldc);
  if (m == 0 || n == 0 || ((alpha == T(0) || k == 0) && beta == T(1))) return;
  if (row) gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else gemm(tb, ta, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
}

}  // namespace
}  // namespace tessel::blas

using tessel::blas::cblas_gemm;
using tessel::blas::fortran_gemm;

#define TESSEL_BLAS_EXPORT extern "C" __attribute__((visibility("default")))

TESSEL_BLAS_EXPORT void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                               const float* alpha, const float* a, const int* lda, const float* b,
                               const int* ldb, const float* beta, float* c, const int* ldc, size_t, size_t) {
  fortran_gemm("SGEMM ", transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

TESSEL_BLAS_EXPORT void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                               const double* alpha, const double* a, const int* lda, const double* b,
                               const int* ldb, const double* beta, double* c, const int* ldc, size_t, size_t) {
  fortran_gemm("DGEMM ", transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

TESSEL_BLAS_EXPORT void cblas_sgemm(int layout, int transa, int transb, int m, int n, int k, float alpha,
                                    const float* a, int lda, const float* b, int ldb, float beta, float* c,
                                    int ldc) {
  cblas_gemm("cblas_sgemm", layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

TESSEL_BLAS_EXPORT void cblas_dgemm(int layout, int transa, int transb, int m, int n, int k, double alpha,
                                    const double* a, int lda, const double* b, int ldb, double beta, double* c,
                                    int ldc) {
  cblas_gemm("cblas_dgemm", layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
