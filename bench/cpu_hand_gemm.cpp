// The cpu target alone on the hand-built GEMM program of tests/cpu (no lowering),
// beside cblas_sgemm, in one run: rounds alternate between the two, each a batch of
// ~40 ms; medians as GFLOP/s and a ratio (min..max over rounds). Also the cold
// compile time (a fresh cache directory). For tuning tile and atom sizes.
// Not part of the CMake build (bench_gemm_cpu is the product benchmark); build it
// against the library:
//   c++ -O2 -std=c++20 -Iinclude -Isrc bench/cpu_hand_gemm.cpp build/libtessel.a -lopenblas -o /tmp/hg
//   env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=Cooperlake OPENBLAS_NUM_THREADS=1
//     /tmp/hg [M N K [BM BN BK MR NR [threads]]] [--dump]
// Debian's OpenBLAS 0.3.21 does not know this Xeon (family 6 model 207): with
// OPENBLAS_CORETYPE unset it falls back to its Prescott (SSE3) kernels, about 10x
// slower; naming Cooperlake selects the AVX-512 kernels, the peer to beat.
#include <cblas.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../tests/cpu/hand_gemm.h"
#include "target/cpu/cpu_emit.h"
#include "target/cpu/cpu_jit.h"

using namespace tessel;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds per call: a batch of calls lasting about `budget` seconds.
template <class F>
double per_call(F f, double budget) {
  int reps = 1;
  for (;;) {
    double t0 = now_s();
    for (int r = 0; r < reps; ++r) f();
    double t = now_s() - t0;
    if (t >= budget) return t / reps;
    reps = t <= 0 ? reps * 2 : std::max(reps + 1, static_cast<int>(reps * budget / t * 1.1));
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  bool dump = false;
  std::vector<int64_t> a;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--dump")) dump = true;
    else a.push_back(std::atoll(argv[i]));
  }
  int64_t M = a.size() > 0 ? a[0] : 1024, N = a.size() > 1 ? a[1] : 1024, K = a.size() > 2 ? a[2] : 1024;
  testing::HandGemm g;
  if (a.size() > 3) g.bm = a[3];
  if (a.size() > 4) g.bn = a[4];
  if (a.size() > 5) g.bk = a[5];
  if (a.size() > 6) g.atom_m = a[6];
  if (a.size() > 7) g.atom_n = a[7];
  int threads = a.size() > 8 ? static_cast<int>(a[8]) : 1;
  GroupProgram program = testing::hand_gemm_program(g);
  if (dump) {
    std::printf("%s", emit_cpu(program).c_str());
    return 0;
  }

  // Cold compile: a fresh cache directory, so nothing comes from disk.
  char dir[] = "/tmp/tessel-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  setenv("TESSEL_CACHE_DIR", dir, 1);
  double t0 = now_s();
  auto kernel = compile_cpu(program);
  double cold_ms = (now_s() - t0) * 1e3;

  int64_t lda = K + 3, ldb = N + 5, ldc = N + 7;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> A(M * lda), B(K * ldb), C1(M * ldc, 0), C2(M * ldc, 0);
  for (float& x : A) x = u(rng);
  for (float& x : B) x = u(rng);
  LaunchArgs args;
  args.sizes = {{"M", M}, {"N", N}, {"K", K}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}};
  args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
  args.tensors = {{"A", A.data()}, {"B", B.data()}, {"C", C1.data()}};
  auto run_tessel = [&] { kernel->run(args, threads); };
  auto run_blas = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A.data(), lda, B.data(), ldb,
                0.0f, C2.data(), ldc);
  };
  run_tessel();
  run_blas();
  double max_diff = 0;
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < N; ++c)
      max_diff = std::max<double>(max_diff, std::abs(C1[r * ldc + c] - C2[r * ldc + c]));

  std::vector<double> tt, tb, ratio;
  for (int round = 0; round < 9; ++round) {
    double x = per_call(run_tessel, 0.04), y = per_call(run_blas, 0.04);
    tt.push_back(x);
    tb.push_back(y);
    ratio.push_back(y / x);
  }
  double flops = 2.0 * M * N * K;
  std::printf("%lldx%lldx%lld tile %lldx%lldx%lld atom %lldx%lld threads %d: tessel %.1f GF/s (%.1f us), "
              "openblas %.1f GF/s (%.1f us), ratio %.3f [%.3f..%.3f], cold compile %.1f ms, max|diff| %.2g\n",
              (long long)M, (long long)N, (long long)K, (long long)g.bm, (long long)g.bn, (long long)g.bk,
              (long long)g.atom_m, (long long)g.atom_n, threads, flops / median(tt) * 1e-9, median(tt) * 1e6,
              flops / median(tb) * 1e-9, median(tb) * 1e6, median(ratio),
              *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()),
              cold_ms, max_diff);
  std::string cleanup = std::string("rm -rf ") + dir;
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
