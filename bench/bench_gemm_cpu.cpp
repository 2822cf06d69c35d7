// tessel's cpu GEMM beside OpenBLAS (cblas_sgemm) in one process: fp32, row-major,
// one thread each. Per shape: every output checked against the FP64 oracle, 200 ms
// warm-up, then 9 timing batches of 40 ms alternating the two implementations;
// host-wall time per call, medians of the batches; ratio = tessel GFLOP/s over
// OpenBLAS GFLOP/s. Cold JIT compile time per kernel is measured with an empty
// kernel cache (a fresh TESSEL_CACHE_DIR).
//
// Run with OpenBLAS's AVX-512 kernels, the peer to beat (../shared/anchors/README.md).
// Debian's OpenBLAS 0.3.21 does not know every AVX-512 Xeon and falls back to its
// SSE3 "Prescott" kernels there, so name the core type (scripts/demo.sh does):
//   env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Cooperlake build/bench_gemm_cpu [MxNxK ...]
// The kernels OpenBLAS chose are printed first.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ops/gemm.h"
#include "ops/gemm_reference.h"

extern "C" {
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha,
                 const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
void openblas_set_num_threads(int n);
char* openblas_get_corename(void);
}

namespace {

constexpr int kRowMajor = 101, kNoTrans = 111;
constexpr int kSamples = 9;
constexpr double kSampleMs = 40, kWarmupMs = 200;

using Clock = std::chrono::steady_clock;

// Calls `f` repeatedly for about `ms` milliseconds; returns microseconds per call.
double time_batch(const std::function<void()>& f, double ms) {
  int64_t calls = 0;
  auto start = Clock::now();
  double elapsed = 0;
  do {
    f();
    ++calls;
    elapsed = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  } while (elapsed < ms);
  return elapsed * 1e3 / double(calls);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Shape {
  int64_t m, n, k;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<Shape> shapes = {{32, 32, 32},   {128, 128, 128},  {512, 512, 512},
                               {1024, 1024, 1024}, {256, 1024, 128}, {1024, 128, 256},
                               {127, 193, 61}, {513, 257, 129}};
  if (argc > 1) {
    shapes.clear();
    for (int i = 1; i < argc; ++i) {
      long long m, n, k;
      if (std::sscanf(argv[i], "%lldx%lldx%lld", &m, &n, &k) != 3 || m <= 0 || n <= 0 || k <= 0) {
        std::fprintf(stderr, "bench_gemm_cpu: '%s' is not a shape MxNxK\n", argv[i]);
        return 2;
      }
      shapes.push_back({m, n, k});
    }
  }
  char cache_dir[] = "/tmp/tessel-bench-cache-XXXXXX";
  if (!mkdtemp(cache_dir)) return 2;
  setenv("TESSEL_CACHE_DIR", cache_dir, 1);  // cold compiles: nothing cached yet
  openblas_set_num_threads(1);
  tessel::GemmOptions options;
  options.threads = 1;

  std::printf("OpenBLAS kernels: %s; tessel and OpenBLAS on 1 thread\n", openblas_get_corename());
  std::printf("%-16s %10s %10s %9s %9s %7s %10s %9s %9s\n", "MxNxK", "tessel us", "oblas us",
              "tessel GF", "oblas GF", "ratio", "jit ms", "err tsl", "err obl");
  std::mt19937_64 rng(1);
  for (const Shape& s : shapes) {
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c0(s.m * s.n), c(s.m * s.n);
    tessel::fill_random(a, rng);
    tessel::fill_random(b, rng);
    tessel::fill_random(c0, rng);
    const float alpha = 1.0f, beta = 0.5f;
    std::vector<double> want = tessel::gemm_oracle(s.m, s.n, s.k, alpha, a.data(), s.k, b.data(),
                                                   s.n, beta, c0.data(), s.n);
    // Validation runs: one call each on a fresh copy of C.
    c = c0;
    tessel::GemmReport first = tessel::gemm(s.m, s.n, s.k, alpha, a.data(), s.k, b.data(), s.n,
                                            beta, c.data(), s.n, options);
    double err_t = tessel::gemm_relative_error(s.m, s.n, c.data(), s.n, want);
    c = c0;
    cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, int(s.m), int(s.n), int(s.k), alpha, a.data(),
                int(s.k), b.data(), int(s.n), beta, c.data(), int(s.n));
    double err_o = tessel::gemm_relative_error(s.m, s.n, c.data(), s.n, want);
    bool valid = err_t <= tessel::gemm_error_bound(s.k);

    // Timing: beta = 0 so that repeated calls do not grow C.
    auto run_tessel = [&] {
      tessel::gemm(s.m, s.n, s.k, alpha, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n, options);
    };
    auto run_oblas = [&] {
      cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, int(s.m), int(s.n), int(s.k), alpha, a.data(),
                  int(s.k), b.data(), int(s.n), 0.0f, c.data(), int(s.n));
    };
    time_batch(run_tessel, kWarmupMs);
    time_batch(run_oblas, kWarmupMs);
    std::vector<double> tt, to;
    for (int i = 0; i < kSamples; ++i) {
      if (i % 2 == 0) {
        tt.push_back(time_batch(run_tessel, kSampleMs));
        to.push_back(time_batch(run_oblas, kSampleMs));
      } else {
        to.push_back(time_batch(run_oblas, kSampleMs));
        tt.push_back(time_batch(run_tessel, kSampleMs));
      }
    }
    double ut = median(tt), uo = median(to);
    double flop = 2.0 * double(s.m) * double(s.n) * double(s.k);
    char name[64];
    std::snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)s.m, (long long)s.n, (long long)s.k);
    std::printf("%-16s %10.2f %10.2f %9.1f %9.1f %7.3f %10.1f %9.2e %9.2e%s\n", name, ut, uo,
                flop / ut / 1e3, flop / uo / 1e3, uo / ut, first.compile_ms, err_t, err_o,
                valid ? "" : "  INVALID (tessel output failed the FP64 check)");
    std::fflush(stdout);
  }
  std::string rm = std::string("rm -rf ") + cache_dir;
  return std::system(rm.c_str()) == 0 ? 0 : 1;
}
