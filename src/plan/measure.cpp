#include "plan/measure.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <thread>

#include "check/checked_run.h"
#include "eval/evaluate.h"
#include "ir/half_float.h"
#include "tessel/error.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_driver.h"
#include "target/cuda/cuda_memory.h"
#endif

namespace tessel {

std::vector<CompiledCandidate> compile_parallel(const TileKernel& kernel, const std::vector<Plan>& plans,
                                                int jobs, const std::function<void(size_t, size_t)>& progress) {
  std::vector<CompiledCandidate> out(plans.size());
  std::atomic<size_t> next{0}, done{0};
  std::mutex report;
  auto work = [&] {
    for (size_t i; (i = next++) < plans.size();) {
      try {
        out[i].kernel = compile(kernel, plans[i]);
      } catch (const Error& e) {
        out[i].error = e.what();
      }
      size_t d = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(report);
        progress(d, plans.size());
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::max(1, jobs); ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return out;
}

namespace {

using Sizes = std::map<std::string, int64_t>;

// A value as a tensor of type `t` stores it, and back. A u32 tensor is a ticket's
// counter, which starts a launch at 0 whatever the value.
void store_value(DType t, float x, uint8_t* at) {
  switch (t) {
    case DType::U32: std::memset(at, 0, 4); break;
    case DType::F32: std::memcpy(at, &x, 4); break;
    case DType::F64: { double d = x; std::memcpy(at, &d, 8); break; }
    case DType::BF16: { uint16_t h = float_to_bf16(x); std::memcpy(at, &h, 2); break; }
    case DType::F16: { uint16_t h = float_to_f16(x); std::memcpy(at, &h, 2); break; }
  }
}
double load_value(DType t, const uint8_t* at) {
  switch (t) {
    case DType::F32: { float x; std::memcpy(&x, at, 4); return x; }
    case DType::F64: { double x; std::memcpy(&x, at, 8); return x; }
    case DType::BF16: { uint16_t h; std::memcpy(&h, at, 2); return bf16_to_float(h); }
    case DType::F16: { uint16_t h; std::memcpy(&h, at, 2); return f16_to_float(h); }
    case DType::U32: { uint32_t u; std::memcpy(&u, at, 4); return u; }
  }
  return NAN;
}

// One set of inputs for every kernel of a measurement: each tensor's initial contents
// as stored (random values rounded to its type; outputs NaN), the memory the launches
// read (host, or device on cuda: uploaded once), and the FP64 oracle's result for them.
class InputSet {
 public:
  InputSet(const TileKernel& k, const Sizes& sizes, const std::map<std::string, double>& scalars, uint64_t seed,
           bool device)
      : kernel_(k), device_(device) {
    std::map<std::string, HostTensor> random = random_tensors(k.tensors, sizes, seed);
    args_.sizes = sizes;
    args_.scalars = scalars;
    for (const TensorParam& t : k.tensors) {
      HostTensor& h = random.at(t.name);
      Tensor& x = tensors_[t.name];
      x.param = &t;
      x.elements = h.data.size();
      const size_t bytes = x.elements * dtype_bytes(t.dtype);
      x.initial.resize(bytes);
      x.oracle.resize(x.elements);
      for (size_t i = 0; i < x.elements; ++i) {
        store_value(t.dtype, h.data[i], &x.initial[i * dtype_bytes(t.dtype)]);
        x.oracle[i] = load_value(t.dtype, &x.initial[i * dtype_bytes(t.dtype)]);  // what the kernel reads
      }
      TensorArg a;
      a.dtype = t.dtype;
      a.shape = h.layout.shape;
      a.strides = h.layout.strides;
      if (device_) {
#ifdef TESSEL_WITH_CUDA
        x.device = std::make_unique<DeviceBuffer>(bytes);
        x.device->upload(x.initial.data(), bytes);
        a.data = x.device->get();
        a.on_device = true;
#endif
      } else {
        x.host.resize((bytes + 7) / 8);  // 8-byte words: aligned for any element type
        std::memcpy(x.host.data(), x.initial.data(), bytes);
        a.data = x.host.data();
      }
      args_.tensors[t.name] = a;
    }
  }

  const KernelArgs& args() const { return args_; }

  // Written tensors back to their initial contents (outputs NaN), as before any run.
  void reset_written() {
    for (auto& [name, x] : tensors_) {
      if (x.param->access == Access::In) continue;
      if (device_) {
#ifdef TESSEL_WITH_CUDA
        x.device->upload(x.initial.data(), x.initial.size());
#endif
      } else {
        std::memcpy(x.host.data(), x.initial.data(), x.initial.size());
      }
    }
  }

  // The FP64 evaluator's result for these inputs (once), with `tiles` bound (the
  // result does not depend on them beyond rounding).
  void evaluate_oracle(const std::map<std::string, int64_t>& tiles) {
    if (evaluated_) return;
    EvalArgs ea;
    ea.sizes = args_.sizes;
    ea.tiles = tiles;
    ea.scalars = args_.scalars;
    for (auto& [name, x] : tensors_) ea.tensors[name] = std::span<double>(x.oracle);
    evaluate(kernel_, ea);
    evaluated_ = true;
  }

  // Every written tensor as it is now against the oracle: worst relative error and
  // its bound (run_checked's rule, check/checked_run.h).
  Measured compare() const {
    Measured m;
    m.checked = true;
    for (const auto& [name, x] : tensors_) {
      if (x.param->access == Access::In) continue;
      std::vector<uint8_t> now(x.initial.size());
      if (device_) {
#ifdef TESSEL_WITH_CUDA
        x.device->download(now.data(), now.size());
#endif
      } else {
        std::memcpy(now.data(), x.host.data(), now.size());
      }
      std::vector<double> got(x.elements);
      for (size_t i = 0; i < x.elements; ++i) got[i] = load_value(x.param->dtype, &now[i * dtype_bytes(x.param->dtype)]);
      m.rel_err = std::max(m.rel_err, relative_error(std::span<const double>(got), std::span<const double>(x.oracle)));
      m.bound = std::max(m.bound, check_bound(kernel_, x.param->dtype, args_.sizes));
    }
    m.ok = m.rel_err <= m.bound;
    return m;
  }

 private:
  struct Tensor {
    const TensorParam* param = nullptr;
    size_t elements = 0;
    std::vector<uint8_t> initial;
    std::vector<double> oracle;  // the inputs as read; then the evaluator's outputs
    std::vector<uint64_t> host;
#ifdef TESSEL_WITH_CUDA
    std::unique_ptr<DeviceBuffer> device;
#endif
  };
  const TileKernel& kernel_;
  bool device_;
  bool evaluated_ = false;
  KernelArgs args_;
  std::map<std::string, Tensor> tensors_;
};

// Times `reps` launches of `launch`: microseconds per launch. Host wall, or on cuda
// device events around the batch (the launches are asynchronous).
class RunTimer {
 public:
  explicit RunTimer(bool device) : device_(device) {
#ifdef TESSEL_WITH_CUDA
    if (device_) events_ = std::make_unique<DeviceTimer>();
#endif
  }
  double per_launch_us(BoundLaunch& launch, int reps, const LaunchOptions& lo) {
#ifdef TESSEL_WITH_CUDA
    if (device_) {
      events_->start();
      for (int r = 0; r < reps; ++r) launch.run(lo);
      return events_->stop_ms() * 1e3 / reps;
    }
#endif
    auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) launch.run(lo);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / reps;
  }

 private:
  bool device_;
#ifdef TESSEL_WITH_CUDA
  std::unique_ptr<DeviceTimer> events_;
#endif
};

void one_trial(const std::vector<Kernel>& kernels, const Sizes& sizes_in, const MeasureOptions& options,
               bool device, bool check, std::vector<Measured>& out) {
  const TileKernel& k = kernels[0].tile_kernel();
  Sizes sizes = sizes_in;
  default_strides(k.tensors, sizes);
  const std::map<std::string, double> scalars = random_scalars(k.scalars, {}, options.seed);
  // Several sets of inputs, used in turn: a run that one set's placement slows does
  // not decide the median alone.
  const int sets = std::max(1, std::min(options.rounds, 3));
  std::vector<std::unique_ptr<InputSet>> inputs;
  std::vector<std::vector<BoundLaunch>> launches(sets);
  LaunchOptions lo;
  lo.threads = options.threads;
  lo.timed = false;
  RunTimer timer(device);
  std::vector<double> warm_us(kernels.size(), 1e30);
  for (int set = 0; set < sets; ++set) {
    inputs.push_back(std::make_unique<InputSet>(k, sizes, scalars, options.seed + set, device));
    for (size_t i = 0; i < kernels.size(); ++i) {
      launches[set].emplace_back();
      if (!out[i].ok) continue;
      // A launch the target refuses (a tensor map it cannot encode, a block over the
      // device's limits) fails this kernel alone.
      try {
        launches[set].back() = kernels[i].bind(inputs[set]->args());
        BoundLaunch& launch = launches[set].back();
        if (set == 0 && check) {
          // The check, on this set's fresh contents: the first run of the kernel.
          inputs[0]->evaluate_oracle(kernels[i].plan().tiles);
          inputs[0]->reset_written();
          launch.run(lo);
          Measured m = inputs[0]->compare();
          m.us = out[i].us;
          out[i] = m;
          if (!m.ok) continue;
        }
        // Warm up (the first launch pays page faults, cold caches, a module load), then
        // time one.
        launch.run(lo);
        warm_us[i] = std::min(warm_us[i], timer.per_launch_us(launch, 1, lo));
      } catch (const Error& e) {
        out[i].ok = false;
        out[i].error = e.what();
      }
    }
  }
  // Launches per timed run: enough to cover min_run_us at the fastest warm time seen
  // (a warm-up slowed by a page fault or preemption must not leave a kernel with a
  // few cold launches per run while the others get many warm ones: measured 3-4x).
  std::vector<int> reps;
  for (double us : warm_us)
    reps.push_back(static_cast<int>(std::clamp(options.min_run_us / std::max(us, 0.5), 1.0, 100000.0)));
  std::vector<std::vector<double>> per(kernels.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < kernels.size(); ++i)
    if (out[i].ok) order.push_back(i);  // a wrong kernel is not timed
  std::mt19937_64 rng(options.seed);
  for (int round = 0; round < std::max(1, options.rounds); ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      if (!out[i].ok) continue;
      try {
        per[i].push_back(timer.per_launch_us(launches[round % sets][i], reps[i], lo));
      } catch (const Error& e) {  // an execution error the device reported
        out[i].ok = false;
        out[i].error = e.what();
      }
    }
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::vector<double>& v = per[i];
    if (v.empty() || !out[i].ok) {
      out[i].us = NAN;
      continue;
    }
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    double median = v[v.size() / 2];
    out[i].us = std::isfinite(out[i].us) && out[i].us > 0 ? std::min(out[i].us, median) : median;
  }
}

}  // namespace

std::vector<Measured> measure_paired(const std::vector<Kernel>& kernels, const std::map<std::string, int64_t>& sizes,
                                     const MeasureOptions& options) {
  if (kernels.empty()) return {};
  const TargetKind target = kernels[0].plan().target;
  for (const Kernel& kernel : kernels)
    if (kernel.plan().target != target)
      user_error(ErrorKind::InvalidArgument, "measure_paired: kernels of one target only (" +
                                                 std::string(target_name(target)) + " and " +
                                                 target_name(kernel.plan().target) + ")");
  const bool device = target == TargetKind::Cuda;
  if (device) {
#ifdef TESSEL_WITH_CUDA
    std::string why;
    if (!cuda_gpu_available(&why)) user_error(ErrorKind::Runtime, "measuring cuda candidates needs a GPU: " + why);
#else
    user_error(ErrorKind::Unsupported, "the cuda target is not built: tessel was built without the CUDA toolkit");
#endif
  }
  std::vector<Measured> out(kernels.size());
  for (Measured& m : out) m.us = 0;  // 0: no trial yet
  for (int trial = 0; trial < std::max(1, options.trials); ++trial) {
    MeasureOptions o = options;
    o.seed = options.seed + 1000 * trial;
    one_trial(kernels, sizes, o, device, options.check && trial == 0, out);
  }
  return out;
}

}  // namespace tessel
