// The public C++ API of tessel: build a kernel (the DSL), compile it for a target
// with a plan or the default one, launch it with named arguments, explain it.
//
//   tessel::KernelBuilder kb("scale");              // see dsl/dsl.h
//   ...
//   tessel::TileKernel k = kb.finish();
//   tessel::Kernel compiled = tessel::compile(k, tessel::TargetKind::Cpu, {{"M", m}, {"N", n}});
//   tessel::KernelArgs args;
//   args.tensors["X"] = tessel::TensorArg::host(x.data(), {m, n});
//   args.scalars["s"] = 2.0;
//   compiled.launch(args);
//
// Sizes come from the tensors where the kernel names them by a symbol (a tensor
// declared [M, N] with strides [ld, 1] binds M, N and ld from the argument's shape
// and strides); the rest are given in KernelArgs::sizes. A size bound twice to two
// values, a constant extent or stride that the argument contradicts, a missing
// argument or a null pointer are user errors (ErrorKind::InvalidArgument).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "dsl/dsl.h"
#include "ir/group_ir.h"
#include "ir/tile_ir.h"
#include "plan/plan.h"
#include "tessel/error.h"
#include "tessel/version.h"

namespace tessel {

// One tensor argument: a pointer (host memory; device memory on the cuda target
// with on_device), its dtype, and its shape and strides in elements (strides empty
// = contiguous row-major). On cuda, host tensors are copied to the device and the
// written ones back, so the launch waits for the kernel; with every tensor on the
// device the launch is asynchronous, in stream order, like a CUDA launch.
struct TensorArg {
  void* data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape, strides;
  bool on_device = false;

  static TensorArg host(float* data, std::vector<int64_t> shape, std::vector<int64_t> strides = {});
};

struct KernelArgs {
  std::map<std::string, TensorArg> tensors;
  std::map<std::string, double> scalars;
  std::map<std::string, int64_t> sizes;  // sizes no tensor binds
};

struct LaunchOptions {
  int threads = 0;         // cpu: threads over the grid (0 = all cores)
  uint64_t sim_seed = 1;   // sim: worker order
  bool timed = true;       // false: LaunchReport::run_us stays 0 (no clock reads on the call path)
};

struct LaunchReport {
  double run_us = 0;        // wall time of the launch (transfers included on cuda)
  int64_t races = 0;        // sim: races found (0 elsewhere)
  std::vector<std::string> race_messages;  // sim: the first few
};

// How a kernel is compiled, beside its plan; part of the cache key.
struct CompileSettings {
  bool coalesce_barriers = true;  // false keeps every fence lowering placed (for ablations)
  std::string cuda_arch;          // "" = the GPU's compute capability (sm_90 without one)
};

class CompiledKernelImpl;
class BoundLaunchImpl;

// A launch whose arguments were bound and checked once (Kernel::bind). run() then
// does no name lookups and no per-call checks of layouts: on the cpu it calls the
// emitted function with the kept argument arrays (a one-group grid with no
// allocation and no lock; larger grids go to the thread pool), and on cuda with
// every tensor on the device it launches with the kept parameters (kernels with
// tma copies encode their tensor maps per run). A caller that launches one kernel
// on one shape many times so pays little beyond the kernel (with
// LaunchOptions::timed false, no clock reads either). Tensors (in
// tile_kernel().tensors order) and scalars (in .scalars order) may be changed
// between runs: a new pointer must hold the same layout. A null pointer is
// refused at once, an overlap by the next run() (before anything runs).
// run_with sets every tensor and every scalar (as many as the kernel has, in those
// orders) and runs, in one call: what a caller that passes all its arguments on
// every launch pays least for.
// Not for use from two threads at once.
class BoundLaunch {
 public:
  void set_tensor(size_t index, void* data);
  void set_scalar(size_t index, double value);
  LaunchReport run(const LaunchOptions& options = {});
  LaunchReport run_with(void* const* tensors, size_t tensor_count, const double* scalars, size_t scalar_count,
                        const LaunchOptions& options = {});

 private:
  friend class Kernel;
  friend struct BoundLaunchAccess;  // src/runtime/bound_cpu_group.h
  std::shared_ptr<BoundLaunchImpl> impl_;
};

// A kernel compiled for one target with one plan. Cheap to copy (shared state);
// launching from several threads at once is safe.
class Kernel {
 public:
  const TileKernel& tile_kernel() const;
  const Plan& plan() const;
  // A kernel with several parallel nests runs them in order, one launch (phase)
  // each (compiler/phases.h); program(i) is phase i's GroupIR after every pass.
  size_t phases() const;
  const GroupProgram& program(size_t phase = 0) const;
  double compile_ms() const;            // the first compile's wall time (later ones hit the cache)
  // Phase i's compile record: the GroupIR before barrier planning too, and the
  // pipeline and barrier statistics.
  const CompiledGroup& group(size_t phase = 0) const;
  // Runs the kernel on `args` (see the top of this file for how sizes bind).
  LaunchReport launch(const KernelArgs& args, const LaunchOptions& options = {}) const;
  // Binds and checks `args` once, for launching many times (BoundLaunch).
  BoundLaunch bind(const KernelArgs& args) const;
  // The TileIR, the plan, the GroupIR after every compile step, and the source the
  // target compiles (cpu: C++; cuda: CUDA and ptxas's report).
  std::string explain() const;

 private:
  friend Kernel compile(const TileKernel&, const Plan&, const CompileSettings&);
  std::shared_ptr<const CompiledKernelImpl> impl_;
};

// Compiles with an explicit plan (plan.target says where). Kernels are cached in
// memory by their TileIR text, plan and settings; the cpu and cuda targets also
// cache on disk.
Kernel compile(const TileKernel& kernel, const Plan& plan, const CompileSettings& settings = {});
// Compiles with the default plan for these sizes (plan/default_plan.h).
Kernel compile(const TileKernel& kernel, TargetKind target,
               const std::map<std::string, int64_t>& sizes);
// The default plan for any kernel: a plain heuristic over its structure and sizes.
Plan default_plan(const TileKernel& kernel, TargetKind target,
                  const std::map<std::string, int64_t>& sizes);

}  // namespace tessel
