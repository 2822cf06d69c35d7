#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <algorithm>
#pragma GCC target("arch=x86-64-v4,prefer-vector-width=512")
#pragma GCC optimize("fp-contract=fast")
typedef float Vf __attribute__((vector_size(64)));
typedef float Vfu __attribute__((vector_size(64), aligned(4)));
// MODE 0: library addressing, masked B. 1: B unmasked. 2: a pointer a row (no index).
template <int R, int MODE>
__attribute__((noinline)) void block(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                     int64_t lda, int64_t ldb, unsigned short tail) {
  constexpr int G = (R + 3) / 4;
  const float* ap[G];
  for (int g = 0; g < G; ++g) ap[g] = a + 4 * g * lda;
  const int64_t lda2 = 2 * lda, lda3 = 3 * lda;
  Vf acc[R];
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) acc[r] = Vf{};
  for (int64_t k = 0; k < kc; ++k, b += ldb) {
    Vf bv = MODE == 1 ? (Vf)*(const Vfu*)b : __builtin_ia32_loadups512_mask(b, Vf{}, tail);
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
        if constexpr (MODE == 2) { acc[r] += a[k + r] * bv; continue; }
        if constexpr (MODE == 3) { acc[r] += a[k * R + r] * bv; continue; }
        if constexpr (MODE == 4) { acc[r] += a[k * 2 + (r & 1)] * bv; continue; }
        const float* const p = ap[r / 4] + k;
        const float* const ps = r % 4 == 0 ? p : r % 4 == 1 ? p + lda : r % 4 == 2 ? p + lda2 : p + lda3;
        acc[r] += *ps * bv;
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) __builtin_ia32_storeups512_mask(c + r * ldc, acc[r], tail);
}
template <int R, int MODE>
double time_it(int64_t K, int64_t N, int64_t ldb, const float* a, const float* b, float* c, int calls) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) block<R, MODE>(K, a, b, c, N, K, ldb, (1u << N) - 1);
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;
}
template <int R>
void run(int64_t K, int64_t N) {
  std::vector<float> a(R * K + 64), b(K * 16 + 64), c(R * 16 + 64);
  for (auto& x : a) x = rand() / float(RAND_MAX);
  for (auto& x : b) x = rand() / float(RAND_MAX);
  std::vector<double> t0, t1, t2, t3;
  for (int round = 0; round < 7; ++round) {
    t0.push_back(time_it<R, 0>(K, N, N, a.data(), b.data(), c.data(), 100000));
    t1.push_back(time_it<R, 1>(K, N, N, a.data(), b.data(), c.data(), 100000));
    t2.push_back(time_it<R, 2>(K, N, N, a.data(), b.data(), c.data(), 100000));
    t3.push_back(time_it<R, 3>(K, N, N, a.data(), b.data(), c.data(), 100000));
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  auto rate = [&](double ns) { return R * K / (ns * 3.75); };
  std::printf("R=%d K=%ld N=%ld FMA/cycle: masked ldb=N %.2f  unmasked ldb=N %.2f  one address %.2f  packed %.2f\n", R, K, N, rate(med(t0)),
              rate(med(t1)), rate(med(t2)), rate(med(t3)));
}
int main(int argc, char** argv) {
  const int64_t K = argc > 1 ? atol(argv[1]) : 110;
  for (int64_t N : {10}) { run<13>(K, N); run<21>(K, N); run<24>(K, N); }
}
