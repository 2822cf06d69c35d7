// Compiling emitted C++ into a shared object, loading it, and launching it on a
// thread pool. Compiled kernels are cached in memory and on disk, keyed by a
// structural hash of the emitted source, the compiler and its flags, and the CPU;
// on disk, a record per compile request finds them before anything is lowered
// (find_cpu_kernel).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/group_ir.h"
#include "ir/tile_ir.h"
#include "runtime/launch_args.h"

namespace tessel {

struct CpuCompileInfo {
  double compile_ms = 0;   // wall time of the compiler (two units: both at once, then the link); 0 cached
  bool from_memory = false, from_disk = false;
  bool from_request = false;  // found by find_cpu_kernel: nothing was lowered or emitted
  std::string cache_path;  // the .so on disk
};

// One launch's arguments as the emitted function takes them: flat arrays in the
// kernel's parameter order, and the grid. Checked once by CpuKernel::bind; a caller
// that keeps one may change tensor pointers of the same layout and scalars in place.
struct CpuLaunch {
  std::vector<int64_t> sizes;
  std::vector<double> scalars;
  std::vector<float*> tensors;
  std::vector<int64_t> grid;  // extents, the last varying fastest
  int64_t groups = 0;
};

// The emitted function of one group: the launch's flat arrays, the group's grid
// coordinates, and a scratch of CpuGroupEntry::scratch_floats floats (64-byte
// aligned) that no other group uses while it runs.
using CpuGroupFn = void (*)(const int64_t* sizes, const double* scalars, float* const* tensors,
                            const int64_t* group, float* scratch);
// The same function with the tensors and scalars in registers, for a kernel of three
// tensors and two scalars: a unit whose group function leads to tiny kernels exports
// it (cpu_emit.cpp, `tessel_group_t3s2`), for calls of a few ns where the arrays were
// a fifth of the time (PreparedGemm::run).
using CpuGroupRegsFn = void (*)(const int64_t* sizes, const int64_t* group, float* scratch, float* t0, float* t1,
                                float* t2, double s0, double s1);
struct CpuGroupEntry {
  CpuGroupFn fn = nullptr;
  int64_t scratch_floats = 0;
  CpuGroupRegsFn regs_t3s2 = nullptr;  // where the unit exports it
};

class CpuKernel {
 public:
  virtual ~CpuKernel() = default;
  // Checks args like run_sim does (sizes, the fixed sizes' values, scalars, tensor
  // layouts, overlap) and flattens them.
  virtual CpuLaunch bind(const LaunchArgs& args) const = 0;
  // Runs every group of the grid, spread over `threads` threads (0 = all cores).
  // No lookups, no allocation, no checks: `launch` comes from bind.
  virtual void execute(const CpuLaunch& launch, int threads) const = 0;
  void run(const LaunchArgs& args, int threads) const { execute(bind(args), threads); }
  // The group function itself, for a caller that runs a one-group launch without
  // execute (runtime/bound_cpu_group.h); it fills the scratch with NaN first when
  // cpu_scratch_poisoned().
  virtual CpuGroupEntry group_entry() const = 0;
  virtual const CpuCompileInfo& info() const = 0;
};

std::shared_ptr<const CpuKernel> compile_cpu(const GroupProgram& program);

// A disk-cache hit without lowering or emitting. A request names everything that
// decides a kernel's program (its TileIR text, plan and settings: runtime/kernel.cpp);
// remember_cpu_request records, in a small sealed entry beside the kernel's, which
// entry compile_cpu gave for it. find_cpu_kernel follows that record in a later
// process and loads the kernel, with `kernel`'s parameters (lowering keeps them).
// The record's name also hashes the file holding the running tessel build (its
// inode, size and time) and the stamp, so a rebuilt tessel or another compiler or
// CPU never follows one. Null when there is no usable record; a damaged one is
// reported once. `fixed_sizes`: the plan's (Plan::sizes), which the kernel's launches
// must give.
std::shared_ptr<const CpuKernel> find_cpu_kernel(const std::string& request, const TileKernel& kernel,
                                                 const std::vector<std::pair<std::string, int64_t>>& fixed_sizes);
void remember_cpu_request(const std::string& request, const TileKernel& kernel, const CpuKernel& compiled);

}  // namespace tessel

namespace tessel {
// Forgets the in-memory cache (kernels already returned stay valid); the next
// compile_cpu loads from disk. For tests.
void clear_cpu_memory_cache();
// When on, every group's scratch is filled with NaN before it runs, so a kernel
// that reads staging or fragments it did not write shows it. For tests.
void set_cpu_scratch_poison(bool on);
// Read on every prepared call (PreparedGemm::run), so inline: no call on that path.
extern std::atomic<bool> cpu_scratch_poison_on;
inline bool cpu_scratch_poisoned() { return cpu_scratch_poison_on.load(std::memory_order_relaxed); }
}  // namespace tessel
