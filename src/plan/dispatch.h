// Dispatch: the plan for one kernel, target and shape. In order:
//   1. the tuning cache's measured winner for this exact shape, else for the nearest
//      shape of its class (plan/tuning_cache.h);
//   2. the cost model's best legal candidate (plan/candidates.h, plan/cost_model.h),
//      with the machine's calibration when one is given or found, else the fallback.
// The choice says where it came from (`tessel plans` and `tessel tune` print it).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plan/candidates.h"
#include "plan/cost_model.h"
#include "plan/tuning_cache.h"
#include "tessel/tessel.h"

namespace tessel {

struct RankedCandidate {
  std::shared_ptr<const LegalCandidate> candidate;
  Features features{};
  double predicted_us = 0;
};

// Every legal candidate with its prediction, fastest predicted first.
struct Ranking {
  CandidateSet set;
  std::vector<RankedCandidate> ranked;
};
Ranking rank_candidates(const TileKernel& kernel, TargetKind target, const std::map<std::string, int64_t>& sizes,
                        const Calibration& calibration, int threads, const CandidateBounds& bounds = {});

// Whether ptxas spills registers (or keeps a stack frame) for any phase of a cuda
// candidate: compiled with NVRTC, and cached like any kernel. Register use is known
// only to ptxas: the fragment registers a plan implies did not predict it (a
// 32-register plan spilled under a two-block launch bound, a 192-register one did
// not; docs/planner.md), so choose_plan compiles the model's picks in rank order and
// takes the first that does not spill.
bool cuda_candidate_spills(const LegalCandidate& candidate);
// The same for a compiled cuda kernel (every phase).
bool cuda_kernel_spills(const Kernel& kernel);

// <cache dir>/calibration-<target>-t<threads>.txt
std::string default_calibration_path(TargetKind target, int threads);
// The calibration at `path` ("" = the default path when that file exists), else the
// fallback; a file that is there but unreadable or malformed is a user error.
Calibration load_calibration(const std::string& path, TargetKind target, int threads);

struct PlanChoice {
  Plan plan;
  std::string source;          // "tuning cache (exact shape)", "cost model (fallback)", ...
  std::optional<double> measured_us;  // from the tuning cache
  double predicted_us = 0;
};
PlanChoice choose_plan(const TileKernel& kernel, TargetKind target, const std::map<std::string, int64_t>& sizes,
                       const Calibration& calibration, int threads, const TuningCache* cache,
                       const CandidateBounds& bounds = {});

// The plan a command uses when it names none (`tessel run`, `tessel explain` on a
// TileIR file): the tuning cache's winner, else the calibrated cost model when this
// machine has a calibration for the target and thread count, else the kernel's
// default plan (the fallback coefficients rank worse than the default's hand
// rules: docs/planner.md). An unusable cache directory reads as no cache (the
// kernel cache has said why).
PlanChoice dispatch_plan(const TileKernel& kernel, TargetKind target, const std::map<std::string, int64_t>& sizes,
                         int threads);

}  // namespace tessel
