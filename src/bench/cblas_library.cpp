#include "bench/cblas_library.h"

#include <dlfcn.h>

#include <cstdint>

#include "tessel/error.h"

namespace tessel::bench {
namespace {

constexpr int kRowMajor = 101, kNoTrans = 111;  // CBLAS enum values

void* symbol(void* handle, const std::string& lib, const char* name) {
  void* p = dlsym(handle, name);
  if (!p) user_error(ErrorKind::Runtime, lib + " has no symbol " + name);
  return p;
}

}  // namespace

CblasLibrary::CblasLibrary(const std::string& name) : name_(name) {
  const char* soname = name == "openblas" ? "libopenblas.so.0"
                       : name == "blis"   ? "libblis.so.4"
                                          : nullptr;
  if (!soname) user_error(ErrorKind::InvalidArgument, "unknown CBLAS library '" + name + "'");
  handle_ = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!handle_)
    user_error(ErrorKind::Runtime, std::string("cannot load ") + soname + ": " + dlerror());
  sgemm_ = reinterpret_cast<SgemmFn>(symbol(handle_, soname, "cblas_sgemm"));
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(sgemm_), &info) && info.dli_fname) path_ = info.dli_fname;
  if (name == "openblas") {
    set_threads_ = symbol(handle_, soname, "openblas_set_num_threads");
    auto config = reinterpret_cast<char* (*)()>(symbol(handle_, soname, "openblas_get_config"));
    auto core = reinterpret_cast<char* (*)()>(symbol(handle_, soname, "openblas_get_corename"));
    version_ = std::string(config()) + " core=" + core();
  } else {
    set_threads_ = symbol(handle_, soname, "bli_thread_set_num_threads");
    auto ver = reinterpret_cast<char* (*)()>(symbol(handle_, soname, "bli_info_get_version_str"));
    auto arch_id = reinterpret_cast<int (*)()>(symbol(handle_, soname, "bli_arch_query_id"));
    auto arch = reinterpret_cast<char* (*)(int)>(symbol(handle_, soname, "bli_arch_string"));
    version_ = std::string("BLIS ") + ver() + " arch=" + arch(arch_id());
  }
}

void CblasLibrary::set_threads(int threads) const {
  if (name_ == "openblas")
    reinterpret_cast<void (*)(int)>(set_threads_)(threads);
  else  // BLIS takes a dim_t, 64 bits in Debian's build
    reinterpret_cast<void (*)(int64_t)>(set_threads_)(threads);
}

void CblasLibrary::sgemm(int m, int n, int k, float alpha, const float* a, const float* b,
                         float beta, float* c) const {
  sgemm_(kRowMajor, kNoTrans, kNoTrans, m, n, k, alpha, a, k, b, n, beta, c, n);
}

}  // namespace tessel::bench
