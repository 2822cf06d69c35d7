// One launch of a hand-written GroupIR GEMM program (sizes M, N, K; tensors A, B, C)
// on the sim, shared by the sim tests of the mbarrier protocol and of
// warp-specialized programs and of clusters: A and B random small integers (so
// every fp32 sum is exact and any difference is a bug), C poisoned with NaN where
// beta is 0 (else small integers too), every race recorded. The arguments also
// carry lda, ldb, ldc, alpha (1) and beta, for programs that declare them.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "target/sim/sim.h"

namespace tessel::test {

struct SmallIntGemm {
  int64_t m, n, k;
  double beta;
  std::vector<float> a, b, c, c0;  // c0: C before the launch
  LaunchArgs args;

  SmallIntGemm(int64_t m_, int64_t n_, int64_t k_, double beta_ = 0)
      : m(m_), n(n_), k(k_), beta(beta_), a(m * k), b(k * n), c(m * n, NAN) {
    std::mt19937_64 rng(static_cast<uint64_t>(m * 31 + n * 7 + k));
    std::uniform_int_distribution<int> small(-3, 3);
    for (float& x : a) x = static_cast<float>(small(rng));
    for (float& x : b) x = static_cast<float>(small(rng));
    if (beta != 0)
      for (float& x : c) x = static_cast<float>(small(rng));
    c0 = c;
    args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
    args.scalars = {{"alpha", 1.0}, {"beta", beta}};
    args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
  }

  SimResult sim(const std::string& text) {
    GroupProgram p = parse_group_program(text);
    verify_group_program(p);
    SimOptions options;
    options.max_races_recorded = 1 << 20;
    return run_sim(p, args, options);
  }

  // The largest difference from the exact product (infinity where C is NaN).
  double error() const {
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = beta == 0 ? 0 : beta * c0[i * n + j];
        for (int64_t kk = 0; kk < k; ++kk) s += double(a[i * k + kk]) * b[kk * n + j];
        worst = std::max(worst, std::isnan(c[i * n + j]) ? INFINITY : std::fabs(c[i * n + j] - s));
      }
    return worst;
  }
};

}  // namespace tessel::test
