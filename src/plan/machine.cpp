#include "plan/machine.h"

#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_kernel.h"
#endif

namespace tessel {

int64_t cuda_multiprocessors() {
#ifdef TESSEL_WITH_CUDA
  static const int64_t device = default_cuda_multiprocessors();
  return device;
#else
  return kCudaMultiprocessorsWithoutGpu;
#endif
}

}  // namespace tessel
