// libtessel_xsmm_peer.so: libxsmm's JIT GEMM behind two C functions, for
// `tessel bench --impl libxsmm` (src/bench/xsmm_library.h loads it with dlopen).
// Debian's libxsmm-dev ships static archives only, so this module is linked
// against them once, at build time (CMakeLists.txt, only where libxsmm-dev is
// found); tessel itself never links libxsmm.
#include <libxsmm.h>

#include <cstdio>

extern "C" {

// "libxsmm 1.17 (release-1.17) target=cpx": the headers' version and the code path
// libxsmm chose for this CPU (LIBXSMM_TARGET overrides it).
__attribute__((visibility("default"))) const char* tessel_xsmm_version() {
  static char text[128];
  libxsmm_init();
  std::snprintf(text, sizeof text, "libxsmm %s (%s-%s) target=%s", LIBXSMM_VERSION, LIBXSMM_CONFIG_BRANCH,
                LIBXSMM_VERSION, libxsmm_get_target_arch());
  return text;
}

// A JIT kernel for column-major C (m x n, ldc) = A (m x k, lda) * B (k x n, ldb),
// alpha 1, beta 0 or 1, no prefetch (so it takes exactly a, b, c); null when libxsmm
// gives none. Dispatched once per shape; the kernel is libxsmm's for the process.
// (LIBXSMM_MAX_MNK, 64^3 in Debian's build, limits only libxsmm's own ?gemm front
// end, which hands larger products to BLAS; this dispatch JITs any size, unblocked
// for the caches, so large shapes run but slowly.)
__attribute__((visibility("default"))) void* tessel_xsmm_dispatch(int m, int n, int k, int lda, int ldb, int ldc,
                                                                  float beta) {
  libxsmm_init();
  const float alpha = 1;
  const int flags = LIBXSMM_GEMM_FLAG_NONE, prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
  const libxsmm_blasint ld_a = lda, ld_b = ldb, ld_c = ldc;
  libxsmm_smmfunction f = libxsmm_smmdispatch(m, n, k, &ld_a, &ld_b, &ld_c, &alpha, &beta, &flags, &prefetch);
  return reinterpret_cast<void*>(f);
}

}  // extern "C"
