// tessel's PreparedGemm against libxsmm's JIT kernel, one thread, in one process:
// 40 alternating batches of about 5 ms each; prints quantiles of the per-call times
// (tessel/libxsmm), then the best and the median, and libxsmm / tessel for each.
// Built in build/ (libtessel_xsmm_peer.so is found beside the executable):
//   g++ -O2 -std=c++20 -I../include -I../src small_ab.cpp -o small_ab2 \
//     -Wl,-rpath,/usr/local/cuda/lib:$PWD libtessel.a -ldl /usr/local/cuda/lib/libnvrtc.so \
//     /usr/local/cuda/lib/stubs/libcuda.so && ./small_ab2 32x32x32 64x64x64 ...
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <algorithm>
#include <vector>
#include "tessel/tessel.h"
#include "ops/gemm.h"
#include "bench/xsmm_library.h"
using namespace tessel;
using Clock = std::chrono::steady_clock;
template <class F> double batch(F f) {
  auto t0 = Clock::now(); long calls = 0;
  do { for (int i = 0; i < 8; ++i) f(); calls += 8; }
  while (std::chrono::duration<double, std::milli>(Clock::now() - t0).count() < 5);
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls;
}
int main(int argc, char** argv) {
  tessel::bench::XsmmLibrary xl;
  for (int arg = 1; arg < argc; ++arg) {
    int64_t m, n, k; sscanf(argv[arg], "%ldx%ldx%ld", &m, &n, &k);
    float* a = (float*)aligned_alloc(64, 4 * m * k + 64); float* b = (float*)aligned_alloc(64, 4 * k * n + 64);
    float* c = (float*)aligned_alloc(64, 4 * m * n + 64);
    std::mt19937 g(1); std::uniform_real_distribution<float> d(-1, 1);
    for (int64_t i = 0; i < m * k; ++i) a[i] = d(g);
    for (int64_t i = 0; i < k * n; ++i) b[i] = d(g);
    GemmOptions o; o.threads = 1;
    PreparedGemm p(m, n, k, k, n, n, o);
    auto xk = xl.row_major_kernel(m, n, k);
    std::vector<double> vt, vx;
    for (int r = 0; r < 40; ++r) {
      vt.push_back(batch([&] { p.run(1.0f, a, b, 0.0f, c); }));
      vx.push_back(batch([&] { xk(b, a, c); }));
    }
    std::sort(vt.begin(), vt.end()); std::sort(vx.begin(), vx.end());
    for (int q : {0, 5, 10, 20, 30, 35, 39}) printf("  q%d %.0f/%.0f", q, vt[q], vx[q]); printf("\n");
    printf("%ldx%ldx%ld best: tessel %.1f xsmm %.1f ratio %.3f | median: tessel %.1f xsmm %.1f ratio %.3f\n", m, n, k, vt[0], vx[0], vx[0] / vt[0], vt[20], vx[20], vx[20] / vt[20]);
  }
}
