// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"), so that the
// library and every test link and start on machines without a GPU driver (CI).
// Names in the table are cuda.h's, so versioned entry points (cuMemAlloc ->
// cuMemAlloc_v2) resolve as cuda.h says.
#pragma once
#include <cuda.h>

#include <string>

namespace tessel {

#define TESSEL_CUDA_DRIVER_FUNCTIONS(X)                                                        \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)         \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxSynchronize)    \
  X(cuModuleLoadData) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute)        \
  X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD32)   \
  X(cuMemcpy2DAsync)                                                                           \
  X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)                 \
  X(cuEventDestroy) X(cuGetErrorName) X(cuGetErrorString)

struct CudaDriver {
#define TESSEL_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  TESSEL_CUDA_DRIVER_FUNCTIONS(TESSEL_DRIVER_MEMBER)
#undef TESSEL_DRIVER_MEMBER
  // Optional (null where the driver lacks it, CUDA 12+): tma copies' tensor maps, and
  // launches with attributes (programmatic dependent launch).
  decltype(&::cuTensorMapEncodeTiled) cuTensorMapEncodeTiled = nullptr;
  decltype(&::cuLaunchKernelEx) cuLaunchKernelEx = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;  // device 0's primary context
};

// True when the driver loads, initializes and shows at least one device; else
// false with the reason in *why.
bool cuda_gpu_available(std::string* why = nullptr);

// The loaded driver with device 0's primary context current on this thread. No
// GPU is a user error (ErrorKind::Runtime) with the reason.
const CudaDriver& cuda_driver();

// A failed driver call is a user error (ErrorKind::Runtime): "what: NAME (text)".
void cuda_check(CUresult result, const std::string& what);

}  // namespace tessel
