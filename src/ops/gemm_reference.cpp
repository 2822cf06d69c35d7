#include "ops/gemm_reference.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <thread>

namespace tessel {

// Blocked so that a panel of B and a block of C stay in cache while a block of
// rows passes over them (the unblocked loop streamed all of B once per row: 4096^3
// took minutes in `tessel bench`), and row blocks split over the cores for large
// products. Each element still sums its K products in ascending order, so the
// result does not depend on the blocking or the thread count.
std::vector<double> gemm_oracle(int64_t m, int64_t n, int64_t k, double alpha, const float* a,
                                int64_t lda, const float* b, int64_t ldb, double beta,
                                const float* c, int64_t ldc) {
  constexpr int64_t kRowBlock = 64, kPanelRows = 128, kColBlock = 512;
  std::vector<double> out(static_cast<size_t>(m * n), 0.0);
  auto rows = [&](int64_t i0, int64_t i1) {
    for (int64_t j0 = 0; j0 < n; j0 += kColBlock) {
      const int64_t j1 = std::min(n, j0 + kColBlock);
      for (int64_t p0 = 0; p0 < k; p0 += kPanelRows) {
        const int64_t p1 = std::min(k, p0 + kPanelRows);
        for (int64_t i = i0; i < i1; ++i) {
          double* row = out.data() + i * n;
          for (int64_t p = p0; p < p1; ++p) {
            const double aip = a[i * lda + p];
            const float* brow = b + p * ldb;
            for (int64_t j = j0; j < j1; ++j) row[j] += aip * brow[j];
          }
        }
      }
    }
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < n; ++j)
        out[i * n + j] = alpha * out[i * n + j] + (beta == 0 ? 0.0 : beta * double(c[i * ldc + j]));
  };
  const int64_t blocks = (m + kRowBlock - 1) / kRowBlock;
  const double flops = double(m) * double(n) * double(k);
  const int64_t threads =
      flops < 1e8 ? 1 : std::min<int64_t>(blocks, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t blk; (blk = next++) < blocks;) rows(blk * kRowBlock, std::min(m, (blk + 1) * kRowBlock));
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
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
