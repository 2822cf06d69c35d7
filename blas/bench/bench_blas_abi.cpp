// bench_blas_abi: sgemm_ and dgemm_ through the Fortran ABI of two BLAS libraries
// loaded side by side (dlopen, RTLD_LOCAL), column-major, no transposition, alpha 1,
// beta 0, on the bench suite's shapes (src/bench/shape.h), as a markdown table of
// median GFLOP/s and the ratio first / second.
//
//   bench_blas_abi LIB_A LIB_B [--rounds R] [--min-ms T]
//
// Each round times both libraries on every shape, in alternating order (A then B,
// then B then A); a timing is the mean of as many back-to-back calls as fill T ms
// (default 30) after one untimed call. Both results are compared with each other
// (relative Frobenius difference, which must stay below 1e-4 in f32 and 1e-12 in
// f64) so that a wrong library cannot win. Also prints the wall time of each dlopen.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                       const int*, const float*, const int*, const float*, float*, const int*, size_t, size_t);
using Dgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                       const int*, const double*, const int*, const double*, double*, const int*, size_t, size_t);

struct Lib {
  std::string path;
  Sgemm s = nullptr;
  Dgemm d = nullptr;
  double dlopen_ms = 0;
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Lib load(const std::string& path) {
  Lib l;
  l.path = path;
  double t0 = now_ms();
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  l.dlopen_ms = now_ms() - t0;
  if (!h) {
    std::fprintf(stderr, "bench_blas_abi: %s\n", dlerror());
    std::exit(2);
  }
  l.s = reinterpret_cast<Sgemm>(dlsym(h, "sgemm_"));
  l.d = reinterpret_cast<Dgemm>(dlsym(h, "dgemm_"));
  if (!l.s || !l.d) {
    std::fprintf(stderr, "bench_blas_abi: %s lacks sgemm_ or dgemm_\n", path.c_str());
    std::exit(2);
  }
  return l;
}

template <class T>
void call(const Lib& l, int m, int n, int k, const T* a, const T* b, T* c) {
  const char nt = 'N';
  const T one = 1, zero = 0;
  if constexpr (sizeof(T) == 4) l.s(&nt, &nt, &m, &n, &k, &one, a, &m, b, &k, &zero, c, &m, 1, 1);
  else l.d(&nt, &nt, &m, &n, &k, &one, a, &m, b, &k, &zero, c, &m, 1, 1);
}

// Mean ms per call over back-to-back calls filling min_ms.
template <class T>
double time_call(const Lib& l, int m, int n, int k, const T* a, const T* b, T* c, double min_ms) {
  call(l, m, n, k, a, b, c);
  int reps = 0;
  double t0 = now_ms(), t = t0;
  while (t - t0 < min_ms || reps < 2) {
    call(l, m, n, k, a, b, c);
    ++reps;
    t = now_ms();
  }
  return (t - t0) / reps;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

template <class T>
bool bench(const Lib& a_lib, const Lib& b_lib, int m, int n, int k, int rounds, double min_ms) {
  std::mt19937_64 rng(m * 131 + n * 7 + k);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> a(size_t(m) * k), b(size_t(k) * n), c1(size_t(m) * n), c2(size_t(m) * n);
  for (T& x : a) x = T(u(rng));
  for (T& x : b) x = T(u(rng));
  std::vector<double> ta, tb;
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      ta.push_back(time_call(a_lib, m, n, k, a.data(), b.data(), c1.data(), min_ms));
      tb.push_back(time_call(b_lib, m, n, k, a.data(), b.data(), c2.data(), min_ms));
    } else {
      tb.push_back(time_call(b_lib, m, n, k, a.data(), b.data(), c2.data(), min_ms));
      ta.push_back(time_call(a_lib, m, n, k, a.data(), b.data(), c1.data(), min_ms));
    }
  }
  double diff = 0, norm = 0;
  for (size_t i = 0; i < c1.size(); ++i) {
    diff += (double(c1[i]) - double(c2[i])) * (double(c1[i]) - double(c2[i]));
    norm += double(c2[i]) * double(c2[i]);
  }
  double rel = std::sqrt(diff / std::max(norm, 1e-300));
  bool ok = rel < (sizeof(T) == 4 ? 1e-4 : 1e-12);
  double flops = 2.0 * m * n * k;
  double ga = flops / (median(ta) * 1e6), gb = flops / (median(tb) * 1e6);
  std::printf("| %s | %dx%dx%d | %.1f | %.1f | %.2f | %.1e%s |\n", sizeof(T) == 4 ? "sgemm" : "dgemm", m, n, k, ga,
              gb, ga / gb, rel, ok ? "" : " MISMATCH");
  std::fflush(stdout);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_blas_abi LIB_A LIB_B [--rounds R] [--min-ms T]\n");
    return 2;
  }
  int rounds = 5;
  double min_ms = 30;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--min-ms")) min_ms = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_blas_abi: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  Lib a = load(argv[1]), b = load(argv[2]);
  std::printf("dlopen: %s %.2f ms, %s %.2f ms\n\n", a.path.c_str(), a.dlopen_ms, b.path.c_str(), b.dlopen_ms);
  std::printf("| routine | MxNxK | A GFLOP/s | B GFLOP/s | A / B | rel. diff |\n|---|---|---|---|---|---|\n");
  const int shapes[][3] = {{32, 32, 32},     {128, 128, 128},  {512, 512, 512}, {1024, 1024, 1024},
                           {256, 1024, 128}, {1024, 128, 256}, {127, 193, 61},  {513, 257, 129}};
  bool ok = true;
  for (auto& s : shapes) ok &= bench<float>(a, b, s[0], s[1], s[2], rounds, min_ms);
  for (auto& s : shapes) ok &= bench<double>(a, b, s[0], s[1], s[2], rounds, min_ms);
  return ok ? 0 : 1;
}
