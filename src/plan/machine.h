// Machine parameters that plans and the cost model share, in one place (BLIS keeps
// its blocking parameters in a configuration, not in the algorithms).
#pragma once
#include <cstdint>

namespace tessel {

// The multiprocessors of the cuda device (the first GPU), read once; an H200's 132
// where tessel is built without the CUDA toolkit or runs without a GPU, so that
// plans and predictions made on a machine without one match the H200's.
constexpr int64_t kCudaMultiprocessorsWithoutGpu = 132;
int64_t cuda_multiprocessors();

// What one cuda multiprocessor holds at once, for the groups (blocks) resident
// together (occupancy): sm_90's limits (the H200; the arch tessel compiles for
// without a GPU). Each block also reserves 1 KiB of shared memory; registers are
// allocated to warps in units of 256. Each of its 4 schedulers issues one warp's
// instruction a cycle.
struct CudaMultiprocessor {
  int64_t threads = 2048, blocks = 32, shared_bytes = 228 * 1024, block_reserved_shared = 1024,
          registers = 65536, register_unit = 256, schedulers = 4;
};

// The L1 data cache of one cpu core in bytes (sysconf), read once; 32 KiB where the
// system does not say.
int64_t cpu_l1d_bytes();

// The L2 cache of one cpu core in bytes (sysconf), read once; 1 MiB where the system
// does not say.
int64_t cpu_l2_bytes();

// fp32 lanes of one vector register of the ISA the cpu emitter writes for
// (target/cpu/cpu_isa.h: detected, or forced by TESSEL_CPU_ISA): 16, 8 or 4.
int cpu_vector_lanes();

}  // namespace tessel
