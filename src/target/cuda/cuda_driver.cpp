#include "target/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

#include "tessel/error.h"

namespace tessel {
namespace {

#define TESSEL_STR2(x) #x
#define TESSEL_STR(x) TESSEL_STR2(x)

struct Loaded {
  CudaDriver driver;
  std::string error;  // empty when usable
};

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    l.error = std::string("no CUDA driver (libcuda.so.1): ") + dlerror();
    return l;
  }
  CudaDriver& d = l.driver;
#define TESSEL_DRIVER_LOAD(name)                                                 \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(lib, TESSEL_STR(name)));    \
  if (!d.name) {                                                                 \
    l.error = "the CUDA driver lacks " TESSEL_STR(name) " (driver too old?)";    \
    return l;                                                                    \
  }
  TESSEL_CUDA_DRIVER_FUNCTIONS(TESSEL_DRIVER_LOAD)
#undef TESSEL_DRIVER_LOAD
  d.cuTensorMapEncodeTiled =
      reinterpret_cast<decltype(d.cuTensorMapEncodeTiled)>(dlsym(lib, "cuTensorMapEncodeTiled"));
  d.cuLaunchKernelEx = reinterpret_cast<decltype(d.cuLaunchKernelEx)>(dlsym(lib, "cuLaunchKernelEx"));
  auto fail = [&](CUresult r, const char* what) {
    const char* name = nullptr;
    d.cuGetErrorName(r, &name);
    l.error = std::string(what) + ": " + (name ? name : "error " + std::to_string(r));
  };
  if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) return fail(r, "cuInit"), l;
  int count = 0;
  if (CUresult r = d.cuDeviceGetCount(&count); r != CUDA_SUCCESS) return fail(r, "cuDeviceGetCount"), l;
  if (count == 0) return l.error = "the CUDA driver sees no GPU", l;
  if (CUresult r = d.cuDeviceGet(&d.device, 0); r != CUDA_SUCCESS) return fail(r, "cuDeviceGet"), l;
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&d.context, d.device); r != CUDA_SUCCESS)
    return fail(r, "cuDevicePrimaryCtxRetain"), l;
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

bool cuda_gpu_available(std::string* why) {
  const Loaded& l = loaded();
  if (why) *why = l.error;
  return l.error.empty();
}

const CudaDriver& cuda_driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) user_error(ErrorKind::Runtime, "cuda target: " + l.error);
  // The primary context is current per thread: make it current on this one.
  thread_local bool current = false;
  if (!current) {
    cuda_check(l.driver.cuCtxSetCurrent(l.driver.context), "cuCtxSetCurrent");
    current = true;
  }
  return l.driver;
}

void cuda_check(CUresult result, const std::string& what) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  const CudaDriver& d = loaded().driver;
  if (d.cuGetErrorName) d.cuGetErrorName(result, &name);
  if (d.cuGetErrorString) d.cuGetErrorString(result, &text);
  user_error(ErrorKind::Runtime, what + ": " + (name ? name : "CUDA error " + std::to_string(result)) +
                                     (text ? std::string(" (") + text + ")" : ""));
}

}  // namespace tessel
