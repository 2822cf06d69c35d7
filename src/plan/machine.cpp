#include "plan/machine.h"

#include <unistd.h>

#include "target/cpu/cpu_isa.h"

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

int64_t cpu_l1d_bytes() {
  static const int64_t bytes = [] {
    long b = ::sysconf(_SC_LEVEL1_DCACHE_SIZE);
    return b > 0 ? static_cast<int64_t>(b) : int64_t{32768};
  }();
  return bytes;
}

int64_t cpu_l2_bytes() {
  static const int64_t bytes = [] {
    long b = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
    return b > 0 ? static_cast<int64_t>(b) : int64_t{1} << 20;
  }();
  return bytes;
}

CpuBlocking cpu_blocking() {
  if (cpu_isa() == CpuIsa::Avx512 && cpu_avx512_half_rate()) return {512, int64_t{3} << 20, false, true};
  return {256, cpu_l2_bytes() / 2, cpu_amd_family() >= 0x1a, false};
}

int cpu_vector_lanes() { return cpu_isa_info(cpu_isa()).lanes; }

}  // namespace tessel
