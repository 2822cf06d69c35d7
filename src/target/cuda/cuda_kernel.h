// A GroupIR program compiled for the cuda target: emitted (cuda_emit.h), compiled
// by NVRTC (nvrtc_compile.h), cached in memory and on disk (cubin, PTX and the
// ptxas report in one sealed entry, keyed by a hash of the source, tessel's
// version, the arch and NVRTC's version; a damaged or foreign entry is reported
// once and rebuilt), and loaded and launched through the driver API on first
// launch. Compiling needs no GPU; launching does.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/group_ir.h"
#include "runtime/launch_args.h"
#include "target/cuda/cuda_emit.h"
#include "target/cuda/nvrtc_compile.h"

namespace tessel {

struct CudaCompileInfo {
  CudaSource source;
  NvrtcOutput nvrtc;  // cubin, PTX, log and resource report
  bool from_memory = false, from_disk = false;
  std::string cache_path;  // the sealed entry on disk (cuda-<hash>-<arch>.entry)
};

class CudaKernel;

// One launch's arguments in the emitted kernel's parameter order, checked once by
// CudaKernel::bind. A caller that keeps one may change tensor addresses (same
// layouts) and scalars in place between executes.
struct CudaLaunch {
  std::vector<int64_t> sizes;
  std::vector<double> scalars;
  std::vector<uint64_t> tensors;  // device addresses
  const CudaKernel* runs = nullptr;  // this kernel, or its variant for this launch (folded grid, alignment)
  void* function = nullptr;          // the loaded CUfunction of `runs`
  unsigned grid[3] = {0, 0, 0};      // all 0: an empty grid, nothing runs
};

class CudaKernel {
 public:
  virtual ~CudaKernel() = default;
  // Checks `args` (tensor layouts, overlap, missing names; tensors are device
  // addresses), loads the module and checks the block against the device's limits
  // (user error, ErrorKind::Plan, with the numbers), and flattens the arguments.
  virtual CudaLaunch bind(const LaunchArgs& args) const = 0;
  // Launches every group on the legacy default stream, asynchronously; on sm_90+ with
  // programmatic dependent launch, so that the launch overlaps the previous kernel's
  // end (the kernel waits for it first). No lookups and no locks (tensor maps, where
  // the kernel has tma copies, are encoded here).
  virtual void execute(const CudaLaunch& launch) const = 0;
  void launch(const LaunchArgs& args) const { execute(bind(args)); }
  virtual const CudaCompileInfo& info() const = 0;
};

// The arch to compile for: $TESSEL_CUDA_ARCH, else the GPU's compute capability,
// else sm_90 where there is no GPU.
std::string default_cuda_arch();
// The GPU's multiprocessor count (132 without one: the H200's).
int64_t default_cuda_multiprocessors();

// arch "" = default_cuda_arch(). folded_grid, assume_aligned: see emit_cuda. A
// launch that needs another variant (a grid folded into x, a tensor off 16 bytes or
// a row stride off 16 bytes) runs it, compiled on the first such launch.
std::shared_ptr<const CudaKernel> compile_cuda(const GroupProgram& program, const std::string& arch = "",
                                               bool folded_grid = false, bool assume_aligned = true);

// The L2 promotion, in bytes, of a launch's tensor maps (how much the L2 fetches
// around a miss), given where each map's rows start: {address, row pitch in bytes}
// per map. 256 where every row of every map starts on a 256-byte boundary, else 128.
int tma_l2_promotion_bytes(const std::vector<std::pair<uint64_t, uint64_t>>& row_starts);

// Forgets the kernels compiled in this process (the disk cache stays): the next
// compile_cuda looks on disk, as a new process would.
void clear_cuda_memory_cache();

}  // namespace tessel
