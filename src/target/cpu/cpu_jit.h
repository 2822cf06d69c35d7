// Compiling emitted C++ into a shared object, loading it, and launching it on a
// thread pool. Compiled kernels are cached in memory and on disk, keyed by a
// structural hash of the emitted source, the compiler and its flags, and the CPU.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "ir/group_ir.h"
#include "runtime/launch_args.h"

namespace tessel {

struct CpuCompileInfo {
  double compile_ms = 0;   // wall time of the compiler, 0 when cached
  bool from_memory = false, from_disk = false;
  std::string cache_path;  // the .so on disk
};

class CpuKernel {
 public:
  virtual ~CpuKernel() = default;
  // Runs every group of the grid, spread over `threads` threads (0 = all cores).
  // Validates args like run_sim does.
  virtual void run(const LaunchArgs& args, int threads) const = 0;
  virtual const CpuCompileInfo& info() const = 0;
};

std::shared_ptr<const CpuKernel> compile_cpu(const GroupProgram& program);

}  // namespace tessel

namespace tessel {
// Forgets the in-memory cache (kernels already returned stay valid); the next
// compile_cpu loads from disk. For tests.
void clear_cpu_memory_cache();
// When on, every group's scratch is filled with NaN before it runs, so a kernel
// that reads staging or fragments it did not write shows it. For tests.
void set_cpu_scratch_poison(bool on);
}  // namespace tessel
