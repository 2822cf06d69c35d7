// The ordered list of steps from TileIR to a GroupIR program ready for a target.
// Each step names itself; `explain` keeps the IR after every step.
//   1. verify the TileIR
//   2. lower (TileIR + Plan -> GroupIR)            src/lower/lower.h
//   3. specialize, with Plan::sizes (sizes become constants)  src/passes/specialize_sizes.h
//      persistent, with Plan::persistent (a loop over tiles)  src/passes/persistent_tiles.h
//      pipeline (window W, sync or async copies)       src/passes/pipeline.h
//   4. tma-pipeline, with Plan::tma (stages by the copy engine, mbarriers, roles)
//                                                       src/passes/tma_pipeline.h
//   5. plan_barriers (drop fences no dependence needs; precise on cuda)  src/passes/plan_barriers.h
//   6. verify the GroupIR
// TESSEL_PASS_TIMING=1 prints each step's wall time on stderr.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/group_ir.h"
#include "ir/tile_ir.h"
#include "passes/persistent_tiles.h"
#include "passes/pipeline.h"
#include "passes/plan_barriers.h"
#include "passes/specialize_sizes.h"
#include "passes/tma_pipeline.h"
#include "plan/plan.h"

namespace tessel {

struct CompileOptions {
  bool coalesce_barriers = true;  // --no-coalesce-barriers turns it off
  // BarrierPlanOptions::precise (passes/plan_barriers.h). Unset: precise for the
  // cuda target, where every fence is a __syncthreads of the block, default
  // planning for the others (one thread runs a cpu group: fences cost nothing).
  std::optional<bool> precise_barriers;
  bool keep_stages = false;       // record the IR text after every step
};

struct CompileStage {
  std::string name;
  std::string ir;
};

struct CompiledGroup {
  GroupProgram program;
  GroupProgram unplanned;  // before barrier planning, for dynamic fence counts
  PipelineStats pipeline;
  TmaPipelineStats tma;  // Plan::tma
  BarrierStats barriers;
  std::vector<CompileStage> stages;  // when keep_stages
};

CompiledGroup compile_to_group(const TileKernel& kernel, const Plan& plan,
                               const CompileOptions& options);

}  // namespace tessel
