// The public API (include/tessel/tessel.h): compile any TileIR kernel for a target,
// cache it, bind launch arguments by name, and run it on sim, cpu or cuda.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <sstream>

#include "compiler/compile.h"
#include "compiler/phases.h"
#include "ir/tile_verify.h"
#include "ir/group_text.h"
#include "ir/tile_text.h"
#include "plan/default_plan.h"
#include "runtime/bound_cpu_group.h"
#include "runtime/kernel_cache.h"
#include "runtime/tensor_check.h"
#include "target/cpu/cpu_emit.h"
#include "target/cpu/cpu_isa.h"
#include "target/cpu/cpu_jit.h"
#include "target/sim/sim.h"
#include "tessel/tessel.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_kernel.h"
#include "target/cuda/cuda_memory.h"
#endif

namespace tessel {

// One parallel nest of the kernel, compiled (compiler/phases.h).
struct CompiledPhase {
  TileKernel kernel;
  // Null while not lowered: a cpu kernel found through its request entry on disk
  // needs no GroupIR to run, and lowering is most of such a hit's cost.
  mutable std::shared_ptr<const CompiledGroup> group;  // CompiledKernelImpl::group
  std::shared_ptr<const CpuKernel> cpu;
#ifdef TESSEL_WITH_CUDA
  std::shared_ptr<const CudaKernel> cuda;
#endif
};

class CompiledKernelImpl {
 public:
  TileKernel kernel;
  Plan plan;
  CompileSettings settings;
  std::vector<CompiledPhase> phases;  // run in order
  double compile_ms = 0;

  // Phase i's GroupIR, lowered on first use where the compile did not need it.
  const CompiledGroup& group(size_t i) const {
    std::lock_guard<std::mutex> lock(lower_mutex);
    const CompiledPhase& phase = phases[i];
    if (!phase.group) phase.group = std::make_shared<CompiledGroup>(compile_to_group(phase.kernel, plan, options()));
    return *phase.group;
  }
  CompileOptions options() const {
    CompileOptions co;
    co.coalesce_barriers = settings.coalesce_barriers;
    return co;
  }

 private:
  mutable std::mutex lower_mutex;
};

namespace {

[[noreturn]] void bad_argument(const std::string& message) {
  user_error(ErrorKind::InvalidArgument, message);
}

std::string dims_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The argument's strides; none given means contiguous row-major.
std::vector<int64_t> arg_strides(const TensorArg& a) {
  if (!a.strides.empty()) return a.strides;
  std::vector<int64_t> strides(a.shape.size(), 1);
  for (int d = static_cast<int>(a.shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * std::max<int64_t>(1, a.shape[d + 1]);
  return strides;
}

// Binds the sizes a tensor names by a bare symbol from its argument's shape and
// strides; checks everything else once all tensors have bound what they can.
void bind_tensor_sizes(const TensorParam& t, const TensorArg& a,
                       std::map<std::string, int64_t>& sizes) {
  if (static_cast<int>(a.shape.size()) != t.rank())
    bad_argument("tensor " + t.name + " has rank " + std::to_string(t.rank()) +
                 ", the argument's shape " + dims_text(a.shape) + " has " +
                 std::to_string(a.shape.size()) + " extents");
  std::vector<int64_t> strides = arg_strides(a);
  if (strides.size() != a.shape.size())
    bad_argument("tensor " + t.name + ": " + std::to_string(strides.size()) + " strides for " +
                 std::to_string(a.shape.size()) + " extents");
  auto bind = [&](const Expr& e, int64_t value, const std::string& what) {
    if (e->kind != ExprKind::Sym) return;
    auto [it, fresh] = sizes.emplace(e->name, value);
    if (!fresh && it->second != value)
      bad_argument("size " + e->name + " is " + std::to_string(it->second) + ", but tensor " +
                   t.name + "'s " + what + " makes it " + std::to_string(value));
  };
  for (int d = 0; d < t.rank(); ++d) {
    bind(t.shape[d], a.shape[d], "extent " + std::to_string(d));
    bind(t.strides[d], strides[d], "stride " + std::to_string(d));
  }
}

void check_tensor_matches(const TensorParam& t, const TensorArg& a, const TensorLayout& layout) {
  std::vector<int64_t> strides = arg_strides(a);
  for (int d = 0; d < t.rank(); ++d) {
    if (layout.shape[d] != a.shape[d] || (layout.strides[d] != strides[d] && a.shape[d] > 1))
      bad_argument("tensor " + t.name + " is " + dims_text(layout.shape) + " with strides " +
                   dims_text(layout.strides) + " by the kernel's sizes, but the argument is " +
                   dims_text(a.shape) + " with strides " + dims_text(strides));
  }
  if (a.dtype != t.dtype)
    bad_argument("tensor " + t.name + " is " + dtype_name(t.dtype) + ", the argument is " +
                 dtype_name(a.dtype));
  if (!a.data && layout.elements > 0) bad_argument("tensor " + t.name + " is a null pointer");
}

struct BoundArgs {
  LaunchArgs args;
  std::vector<TensorLayout> layouts;  // per kernel tensor
  std::vector<TensorSpan> spans;      // per kernel tensor, for the overlap check
};

BoundArgs bind_args(const TileKernel& k, const KernelArgs& in) {
  BoundArgs out;
  out.args.sizes = in.sizes;
  for (const auto& [name, a] : in.tensors)
    if (!k.find_tensor(name)) bad_argument("kernel " + k.name + " has no tensor " + name);
  for (const TensorParam& t : k.tensors) {
    auto it = in.tensors.find(t.name);
    if (it == in.tensors.end()) bad_argument("missing tensor argument " + t.name);
    bind_tensor_sizes(t, it->second, out.args.sizes);
  }
  for (const std::string& s : k.size_params)
    if (!out.args.sizes.count(s)) bad_argument("missing size argument " + s);
  for (const auto& [name, v] : in.sizes) {
    bool known = false;
    for (const std::string& s : k.size_params) known |= s == name;
    if (!known) bad_argument("kernel " + k.name + " has no size parameter " + name);
  }
  for (const ScalarParam& s : k.scalars)
    if (!in.scalars.count(s.name)) bad_argument("missing scalar argument " + s.name);
  for (const auto& [name, v] : in.scalars) {
    bool known = false;
    for (const ScalarParam& s : k.scalars) known |= s.name == name;
    if (!known) bad_argument("kernel " + k.name + " has no scalar parameter " + name);
  }
  out.args.scalars = in.scalars;
  std::vector<TensorSpan>& spans = out.spans;
  for (const TensorParam& t : k.tensors) {
    const TensorArg& a = in.tensors.at(t.name);
    TensorLayout layout = check_tensor(t, out.args.sizes);
    check_tensor_matches(t, a, layout);
    out.layouts.push_back(layout);
    static float empty = 0;
    out.args.tensors[t.name] = a.data ? static_cast<float*>(a.data) : &empty;
    spans.push_back(TensorSpan{&t, reinterpret_cast<uintptr_t>(a.data), layout, dtype_bytes(t.dtype)});
  }
  // Here as well as in the targets: on cuda, host tensors get a device buffer each,
  // where an overlap of the caller's arrays would no longer show.
  check_tensor_overlap(spans);
  return out;
}

std::string cache_key(const TileKernel& k, const Plan& plan, const CompileSettings& settings) {
  // The cpu target's ISA may be switched within a process (TESSEL_CPU_ISA, tests).
  std::string isa = plan.target == TargetKind::Cpu ? cpu_isa_info(cpu_isa()).name : "";
  return std::string(version()) + "\n" + plan.to_string() + " target=" + target_name(plan.target) + " isa=" + isa +
         " coalesce_barriers=" + (settings.coalesce_barriers ? "1" : "0") + " arch=" + settings.cuda_arch +
         "\n" + print_tile_kernel(k);
}

#ifdef TESSEL_WITH_CUDA
// Host tensors travel to the device as their whole span (strides kept), and the
// ones the kernel writes come back.
void launch_cuda(const CompiledKernelImpl& c, const TileKernel& k, const KernelArgs& in,
                 const BoundArgs& bound) {
  LaunchArgs args = bound.args;  // host tensors get device buffers for this run only
  std::vector<DeviceBuffer> buffers;
  std::vector<std::pair<size_t, size_t>> writeback;  // (tensor index, buffer index)
  for (size_t i = 0; i < k.tensors.size(); ++i) {
    const TensorParam& t = k.tensors[i];
    const TensorArg& a = in.tensors.at(t.name);
    if (a.on_device) continue;
    size_t bytes = std::max<int64_t>(1, bound.layouts[i].elements) * dtype_bytes(t.dtype);
    buffers.emplace_back(bytes);
    if (bound.layouts[i].elements > 0) buffers.back().upload(a.data, bytes);
    args.tensors[t.name] = static_cast<float*>(buffers.back().get());
    if (t.access != Access::In) writeback.emplace_back(i, buffers.size() - 1);
  }
  for (const CompiledPhase& phase : c.phases) phase.cuda->launch(args);
  cuda_synchronize();
  for (auto [i, b] : writeback) {
    const TensorParam& t = k.tensors[i];
    if (bound.layouts[i].elements > 0)
      buffers[b].download(in.tensors.at(t.name).data, bound.layouts[i].elements * dtype_bytes(t.dtype));
  }
}
#endif

}  // namespace

class BoundLaunchImpl {
 public:
  // What set_tensor, set_scalar and run() read on every call comes first and is
  // kept small, so that a re-pointed call touches few cache lines (after a kernel
  // that evicted them, each is a miss): the target, and per tensor its current
  // address, its size in bytes (0: no elements) and where it sits in the phases'
  // flat arguments.
  struct TensorSlot {
    uintptr_t base = 0;
    uint64_t bytes = 0;      // saturated at 2^64 - 1
    uint32_t first = 0, end = 0;  // its entries of tensor_at (flat only)
  };
  TargetKind target = TargetKind::Cpu;
  // flat: the cpu, and cuda with every tensor on the device: run() calls each
  // phase with its flat arguments (cpu / cuda below). Otherwise it reads the maps
  // of args and bound.
  bool flat = false;
  bool recheck_overlap = false;  // a tensor was replaced since the last check
  std::vector<TensorSlot> tensors;
  // Flat only: addresses into the phases' argument arrays (which never resize
  // after bind): a tensor's entry is a float* (cpu) or a uint64_t (cuda); scalar
  // i's entries are scalar_at[scalar_first[i] .. scalar_first[i + 1]).
  std::vector<void*> tensor_at;
  std::vector<double*> scalar_at;
  std::vector<uint32_t> scalar_first;
  // check_tensor_overlap's rule, decided at bind for everything but the addresses:
  // the pairs of tensors (both with elements, one written, not declared
  // overlapping) that must stay apart. A re-check is arithmetic only.
  std::vector<std::pair<int, int>> disjoint_pairs;
  std::vector<CpuLaunch> cpu;
  std::vector<const CpuKernel*> cpu_kernels;  // per phase
#ifdef TESSEL_WITH_CUDA
  std::vector<CudaLaunch> cuda;
#endif

  std::shared_ptr<const CompiledKernelImpl> compiled;
  KernelArgs args;  // as given, kept current by set_tensor / set_scalar (sim, cuda)
  BoundArgs bound;  // its spans' addresses are those of bind (tensors[i].base is current)

  void plan_overlap_checks() {
    const std::vector<TensorSpan>& spans = bound.spans;
    for (const TensorSpan& t : spans) {
      TensorSlot slot;
      slot.base = t.base;
      unsigned __int128 bytes =
          static_cast<unsigned __int128>(std::max<int64_t>(0, t.layout.elements)) * dtype_bytes(t.param->dtype);
      slot.bytes = bytes > UINT64_MAX ? UINT64_MAX : uint64_t(bytes);
      tensors.push_back(slot);
    }
    for (size_t i = 0; i < spans.size(); ++i)
      for (size_t j = 0; j < i; ++j) {
        const TensorParam &a = *spans[i].param, &b = *spans[j].param;
        if (spans[i].layout.elements <= 0 || spans[j].layout.elements <= 0) continue;
        if (a.access == Access::In && b.access == Access::In) continue;
        if (a.may_overlap_with(b.name) || b.may_overlap_with(a.name)) continue;
        disjoint_pairs.emplace_back(int(i), int(j));
      }
  }
  // Tensor `index` (in range) now at `data`; null only where it has no elements.
  // Overlap is checked by run(), once every replacement is in: checked here, a
  // tensor moved onto memory that another is about to leave would be refused.
  void put_tensor(size_t index, void* data) {
    TensorSlot& slot = tensors[index];
    const uintptr_t base = reinterpret_cast<uintptr_t>(data);
    // The same pointer again (a caller that passes every argument on every run):
    // nothing to store and nothing to check.
    if (base && base == slot.base && flat) return;
    if (!data && slot.bytes > 0) bad_argument("tensor " + bound.spans[index].param->name + " is a null pointer");
    static float empty = 0;
    float* ptr = data ? static_cast<float*>(data) : &empty;
    slot.base = base;
    recheck_overlap = true;
    if (flat) {
      const bool device = cpu.empty();
      for (uint32_t e = slot.first; e < slot.end; ++e) {
        if (device)
          *static_cast<uint64_t*>(tensor_at[e]) = reinterpret_cast<uint64_t>(ptr);
        else
          *static_cast<float**>(tensor_at[e]) = ptr;
      }
      return;
    }
    const std::string& name = bound.spans[index].param->name;
    args.tensors[name].data = data;
    bound.args.tensors[name] = ptr;
  }
  // Scalar `index` (in range) now `value`.
  void put_scalar(size_t index, double value) {
    if (flat) {
      for (uint32_t e = scalar_first[index]; e < scalar_first[index + 1]; ++e) *scalar_at[e] = value;
      return;
    }
    const std::string& name = compiled->kernel.scalars[index].name;
    args.scalars[name] = value;
    bound.args.scalars[name] = value;
  }
  // True when some pair of disjoint_pairs meets.
  bool written_overlap() const {
    for (auto [i, j] : disjoint_pairs) {
      const TensorSlot &x = tensors[i], &y = tensors[j];
      unsigned __int128 a = x.base, b = y.base;
      if (a < b + y.bytes && b < a + x.bytes) return true;
    }
    return false;
  }
};

TensorArg TensorArg::host(float* data, std::vector<int64_t> shape, std::vector<int64_t> strides) {
  TensorArg a;
  a.data = data;
  a.dtype = DType::F32;
  a.shape = std::move(shape);
  a.strides = std::move(strides);
  return a;
}

const TileKernel& Kernel::tile_kernel() const { return impl_->kernel; }
const Plan& Kernel::plan() const { return impl_->plan; }
const GroupProgram& Kernel::program(size_t phase) const {
  TESSEL_ASSERT(phase < impl_->phases.size(), "no such phase");
  return impl_->group(phase).program;
}
size_t Kernel::phases() const { return impl_->phases.size(); }
const CompiledGroup& Kernel::group(size_t phase) const {
  TESSEL_ASSERT(phase < impl_->phases.size(), "no such phase");
  return impl_->group(phase);
}
double Kernel::compile_ms() const { return impl_->compile_ms; }

std::string Kernel::explain() const {
  CompileOptions co;
  co.keep_stages = true;
  std::ostringstream out;
  const auto& phases = impl_->phases;
  for (size_t i = 0; i < phases.size(); ++i) {
    if (phases.size() > 1) out << "// ==== phase " << i << " of " << phases.size() << " ====\n";
    co.coalesce_barriers = impl_->settings.coalesce_barriers;
    CompiledGroup g = compile_to_group(phases[i].kernel, impl_->plan, co);
    for (const CompileStage& s : g.stages) {
      out << "// ---- " << s.name << " ----\n" << s.ir;
      if (s.name == "tile-ir") out << "// ---- plan ----\n" << impl_->plan.to_string() << "\n";
    }
    out << "// ---- barrier statistics ----\n" << print_barrier_stats(g.barriers);
    // What the target compiles, last.
    if (impl_->plan.target == TargetKind::Cpu) out << "// ---- cpu source ----\n" << emit_cpu(g.program);
#ifdef TESSEL_WITH_CUDA
    if (impl_->plan.target == TargetKind::Cuda) {
      const CudaCompileInfo& info = phases[i].cuda->info();
      out << "// ---- cuda (" << info.nvrtc.arch << ", " << info.source.threads << " threads, "
          << info.source.shared_bytes << " bytes of shared memory) ----\n"
          << info.source.code << "// ---- ptxas ----\n" << info.nvrtc.log << "\n";
    }
#endif
  }
  return out.str();
}

LaunchReport Kernel::launch(const KernelArgs& args, const LaunchOptions& options) const {
  return bind(args).run(options);
}

BoundLaunch Kernel::bind(const KernelArgs& args) const {
  const CompiledKernelImpl& c = *impl_;
  // The sim stores every tensor as f32; the cpu target reads f32 and f64 tensors as
  // stored (an f64 kernel computes in f64 there). A u32 tensor is a ticket's counter:
  // 4-byte words on every target.
  if (c.plan.target != TargetKind::Cuda)
    for (const TensorParam& t : c.kernel.tensors)
      if (t.dtype != DType::F32 && t.dtype != DType::U32 &&
          !(t.dtype == DType::F64 && c.plan.target == TargetKind::Cpu))
        user_error(ErrorKind::Unsupported, std::string("the ") + target_name(c.plan.target) + " target reads " +
                                               (c.plan.target == TargetKind::Cpu ? "f32 and f64" : "f32") +
                                               " tensors; tensor " + t.name + " is " + dtype_name(t.dtype));
  for (const auto& [name, a] : args.tensors)
    if (a.on_device && c.plan.target != TargetKind::Cuda)
      bad_argument("tensor " + name + " is in device memory, but the target is " +
                   target_name(c.plan.target));
  auto b = std::make_shared<BoundLaunchImpl>();
  b->compiled = impl_;
  b->args = args;
  b->bound = bind_args(c.kernel, args);
  check_fixed_sizes(c.kernel.name, c.plan.sizes, b->bound.args.sizes);
  b->plan_overlap_checks();
  b->target = c.plan.target;
  b->flat = c.plan.target == TargetKind::Cpu;
#ifdef TESSEL_WITH_CUDA
  if (c.plan.target == TargetKind::Cuda) {
    b->flat = true;
    for (const auto& [name, a] : args.tensors) b->flat &= a.on_device;
  }
#endif
  if (b->flat) {
    for (const CompiledPhase& phase : c.phases) {
      if (phase.cpu) {
        b->cpu.push_back(phase.cpu->bind(b->bound.args));
        b->cpu_kernels.push_back(phase.cpu.get());
      }
#ifdef TESSEL_WITH_CUDA
      if (phase.cuda) b->cuda.push_back(phase.cuda->bind(b->bound.args));
#endif
    }
    // A phase takes the tensors and scalars its program names, in its own order.
    for (size_t t = 0; t < c.kernel.tensors.size(); ++t) {
      b->tensors[t].first = uint32_t(b->tensor_at.size());
      for (size_t p = 0; p < c.phases.size(); ++p) {
        const TileKernel& phase = c.phases[p].kernel;  // lowering keeps its parameters, in order
        for (size_t i = 0; i < phase.tensors.size(); ++i) {
          if (phase.tensors[i].name != c.kernel.tensors[t].name) continue;
          if (!b->cpu.empty()) b->tensor_at.push_back(&b->cpu[p].tensors[i]);
#ifdef TESSEL_WITH_CUDA
          if (!b->cuda.empty()) b->tensor_at.push_back(&b->cuda[p].tensors[i]);
#endif
        }
      }
      b->tensors[t].end = uint32_t(b->tensor_at.size());
    }
    for (const ScalarParam& s : c.kernel.scalars) {
      b->scalar_first.push_back(uint32_t(b->scalar_at.size()));
      for (size_t p = 0; p < c.phases.size(); ++p) {
        const TileKernel& phase = c.phases[p].kernel;
        for (size_t i = 0; i < phase.scalars.size(); ++i) {
          if (phase.scalars[i].name != s.name) continue;
          if (!b->cpu.empty()) b->scalar_at.push_back(&b->cpu[p].scalars[i]);
#ifdef TESSEL_WITH_CUDA
          if (!b->cuda.empty()) b->scalar_at.push_back(&b->cuda[p].scalars[i]);
#endif
        }
      }
    }
    b->scalar_first.push_back(uint32_t(b->scalar_at.size()));
  } else {
    b->scalar_first.assign(c.kernel.scalars.size() + 1, 0);  // for the scalar count
  }
  BoundLaunch out;
  out.impl_ = std::move(b);
  return out;
}

void BoundLaunch::set_tensor(size_t index, void* data) {
  BoundLaunchImpl& b = *impl_;
  if (index >= b.tensors.size()) {
    const TileKernel& k = b.compiled->kernel;
    bad_argument("tensor index " + std::to_string(index) + " out of range: kernel " + k.name + " has " +
                 std::to_string(k.tensors.size()) + " tensors");
  }
  b.put_tensor(index, data);
}

void BoundLaunch::set_scalar(size_t index, double value) {
  BoundLaunchImpl& b = *impl_;
  if (index + 1 >= b.scalar_first.size()) {
    const TileKernel& k = b.compiled->kernel;
    bad_argument("scalar index " + std::to_string(index) + " out of range: kernel " + k.name + " has " +
                 std::to_string(k.scalars.size()) + " scalars");
  }
  b.put_scalar(index, value);
}

struct BoundLaunchAccess {
  static const BoundLaunchImpl& impl(const BoundLaunch& launch) { return *launch.impl_; }
};

std::optional<BoundCpuGroup> bound_cpu_group(const BoundLaunch& launch) {
  const BoundLaunchImpl& b = BoundLaunchAccess::impl(launch);
  if (b.target != TargetKind::Cpu || b.cpu.size() != 1 || b.cpu[0].groups != 1) return std::nullopt;
  const TileKernel &kernel = b.compiled->kernel, &phase = b.compiled->phases[0].kernel;
  if (phase.tensors.size() != kernel.tensors.size() || phase.scalars.size() != kernel.scalars.size())
    return std::nullopt;
  for (size_t i = 0; i < kernel.tensors.size(); ++i)
    if (phase.tensors[i].name != kernel.tensors[i].name) return std::nullopt;
  for (size_t i = 0; i < kernel.scalars.size(); ++i)
    if (phase.scalars[i].name != kernel.scalars[i].name) return std::nullopt;
  return BoundCpuGroup{b.cpu_kernels[0]->group_entry(), b.cpu[0].sizes.data()};
}

LaunchReport BoundLaunch::run_with(void* const* tensors, size_t tensor_count, const double* scalars,
                                   size_t scalar_count, const LaunchOptions& options) {
  BoundLaunchImpl& b = *impl_;
  if (tensor_count != b.tensors.size() || scalar_count + 1 != b.scalar_first.size()) {
    const TileKernel& k = b.compiled->kernel;
    bad_argument("run_with: kernel " + k.name + " has " + std::to_string(k.tensors.size()) + " tensors and " +
                 std::to_string(k.scalars.size()) + " scalars, given " + std::to_string(tensor_count) + " and " +
                 std::to_string(scalar_count));
  }
  for (size_t i = 0; i < tensor_count; ++i) b.put_tensor(i, tensors[i]);
  for (size_t i = 0; i < scalar_count; ++i) b.put_scalar(i, scalars[i]);
  return run(options);
}

LaunchReport BoundLaunch::run(const LaunchOptions& options) {
  BoundLaunchImpl& b = *impl_;
  if (b.recheck_overlap) {
    if (b.written_overlap()) {
      for (size_t i = 0; i < b.tensors.size(); ++i) b.bound.spans[i].base = b.tensors[i].base;
      check_tensor_overlap(b.bound.spans);  // throws, naming both
    }
    b.recheck_overlap = false;
  }
  LaunchReport report;
  std::chrono::steady_clock::time_point start;
  if (options.timed) start = std::chrono::steady_clock::now();
  switch (b.target) {
    case TargetKind::Sim:
      for (size_t p = 0; p < b.compiled->phases.size(); ++p) {
        SimOptions so;
        so.seed = options.sim_seed;
        SimResult r = run_sim(b.compiled->group(p).program, b.bound.args, so);
        report.races += r.race_count;
        for (const Race& race : r.races) report.race_messages.push_back(race.message);
      }
      break;
    case TargetKind::Cpu:
      for (size_t p = 0; p < b.cpu.size(); ++p) b.cpu_kernels[p]->execute(b.cpu[p], options.threads);
      break;
    case TargetKind::Cuda:
#ifdef TESSEL_WITH_CUDA
      // Every tensor on the device: the flat arguments, asynchronously in stream
      // order like any CUDA launch. Otherwise host tensors travel (launch_cuda).
      if (b.flat) {
        const CompiledKernelImpl& c = *b.compiled;
        for (size_t p = 0; p < c.phases.size(); ++p) c.phases[p].cuda->execute(b.cuda[p]);
      } else {
        launch_cuda(*b.compiled, b.compiled->kernel, b.args, b.bound);
      }
#endif
      break;
  }
  if (options.timed)
    report.run_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return report;
}

namespace {
// compile()'s kernels in memory, by cache_key.
struct CompiledKernels {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const CompiledKernelImpl>> by_key;
};
CompiledKernels& compiled_kernels() {
  static CompiledKernels kernels;
  return kernels;
}
}  // namespace

void clear_compiled_kernels() {
  std::lock_guard<std::mutex> lock(compiled_kernels().mutex);
  compiled_kernels().by_key.clear();
}

Kernel compile(const TileKernel& kernel, const Plan& plan, const CompileSettings& settings) {
#ifndef TESSEL_WITH_CUDA
  if (plan.target == TargetKind::Cuda)
    user_error(ErrorKind::Unsupported, "the cuda target is not built: tessel was built without the CUDA toolkit");
#endif
  std::mutex& mutex = compiled_kernels().mutex;
  auto& cache = compiled_kernels().by_key;
  std::string key = cache_key(kernel, plan, settings);
  Kernel out;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {
      out.impl_ = it->second;
      return out;
    }
  }
  for (const auto& [name, value] : plan.sizes)
    if (!std::count(kernel.size_params.begin(), kernel.size_params.end(), name))
      user_error(ErrorKind::Plan, "the plan fixes size " + name + ", which kernel " + kernel.name +
                                      " does not have");
  auto start = std::chrono::steady_clock::now();
  auto c = std::make_shared<CompiledKernelImpl>();
  c->kernel = kernel;
  c->plan = plan;
  c->settings = settings;
  verify_tile_kernel(kernel);
  std::vector<TileKernel> phase_kernels = split_phases(kernel);
  for (size_t i = 0; i < phase_kernels.size(); ++i) {
    CompiledPhase phase;
    phase.kernel = std::move(phase_kernels[i]);
    // The cpu target looks for an earlier process's compile of the same request
    // before lowering anything (cpu_jit.h).
    std::string request = key + "\nphase " + std::to_string(i);
    if (plan.target == TargetKind::Cpu) phase.cpu = find_cpu_kernel(request, phase.kernel, plan.sizes);
    if (!phase.cpu) {
      phase.group = std::make_shared<CompiledGroup>(compile_to_group(phase.kernel, plan, c->options()));
      const GroupProgram& program = phase.group->program;
      if (plan.target == TargetKind::Cpu) {
        phase.cpu = compile_cpu(program);
        remember_cpu_request(request, phase.kernel, *phase.cpu);
      }
#ifdef TESSEL_WITH_CUDA
      if (plan.target == TargetKind::Cuda) phase.cuda = compile_cuda(program, settings.cuda_arch);
#endif
    }
    c->phases.push_back(std::move(phase));
  }
  c->compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(mutex);
  out.impl_ = cache.emplace(key, c).first->second;
  return out;
}

Kernel compile(const TileKernel& kernel, TargetKind target,
               const std::map<std::string, int64_t>& sizes) {
  return compile(kernel, default_plan(kernel, target, sizes));
}

}  // namespace tessel
