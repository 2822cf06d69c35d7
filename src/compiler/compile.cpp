#include "compiler/compile.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "ir/tile_text.h"
#include "ir/tile_verify.h"
#include "lower/lower.h"

namespace tessel {
namespace {

class StepTimer {
 public:
  explicit StepTimer(const char* name)
      : name_(name), on_(std::getenv("TESSEL_PASS_TIMING") != nullptr),
        start_(std::chrono::steady_clock::now()) {}
  ~StepTimer() {
    if (!on_) return;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "tessel: %-14s %8.3f ms\n", name_, ms);
  }

 private:
  const char* name_;
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

CompiledGroup compile_to_group(const TileKernel& kernel, const Plan& plan,
                               const CompileOptions& options) {
  CompiledGroup out;
  auto keep = [&](const char* name, const std::string& ir) {
    if (options.keep_stages) out.stages.push_back({name, ir});
  };
  {
    StepTimer t("verify-tile");
    verify_tile_kernel(kernel);
    if (options.keep_stages) keep("tile-ir", print_tile_kernel(kernel));
  }
  {
    StepTimer t("lower");
    out.program = lower_to_group(kernel, plan);
    if (options.keep_stages) keep("lower", print_group_program(out.program));
  }
  if (!plan.sizes.empty()) {
    StepTimer t("specialize");
    specialize_sizes(out.program, plan.sizes);
    if (options.keep_stages) keep("specialize", print_group_program(out.program));
  }
  if (plan.persistent > 0) {
    // Before the pipeline passes, which then see the tile loop around theirs.
    StepTimer t("persistent");
    PersistentOptions po;
    po.groups = plan.persistent;
    po.band = plan.tile_band;
    persistent_tiles(out.program, po);
    if (options.keep_stages) keep("persistent", print_group_program(out.program));
  }
  {
    // Before barrier planning: it emits conservative fences for the planner to prune.
    StepTimer t("pipeline");
    PipelineOptions po;
    po.window = plan.tma ? 1 : plan.window;  // with tma, tma-pipeline stages the loops
    po.async = plan.async_copy && !plan.tma;
    po.async_consumers = plan.atom == AtomKind::Wgmma;
    out.pipeline = pipeline_loops(out.program, po);
    if (options.keep_stages) keep("pipeline", print_group_program(out.program));
  }
  if (plan.tma) {
    StepTimer t("tma-pipeline");
    TmaPipelineOptions to;
    to.window = plan.window;
    to.producers = plan.producers;
    to.cluster = plan.cluster;
    to.async_consumers = plan.atom == AtomKind::Wgmma;
    out.tma = tma_pipeline(out.program, to);
    if (options.keep_stages) keep("tma-pipeline", print_group_program(out.program));
  }
  out.unplanned = out.program;
  {
    // After lowering, which places a fence after every op touching shared memory.
    StepTimer t("plan-barriers");
    BarrierPlanOptions bo;
    bo.coalesce = options.coalesce_barriers;
    bo.precise = options.precise_barriers.value_or(plan.target == TargetKind::Cuda);
    out.barriers = plan_barriers(out.program, bo);
    if (options.keep_stages) keep("plan-barriers", print_group_program(out.program));
  }
  {
    StepTimer t("verify-group");
    verify_group_program(out.program);
    verify_group_limits(out.program, plan.target);  // the target's bounds (shared memory, scratch)
  }
  return out;
}

}  // namespace tessel
