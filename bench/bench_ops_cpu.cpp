// Softmax and layernorm from tessel's kernel library on the cpu target, timed the way
// scripts/bench_ops_cpu.sh sets them beside NumPy: GB/s = (bytes read + bytes written
// once) / median time. Every output is checked against a double-precision reference
// first (complete output, poisoned with NaN before the run).
//   bench_ops_cpu [--rounds R] [--threads T] [--shapes MxN,MxN,...]
// Prints one line per (kernel, shape): `tessel KERNEL MxN threads T us GB/s rel_err`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "ops/library.h"
#include "tessel/tessel.h"

using namespace tessel;

namespace {

double reference_error(const std::string& kernel, const std::vector<float>& x, const std::vector<float>& y,
                       const std::vector<float>& gamma, const std::vector<float>& beta, int64_t m,
                       int64_t n, double eps) {
  double diff = 0, norm = 0;
  for (int64_t r = 0; r < m; ++r) {
    const float* row = &x[r * n];
    double a = 0, b = 0;
    if (kernel == "softmax") {
      a = -INFINITY;
      for (int64_t c = 0; c < n; ++c) a = std::max(a, double(row[c]));
      for (int64_t c = 0; c < n; ++c) b += std::exp(row[c] - a);
    } else {
      for (int64_t c = 0; c < n; ++c) a += row[c];
      a /= n;
      for (int64_t c = 0; c < n; ++c) b += (row[c] - a) * (row[c] - a);
      b = 1 / std::sqrt(b / n + eps);
    }
    for (int64_t c = 0; c < n; ++c) {
      double want = kernel == "softmax" ? std::exp(row[c] - a) / b : (row[c] - a) * b * gamma[c] + beta[c];
      double got = y[r * n + c];
      if (std::isnan(got)) return INFINITY;
      diff += (got - want) * (got - want);
      norm += want * want;
    }
  }
  return std::sqrt(diff / norm);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7, threads = 1;
  std::string shapes = "4096x4096,32768x1024,1024x50257";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--shapes" && i + 1 < argc) shapes = argv[++i];
    else { std::fprintf(stderr, "usage: bench_ops_cpu [--rounds R] [--threads T] [--shapes MxN,...]\n"); return 2; }
  }
  std::vector<std::pair<int64_t, int64_t>> list;
  for (size_t p = 0; p < shapes.size();) {
    size_t q = shapes.find(',', p);
    std::string s = shapes.substr(p, q == std::string::npos ? std::string::npos : q - p);
    list.emplace_back(std::atoll(s.c_str()), std::atoll(s.substr(s.find('x') + 1).c_str()));
    p = q == std::string::npos ? shapes.size() : q + 1;
  }
  int status = 0;
  try {
    for (auto [m, n] : list) {
      std::vector<float> x(m * n), y(m * n), gamma(n), beta(n);
      std::mt19937 rng(1);
      std::uniform_real_distribution<float> dist(-1, 1);
      for (float& v : x) v = dist(rng);
      for (float& v : gamma) v = dist(rng);
      for (float& v : beta) v = dist(rng);
      for (std::string name : {"softmax", "layernorm"}) {
        TileKernel tk = name == "softmax" ? softmax_kernel() : layernorm_kernel();
        Kernel k = compile(tk, TargetKind::Cpu, {{"M", m}, {"N", n}});
        KernelArgs args;
        args.tensors["X"] = TensorArg::host(x.data(), {m, n});
        args.tensors["Y"] = TensorArg::host(y.data(), {m, n});
        if (name == "layernorm") {
          args.tensors["gamma"] = TensorArg::host(gamma.data(), {n});
          args.tensors["beta"] = TensorArg::host(beta.data(), {n});
          args.scalars["eps"] = 1e-5;
        }
        LaunchOptions lo;
        lo.threads = threads;
        std::fill(y.begin(), y.end(), NAN);
        k.launch(args, lo);
        double err = reference_error(name, x, y, gamma, beta, m, n, 1e-5);
        std::vector<double> us;
        for (int r = 0; r < rounds; ++r) {
          auto t0 = std::chrono::steady_clock::now();
          k.launch(args, lo);
          us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(us.begin(), us.end());
        double med = us[us.size() / 2];
        double gbs = 2.0 * m * n * 4 / med / 1e3;
        bool ok = err < 1e-5;
        status |= !ok;
        std::printf("tessel %s %lldx%lld threads %d %.1f us %.2f GB/s rel_err %.2e%s (plan %s)\n", name.c_str(),
                    (long long)m, (long long)n, threads, med, gbs, err, ok ? "" : " CHECK FAILED",
                    k.plan().to_string().c_str());
        std::fflush(stdout);
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_ops_cpu: %s\n", e.what());
    return 2;
  }
  return status;
}
