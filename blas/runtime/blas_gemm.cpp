#include "blas_gemm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "blas_kernels.h"
#include "blas_pool.h"
#include "target/cpu/cpu_support.h"

namespace tessel::blas {
namespace {

// What the grid expressions of the table call (ir/expr.h: expr_to_cpp).
int64_t tsl_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
[[maybe_unused]] int64_t tsl_ceildiv(int64_t a, int64_t b) { return -tsl_floordiv(-a, b); }
[[maybe_unused]] int64_t tsl_mod(int64_t a, int64_t b) { return a - b * tsl_floordiv(a, b); }
[[maybe_unused]] int64_t tsl_min(int64_t a, int64_t b) { return a < b ? a : b; }
[[maybe_unused]] int64_t tsl_max(int64_t a, int64_t b) { return a > b ? a : b; }

#include "blas_table.inc"

constexpr int kSets = sizeof tsl_blas_kernel_sets / sizeof tsl_blas_kernel_sets[0];

bool cpu_runs(const CpuFeatures& f, const char* isa) {
  if (!std::strcmp(isa, "avx512")) return f.avx512;
  if (!std::strcmp(isa, "avx2")) return f.avx2_fma;
  return true;  // sse: every x86-64
}

// The set whose kernels run, its units bound to tessel's support table once.
const BlasKernelSet& kernel_set() {
  static const BlasKernelSet* chosen = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    const CpuFeatures f = cpu_features();
    const char* want = std::getenv("TESSEL_CPU_ISA");
    if (want && *want) {
      for (int i = 0; i < kSets && !chosen; ++i)
        if (!std::strcmp(want, tsl_blas_kernel_sets[i].isa) && cpu_runs(f, want)) chosen = &tsl_blas_kernel_sets[i];
      if (!chosen)
        std::fprintf(stderr, "libtessel_blas: TESSEL_CPU_ISA=%s is not avx512, avx2 or sse, or not one this CPU runs; ignored\n", want);
    }
    for (int i = 0; i < kSets && !chosen; ++i)  // widest first
      if (cpu_runs(f, tsl_blas_kernel_sets[i].isa)) chosen = &tsl_blas_kernel_sets[i];
    for (int i = 0; i < chosen->count; ++i) chosen->kernels[i].bind(cpu_support_table());
  });
  return *chosen;
}

// The plan for this shape among the compiled ones (blas_gen.cpp ships the cpu
// planner's choices for a small, a middle and a large problem), by a rough cost:
// the kernels skip the padding in their products (an mma's valid extents) but pack
// and zero-fill whole tiles, so a group costs its staging copies (BM x BK + BK x BN a
// k step) and its C block besides the flops; groups spread over the threads.
const BlasKernel& choose(const BlasKernelSet& set, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                         int nthreads) {
  constexpr double kNsPerCopied = 0.25, kFlopsPerNs = 100;  // one AVX-512 core, roughly
  const BlasKernel* best = nullptr;
  double best_ns = 0;
  for (int i = 0; i < set.count; ++i) {
    const BlasKernel& kr = set.kernels[i];
    if (kr.f64 != f64 || kr.trans_a != ta || kr.trans_b != tb) continue;
    const double groups = double((m + kr.bm - 1) / kr.bm) * double((n + kr.bn - 1) / kr.bn);
    const double k_steps = double((k + kr.bk - 1) / kr.bk);
    const double copied = groups * (k_steps * double(kr.bk) * double(kr.bm + kr.bn) + double(kr.bm * kr.bn));
    const double ns = (copied * kNsPerCopied + 2.0 * double(m) * double(n) * double(k) / kFlopsPerNs) /
                      std::min<double>(groups, nthreads);
    if (!best || ns < best_ns) best = &kr, best_ns = ns;
  }
  return *best;
}

// A thread's scratch for the kernels' staging and fragments, 64-byte aligned.
float* scratch(int64_t floats) {
  struct Buffer {
    float* data = nullptr;
    int64_t floats = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer s;
  if (s.floats < floats) {
    std::free(s.data);
    s.data = static_cast<float*>(std::aligned_alloc(64, (static_cast<size_t>(floats) * 4 + 63) / 64 * 64));
    if (!s.data) {
      std::fprintf(stderr, "libtessel_blas: out of memory for %lld bytes of kernel scratch\n", (long long)floats * 4);
      std::abort();
    }
    s.floats = floats;
  }
  return s.data;
}

struct Launch {
  const BlasKernel* kernel;
  int64_t sizes[8];
  double scalars[2];
  float* tensors[3];
  int64_t grid[2];
};

void run_group(void* ctx, int64_t g) {
  const Launch& l = *static_cast<const Launch*>(ctx);
  int64_t coord[8] = {g / l.grid[1], g % l.grid[1]};
  l.kernel->group(l.sizes, l.scalars, l.tensors, coord, scratch(l.kernel->scratch_floats()));
}

template <class T>
void scale(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  if (beta == T(1)) return;
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0))
      for (int64_t j = 0; j < n; ++j) row[j] = T(0);
    else
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
  }
}

template <class T>
void gemm_any(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
              int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (alpha == T(0) || k == 0) return scale(m, n, beta, c, ldc);
  // Small products stay on the calling thread: handing them to the pool lost more than
  // it gained (128^3 ran at 145 GFLOP/s on one thread, 80 on two: docs/results/blas-2026-11-30).
  constexpr double kParallelFlops = 2.0 * 192 * 192 * 192;
  const int nthreads = 2.0 * double(m) * double(n) * double(k) < kParallelFlops ? 1 : threads();
  const BlasKernelSet& set = kernel_set();
  Launch l;
  l.kernel = &choose(set, sizeof(T) == 8, ta, tb, m, n, k, nthreads);
  const int64_t canonical_sizes[6] = {m, n, k, lda, ldb, ldc};
  const double canonical_scalars[2] = {double(alpha), double(beta)};
  float* canonical_tensors[3] = {reinterpret_cast<float*>(const_cast<T*>(a)),
                                 reinterpret_cast<float*>(const_cast<T*>(b)), reinterpret_cast<float*>(c)};
  for (int i = 0; i < l.kernel->n_sizes; ++i) l.sizes[i] = canonical_sizes[l.kernel->sizes[i]];
  for (int i = 0; i < l.kernel->n_scalars; ++i) l.scalars[i] = canonical_scalars[l.kernel->scalars[i]];
  for (int i = 0; i < l.kernel->n_tensors; ++i) l.tensors[i] = canonical_tensors[l.kernel->tensors[i]];
  l.kernel->grid(canonical_sizes, l.grid);
  run(l.grid[0] * l.grid[1], nthreads, run_group, &l);
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_any(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  gemm_any(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

const char* isa_name() { return kernel_set().isa; }

}  // namespace tessel::blas
