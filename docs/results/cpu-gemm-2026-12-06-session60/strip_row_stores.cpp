// Not part of the build: the measurements behind docs/results/cpu-gemm-2026-12-06-session60/README.md.
// g++ -O2 -march=native -o strip_row_stores strip_row_stores.cpp && ./strip_row_stores
// Rows of N floats (ldc = N) written at k = 1, 96 rows a call.
// First table, how to store a row's last part: one masked 16-lane store; the narrowest masked store of 4, 8
// or 16 lanes (a scalar for 1); unmasked pieces of 8, 4, 2 and 1; 8 unmasked lanes and then the narrowest
// masked store; two overlapping unmasked 8-lane stores.
// Second table, N = 16 + rest: the whole vector stored first, then the masked one (fwd); the masked one
// first; 16 + 8 whole lanes and a masked 4; 4 rows computed, then stored.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
template <int N, int S>
__attribute__((noinline)) void tail_rows(const float* a, const float* b, float* c, long R) {
  constexpr int w = N / 16, rest = N % 16;
  __m512 bv[w + 1];
  for (int v = 0; v < w; ++v) bv[v] = _mm512_loadu_ps(b + 16 * v);
  constexpr __mmask16 m = (1u << rest) - 1;
  __m512 bl = _mm512_maskz_loadu_ps(m, b + 16 * w);
  const __m512i sh = _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                      _mm512_set1_epi32(rest - 8));
  for (long r = 0; r < R; ++r) {
    float* p = c + r * N;
    __m512 s = _mm512_set1_ps(a[r]);
    for (int v = 0; v < w; ++v) _mm512_storeu_ps(p + 16 * v, _mm512_mul_ps(s, bv[v]));
    __m512 x = _mm512_mul_ps(s, bl);
    float* q = p + 16 * w;
    auto mt = [&](float* q, __m512 x, int n) {  // masked narrowest of 4, 8, 16 (scalar for 1)
      if (n == 1)
        _mm_store_ss(q, _mm512_castps512_ps128(x));
      else if (n <= 4)
        _mm_mask_storeu_ps(q, (__mmask8)((1u << n) - 1), _mm512_castps512_ps128(x));
      else if (n <= 8)
        _mm256_mask_storeu_ps(q, (__mmask8)((1u << n) - 1), _mm512_castps512_ps256(x));
      else
        _mm512_mask_storeu_ps(q, (__mmask16)((1u << n) - 1), x);
    };
    if constexpr (S == 0)
      _mm512_mask_storeu_ps(q, m, x);
    else if constexpr (S == 1)
      mt(q, x, rest);
    else if constexpr (S == 2) {
      int o = 0;
      if constexpr ((rest & 8) != 0) {
        _mm256_storeu_ps(q, _mm512_castps512_ps256(x));
        o += 8;
      }
      __m128 y = _mm512_extractf32x4_ps(x, o / 4);
      if constexpr ((rest & 4) != 0) {
        _mm_storeu_ps(q + o, y);
        o += 4;
        y = _mm512_extractf32x4_ps(x, o / 4);
      }
      if constexpr ((rest & 2) != 0) {
        _mm_storel_pi((__m64*)(q + o), y);
        y = _mm_movehl_ps(y, y);
        o += 2;
      }
      if constexpr ((rest & 1) != 0) {
        _mm_store_ss(q + o, y);
      }
    } else if constexpr (S == 3) {
      if constexpr (rest > 8) {
        _mm256_storeu_ps(q, _mm512_castps512_ps256(x));
        mt(q + 8, _mm512_shuffle_f32x4(x, x, 0xEE), rest - 8);
      } else
        mt(q, x, rest);
    } else {  // overlapping ymm pair where rest > 8
      if constexpr (rest > 8) {
        _mm256_storeu_ps(q, _mm512_castps512_ps256(x));
        _mm256_storeu_ps(q + rest - 8, _mm512_castps512_ps256(_mm512_permutexvar_ps(sh, x)));
      } else
        mt(q, x, rest);
    }
  }
}
template <int N, int S>
__attribute__((noinline)) void order_rows(const float* a, const float* b, float* c, long R) {
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
// Best of 9 rounds of 20000 calls of F, ns a call; every element of C checked (1.5 x 2).
template <int N, void (*F)(const float*, const float*, float*, long)>
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
      F(a, b, c, R);
      asm volatile("" ::: "memory");
    }
    best =
        std::min(best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / 20000);
  }
  // check
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < N; ++j)
      if (c[r * N + j] != 3.0f) {
        printf("bad %d\n", N);
        exit(1);
      }
  return best;
}
template <int N>
void tail_line() {
  printf("%3d %6.1f %6.1f %6.1f %6.1f %6.1f\n", N, t<N, tail_rows<N, 0>>(), t<N, tail_rows<N, 1>>(),
         t<N, tail_rows<N, 2>>(), t<N, tail_rows<N, 3>>(), t<N, tail_rows<N, 4>>());
}
template <int N>
void order_line() {
  printf("%3d %6.1f %6.1f %6.1f %6.1f\n", N, t<N, order_rows<N, 0>>(), t<N, order_rows<N, 1>>(),
         t<N, order_rows<N, 2>>(), t<N, order_rows<N, 3>>());
}
int main() {
  printf("ns per 96 rows (min)\n  N  mask16 maskT pieces 8+maskT overlap\n");
  tail_line<1>();
  tail_line<3>();
  tail_line<5>();
  tail_line<7>();
  tail_line<9>();
  tail_line<10>();
  tail_line<12>();
  tail_line<13>();
  tail_line<15>();
  tail_line<17>();
  tail_line<20>();
  tail_line<23>();
  tail_line<25>();
  tail_line<26>();
  tail_line<29>();
  tail_line<31>();
  tail_line<41>();
  tail_line<45>();
  printf("\nns per 96 rows (min)\n  N  fwd  masked-first  16+8+mask4  4rows\n");
  order_line<25>();
  order_line<26>();
  order_line<27>();
  order_line<28>();
}
