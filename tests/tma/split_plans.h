// Plans and the exact oracle shared by the sim tests of the kernels that split K
// (split_k_sim_test.cpp, stream_k_sim_test.cpp): the Hopper plan the cuda front door
// gives a 16-bit GEMM (wgmma, tma stages, bm / 64 consumer warpgroups) at another
// tile, and a small plan of the sim's.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/gemm.h"
#include "plan/plan.h"

namespace tessel::test {

inline Plan split_wgmma_plan(int producers, int64_t bm = 128, int64_t bn = 128) {
  Plan p = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16, "sm_90");
  set_gemm_tile(p, bm, bn, 64);
  p.workers = int(bm / 64), p.worker_rows = p.workers, p.worker_cols = 1;
  p.window = 4;
  p.async_copy = false;
  p.tma = true;
  p.producers = producers;
  return p;
}

inline Plan split_sim_plan() {
  Plan p;
  p.target = TargetKind::Sim;
  set_gemm_tile(p, 16, 16, 8);
  p.workers = 4, p.worker_rows = 2, p.worker_cols = 2;
  p.window = 2;
  p.async_copy = true;
  return p;
}

// The largest difference of C (m x n, row-major) from the exact C = A B + beta C0
// (NaN: infinite); C0 may be NaN where beta is 0.
inline double worst_gemm_error(int64_t m, int64_t n, int64_t k, double beta, const std::vector<float>& a,
                               const std::vector<float>& b, const std::vector<float>& c0,
                               const std::vector<float>& c) {
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = beta == 0 ? 0.0 : beta * c0[i * n + j];
      for (int64_t kk = 0; kk < k; ++kk) want += double(a[i * k + kk]) * b[kk * n + j];
      const float got = c[i * n + j];
      worst = std::max(worst, std::isnan(got) ? INFINITY : std::fabs(got - want));
    }
  return worst;
}

}  // namespace tessel::test
