// One PreparedGemm shape run in a loop for perf (thirty-second session): prints the
// plan and the best call's GFLOP/s. Built against the library from the repository root:
//   g++ -std=c++20 -O2 -Isrc -Iinclude docs/results/cpu-gemm-2026-12-04-session32/profile_loop.cpp \
//     build/libtessel.a -L/usr/local/cuda/lib64 -lnvrtc -lcuda -ldl -lpthread -o /tmp/loop
//   perf record -g /tmp/loop M N K [SECONDS [THREADS [PLAN_SPEC]]]; perf report --no-children
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "ops/gemm.h"
#include "bench/plan_spec.h"
using namespace tessel;
int main(int argc, char** argv) {
  int64_t m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]);
  double secs = argc > 4 ? atof(argv[4]) : 3;
  std::vector<float> a(m * k), b(k * n), c(m * n);
  std::mt19937 r(1); std::uniform_real_distribution<float> u(-1, 1);
  for (auto& x : a) x = u(r); for (auto& x : b) x = u(r);
  GemmOptions o; o.target = TargetKind::Cpu; o.threads = argc > 5 ? atoi(argv[5]) : 1;
  if (argc > 6) { o.plan = default_gemm_plan(TargetKind::Cpu, m, n, k, GemmPrecision::F32, "", o.threads); bench::apply_plan_spec(argv[6], *o.plan); }
  PreparedGemm g(m, n, k, k, n, n, o);
  printf("plan %s\n", g.plan().to_string().c_str());
  g.run(1, a.data(), b.data(), 0, c.data());
  auto t0 = std::chrono::steady_clock::now(); int it = 0;
  double best = 1e9;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs) {
    auto s = std::chrono::steady_clock::now();
    g.run(1, a.data(), b.data(), 0, c.data()); ++it;
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
  }
  printf("%d iters, best %.3f ms, %.1f GFLOP/s\n", it, best * 1e3, 2.0 * m * n * k / best * 1e-9);
}
