// Not part of the build: the measurement behind docs/results/cpu-gemm-2026-12-06-session59/README.md.
// g++ -O2 -march=native -o masked_store_rows masked_store_rows.cpp && ./masked_store_rows
// Row-by-row masked load-add-store over C rows ldc floats apart: when does a load stall on a masked store?
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
template <int W>  // vector lanes 4, 8, 16; 1 = scalar
__attribute__((noinline)) void rows(float* c, long ldc, long n, long R, float x) {
  for (long r = 0; r < R; ++r) {
    float* p = c + r * ldc;
    if constexpr (W == 16) {
      __mmask16 m = (1u << n) - 1;
      _mm512_mask_storeu_ps(p, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, p), _mm512_set1_ps(x)));
    }
    if constexpr (W == 8) {
      __mmask8 m = (1u << n) - 1;
      _mm256_mask_storeu_ps(p, m, _mm256_add_ps(_mm256_maskz_loadu_ps(m, p), _mm256_set1_ps(x)));
    }
    if constexpr (W == 4) {
      __mmask8 m = (1u << n) - 1;
      _mm_mask_storeu_ps(p, m, _mm_add_ps(_mm_maskz_loadu_ps(m, p), _mm_set1_ps(x)));
    }
    if constexpr (W == 1) { for (long j = 0; j < n; ++j) p[j] += x; }
  }
}
template <int W> double t(long ldc, long n) {
  const long R = 256; std::vector<float> c(R * ldc + 64, 1.0f);
  std::vector<double> ts;
  for (int k = 0; k < 7; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 2000; ++i) rows<W>(c.data(), ldc, n, R, 1e-9f);
    ts.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / 2000 / R);
  }
  std::sort(ts.begin(), ts.end()); return ts[3];
}
int main() {
  printf("ns per row\n n ldc   w16   w8   w4   scalar\n");
  for (long n : {1, 2, 3, 4, 5, 8, 12}) for (long ldc : {n, n + 1, 4 * ((n + 3) / 4), 16L}) {
    if (ldc < n) continue;
    printf("%2ld %3ld %5.2f %5.2f %5.2f %5.2f\n", n, ldc, t<16>(ldc, n), n <= 8 ? t<8>(ldc, n) : -1.0,
           n <= 4 ? t<4>(ldc, n) : -1.0, t<1>(ldc, n));
  }
}
