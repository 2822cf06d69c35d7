// Measuring candidates: compile many plans of one kernel in parallel, and time them
// against each other in paired rounds on one set of random inputs.
//
// Paired rounds: every round runs each kernel once, in a freshly shuffled order, each
// run repeated until it covers min_run_us (so short kernels are not timer noise); a
// kernel's time is the median over rounds of its per-launch time. Load on the
// machine hits every candidate of a round alike, so ratios hold better than times.
// Rounds take turns over up to 3 sets of inputs. Each kernel is warmed up and its
// launches per run come from its fastest warm launch.
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
};
// Per-launch microseconds (median over rounds), one per kernel, all on the same
// arguments for `sizes` (strides defaulted as run_checked does).
std::vector<double> measure_paired(const std::vector<Kernel>& kernels, const std::map<std::string, int64_t>& sizes,
                                   const MeasureOptions& options);

}  // namespace tessel
