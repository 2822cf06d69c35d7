// Times an emitted unit's tessel_group on one group (M N K from argv), whole windows only.
#include <dlfcn.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
typedef long i64;
static void copy_window(float* sb, i64, i64 sld, i64, i64, i64, i64, i64 sr0, i64 sc0, i64, i64, float* db, i64, i64 dld,
                        i64, i64, i64, i64, i64 dr0, i64 dc0, i64, i64, i64 rows, i64 cols, float) {
  for (i64 r = 0; r < rows; ++r) {
    const float* s = sb + (sr0 + r) * sld + sc0; float* d = db + (dr0 + r) * dld + dc0;
    i64 c = 0;
    typedef float v __attribute__((vector_size(64), aligned(4)));
    for (; c + 16 <= cols; c += 16) *(v*)(d + c) = *(const v*)(s + c);
    for (; c < cols; ++c) d[c] = s[c];
  }
}
static void stub() { std::abort(); }
int main(int argc, char** argv) {
  i64 M = atol(argv[2]), N = atol(argv[3]), K = atol(argv[4]);
  void* h = dlopen(argv[1], RTLD_NOW);
  if (!h) { printf("%s\n", dlerror()); return 1; }
  void* table[200];
  for (auto& t : table) t = (void*)&stub;
  table[96] = (void*)&copy_window;
  ((void (*)(void* const*))dlsym(h, "tessel_bind"))(table);
  auto grp = (void (*)(const i64*, const double*, float* const*, const i64*, float*))dlsym(h, "tessel_group");
  i64 sf = ((i64(*)())dlsym(h, "tessel_scratch_floats"))();
  i64 off = argc > 5 ? atol(argv[5]) : 0;
  float* Ab = (float*)aligned_alloc(64, (M * K + 64) * 4); float* Bb = (float*)aligned_alloc(64, (K * N + 64) * 4); float* Cb = (float*)aligned_alloc(64, (M * N + 64) * 4);
  struct V { float* p; i64 n; float& operator[](i64 i) { return p[i]; } float* data() { return p; } float* begin() { return p; } float* end() { return p + n; } };
  i64 offc = argc > 6 ? atol(argv[6]) : 0; V A{Ab, M * K}, B{Bb + off, K * N}, C{Cb + offc, M * N};
  std::vector<float> S(sf + 64);
  for (auto& x : A) x = rand() / float(RAND_MAX) - 0.5f;
  for (auto& x : B) x = rand() / float(RAND_MAX) - 0.5f;
  i64 sizes[6] = {M, N, K, K, N, N};
  double sc[2] = {1.0, 0.0};
  float* tens[3] = {A.data(), B.data(), C.data()};
  i64 g[2] = {0, 0};
  grp(sizes, sc, tens, g, S.data());
  // check
  double maxerr = 0;
  for (i64 i = 0; i < M; ++i) for (i64 j = 0; j < N; ++j) {
    double s = 0; for (i64 k = 0; k < K; ++k) s += double(A[i*K+k]) * B[k*N+j];
    maxerr = std::max(maxerr, std::abs(s - C[i*N+j]));
  }
  std::vector<double> t;
  int reps = std::max<i64>(1, 20000000 / (M * N * K));
  for (int b = 0; b < 15; ++b) {
    auto s = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) grp(sizes, sc, tens, g, S.data());
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count() / reps);
  }
  std::sort(t.begin(), t.end());
  printf("%s %ldx%ldx%ld: %.3f us (min %.3f) %.1f GFLOP/s maxerr %.2g\n", argv[1], M, N, K, t[7], t[0], 2.0*M*N*K/t[7]/1e3, maxerr);
}
