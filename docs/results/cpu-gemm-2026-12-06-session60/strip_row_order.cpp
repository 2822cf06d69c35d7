// Not part of the build: the measurement behind docs/results/cpu-gemm-2026-12-06-session60/README.md.
// g++ -O2 -march=native -o strip_row_order strip_row_order.cpp && ./strip_row_order
// Rows of N = 16 + rest floats (ldc = N) at k = 1, 96 rows a call: the whole vector stored first, then the
// masked one (fwd); the masked one first; 16 + 8 whole lanes and a masked 4; 4 rows computed, then stored.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
// N = 16 + rest (rest 9..15), orders and tails
template <int N, int S>
__attribute__((noinline)) void rows(const float* a, const float* b, float* c, long R) {
  constexpr int rest = N - 16;
  constexpr __mmask16 m = (1u << rest) - 1;
  __m512 b0 = _mm512_loadu_ps(b), bl = _mm512_maskz_loadu_ps(m, b + 16);
  long r = 0;
  if constexpr (S <= 2) {
    for (; r < R; ++r) {
      float* p = c + r * N;
      __m512 s = _mm512_set1_ps(a[r]);
      __m512 x0 = _mm512_mul_ps(s, b0), x = _mm512_mul_ps(s, bl);
      if constexpr (S == 0) {
        _mm512_storeu_ps(p, x0);
        _mm512_mask_storeu_ps(p + 16, m, x);
      }
      if constexpr (S == 1) {
        _mm512_mask_storeu_ps(p + 16, m, x);
        _mm512_storeu_ps(p, x0);
        asm volatile("" ::: "memory");
      }
      if constexpr (S == 2) {
        _mm512_storeu_ps(p, x0);
        _mm256_storeu_ps(p + 16, _mm512_castps512_ps256(x));
        __m128 y = _mm512_extractf32x4_ps(x, 2);
        _mm_mask_storeu_ps(p + 24, (__mmask8)((1u << (rest - 8)) - 1), y);
      }
    }
  } else {  // 4 rows: all FMAs then stores in order (libxsmm-like)
    for (; r + 4 <= R; r += 4) {
      __m512 x0[4], x[4];
      for (int u = 0; u < 4; ++u) {
        __m512 s = _mm512_set1_ps(a[r + u]);
        x0[u] = _mm512_mul_ps(s, b0);
        x[u] = _mm512_mul_ps(s, bl);
      }
      for (int u = 0; u < 4; ++u) {
        float* p = c + (r + u) * N;
        _mm512_storeu_ps(p, x0[u]);
        _mm512_mask_storeu_ps(p + 16, m, x[u]);
      }
    }
  }
}
template <int N, int S>
double t() {
  const long R = 96;
  static float* buf = (float*)aligned_alloc(4096, 1 << 20);
  float *a = buf, *b = buf + 40000, *c = buf + 80000 + 512;
  for (int i = 0; i < R; ++i) a[i] = 1.5f;
  for (int i = 0; i < 64; ++i) b[i] = 2.0f;
  double best = 1e9;
  for (int k = 0; k < 9; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20000; ++i) {
      rows<N, S>(a, b, c, R);
      asm volatile("" ::: "memory");
    }
    best =
        std::min(best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / 20000);
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < N; ++j)
      if (c[r * N + j] != 3.0f) {
        printf("bad %d %d\n", N, S);
        exit(1);
      }
  return best;
}
template <int N>
void line() {
  printf("%3d %6.1f %6.1f %6.1f %6.1f\n", N, t<N, 0>(), t<N, 1>(), t<N, 2>(), t<N, 3>());
}
int main() {
  printf("ns per 96 rows (min)\n  N  fwd  masked-first  16+8+mask4  4rows\n");
  line<25>();
  line<26>();
  line<27>();
  line<28>();


}
