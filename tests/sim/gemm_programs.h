// Hand-built GroupIR GEMM programs for the sim tests, and the data to run them:
// C = alpha * A * B + beta * C over a grid of BM x BN tiles, one group per tile.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/group_ir.h"
#include "runtime/launch_args.h"

namespace tessel::test {

struct GemmConfig {
  int64_t bm = 8, bn = 8, bk = 4;
  int worker_rows = 2, worker_cols = 2;
  int extra_workers = 0;  // surplus workers, who own no fragment part but help copy
  int batch = 1;          // copy batch
  Layout a_layout = Layout::RowMajor;
  int64_t a_panel = 1;
  Layout b_layout = Layout::ColPanels;
  int64_t b_panel = 4;
  bool async = false;           // copies async, committed and waited for before the fence
  bool wait_after_mma = false;  // with async: the wait placed after the mma (a bug)
};

// Op ids of the k loop, so that tests can remove or name them.
struct GemmProgram {
  GroupProgram program;
  int copy_a = -1, copy_b = -1, mma = -1, wait = -1;
  int fence_after_a = -1, fence_after_b = -1, fence_after_mma = -1;
};

// Single buffered: for k { copy A; fence; copy B; fence; mma; fence }, then the
// epilogue (beta == 0: C = alpha * acc, C never read; else alpha * acc + beta * C).
GemmProgram make_gemm(const GemmConfig& config);
// Double buffered with async copies: prologue prefetch of tile 0; iteration k
// prefetches tile k + 1 into the other version, commits, waits for tile k, fences,
// runs the mma and fences again. `fence_after_mma` is the last fence of the loop.
GemmProgram make_pipelined_gemm(const GemmConfig& config);

// Removes / finds the op with this id, wherever it is nested.
void remove_op(GroupProgram& program, int id);
GroupOp& find_op(GroupProgram& program, int id);

// Random inputs (never zero), C poisoned with NaN when beta == 0, padding past
// each row (ld > cols) filled with a sentinel that must survive.
struct GemmData {
  int64_t m, n, k, lda, ldb, ldc;
  double alpha, beta;
  std::vector<float> a, b, c;
  GemmData(int64_t m, int64_t n, int64_t k, double alpha, double beta, uint64_t seed);
  LaunchArgs args();
  // Max error over C relative to an FP64 oracle's error bound (<= 1 passes); NaN
  // anywhere (or a changed sentinel) gives infinity.
  double error_ratio(const std::vector<float>& c_before) const;
};

constexpr float kSentinel = -12345.0f;

}  // namespace tessel::test
