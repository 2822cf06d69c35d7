#include "plan/dispatch.h"

#include <algorithm>
#include <sys/stat.h>

#include "plan/default_plan.h"
#include "runtime/kernel_cache.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_kernel.h"
#endif
#include "tessel/error.h"

namespace tessel {

Ranking rank_candidates(const TileKernel& kernel, TargetKind target, const std::map<std::string, int64_t>& sizes,
                        const Calibration& calibration, int threads, const CandidateBounds& bounds) {
  Ranking r;
  r.set = enumerate_candidates(kernel, target, sizes, bounds);
  MachineShape machine = machine_shape(target, threads);
  for (const auto& c : r.set.legal) {
    RankedCandidate rc;
    rc.candidate = c;
    rc.features = program_features(*c, sizes, machine);
    rc.predicted_us = predict_us(calibration, rc.features);
    r.ranked.push_back(rc);
  }
  std::stable_sort(r.ranked.begin(), r.ranked.end(),
                   [](const RankedCandidate& a, const RankedCandidate& b) { return a.predicted_us < b.predicted_us; });
  return r;
}

bool cuda_candidate_spills(const LegalCandidate& candidate) {
#ifdef TESSEL_WITH_CUDA
  for (const GroupProgram& phase : candidate.phases) {
    const NvrtcOutput& o = compile_cuda(phase, "")->info().nvrtc;
    if (o.spill_stores > 0 || o.stack_bytes > 0) return true;
  }
  return false;
#else
  (void)candidate;
  user_error(ErrorKind::Unsupported, "the cuda target is not built: tessel was built without the CUDA toolkit");
#endif
}

bool cuda_kernel_spills(const Kernel& kernel) {
#ifdef TESSEL_WITH_CUDA
  for (size_t i = 0; i < kernel.phases(); ++i) {
    const NvrtcOutput& o = compile_cuda(kernel.program(i), "")->info().nvrtc;  // the compiled one, from memory
    if (o.spill_stores > 0 || o.stack_bytes > 0) return true;
  }
  return false;
#else
  (void)kernel;
  user_error(ErrorKind::Unsupported, "the cuda target is not built: tessel was built without the CUDA toolkit");
#endif
}

std::string default_calibration_path(TargetKind target, int threads) {
  return kernel_cache_dir() + "/calibration-" + target_name(target) + "-t" + std::to_string(threads) + ".txt";
}

Calibration load_calibration(const std::string& path_in, TargetKind target, int threads) {
  std::string path = path_in;
  if (path.empty()) {
    path = default_calibration_path(target, threads);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return fallback_calibration(target, threads);
  }
  std::string text, why;
  CacheRead r = read_cache_entry(path, &text, &why);
  if (r == CacheRead::Missing) user_error(ErrorKind::InvalidArgument, "calibration file " + path + " does not exist");
  if (r == CacheRead::Refused) user_error(ErrorKind::InvalidArgument, "calibration file " + path + " " + why);
  Calibration c = parse_calibration(text, path);
  if (c.target != target)
    user_error(ErrorKind::InvalidArgument, "calibration file " + path + " is for the " + target_name(c.target) +
                                               " target, not " + target_name(target));
  return c;
}

PlanChoice dispatch_plan(const TileKernel& kernel, TargetKind target, const std::map<std::string, int64_t>& sizes,
                         int threads) {
  std::optional<TuningCache> cache;
  try {
    cache.emplace();
  } catch (const Error&) {
  }
  const TuningCache* tuned = cache ? &*cache : nullptr;
  if (tuned && tuned->lookup(kernel_hash(kernel), target, threads, sizes))
    return choose_plan(kernel, target, sizes, Calibration{}, threads, tuned);
  PlanChoice choice;
  choice.source = "default plan (no tuning-cache entry or calibration for this target and thread count)";
  struct stat st;
  if (::lstat(default_calibration_path(target, threads).c_str(), &st) == 0) {
    // A file found in the cache directory, not asked for: one that cannot be used
    // (written before the model's features changed, say) leaves the default plan,
    // and the source says why; `--calibration FILE` still fails on it.
    try {
      return choose_plan(kernel, target, sizes, load_calibration("", target, threads), threads, nullptr);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::InvalidArgument) throw;
      choice.source = std::string("default plan (the cache directory's calibration was not used: ") + e.what() +
                      "; rerun `tessel tune KERNEL --calibrate`)";
    }
  }
  choice.plan = default_plan(kernel, target, sizes);
  return choice;
}

PlanChoice choose_plan(const TileKernel& kernel, TargetKind target, const std::map<std::string, int64_t>& sizes,
                       const Calibration& calibration, int threads, const TuningCache* cache,
                       const CandidateBounds& bounds) {
  PlanChoice choice;
  if (cache) {
    bool exact = false;
    if (auto hit = cache->lookup(kernel_hash(kernel), target, threads, sizes, &exact)) {
      choice.plan = hit->plan;
      choice.measured_us = hit->best_us;
      std::string from;
      for (const auto& [n, v] : hit->sizes) from += (from.empty() ? "" : ",") + n + "=" + std::to_string(v);
      choice.source = exact ? "tuning cache (this shape, measured)"
                            : "tuning cache (measured winner of the nearest shape of its class: " + from + ")";
      return choice;
    }
  }
  Ranking r = rank_candidates(kernel, target, sizes, calibration, threads, bounds);
  if (r.ranked.empty())
    user_error(ErrorKind::Plan, "no legal candidate plan for kernel " + kernel.name + " on " + target_name(target) +
                                    " (" + std::to_string(r.set.tried) + " tried)");
  size_t pick = 0;
  if (target == TargetKind::Cuda) {
    while (pick < r.ranked.size() && cuda_candidate_spills(*r.ranked[pick].candidate)) ++pick;
    if (pick == r.ranked.size())
      user_error(ErrorKind::Plan, "every legal candidate plan for kernel " + kernel.name + " spills registers on " +
                                      "the cuda target (" + std::to_string(pick) + " compiled)");
  }
  choice.plan = r.ranked[pick].candidate->plan;
  choice.predicted_us = r.ranked[pick].predicted_us;
  choice.source = calibration.samples > 0 ? "cost model (calibrated, " + std::to_string(calibration.samples) + " runs)"
                                          : "cost model (fallback coefficients, no calibration)";
  if (pick > 0) choice.source += "; " + std::to_string(pick) + " better-ranked candidate(s) spill registers";
  return choice;
}

}  // namespace tessel
