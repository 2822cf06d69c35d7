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

// The cache blocking of the cpu matrix product past L2 (set_cpu_blocked_tiles and
// the default cpu plans' rules in src/ops). A packed B block (BLIS's KC x NC) is at
// most max_bk deep and b_block_bytes in all: each k block reads and writes the
// fragment (C) once more, and each B block's width copies A's block once more; the
// micro-kernel streams B at 2 vectors a k step. in_place_past_l2: one or two threads
// read A and B in place in k blocks, unpacked, where their rows spread over the cache
// sets (kCpuDirectBK there); narrow_in_place_past_l2: they do so for products of at
// most kCpuNarrowInPlaceN columns (src/ops) whatever B's row stride, K in one block
// where B is within kCpuWholeKBBytes.
// - A core whose 512-bit FMAs run at half rate (cpu_avx512_half_rate: Zen 4) needs B
//   half as fast, and streams it from L3 as fast as from L2: 512 deep and 3 MiB (A's
//   block copied once per 1536 columns, not 512). One thread on the Zen 4 of the
//   thirty-third session, GFLOP/s against 256 deep and half of L2: 1024^3 100 -> 106,
//   1536^3 96 -> 107, 2048^3 (1024 wide) 95 -> 104; two threads 2048^3 192 -> 207,
//   1536^3 196 -> 212. Packed so, B past L2 ran faster than in place, one thread:
//   1200x3000x900 1.14x, 4001x1500x800 1.07x, 800x2500x1000 1.06x, 1700x1000x2300
//   1.03x, 2500x1800x1200 1.02x, 1200x1800x900 1.00x, 2000^3 0.96x; so nothing past
//   L2 is read in place there, but for narrow products: N up to 256, one thread, in
//   place against packed (sixty-second session, docs/cpu_microkernel.md): 1.08-1.74x
//   (1000x16x20000 1.74, 2000x32x9000 1.55, 4000x128x3000 1.18, 4000x64x5000 1.17,
//   6000x144x2000 1.17, 2500x192x2500 1.11, 2000x200x2000 1.10, 3000x256x2000 1.08);
//   up to 512 columns with K whole (sixty-third session), 1.05-1.09x more.
// - Elsewhere 256 deep and half of L2 (the Xeon's 2 MiB, a Zen 5's 1 MiB; on the Zen 5,
//   512 wide ran up to 1.13x faster than 1024 wide: cpu_max_bn in src/ops).
// - In place past L2 only on AMD's Zen 5 and later (1.0-1.34x faster than packed
//   there: kCpuDirectBK in src/ops). On the Xeon of the forty-fifth session (2 MiB
//   L2, 4 KiB pages under a hypervisor) it ran 0.42-0.55x of packed, one thread:
//   2000^3, 2500x1800x1200, 1500x1100x900, 777x1234x555, 1200x900x1100.
struct CpuBlocking {
  int64_t max_bk, b_block_bytes;
  bool in_place_past_l2;
  bool narrow_in_place_past_l2;
};
CpuBlocking cpu_blocking();

// fp32 lanes of one vector register of the ISA the cpu emitter writes for
// (target/cpu/cpu_isa.h: detected, or forced by TESSEL_CPU_ISA): 16, 8 or 4.
int cpu_vector_lanes();

}  // namespace tessel
