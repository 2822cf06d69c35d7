// A consumer of the installed library: the row softmax of tessel's kernel library,
// compiled for the cpu, run on random data, checked row by row in double precision.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "ops/library.h"
#include "tessel/tessel.h"

int main() {
  const int64_t m = 37, n = 75;
  std::vector<float> x(m * n), y(m * n, NAN);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& v : x) v = dist(rng);
  try {
    tessel::Kernel k = tessel::compile(tessel::softmax_kernel(), tessel::TargetKind::Cpu, {{"M", m}, {"N", n}});
    tessel::KernelArgs args;
    args.tensors["X"] = tessel::TensorArg::host(x.data(), {m, n});
    args.tensors["Y"] = tessel::TensorArg::host(y.data(), {m, n});
    k.launch(args);
  } catch (const tessel::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 2;
  }
  double worst = 0;
  for (int64_t r = 0; r < m; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < n; ++c) mx = std::fmax(mx, x[r * n + c]);
    for (int64_t c = 0; c < n; ++c) sum += std::exp(x[r * n + c] - mx);
    for (int64_t c = 0; c < n; ++c) {
      double want = std::exp(x[r * n + c] - mx) / sum;
      worst = std::fmax(worst, std::isnan(y[r * n + c]) ? INFINITY : std::fabs(y[r * n + c] - want) / want);
    }
  }
  std::printf("tessel %s: softmax %lldx%lld on cpu, worst relative error %.3g\n", tessel::version(),
              static_cast<long long>(m), static_cast<long long>(n), worst);
  return worst < 1e-5 ? 0 : 1;
}
