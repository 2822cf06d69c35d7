// cpu_mma_edge (src/target/cpu/cpu_support.h) alone, overwriting C and accumulating
// into it, on dense operands (lda = K, ldb = ldc = N: C's rows shorter than a vector
// where N is not a multiple of 16). Per shape, each way's complete output is first
// checked against the FP64 oracle (C poisoned with NaN where it is overwritten,
// random where it is accumulated into); then R rounds of C calls each, the two ways
// alternating; printed: the median over rounds of the time per call, in ns.
//
//   build/bench_mma_edge [--rounds R] [--calls C] MxNxK ...   (default R = 7, C = 20000)
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/stats.h"
#include "ops/gemm_reference.h"
#include "target/cpu/cpu_support.h"

using namespace tessel;
using tessel::bench::median;

namespace {

[[noreturn]] void usage() {
  std::fputs("usage: bench_mma_edge [--rounds R] [--calls C] MxNxK ...\n", stderr);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  long calls = 20000;
  std::vector<std::array<int64_t, 3>> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::atol(argv[++i]) : (usage(), 0L); };
    if (a == "--rounds") rounds = int(value());
    else if (a == "--calls") calls = value();
    else {
      long m = 0, n = 0, k = 0;
      if (std::sscanf(a.c_str(), "%ldx%ldx%ld", &m, &n, &k) != 3 || m < 1 || n < 1 || k < 1) usage();
      shapes.push_back({m, n, k});
    }
  }
  if (rounds < 1 || calls < 1 || shapes.empty()) usage();
  std::printf("cpu_mma_edge, ns per call: median over %d rounds of %ld calls\n", rounds, calls);
  for (const auto& [m, n, k] : shapes) {
    std::mt19937_64 rng(1);
    std::vector<float> a(m * k), b(k * n), c0(m * n), c(m * n);
    fill_random(a, rng);
    fill_random(b, rng);
    fill_random(c0, rng);
    for (int overwrite : {1, 0}) {
      if (overwrite)
        std::fill(c.begin(), c.end(), NAN);
      else
        c = c0;
      cpu_mma_edge(k, a.data(), b.data(), c.data(), n, k, n, m, n, overwrite);
      const std::vector<double> want =
          gemm_oracle(m, n, k, 1.0, a.data(), k, b.data(), n, overwrite ? 0.0 : 1.0, c0.data(), n);
      const double err = gemm_relative_error(m, n, c.data(), n, want);
      if (!(err <= gemm_error_bound(k))) {
        std::fprintf(stderr, "%ldx%ldx%ld (overwrite %d): relative error %g above the bound %g\n", long(m), long(n),
                     long(k), overwrite, err, gemm_error_bound(k));
        return 1;
      }
    }
    std::vector<double> ns[2];
    for (int r = 0; r < rounds; ++r)
      for (int j = 0; j < 2; ++j) {
        const int overwrite = (j + r) % 2;
        const auto start = std::chrono::steady_clock::now();
        for (long i = 0; i < calls; ++i) cpu_mma_edge(k, a.data(), b.data(), c.data(), n, k, n, m, n, overwrite);
        ns[overwrite].push_back(
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / double(calls));
      }
    std::printf("%ldx%ldx%ld:  overwrite %.0f  accumulate %.0f\n", long(m), long(n), long(k), median(ns[1]),
                median(ns[0]));
  }
  return 0;
}
