#include "k.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
typedef void (*kfn)(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t, int);
static double run(kfn f, int M, int N, int K, int KB, const float* A, const float* B, float* C) {
  auto t0 = std::chrono::steady_clock::now();
  for (int kb = 0; kb < K; kb += KB) {
    int kc = K - kb < KB ? K - kb : KB;
    for (int r = 0; r + 6 <= M; r += 6)
      for (int j = 0; j < N; j += 64)
        f(kc, A + (int64_t)r * K + kb, B + (int64_t)kb * N + j, C + (int64_t)r * N + j, N, K, N, kb == 0);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
int main(int argc, char** argv) {
  int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
  std::vector<float> A((size_t)M * K), B((size_t)K * N), C((size_t)M * N);
  for (auto& x : A) x = rand() / (float)RAND_MAX;
  for (auto& x : B) x = rand() / (float)RAND_MAX;
  const int kbs[] = {500, 1000, K};
  for (int round = 0; round < 3; ++round)
    for (int kb : kbs) {
      double tb = 1e9, tp = 1e9;
      for (int rep = 0; rep < 3; ++rep) {
        double x = run(k_base, M, N, K, kb, A.data(), B.data(), C.data()); if (x < tb) tb = x;
        x = run(k_pf, M, N, K, kb, A.data(), B.data(), C.data()); if (x < tp) tp = x;
      }
      double fl = 2.0 * (M / 6 * 6) * N * K;
      printf("KB %5d base %.1f GF/s  pf %.1f GF/s  ratio %.3f\n", kb, fl / tb * 1e-9, fl / tp * 1e-9, tb / tp);
    }
}
