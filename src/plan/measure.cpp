#include "plan/measure.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>

#include "check/checked_run.h"

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

std::vector<double> one_trial(const std::vector<Kernel>& kernels, const std::map<std::string, int64_t>& sizes_in,
                              const MeasureOptions& options) {
  const TileKernel& k = kernels[0].tile_kernel();
  std::map<std::string, int64_t> sizes = sizes_in;
  default_strides(k.tensors, sizes);
  // Several sets of inputs (allocated as a caller would), used in turn: a run that
  // one set's placement slows does not decide the median alone.
  const int sets = std::max(1, std::min(options.rounds, 3));
  std::vector<std::map<std::string, HostTensor>> tensors(sets);
  std::vector<std::vector<BoundLaunch>> launches(sets);
  LaunchOptions lo;
  lo.threads = options.threads;
  std::vector<double> warm_us(kernels.size(), 1e30);
  for (int set = 0; set < sets; ++set) {
    tensors[set] = random_tensors(k.tensors, sizes, options.seed + set);
    KernelArgs args;
    for (auto& [name, t] : tensors[set])
      args.tensors[name] = TensorArg::host(t.data.data(), t.layout.shape, t.layout.strides);
    for (const TensorParam& t : k.tensors) args.tensors[t.name].dtype = t.dtype;
    args.scalars = random_scalars(k.scalars, {}, options.seed);
    args.sizes = sizes;
    for (size_t i = 0; i < kernels.size(); ++i) {
      launches[set].push_back(kernels[i].bind(args));
      // Warm up (the first launch pays page faults and cold caches), then time one.
      launches[set].back().run(lo);
      auto start = std::chrono::steady_clock::now();
      launches[set].back().run(lo);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      warm_us[i] = std::min(warm_us[i], us);
    }
  }
  // Launches per timed run: enough to cover min_run_us at the fastest warm time seen
  // (a warm-up slowed by a page fault or preemption must not leave a kernel with a
  // few cold launches per run while the others get many warm ones: measured 3-4x).
  std::vector<int> reps;
  for (double us : warm_us)
    reps.push_back(static_cast<int>(std::clamp(options.min_run_us / std::max(us, 0.5), 1.0, 100000.0)));
  std::vector<std::vector<double>> per(kernels.size());
  std::vector<size_t> order(kernels.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(options.seed);
  for (int round = 0; round < std::max(1, options.rounds); ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      BoundLaunch& launch = launches[round % sets][i];
      auto start = std::chrono::steady_clock::now();
      for (int r = 0; r < reps[i]; ++r) launch.run(lo);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      per[i].push_back(us / reps[i]);
    }
  }
  std::vector<double> out;
  for (auto& v : per) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    out.push_back(v[v.size() / 2]);
  }
  return out;
}

}  // namespace

std::vector<double> measure_paired(const std::vector<Kernel>& kernels, const std::map<std::string, int64_t>& sizes,
                                   const MeasureOptions& options) {
  if (kernels.empty()) return {};
  std::vector<double> best;
  for (int trial = 0; trial < std::max(1, options.trials); ++trial) {
    MeasureOptions o = options;
    o.seed = options.seed + 1000 * trial;
    std::vector<double> t = one_trial(kernels, sizes, o);
    if (best.empty()) best = t;
    for (size_t i = 0; i < t.size(); ++i) best[i] = std::min(best[i], t[i]);
  }
  return best;
}

}  // namespace tessel
