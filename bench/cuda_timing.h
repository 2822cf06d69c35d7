// Timing one cuda call, shared by the cuda benchmarks (bench_gemm_cuda,
// bench_cuda_plans): host-wall per call (a batch of calls issued back to back, then
// one synchronize; total / calls, launch included) and device time per call (the
// median of CUDA events around each of up to 200 further calls).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace tessel_bench {

struct Timing {
  double host_us, dev_us;
};

// The host-wall batch: about target_us of calls by the caller's guess of one call,
// at least 5 and at most max_calls.
struct Batch {
  double target_us;
  int max_calls;
};

inline void cuda_timing_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// `median` is the caller's own, applied to the per-call event times.
inline Timing time_calls(const std::function<void()>& call, double guess_us, Batch batch,
                         double (*median)(std::vector<double>)) {
  int calls = std::max(5, std::min(int(batch.target_us / std::max(guess_us, 1.0)), batch.max_calls));
  cuda_timing_check(cudaDeviceSynchronize(), "sync");
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) call();
  cuda_timing_check(cudaDeviceSynchronize(), "sync");
  double host = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
  int ev = std::min(calls, 200);
  std::vector<cudaEvent_t> e(2 * ev);
  for (auto& x : e) cuda_timing_check(cudaEventCreate(&x), "event");
  for (int i = 0; i < ev; ++i) {
    cudaEventRecord(e[2 * i]);
    call();
    cudaEventRecord(e[2 * i + 1]);
  }
  cuda_timing_check(cudaDeviceSynchronize(), "sync");
  std::vector<double> d(ev);
  for (int i = 0; i < ev; ++i) {
    float ms = 0;
    cudaEventElapsedTime(&ms, e[2 * i], e[2 * i + 1]);
    d[i] = ms * 1e3;
  }
  for (auto& x : e) cudaEventDestroy(x);
  return {host, median(d)};
}

}  // namespace tessel_bench
