// A CBLAS library (OpenBLAS or BLIS) loaded at run time. Both export
// cblas_sgemm, so neither is linked: each is opened with dlopen(RTLD_LOCAL) by
// its soname, which the dynamic linker resolves through the ldconfig cache.
#pragma once
#include <string>

namespace tessel::bench {

class CblasLibrary {
 public:
  // "openblas" (libopenblas.so.0) or "blis" (libblis.so.4). A library that does
  // not load, or lacks a symbol, is a user error (Runtime) with dlerror's text.
  explicit CblasLibrary(const std::string& name);
  CblasLibrary(const CblasLibrary&) = delete;
  CblasLibrary& operator=(const CblasLibrary&) = delete;

  void set_threads(int threads) const;
  // C = alpha * A * B + beta * C, fp32, row-major, no transposes, packed.
  void sgemm(int m, int n, int k, float alpha, const float* a, const float* b, float beta,
             float* c) const;

  const std::string& path() const { return path_; }        // the file actually loaded
  const std::string& version() const { return version_; }  // e.g. "OpenBLAS 0.3.21 ... Cooperlake"

 private:
  using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                           int, float, float*, int);
  void* handle_ = nullptr;  // never closed: a BLAS's threads may outlive a call
  SgemmFn sgemm_ = nullptr;
  void* set_threads_ = nullptr;
  std::string name_, path_, version_;
};

}  // namespace tessel::bench
