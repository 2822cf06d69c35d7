// Candidate plans: every legal realization of any kernel within bounds.
//
// The rule: a candidate is a Plan that differs from the default plan (default_plan.h)
// in the choices a plan makes: a value per tile parameter that some loop walks through
// ceildiv(S, T) (others, such as a head dimension a tile must span, keep the default's
// value), the worker count and grid, the pipeline window (kernels with a pipeline
// nest), sync or async copies, the copy batch and the mma atom (kernels with an mma);
// on cuda also tma copies with or without a producer worker (wgmma candidates with a
// pipeline nest), and a persistent grid of one group per multiprocessor (where the
// shape has more tiles than that).
// A candidate is legal when validate_plan accepts it and every phase lowers and passes
// the GroupIR verifier and the target's limits (compile_to_group: shared memory,
// scratch, threads, fragment divisibility) and, on cuda, the emitter takes every
// phase (atom operand types, k steps of the atom), and a tma candidate's tensor maps
// take the shape's tensors (rows of 16-byte multiples, as cuTensorMapEncodeTiled
// needs: 16-bit rows of a length off a multiple of 8 have none). Tile values
// above the power of two >= the size they cover are left out (they only add padding),
// except on cuda up to CandidateBounds::cuda_padded_tile (32).
// Nothing here looks at a kernel's name.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "ir/tile_ir.h"
#include "plan/plan.h"

namespace tessel {

// The choices each candidate axis may take.
struct CandidateBounds {
  // Empty = per target: cpu and sim {8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256}; cuda
  // the powers of two 1 to 2048 (a streaming kernel's rows per group and columns per
  // row range that far; the mma atoms refuse the small ones at once) and 192 (the
  // three-warpgroup wgmma tiles).
  std::vector<int64_t> tile_values;
  // cuda: tile values up to this are candidates even past the power of two >= the size
  // they cover. A block's threads share its tile's copies: at N = 16 the fixed 32x32
  // plans (half of each tile padding, 8 warps) ran 1.4x faster than every BN 16
  // candidate (the fourth H200 run).
  int64_t cuda_padded_tile = 32;
  std::vector<int> workers;          // empty = per target: sim {1, 4}, cpu {1}, cuda {64, 128, 256}
  std::vector<int> windows = {1, 2};       // kernels with a pipeline nest; others get 1
  std::vector<bool> async_copy = {false};  // cuda adds true
  // cuda, wgmma candidates of kernels with a pipeline nest: tma copies (Plan::tma) at
  // these windows, with each producer count (0: a computing worker issues the copies).
  std::vector<int> tma_windows = {2, 4};
  std::vector<int> tma_producers = {0, 1};
  // cuda: a persistent grid of this many groups (0 = the device's multiprocessors)
  // beside the one-group-per-tile grid, where the grid has more groups than that.
  bool persistent = true;
  int persistent_groups = 0;
  std::vector<int> copy_batches = {4};
  // cpu register blocks (atom_m x atom_n) for kernels with an mma; 1x1 is always tried.
  std::vector<std::pair<int64_t, int64_t>> cpu_atoms = {{4, 16}, {8, 32}, {12, 32}, {16, 32}};
  size_t max_candidates = 40000;  // enumeration stops there (the count is reported)
};

// One realized candidate: the plan and its lowered phases (shape-independent).
struct LegalCandidate {
  Plan plan;
  std::vector<GroupProgram> phases;
  // cuda tma copies: each tensor map's row stride in bytes (an expression over the
  // sizes, and the element size), which must be a multiple of 16 for a shape.
  struct TmaRows {
    Expr row_stride, rows;
    int64_t element_bytes = 0;
  };
  std::vector<TmaRows> tma_rows;
};

// Whether every tensor map of a tma candidate can encode a launch at `sizes` (with the
// strides bound: check/checked_run.h's default_strides); true without tma copies.
bool tma_rows_fit(const LegalCandidate& candidate, const std::map<std::string, int64_t>& sizes);

struct CandidateSet {
  std::vector<std::shared_ptr<const LegalCandidate>> legal;
  size_t tried = 0;
  std::map<std::string, size_t> rejected;  // why (the error's first words) -> how many
};

// Tile parameters some loop walks through ceildiv(S, T): T -> the largest S for these
// sizes (0 when S does not evaluate).
std::map<std::string, int64_t> walked_tile_params(const TileKernel& kernel,
                                                  const std::map<std::string, int64_t>& sizes);

// The legal candidates for these sizes. Lowering results are memoized per plan for the
// life of the process (they do not depend on sizes), so calling this for many shapes
// of one kernel lowers each plan once.
CandidateSet enumerate_candidates(const TileKernel& kernel, TargetKind target,
                                  const std::map<std::string, int64_t>& sizes,
                                  const CandidateBounds& bounds = {});

// Lowers `plan` for every phase of `kernel`; nullptr and *why when it is illegal.
std::shared_ptr<const LegalCandidate> realize_candidate(const TileKernel& kernel, const Plan& plan,
                                                        std::string* why);

}  // namespace tessel
