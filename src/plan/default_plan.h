// A default plan for any kernel: a plain heuristic, no cost model (the planner
// refines it). It reads only the kernel's structure and the sizes of one launch:
//   - a tile parameter T that appears in a loop extent ceildiv(S, T) covers S: it
//     takes the power of two >= S, capped per target (sim 16; cpu 64 with an mma,
//     else 1024 for column tiles and 8 for row tiles; cuda 64 for tiles that an mma
//     reads); a tile parameter seen nowhere like that takes the cap;
//   - cuda without an mma (memory-bound kernels): column tiles (parameters that name
//     a tile's column extent) up to 2048, rows 1 to 8 so that a group holds about
//     2048 elements, a thread 8 consecutive columns (see cuda_rows_and_columns);
//   - workers: sim 4, cpu 1 (one thread runs a group), cuda 128 threads with an mma;
//     the worker grid is the largest that divides every tile extent > 1 of the
//     kernel (extent-1 dimensions are replicated), balanced between rows and columns;
//   - the fma atom, no pipelining, copy batch 4; on the cpu with an mma, the
//     micro-kernel's register block MR x NR (NR 32 or 16, MR up to 16) where every
//     accumulator's worker part allows one (fit_worker_grid picks it again when a
//     new grid's parts no longer allow it).
//   - on cuda, a kernel whose every mma multiplies 16-bit operands: the mma.sync atom,
//     up to 4 warps, warps side by side only along an axis no reduction crosses
//     (a kernel with row reductions stacks them along the rows), mma tiles >= 16,
//     window 2 with async copies (fit_worker_grid keeps those warp rules).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "ir/tile_ir.h"
#include "plan/plan.h"

namespace tessel {

Plan default_plan(const TileKernel& kernel, TargetKind target,
                  const std::map<std::string, int64_t>& sizes);

// The largest worker grid (rows x cols, rows * cols <= plan.workers) that divides
// every tile extent > 1 of the kernel once the plan's tiles bind it; sets
// plan.worker_rows / worker_cols / workers (and a cpu register block that no longer
// divides the mma parts: see above).
void fit_worker_grid(const TileKernel& kernel, Plan& plan);

}  // namespace tessel
