// The plan sweep behind NOTES.md: cpu GEMM plans (tile and worker grid) against
// OpenBLAS's cblas_sgemm, in one process, in interleaved rounds (the order reversed
// every other round), medians. Each output is checked against OpenBLAS's first.
//   plan_sweep M N K THREADS ROUNDS SPEC...
//   SPEC = blas | default | BMxBNxBK:RxC[d]   (R x C worker grid; d: Plan::direct)
// Build (against a build tree's libtessel.a; see NOTES.md for the command).
#include <dlfcn.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
#include <algorithm>
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "tessel/tessel.h"
using namespace tessel;
typedef void (*sgemm_t)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
int main(int argc, char** argv) {
  int64_t M = atol(argv[1]), N = atol(argv[2]), K = atol(argv[3]);
  int threads = atoi(argv[4]), rounds = atoi(argv[5]);
  std::vector<std::string> specs(argv + 6, argv + argc);
  void* h = dlopen("libopenblas.so.0", RTLD_NOW);
  auto sg = (sgemm_t)dlsym(h, "cblas_sgemm");
  auto set_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
  set_threads(threads);
  std::vector<float> a(M * K), b(K * N), c(M * N), ref(M * N);
  std::mt19937 g(1); std::uniform_real_distribution<float> d(-1, 1);
  for (auto& x : a) x = d(g); for (auto& x : b) x = d(g);
  sg(101, 111, 111, M, N, K, 1, a.data(), K, b.data(), N, 0, ref.data(), N);
  std::vector<GemmOptions> opts;
  std::vector<std::optional<BoundLaunch>> bl(specs.size());
  for (auto& s : specs) {
    GemmOptions o; o.threads = threads; o.report = false;
    if (s != "blas" && s != "default") {
      int64_t bm, bn, bk; int wr = 1, wc = 1; char d = 0;
      sscanf(s.c_str(), "%ldx%ldx%ld:%dx%d%c", &bm, &bn, &bk, &wr, &wc, &d);
      Plan p = default_gemm_plan(TargetKind::Cpu, M, N, K);
      set_gemm_tile(p, bm, bn, bk); p.workers = wr * wc; p.worker_rows = wr; p.worker_cols = wc; p.direct = d == 'd';
      o.plan = p;
      fprintf(stderr, "%s: %s\n", s.c_str(), p.to_string().c_str());
      Kernel kern = compile(gemm_kernel(DType::F32), p);
      KernelArgs ka;
      ka.tensors["A"] = TensorArg::host(a.data(), {M, K}, {K, 1});
      ka.tensors["B"] = TensorArg::host(b.data(), {K, N}, {N, 1});
      ka.tensors["C"] = TensorArg::host(c.data(), {M, N}, {N, 1});
      ka.scalars["alpha"] = 1; ka.scalars["beta"] = 0;
      bl[opts.size()] = kern.bind(ka);
    }
    opts.push_back(o);
  }
  auto run = [&](size_t i) {
    if (specs[i] == "blas") sg(101, 111, 111, M, N, K, 1, a.data(), K, b.data(), N, 0, c.data(), N);
    else if (bl[i]) { LaunchOptions lo; lo.threads = threads; lo.timed = false; bl[i]->run(lo); }
    else gemm(M, N, K, 1, a.data(), K, b.data(), N, 0, c.data(), N, opts[i]);
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    std::fill(c.begin(), c.end(), NAN);
    GemmOptions o = opts[i]; o.report = true;
    if (bl[i]) run(i);
    else if (specs[i] != "blas") { auto r = gemm(M, N, K, 1, a.data(), K, b.data(), N, 0, c.data(), N, o); fprintf(stderr, "%s: %s\n", specs[i].c_str(), r.plan.to_string().c_str()); }
    else run(i);
    double err = 0; for (int64_t j = 0; j < M * N; ++j) err = std::max(err, (double)std::fabs(c[j] - ref[j]));
    if (!(err < 1e-2)) { printf("%s WRONG err %g\n", specs[i].c_str(), err); return 1; }
  }
  double flop = 2.0 * M * N * K;
  int calls = std::max<int64_t>(1, (int64_t)(3e8 / flop));
  std::vector<std::vector<double>> t(specs.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t jj = 0; jj < specs.size(); ++jj) {
      size_t i = (r % 2) ? specs.size() - 1 - jj : jj;
      run(i);
      auto t0 = std::chrono::steady_clock::now();
      for (int q = 0; q < calls; ++q) run(i);
      t[i].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls);
    }
  double base = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto v = t[i]; std::sort(v.begin(), v.end()); double med = v[v.size() / 2];
    if (i == 0) base = med;
    printf("%-28s %9.1f us %7.1f GF/s  ratio vs first %.3f\n", specs[i].c_str(), med * 1e6, flop / med * 1e-9, base / med);
  }
}
