#include "bench/xsmm_library.h"

#include <dlfcn.h>

#include <climits>
#include <filesystem>

#include "tessel/error.h"

namespace tessel::bench {
namespace {

constexpr const char* kModule = "libtessel_xsmm_peer.so";

void* symbol(void* handle, const std::string& path, const char* name) {
  void* p = dlsym(handle, name);
  if (!p) user_error(ErrorKind::Runtime, path + " has no symbol " + name);
  return p;
}

std::string module_path() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) user_error(ErrorKind::Runtime, "cannot find this executable: " + ec.message());
  return (exe.parent_path() / kModule).string();
}

}  // namespace

XsmmLibrary::XsmmLibrary() {
  std::string path = module_path();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    user_error(ErrorKind::Runtime,
               "libxsmm is not available: " + path +
                   " not found (the build makes it beside tessel where the Debian package libxsmm-dev "
                   "is installed when cmake configures: install libxsmm-dev, e.g. scripts/deps.sh, and "
                   "re-run cmake)");
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) user_error(ErrorKind::Runtime, "cannot load " + path + ": " + dlerror());
  path_ = path;
  dispatch_ = reinterpret_cast<DispatchFn>(symbol(handle_, path, "tessel_xsmm_dispatch"));
  version_ = reinterpret_cast<const char* (*)()>(symbol(handle_, path, "tessel_xsmm_version"))();
}

XsmmLibrary::Kernel XsmmLibrary::row_major_kernel(int64_t m, int64_t n, int64_t k, float beta) const {
  if (beta != 0 && beta != 1)
    user_error(ErrorKind::Unsupported, "libxsmm's kernels take beta 0 or 1, not " + std::to_string(beta));
  if (m < 1 || n < 1 || k < 1 || m > INT_MAX || n > INT_MAX || k > INT_MAX)
    user_error(ErrorKind::Unsupported, "libxsmm takes sizes in [1, " + std::to_string(INT_MAX) + "], got " +
                                           std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
  // Column-major C^T (n x m, ld n) = B^T (n x k, ld n) * A^T (k x m, ld k).
  void* f = dispatch_(int(n), int(m), int(k), int(n), int(k), int(n), beta);
  if (!f)
    user_error(ErrorKind::Unsupported, version_ + " gives no JIT kernel for " + std::to_string(m) + "x" +
                                           std::to_string(n) + "x" + std::to_string(k));
  return reinterpret_cast<Kernel>(f);
}

}  // namespace tessel::bench
