// Measuring candidates: compile many plans of one kernel in parallel, check each
// against the FP64 oracle once, and time them against each other in paired rounds on
// the same random inputs.
//
// Inputs: up to 3 sets of random inputs (check/checked_run.h's: uniform in [-1, 1],
// rounded to each tensor's storage type; outputs NaN), made once per trial. On the
// cpu and sim they are the host memory the launches read; on cuda they live on the
// device, uploaded once, so that no run moves data between host and device.
// Check: each kernel once (first trial, first input set), written tensors reset to
// their initial values (outputs NaN) first, every written tensor compared over its
// whole span with the evaluator (eval/evaluate.h) against run_checked's bound. A kernel that
// fails, or whose launch the target refuses, is not timed (its time is NaN).
// Paired rounds: every round runs each kernel once, in a freshly shuffled order, each
// run repeated until it covers min_run_us (so short kernels are not timer noise); a
// kernel's time is the median over rounds of its per-launch time. Load on the
// machine hits every candidate of a round alike, so ratios hold better than times.
// Rounds take turns over the input sets. Each kernel is warmed up and its launches
// per run come from its fastest warm launch. A run's time: host wall (cpu, sim); on
// cuda, device events around the run's launches (asynchronous, so the host enqueues
// while the device works: a kernel shorter than its launch costs the launch).
// Trials: the whole measurement again with fresh inputs and bindings; a kernel's time
// is the least of its trials' medians. On the shared 2-core machine a kernel's time
// could stay ~3x high for a whole trial and not in the next (cause not found:
// docs/planner.md), so one trial alone misjudges some candidates.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessel/tessel.h"

namespace tessel {

struct CompiledCandidate {
  std::optional<Kernel> kernel;
  std::string error;  // when compiling failed
};
// Compiles `plans` on `jobs` threads; `progress(done, total)` after each one.
std::vector<CompiledCandidate> compile_parallel(const TileKernel& kernel, const std::vector<Plan>& plans,
                                                int jobs,
                                                const std::function<void(size_t, size_t)>& progress = {});

struct MeasureOptions {
  int threads = 0;           // cpu threads per launch (0 = all cores)
  int rounds = 5;
  double min_run_us = 2000;  // each timed run repeats the launch until it covers this
  int trials = 3;
  uint64_t seed = 1;         // inputs and the order of rounds
  bool check = true;         // each kernel against the FP64 oracle once
};

struct Measured {
  double us = 0;         // per launch (NaN when the check failed)
  bool checked = false;  // the oracle check ran
  bool ok = true;        // it passed (or did not run)
  double rel_err = 0, bound = 0;  // worst written tensor's relative error, and its bound
  std::string error;     // a launch the target refused (then ok is false)
};

// One per kernel, all of one kernel's plans on the same arguments for `sizes`
// (strides defaulted as run_checked does). All kernels must be of one target. On
// cuda without a GPU: a Runtime error saying why.
std::vector<Measured> measure_paired(const std::vector<Kernel>& kernels, const std::map<std::string, int64_t>& sizes,
                                     const MeasureOptions& options);

}  // namespace tessel
