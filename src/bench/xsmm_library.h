// libxsmm (JIT small-matrix GEMM) loaded at run time, for `tessel bench --impl
// libxsmm`. Debian's libxsmm-dev has static archives only, so the build links
// them into a small module of its own, libtessel_xsmm_peer.so beside the tessel
// executable (bench/xsmm_peer.cpp, built where libxsmm-dev is found); this class
// dlopens that module, so tessel has no link dependency on libxsmm.
//
// The rule: dispatch once per shape (a JIT kernel), then call the kernel; the
// call is what the benchmark times. libxsmm is column-major, so row-major
// C = A * B is computed as C^T = B^T * A^T (operands and M, N swapped).
#pragma once
#include <cstdint>
#include <string>

namespace tessel::bench {

class XsmmLibrary {
 public:
  // The same signature as libxsmm_smmfunction: a, b, c (no prefetch arguments).
  using Kernel = void (*)(const float* a, const float* b, float* c, ...);

  // Loads the module beside the running executable. A missing module (libxsmm-dev
  // was not installed when the build was configured) is a user error (Runtime)
  // naming the package.
  XsmmLibrary();
  XsmmLibrary(const XsmmLibrary&) = delete;
  XsmmLibrary& operator=(const XsmmLibrary&) = delete;

  // A kernel for row-major C (m x n) = A (m x k) * B (k x n) + beta C, packed,
  // alpha 1, beta 0 or 1: call it as kernel(b, a, c). Unsupported (user error) when
  // libxsmm gives none for this shape, or for another beta.
  Kernel row_major_kernel(int64_t m, int64_t n, int64_t k, float beta = 0) const;

  const std::string& path() const { return path_; }        // the module loaded
  const std::string& version() const { return version_; }  // "libxsmm 1.17 (...) target=cpx"

 private:
  using DispatchFn = void* (*)(int, int, int, int, int, int, float);
  void* handle_ = nullptr;  // never closed: the JIT kernels live in libxsmm's registry
  DispatchFn dispatch_ = nullptr;
  std::string path_, version_;
};

}  // namespace tessel::bench
