// Harness: the one-vector edge block (R rows, 1 masked vector) as cpu_support.cpp
// writes it (UNROLL 1) and with k unrolled, timed on a 21x10x110 block in place.
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <algorithm>
#pragma GCC target("arch=x86-64-v4,prefer-vector-width=512")
#pragma GCC optimize("fp-contract=fast")
typedef float Vf __attribute__((vector_size(64)));
template <int R, int UNR>
__attribute__((noinline)) void block(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                     int64_t lda, int64_t ldb, unsigned short tail, int overwrite) {
  constexpr int G = (R + 3) / 4;
  const float* ap[G];
  for (int g = 0; g < G; ++g) ap[g] = a + 4 * g * lda;
  const int64_t lda2 = 2 * lda, lda3 = 3 * lda;
  Vf acc[R];
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) acc[r] = Vf{};
  auto step = [&](int64_t k, const float* bk) __attribute__((always_inline)) {
    Vf bv = __builtin_ia32_loadups512_mask(bk, Vf{}, tail);
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      const float* const p = ap[r / 4] + k;
      const float* const ps = r % 4 == 0 ? p : r % 4 == 1 ? p + lda : r % 4 == 2 ? p + lda2 : p + lda3;
      acc[r] += *ps * bv;
    }
  };
  int64_t k = 0;
  if constexpr (UNR > 1)
    for (; k + UNR <= kc; k += UNR, b += UNR * ldb)
#pragma GCC unroll 8
      for (int u = 0; u < UNR; ++u) step(k + u, b + u * ldb);
  for (; k < kc; ++k, b += ldb) step(k, b);
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) __builtin_ia32_storeups512_mask(c + r * ldc, acc[r], tail);
}
template <int R, int UNR>
double time_it(int64_t K, int64_t N, const float* a, const float* b, float* c, int calls) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) block<R, UNR>(K, a, b, c, N, K, N, (1u << N) - 1, 1);
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;
}
int main(int argc, char** argv) {
  const int64_t K = argc > 1 ? atol(argv[1]) : 110, N = 10;
  constexpr int R = 21;
  std::vector<float> a(R * K + 64), b(K * N + 64), c(R * N + 64);
  for (auto& x : a) x = rand() / float(RAND_MAX);
  for (auto& x : b) x = rand() / float(RAND_MAX);
  std::vector<double> t1, t2, t4, t8;
  for (int round = 0; round < 7; ++round) {
    t1.push_back(time_it<R, 1>(K, N, a.data(), b.data(), c.data(), 200000));
    t2.push_back(time_it<R, 2>(K, N, a.data(), b.data(), c.data(), 200000));
    t4.push_back(time_it<R, 4>(K, N, a.data(), b.data(), c.data(), 200000));
    t8.push_back(time_it<R, 8>(K, N, a.data(), b.data(), c.data(), 200000));
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  std::printf("R=%d K=%ld ns: unroll1 %.1f  unroll2 %.1f  unroll4 %.1f  unroll8 %.1f  (FMA/cycle at 3.75 GHz: %.2f %.2f %.2f %.2f)\n", R, K,
              med(t1), med(t2), med(t4), med(t8), R * K / (med(t1) * 3.75), R * K / (med(t2) * 3.75),
              R * K / (med(t4) * 3.75), R * K / (med(t8) * 3.75));
}
