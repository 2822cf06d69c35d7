#include "ops/gemm_reference.h"

#include <cfloat>
#include <cmath>

namespace tessel {

std::vector<double> gemm_oracle(int64_t m, int64_t n, int64_t k, double alpha, const float* a,
                                int64_t lda, const float* b, int64_t ldb, double beta,
                                const float* c, int64_t ldc) {
  std::vector<double> out(static_cast<size_t>(m * n), 0.0);
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int64_t p = 0; p < k; ++p) {
      double aip = a[i * lda + p];
      const float* brow = b + p * ldb;
      for (int64_t j = 0; j < n; ++j) row[j] += aip * brow[j];
    }
    for (int64_t j = 0; j < n; ++j)
      out[i * n + j] = alpha * row[j] + (beta == 0 ? 0.0 : beta * double(c[i * ldc + j]));
  }
  return out;
}

double gemm_relative_error(int64_t m, int64_t n, const float* c, int64_t ldc,
                           const std::vector<double>& oracle) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double got = c[i * ldc + j], want = oracle[i * n + j];
      if (!std::isfinite(got)) return INFINITY;
      diff += (got - want) * (got - want);
      norm += want * want;
    }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

double gemm_error_bound(int64_t k) { return 4.0 * FLT_EPSILON * std::sqrt(double(k) + 1.0); }

void fill_random(std::vector<float>& v, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> mag(0.125f, 1.0f);
  std::bernoulli_distribution sign(0.5);
  for (float& x : v) x = sign(rng) ? mag(rng) : -mag(rng);
}

}  // namespace tessel
