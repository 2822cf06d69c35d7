#include "plan_commands.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include <nlohmann/json.hpp>

#include "bench/machine.h"
#include "ir/tile_text.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "plan/default_plan.h"
#include "plan/dispatch.h"
#include "plan/measure.h"
#include "plan/shape_draws.h"
#include "runtime/kernel_cache.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_driver.h"
#include "target/cuda/cuda_kernel.h"
#endif
#include "tessel/tessel.h"

namespace tessel {
namespace {

[[noreturn]] void bad(const std::string& message) { user_error(ErrorKind::InvalidArgument, message); }

int64_t to_int(const std::string& what, const std::string& s, int64_t lo, int64_t hi) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) bad(what + ": '" + s + "' is not an integer");
  if (v < lo || v > hi)
    bad(what + " " + std::to_string(v) + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

using Sizes = std::map<std::string, int64_t>;

Sizes parse_shape(const std::string& text) {
  Sizes out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) bad("a shape is NAME=V,NAME=V...; got '" + item + "'");
    out[item.substr(0, eq)] = to_int("size " + item.substr(0, eq), item.substr(eq + 1), 1, int64_t{1} << 40);
  }
  if (out.empty()) bad("empty shape");
  return out;
}

std::string shape_text(const Sizes& s) {
  std::string out;
  for (const auto& [n, v] : s) out += (out.empty() ? "" : ",") + n + "=" + std::to_string(v);
  return out;
}

// "LO:HI" with 1 <= LO <= HI.
std::pair<int64_t, int64_t> parse_range(const std::string& option, const std::string& v) {
  size_t c = v.find(':');
  if (c == std::string::npos) bad(option + " takes LO:HI, got '" + v + "'");
  const int64_t lo = to_int(option + " LO", v.substr(0, c), 1, int64_t{1} << 30);
  return {lo, to_int(option + " HI", v.substr(c + 1), lo, int64_t{1} << 30)};
}

struct Options {
  std::string file, calibration, out, shapes, fixed_plans, refit, evaluate;
  Sizes sizes;
  TargetKind target = TargetKind::Cpu;
  int threads = 0, top = 10, extra = 2, jobs = 2, rounds = 5, draws = 0, per_shape = 6, heldout = 0;
  double min_run_us = 2000;
  double budget_s = 0;  // --budget-s: no new shape is started after this many seconds (0: none)
  ShapeDistribution draw;  // --range, --align, --align-share, --spread, --small-*, --seed
  uint64_t seed = 1;
  bool calibrate = false, use_cache = true, flush_denormals = false, ptxas = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) bad(s + " needs a value");
      return argv[++i];
    };
    if (s == "--size") {
      std::string v = value();
      for (auto& [n, x] : parse_shape(v)) o.sizes[n] = x;
    } else if (s == "--target") o.target = parse_target(value());
    else if (s == "--threads") o.threads = static_cast<int>(to_int(s, value(), 0, 1024));
    else if (s == "--top") o.top = static_cast<int>(to_int(s, value(), 1, 100000));
    else if (s == "--extra") o.extra = static_cast<int>(to_int(s, value(), 0, 1000));
    else if (s == "--jobs") o.jobs = static_cast<int>(to_int(s, value(), 1, 256));
    else if (s == "--rounds") o.rounds = static_cast<int>(to_int(s, value(), 1, 1000));
    else if (s == "--draws") o.draws = static_cast<int>(to_int(s, value(), 1, 100000));
    else if (s == "--per-shape") o.per_shape = static_cast<int>(to_int(s, value(), 1, 10000));
    else if (s == "--heldout") o.heldout = static_cast<int>(to_int(s, value(), 1, 100000));
    else if (s == "--min-run-us") o.min_run_us = static_cast<double>(to_int(s, value(), 1, 10000000));
    else if (s == "--align") o.draw.align = to_int(s, value(), 1, 1 << 20);
    else if (s == "--align-share") o.draw.align_share = to_int(s, value(), 0, 100);
    else if (s == "--spread") {
      std::string v = value();
      if (v != "sizes" && v != "product") bad("--spread takes sizes or product, got '" + v + "'");
      o.draw.product = v == "product";
    } else if (s == "--small-share") o.draw.small_share = to_int(s, value(), 0, 100);
    else if (s == "--small-range") {
      auto [lo, hi] = parse_range(s, value());
      o.draw.small_lo = lo;
      o.draw.small_hi = hi;
    }
    else if (s == "--budget-s") o.budget_s = static_cast<double>(to_int(s, value(), 1, 10000000));
    else if (s == "--seed") o.seed = static_cast<uint64_t>(to_int(s, value(), 0, INT64_MAX));
    else if (s == "--range") {
      auto [lo, hi] = parse_range(s, value());
      o.draw.lo = lo;
      o.draw.hi = hi;
    } else if (s == "--calibration") o.calibration = value();
    else if (s == "--out") o.out = value();
    else if (s == "--shapes") o.shapes = value();
    else if (s == "--fixed-plans") o.fixed_plans = value();
    else if (s == "--refit") o.refit = value();
    else if (s == "--evaluate") o.evaluate = value();
    else if (s == "--ptxas") o.ptxas = true;
    else if (s == "--calibrate") o.calibrate = true;
    else if (s == "--no-tuning-cache") o.use_cache = false;
    else if (s == "--flush-denormals") o.flush_denormals = true;
    else if (!s.empty() && s[0] == '-') bad("unknown option " + s);
    else if (o.file.empty()) o.file = s;
    else bad("unexpected argument '" + s + "'");
  }
  if (o.file.empty()) bad("no kernel file (KERNEL.tir)");
  o.draw.seed = o.seed;
  if (o.threads == 0) o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return o;
}

TileKernel load(const std::string& path) {
  std::ifstream in(path);
  if (!in) bad("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return parse_tile_kernel(s.str());
}

std::string num(double v, int precision = 4) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream s;
  s.precision(precision);
  s << v;
  return s.str();
}

std::string json_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string features_json(const Features& f) {
  std::string out = "{";
  for (int i = 0; i < kNumFeatures; ++i) out += std::string(i ? ", " : "") + "\"" + kFeatureNames[i] + "\": " + num(f[i], 8);
  return out + "}";
}

// `plan`'s features at `sizes` as this build counts them (none when it does not lower).
std::optional<Features> features_of(const TileKernel& k, const Options& o, const Plan& plan, const Sizes& sizes) {
  std::string why;
  auto c = realize_candidate(k, plan, &why);
  if (!c) return std::nullopt;
  return program_features(*c, sizes, machine_shape(o.target, o.threads));
}

// ", \"features\": {...}" (features_of; "" when it does not lower), so that a saved run
// says what the model saw and offline checks of a new feature or fit are exact.
std::string features_field(const TileKernel& k, const Options& o, const Plan& plan, const Sizes& sizes) {
  auto f = features_of(k, o, plan, sizes);
  return f ? ", \"features\": " + features_json(*f) : "";
}

std::string command_line(int argc, char** argv) {
  std::string s = "tessel";
  for (int i = 1; i < argc; ++i) s += std::string(" ") + argv[i];
  return s;
}

// The two largest terms by which `loser` is predicted slower than `winner`.
std::string why_lost(const Calibration& c, const RankedCandidate& winner, const RankedCandidate& loser) {
  auto tw = predict_terms(c, winner.features), tl = predict_terms(c, loser.features);
  std::vector<std::pair<double, int>> diff;
  for (int i = 0; i < kNumFeatures; ++i) diff.push_back({tl[i] - tw[i], i});
  std::sort(diff.rbegin(), diff.rend());
  std::string out = "+" + num(loser.predicted_us - winner.predicted_us, 3) + " us:";
  for (int i = 0; i < 2 && diff[i].first > 0; ++i)
    out += std::string(" ") + kFeatureNames[diff[i].second] + " +" + num(diff[i].first, 3);
  return out;
}

std::optional<TuningCache> open_cache(const Options& o) {
  if (!o.use_cache) return std::nullopt;
  return TuningCache();
}

// Candidates to measure for one shape: the model's top `top` usable ones (the first
// is the planner's pick), the default plan, `extra` others drawn at random from the
// rest, and the fixed plans. On cuda a usable candidate is one that ptxas compiles
// without spilling or a stack frame (choose_plan's rule): the model's best top + 2,
// the default and the extras compile in one parallel batch (the kernel cache keeps
// them for the measurement), deeper ones a batch at a time, at most 8 * top deep.
std::vector<Plan> measured_set(const TileKernel& k, const Options& o, const Sizes& sizes, const Ranking& r,
                               std::mt19937_64& rng, size_t* default_index, size_t* skipped, size_t* top_found,
                               const std::vector<Plan>& fixed = {}) {
  const bool cuda = o.target == TargetKind::Cuda;
  const size_t top = size_t(o.top), first = std::min(r.ranked.size(), cuda ? top + 2 : top);
  std::vector<Plan> others = {default_plan(k, o.target, sizes)};
  auto add = [](std::vector<Plan>& v, const Plan& p) {
    if (std::find(v.begin(), v.end(), p) == v.end()) v.push_back(p);
  };
  if (r.ranked.size() > first) {
    std::uniform_int_distribution<size_t> pick(first, r.ranked.size() - 1);
    for (int e = 0, tries = 0; e < o.extra && tries < 100; ++tries) {
      const Plan& p = r.ranked[pick(rng)].candidate->plan;
      if (std::find(others.begin(), others.end(), p) != others.end()) continue;
      others.push_back(p);
      ++e;
    }
  }
  for (const Plan& p : fixed) add(others, p);

  std::vector<Plan> plans;
  if (!cuda) {
    for (size_t i = 0; i < first; ++i) plans.push_back(r.ranked[i].candidate->plan);
  } else {
    const size_t deepest = std::min(r.ranked.size(), 8 * top);
    for (size_t at = 0; at < deepest && plans.size() < top;) {
      size_t n = at == 0 ? first : std::min(deepest - at, top - plans.size() + 2);
      std::vector<Plan> batch;
      for (size_t i = at; i < at + n; ++i) batch.push_back(r.ranked[i].candidate->plan);
      if (at == 0) batch.insert(batch.end(), others.begin(), others.end());
      std::vector<CompiledCandidate> compiled = compile_parallel(k, batch, o.jobs);
      for (size_t i = 0; i < n && plans.size() < top; ++i) {
        if (compiled[i].kernel && !cuda_candidate_spills(*r.ranked[at + i].candidate))
          plans.push_back(batch[i]);
        else
          ++*skipped;
      }
      at += n;
    }
  }
  *top_found = plans.size();
  auto at = std::find(plans.begin(), plans.end(), others[0]);
  *default_index = at - plans.begin();
  for (const Plan& p : others) add(plans, p);
  return plans;
}

struct ShapeResult {
  Sizes sizes;
  std::vector<Plan> plans;
  std::vector<double> predicted, measured;  // NaN: failed to compile, to launch or the check
  std::vector<std::string> notes;           // why a plan has no time
  size_t pick = 0, def = 0, best = 0;
  size_t skipped = 0;  // better-ranked candidates passed over (cuda: they spill)
  size_t top_found = 0;  // plans[0, top_found) are the model's best usable ones
  int wrong = 0;       // failed the FP64 check: a compiler bug
  double seconds = 0;
};

double predicted_for(const Ranking& r, const Plan& p) {
  for (const RankedCandidate& c : r.ranked)
    if (c.candidate->plan == p) return c.predicted_us;
  return NAN;  // the default plan may fall outside the candidate bounds
}

ShapeResult measure_shape(const TileKernel& k, const Options& o, const Sizes& sizes, const Ranking& r,
                          std::mt19937_64& rng, const std::string& label, const std::vector<Plan>& fixed = {}) {
  auto start = std::chrono::steady_clock::now();
  ShapeResult sr;
  sr.sizes = sizes;
  size_t& top_found = sr.top_found;
  sr.plans = measured_set(k, o, sizes, r, rng, &sr.def, &sr.skipped, &top_found, fixed);
  if (top_found == 0) user_error(ErrorKind::Plan, "none of the model's best candidates is usable (they spill)");
  sr.pick = 0;
  auto compiled = compile_parallel(k, sr.plans, o.jobs, [&](size_t done, size_t total) {
    std::fprintf(stderr, "\r%s: compiled %zu/%zu", label.c_str(), done, total);
  });
  std::fprintf(stderr, "\n");
  std::vector<Kernel> kernels;
  std::vector<size_t> index;
  for (size_t i = 0; i < compiled.size(); ++i) {
    sr.predicted.push_back(predicted_for(r, sr.plans[i]));
    sr.measured.push_back(NAN);
    sr.notes.emplace_back();
    if (!compiled[i].kernel) {
      sr.notes.back() = "failed to compile: " + compiled[i].error;
    } else if (o.target == TargetKind::Cuda && i >= top_found && i != sr.def &&
               std::find(fixed.begin(), fixed.end(), sr.plans[i]) == fixed.end() &&
               cuda_kernel_spills(*compiled[i].kernel)) {
      sr.notes.back() = "spills registers (not a legal candidate)";  // a random extra
    } else {
      kernels.push_back(*compiled[i].kernel);
      index.push_back(i);
    }
  }
  MeasureOptions mo;
  mo.threads = o.threads;
  mo.rounds = o.rounds;
  mo.min_run_us = o.min_run_us;
  mo.seed = o.seed;
  std::vector<Measured> us = measure_paired(kernels, sizes, mo);
  for (size_t j = 0; j < us.size(); ++j) {
    sr.measured[index[j]] = us[j].us;
    if (!us[j].error.empty()) {
      sr.notes[index[j]] = "launch refused: " + us[j].error;
    } else if (!us[j].ok) {
      sr.notes[index[j]] = "WRONG: relative error " + num(us[j].rel_err) + " above the bound " + num(us[j].bound);
      ++sr.wrong;
    }
  }
  for (size_t i = 0; i < sr.plans.size(); ++i)
    if (!sr.notes[i].empty())
      std::fprintf(stderr, "  %s: %s\n", sr.plans[i].to_string().c_str(), sr.notes[i].c_str());
  sr.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sr.best = 0;
  for (size_t i = 0; i < sr.measured.size(); ++i)
    if (std::isfinite(sr.measured[i]) && (!std::isfinite(sr.measured[sr.best]) || sr.measured[i] < sr.measured[sr.best]))
      sr.best = i;
  return sr;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

// The cpu model; on the cuda target the GPU's too; and the load average.
std::string machine_stamp(TargetKind target = TargetKind::Cpu) {
  bench::MachineInfo m = bench::machine_info();
  std::string out = m.cpu_model.empty() ? "unknown cpu" : m.cpu_model;
  if (target == TargetKind::Cuda) out = (m.gpu_model.empty() ? "no GPU" : m.gpu_model) + "; " + out;
  return out + "; load " + m.loadavg;
}

// True (and says so) when --budget-s has passed: the caller starts no new shape.
bool over_budget(const Options& o, std::chrono::steady_clock::time_point start, size_t done, size_t total) {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.budget_s <= 0 || secs < o.budget_s) return false;
  std::cout << "time budget of " << num(o.budget_s) << " s reached after " << done << " of " << total
            << " shapes; stopping" << std::endl;
  return true;
}

// What a measured time is, for the record.
std::string timing_rule(const Options& o) {
  return std::string("per launch: median of ") + std::to_string(o.rounds) +
         " paired rounds over up to 3 input sets, least of 3 trials; each run repeats the launch to cover " +
         num(o.min_run_us) + " us; " +
         (o.target == TargetKind::Cuda ? "tensors on the device, device events around each run's launches"
                                       : "host wall time, " + std::to_string(o.threads) + " thread(s)") +
         "; each candidate checked once against the FP64 evaluator";
}

// For a kernel of the GEMM front door (kernels/gemm.tir, kernels/front_door/*.tir:
// gemm_kernel's text), the plan tessel::gemm would run by its default rules competes
// with the candidates, so that a recorded winner, which tessel::gemm then runs
// (tuned_gemm_plan, src/ops/gemm.cpp), never loses to the rules it replaces. Its
// split-K, where the rules add one, is not measured.
std::vector<Plan> front_door_plans(const TileKernel& k, const Options& o, const Sizes& sizes) {
  const std::string hash = kernel_hash(k);
  for (auto [dtype, precision] : {std::pair{DType::F32, GemmPrecision::F32}, {DType::BF16, GemmPrecision::BF16},
                                  {DType::F16, GemmPrecision::F16}}) {
    if (hash != kernel_hash(gemm_kernel(dtype))) continue;
    auto size = [&](const char* name) { return sizes.count(name) ? sizes.at(name) : int64_t{0}; };
    if (o.target == TargetKind::Sim || (o.target == TargetKind::Cpu && precision != GemmPrecision::F32)) return {};
    Plan p = default_gemm_plan(o.target, size("M"), size("N"), size("K"), precision, "", o.threads);
    p.target = o.target;
    return {p};
  }
  return {};
}

int tune_shapes(const TileKernel& k, const Options& o, const Calibration& cal) {
  if (o.shapes.empty()) bad("tune needs --shapes \"NAME=V,...;...\", --calibrate or --heldout N");
  std::vector<Sizes> shapes;
  std::istringstream in(o.shapes);
  std::string one;
  while (std::getline(in, one, ';'))
    if (!one.empty()) shapes.push_back(parse_shape(one));
  std::optional<TuningCache> cache = open_cache(o);
  auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(o.seed);
  for (size_t s = 0; s < shapes.size(); ++s) {
    std::string label = "[" + std::to_string(s + 1) + "/" + std::to_string(shapes.size()) + "] " + shape_text(shapes[s]);
    Ranking r = rank_candidates(k, o.target, shapes[s], cal, o.threads);
    if (r.ranked.empty()) bad("no legal candidate for " + shape_text(shapes[s]));
    ShapeResult sr = measure_shape(k, o, shapes[s], r, rng, label, front_door_plans(k, o, shapes[s]));
    std::cout << label << ": " << r.ranked.size() << " legal; measured " << sr.plans.size() << "\n";
    for (size_t i = 0; i < sr.plans.size(); ++i)
      std::cout << "  " << (i == sr.best ? "* " : "  ") << num(sr.measured[i]) << " us (predicted "
                << num(sr.predicted[i]) << ")  " << sr.plans[i].to_string() << (i == sr.def ? "  [default]" : "")
                << "\n";
    if (cache && std::isfinite(sr.measured[sr.best])) {
      TunedShape e;
      e.kernel_hash = kernel_hash(k);
      e.target = o.target;
      e.threads = o.threads;
      e.sizes = shapes[s];
      e.best_us = sr.measured[sr.best];
      e.plan = sr.plans[sr.best];
      cache->record(e);
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "tuned " << shapes.size() << " shape(s) in " << num(secs, 3) << " s"
            << (cache ? "; winners recorded in " + cache->path() : "") << "\n";
  return 0;
}

int calibrate(const TileKernel& k, const Options& o, int argc, char** argv) {
  if (o.out.empty()) bad("--calibrate needs --out FILE");
  if (o.draws <= 0) bad("--calibrate needs --draws N (shapes to measure)");
  Calibration fallback = fallback_calibration(o.target, o.threads);
  std::vector<Sizes> shapes = draw_shapes(k, o.draws, o.draw);
  std::vector<Sample> samples;
  int wrong = 0, shapes_measured = 0;
  std::mt19937_64 rng(o.seed ^ 0x9e3779b97f4a7c15ull);
  std::ostringstream json;
  json << "{\"command\": " << json_quoted(command_line(argc, argv)) << ", \"kernel\": " << json_quoted(k.name)
       << ", \"machine\": " << json_quoted(machine_stamp(o.target)) << ", \"threads\": " << o.threads
       << ", \"distribution\": "
       << json_quoted(describe(o.draw))
       << ", \"timing\": " << json_quoted(timing_rule(o)) << ", \"samples\": [";
  auto start = std::chrono::steady_clock::now();
  for (size_t s = 0; s < shapes.size() && !over_budget(o, start, s, shapes.size()); ++s) {
    std::string label = "[" + std::to_string(s + 1) + "/" + std::to_string(shapes.size()) + "] " + shape_text(shapes[s]);
    // The candidates measured are the guiding model's best few (and others at random):
    // the fallback's on the first half of the shapes, then a fit of the runs so far,
    // so that the runs cover what the calibrated model will rank first (its errors
    // there are what a pick pays) and not only what the rough fallback ranks first.
    const bool interim = s >= shapes.size() / 2 && samples.size() >= 10;
    Ranking r = rank_candidates(k, o.target, shapes[s], interim ? fit_calibration(samples, o.target, o.threads) : fallback,
                                o.threads);
    if (r.ranked.empty()) continue;
    Options pick = o;
    pick.top = std::min(o.top, 3);  // the guide's best few, the default, and random others: a spread
    pick.extra = o.per_shape;
    ShapeResult sr;
    try {
      sr = measure_shape(k, pick, shapes[s], r, rng, label);
    } catch (const Error& e) {  // reported, and calibration goes on with the next shape
      std::cout << label << ": FAILED: " << e.what() << std::endl;
      continue;
    }
    wrong += sr.wrong;
    ++shapes_measured;
    std::cout << label << ": " << sr.plans.size() << " measured in " << num(sr.seconds, 3) << " s (at "
              << num(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 4) << " s)"
              << std::endl;
    for (size_t i = 0; i < sr.plans.size(); ++i) {
      if (!std::isfinite(sr.measured[i])) continue;
      auto features = features_of(k, o, sr.plans[i], shapes[s]);
      if (!features) continue;
      Sample smp;
      smp.features = *features;
      smp.us = sr.measured[i];
      samples.push_back(smp);
      json << (samples.size() > 1 ? ", " : "") << "{\"sizes\": " << json_quoted(shape_text(shapes[s]))
           << ", \"plan\": " << json_quoted(plan_to_line(sr.plans[i])) << ", \"us\": " << num(smp.us, 6)
           << ", \"features\": " << features_json(smp.features) << "}";
    }
  }
  Calibration c = fit_calibration(samples, o.target, o.threads);
  c.machine = machine_stamp(o.target);
  c.fitted_on = command_line(argc, argv);
  write_file_atomic(o.out, print_calibration(c));
  json << "], \"wrong_results\": " << wrong << "}\n";
  write_file_atomic(o.out + ".samples.json", json.str());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << print_calibration(c) << "calibrated on " << samples.size() << " runs of " << shapes_measured << " of "
            << shapes.size()
            << " shapes in " << num(secs, 3) << " s; wrote " << o.out << "; candidates that failed the FP64 check: "
            << wrong << "\n";
  return 0;
}

int heldout(const TileKernel& k, const Options& o, const Calibration& cal, int argc, char** argv) {
  if (o.out.empty()) bad("--heldout needs --out DIR");
  std::vector<Sizes> shapes = draw_shapes(k, o.heldout, o.draw);
  std::mt19937_64 rng(o.seed ^ 0x51ed27);
  // --fixed-plans FILE: plans (one plan_to_line per line) measured on every shape too,
  // so the dispatcher's suite total can be compared with each fixed plan's.
  std::vector<Plan> fixed;
  if (!o.fixed_plans.empty()) {
    std::ifstream in(o.fixed_plans);
    if (!in) bad("cannot read " + o.fixed_plans);
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') fixed.push_back(plan_from_line(line, o.target));
  }
  std::vector<double> fixed_total(fixed.size(), 0);
  double pick_total = 0, best_total = 0, default_total = 0;
  int64_t out_of_totals = 0;  // shapes where the pick, the default or a fixed plan did not run
  int wrong = 0, shapes_done = 0, failed_shapes = 0;
  std::vector<double> regret_pick, regret_default, taus;
  // With fixed plans: the pick's regret against the best of the candidates measured
  // without them (the model's top, the default, the random extras), as in a run
  // without --fixed-plans.
  std::vector<double> regret_unfixed;
  std::ostringstream json;
  json << "{\"command\": " << json_quoted(command_line(argc, argv)) << ", \"kernel\": " << json_quoted(k.name)
       << ", \"machine\": " << json_quoted(machine_stamp(o.target)) << ", \"threads\": " << o.threads
       << ", \"calibration\": " << json_quoted(cal.fitted_on) << ", \"distribution\": "
       << json_quoted(describe(o.draw))
       << ", \"shapes\": [";
  auto start = std::chrono::steady_clock::now();
  // The JSON so far (shapes measured, and the summary over them): written after every
  // shape, so that a run stopped early (a time limit) leaves its results.
  auto write_json = [&](bool complete) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto summary = [&](const char* name, const std::vector<double>& v) {
      return std::string("\"") + name + "\": {\"median\": " + num(quantile(v, 0.5), 5) + ", \"p90\": " +
             num(quantile(v, 0.9), 5) + ", \"max\": " + num(quantile(v, 1.0), 5) + "}";
    };
    std::ostringstream doc;
    doc << json.str() << "], \"complete\": " << (complete ? "true" : "false") << ", \"shapes_measured\": "
        << regret_pick.size() << ", " << summary("regret_pick", regret_pick) << ", "
        << (fixed.empty() ? std::string() : summary("regret_pick_without_fixed", regret_unfixed) + ", ")
        << summary("regret_default", regret_default) << ", " << summary("kendall_tau", taus)
        << ", \"wrong_results\": " << wrong << ", \"failed_shapes\": " << failed_shapes
        << ", \"shapes_out_of_totals\": " << out_of_totals << ", \"timing\": " << json_quoted(timing_rule(o)) << ", \"seconds\": "
        << num(secs, 5) << ", \"suite_total_us\": {\"pick\": " << num(pick_total, 7) << ", \"default\": "
        << num(default_total, 7) << ", \"best_measured\": " << num(best_total, 7) << ", \"fixed\": [";
    for (size_t f = 0; f < fixed.size(); ++f)
      doc << (f ? ", " : "") << "{\"plan\": " << json_quoted(plan_to_line(fixed[f])) << ", \"total_us\": "
          << num(fixed_total[f], 7) << "}";
    doc << "]}}\n";
    write_file_atomic(o.out + "/heldout-" + k.name + ".json", doc.str());
  };
  for (size_t s = 0; s < shapes.size() && !over_budget(o, start, s, shapes.size()); ++s) {
    std::string label = "[" + std::to_string(s + 1) + "/" + std::to_string(shapes.size()) + "] " + shape_text(shapes[s]);
    Ranking r = rank_candidates(k, o.target, shapes[s], cal, o.threads);
    if (r.ranked.empty()) continue;
    ShapeResult sr;
    try {
      sr = measure_shape(k, o, shapes[s], r, rng, label, fixed);
    } catch (const Error& e) {  // reported, and the run goes on with the next shape
      std::cout << label << ": FAILED: " << e.what() << std::endl;
      ++failed_shapes;
      continue;
    }
    wrong += sr.wrong;
    double best = sr.measured[sr.best];
    if (!std::isfinite(best)) {
      std::cout << label << ": no candidate measured\n";
      continue;
    }
    // The suite totals compare plans on the same shapes: a shape where one of them
    // did not run (wrong, refused, spilling) is left out of all of them, and counted.
    std::vector<double> fixed_times;
    for (const Plan& f : fixed) fixed_times.push_back(sr.measured[std::find(sr.plans.begin(), sr.plans.end(), f) - sr.plans.begin()]);
    bool all_ran = std::isfinite(sr.measured[sr.pick]) && std::isfinite(sr.measured[sr.def]);
    for (double t : fixed_times) all_ran &= std::isfinite(t);
    if (all_ran) {
      pick_total += sr.measured[sr.pick];
      best_total += best;
      default_total += sr.measured[sr.def];
      for (size_t f = 0; f < fixed.size(); ++f) fixed_total[f] += fixed_times[f];
    } else {
      ++out_of_totals;
    }
    // A pick (or default) that failed to run counts as infinitely slow.
    auto regret = [&](size_t i) { return std::isfinite(sr.measured[i]) ? sr.measured[i] / best : INFINITY; };
    double rp = regret(sr.pick), rd = regret(sr.def);
    std::vector<double> pred, meas;
    for (size_t i = 0; i < sr.plans.size(); ++i)
      if (std::isfinite(sr.predicted[i]) && std::isfinite(sr.measured[i])) {
        pred.push_back(sr.predicted[i]);
        meas.push_back(sr.measured[i]);
      }
    double tau = kendall_tau(pred, meas);
    auto fixed_only = [&](size_t i) {
      return i >= sr.top_found && i != sr.def && std::find(fixed.begin(), fixed.end(), sr.plans[i]) != fixed.end();
    };
    double best_unfixed = INFINITY;
    for (size_t i = 0; i < sr.plans.size(); ++i)
      if (!fixed_only(i) && std::isfinite(sr.measured[i])) best_unfixed = std::min(best_unfixed, sr.measured[i]);
    if (!fixed.empty())
      regret_unfixed.push_back(std::isfinite(sr.measured[sr.pick]) ? sr.measured[sr.pick] / best_unfixed : INFINITY);
    regret_pick.push_back(rp);
    regret_default.push_back(rd);
    taus.push_back(tau);
    std::cout << label << ": regret pick " << num(rp) << ", default " << num(rd) << ", tau " << num(tau, 3)
              << " (best " << num(best) << " us: " << sr.plans[sr.best].to_string() << "; " << num(sr.seconds, 3)
              << " s, at " << num(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 4)
              << " s)" << std::endl;
    json << (shapes_done++ ? ", " : "") << "{\"sizes\": " << json_quoted(shape_text(shapes[s])) << ", \"legal\": " << r.ranked.size()
         << ", \"regret_pick\": " << num(rp, 6) << ", \"regret_default\": " << num(rd, 6) << ", \"kendall_tau\": "
         << num(tau, 4) << ", \"skipped_spilling\": " << sr.skipped << ", \"seconds\": " << num(sr.seconds, 4)
         << ", \"candidates\": [";
    for (size_t i = 0; i < sr.plans.size(); ++i)
      json << (i ? ", " : "") << "{\"plan\": " << json_quoted(plan_to_line(sr.plans[i])) << ", \"predicted_us\": "
           << num(sr.predicted[i], 6) << ", \"measured_us\": " << num(sr.measured[i], 6)
           << ", \"pick\": " << (i == sr.pick ? "true" : "false") << ", \"default\": " << (i == sr.def ? "true" : "false")
           << (fixed_only(i) ? ", \"fixed\": true" : "")
           << (sr.notes[i].empty() ? "" : ", \"note\": " + json_quoted(sr.notes[i]))
           << features_field(k, o, sr.plans[i], shapes[s]) << "}";
    json << "]}";
    write_json(false);
  }
  write_json(true);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::cout << k.name << ": " << regret_pick.size() << " held-out shapes in " << num(secs, 3) << " s\n"
            << "  regret of the planner's pick: median " << num(quantile(regret_pick, 0.5)) << ", p90 "
            << num(quantile(regret_pick, 0.9)) << ", max " << num(quantile(regret_pick, 1.0)) << "\n"
            << "  regret of the default plan:   median " << num(quantile(regret_default, 0.5)) << ", p90 "
            << num(quantile(regret_default, 0.9)) << ", max " << num(quantile(regret_default, 1.0)) << "\n"
            << (fixed.empty() ? std::string()
                              : "  regret of the pick without the fixed plans among the measured: median " +
                                    num(quantile(regret_unfixed, 0.5)) + ", p90 " + num(quantile(regret_unfixed, 0.9)) +
                                    ", max " + num(quantile(regret_unfixed, 1.0)) + "\n")
            << "  Kendall tau (predicted vs measured order): median " << num(quantile(taus, 0.5), 3) << "\n"
            << "  suite total: planner's picks " << num(pick_total) << " us, default plans " << num(default_total)
            << " us, best measured " << num(best_total) << " us (" << out_of_totals
            << " shapes left out: a plan there did not run)\n"
            << "  candidates that failed the FP64 check: " << wrong << "; shapes that failed: " << failed_shapes
            << "\n";
  for (size_t f = 0; f < fixed.size(); ++f)
    std::cout << "  fixed plan " << fixed[f].to_string() << ": " << num(fixed_total[f]) << " us\n";
  return 0;
}

// ---- Offline: refit a calibration from saved runs, evaluate it on saved held-out runs.

// A JSON file written by `tune --calibrate` (FILE.samples.json) or `tune --heldout`
// (heldout-KERNEL.json); a malformed one is an InvalidArgument error naming it.
nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) bad("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(s.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) bad(path + ": not a JSON object");
  return j;
}

// j[key] as a string / a positive finite number, else an error naming the file and where.
std::string json_string(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) bad(where + ": no string \"" + key + "\"");
  return it->get<std::string>();
}
double json_time(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return NAN;  // not measured (failed, spilled)
  if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>()))
    bad(where + ": \"" + key + "\" is not a positive number");
  return it->get<double>();
}

// The run's features as this build computes them (nullopt when the plan is no longer
// legal: the candidate space changed since the run).
std::optional<Features> features_of(const TileKernel& k, const Options& o, const std::string& plan_line,
                                    const Sizes& sizes, std::string* why) {
  auto c = realize_candidate(k, plan_from_line(plan_line, o.target), why);
  if (!c) return std::nullopt;
  return program_features(*c, sizes, machine_shape(o.target, o.threads));
}

void check_kernel(const TileKernel& k, const nlohmann::json& j, const std::string& path) {
  if (json_string(j, "kernel", path) != k.name)
    bad(path + " holds runs of kernel '" + json_string(j, "kernel", path) + "', not " + k.name);
}

// ptxas's registers for a plan (--ptxas: the proxy's check; NVRTC, no GPU needed).
// "registers": ptxas's, "proxy": the cost model's (registers_per_thread), "resident":
// resident_groups by the proxy, for the first phase.
std::string ptxas_registers(const TileKernel& k, const Options& o, const std::string& plan_line) {
  std::string why;
  auto c = realize_candidate(k, plan_from_line(plan_line, o.target), &why);
  if (!c || o.target != TargetKind::Cuda) return "";
  int registers = -1;
#ifdef TESSEL_WITH_CUDA
  registers = compile_cuda(c->phases[0], "")->info().nvrtc.registers;
#endif
  return ", \"registers\": " + std::to_string(registers) + ", \"proxy\": " +
         std::to_string(registers_per_thread(c->phases[0])) + ", \"resident\": " +
         std::to_string(resident_groups(c->phases[0]));
}

// --refit SAMPLES.json[,MORE.json...] --out FILE: the fit of `--calibrate` again, over
// the runs that calibration saved (several calibrations' runs pooled: more runs make a
// steadier fit), with the features of this build (a feature added since is tried on
// the measured runs without the machine). FILE.features.json gets each run's features.
int refit(const TileKernel& k, const Options& o, int argc, char** argv) {
  if (o.out.empty()) bad("--refit needs --out FILE (the calibration to write)");
  std::vector<std::string> files;
  for (size_t at = 0; at <= o.refit.size();) {
    const size_t comma = std::min(o.refit.find(',', at), o.refit.size());
    if (comma == at) bad("--refit: an empty file name in '" + o.refit + "'");
    files.push_back(o.refit.substr(at, comma - at));
    at = comma + 1;
  }
  std::vector<Sample> samples;
  std::ostringstream dump;
  dump << "{\"refit_of\": " << json_quoted(o.refit) << ", \"samples\": [";
  int dropped = 0;
  std::string machine, commands;
  for (const std::string& file : files) {
    nlohmann::json j = read_json(file);
    check_kernel(k, j, file);
    auto samples_it = j.find("samples");
    if (samples_it == j.end() || !samples_it->is_array()) bad(file + ": no \"samples\" array");
    for (size_t i = 0; i < samples_it->size(); ++i) {
      const nlohmann::json& e = (*samples_it)[i];
      const std::string where = file + ": sample " + std::to_string(i);
      if (!e.is_object()) bad(where + " is not an object");
      Sizes sizes = parse_shape(json_string(e, "sizes", where));
      std::string plan = json_string(e, "plan", where), why;
      double us = json_time(e, "us", where);
      if (!std::isfinite(us)) bad(where + ": no time");
      std::optional<Features> f = features_of(k, o, plan, sizes, &why);
      if (!f) {
        ++dropped;
        std::cout << where << " (" << plan << ") is not legal now: " << why << "\n";
        continue;
      }
      samples.push_back({*f, us});
      dump << (samples.size() > 1 ? ", " : "") << "{\"sizes\": " << json_quoted(shape_text(sizes))
           << ", \"plan\": " << json_quoted(plan) << ", \"us\": " << num(us, 6)
           << (o.ptxas ? ptxas_registers(k, o, plan) : std::string())
           << ", \"features\": " << features_json(*f) << "}";
    }
    if (machine.empty() && j.contains("machine") && j["machine"].is_string()) machine = j["machine"].get<std::string>();
    commands += (commands.empty() ? "" : "; ") +
                (j.contains("command") && j["command"].is_string() ? j["command"].get<std::string>() : "?");
  }
  Calibration c = fit_calibration(samples, o.target, o.threads);
  c.machine = machine.empty() ? "unknown" : machine;
  c.fitted_on = command_line(argc, argv) + " (refit of: " + commands + ")";
  write_file_atomic(o.out, print_calibration(c));
  dump << "]}\n";
  write_file_atomic(o.out + ".features.json", dump.str());
  std::cout << print_calibration(c) << "refitted on " << samples.size() << " runs of " << files.size()
            << " file(s) (" << dropped << " no longer legal); wrote " << o.out << " and " << o.out
            << ".features.json\n";
  return 0;
}

// --evaluate HELDOUT.json --calibration FILE: the calibration's choices on the
// candidates a held-out run measured, offline. Per shape the pick is the measured
// candidate the model predicts fastest; regret = its time / the best measured. This
// is a bound on what the model would do on the machine: there it picks among all
// legal candidates (the best predicted that ptxas compiles without spilling), which
// may be one the run did not measure; how often the model's best legal candidate is
// among the measured ones is reported.
int evaluate(const TileKernel& k, const Options& o, const Calibration& cal) {
  nlohmann::json j = read_json(o.evaluate);
  check_kernel(k, j, o.evaluate);
  auto shapes_it = j.find("shapes");
  if (shapes_it == j.end() || !shapes_it->is_array()) bad(o.evaluate + ": no \"shapes\" array");
  std::vector<double> regrets, run_regrets, taus;
  double pick_total = 0, best_total = 0, run_pick_total = 0;
  int best_legal_measured = 0;
  std::ostringstream out;
  out << "{\"evaluated\": " << json_quoted(o.evaluate) << ", \"calibration\": " << json_quoted(cal.fitted_on)
      << ", \"shapes\": [";
  for (size_t s = 0; s < shapes_it->size(); ++s) {
    const nlohmann::json& sh = (*shapes_it)[s];
    const std::string where = o.evaluate + ": shape " + std::to_string(s);
    if (!sh.is_object() || !sh.contains("candidates") || !sh["candidates"].is_array()) bad(where + ": no candidates");
    Sizes sizes = parse_shape(json_string(sh, "sizes", where));
    std::vector<double> pred, meas;
    std::vector<std::string> plans;
    std::vector<Features> feats;
    double run_pick = NAN;
    for (size_t i = 0; i < sh["candidates"].size(); ++i) {
      const nlohmann::json& c = sh["candidates"][i];
      const std::string cw = where + ", candidate " + std::to_string(i);
      if (!c.is_object()) bad(cw + " is not an object");
      double us = json_time(c, "measured_us", cw);
      std::string plan = json_string(c, "plan", cw), why;
      if (c.contains("pick") && c["pick"].is_boolean() && c["pick"].get<bool>()) run_pick = us;
      if (!std::isfinite(us)) continue;
      std::optional<Features> f = features_of(k, o, plan, sizes, &why);
      if (!f) continue;
      pred.push_back(predict_us(cal, *f));
      feats.push_back(*f);
      meas.push_back(us);
      plans.push_back(plan);
    }
    if (meas.empty()) continue;
    size_t pick = std::min_element(pred.begin(), pred.end()) - pred.begin();
    double best = *std::min_element(meas.begin(), meas.end());
    Ranking r = rank_candidates(k, o.target, sizes, cal, o.threads);
    bool measured_top = !r.ranked.empty() &&
                        std::find(plans.begin(), plans.end(), plan_to_line(r.ranked[0].candidate->plan)) != plans.end();
    best_legal_measured += measured_top;
    regrets.push_back(meas[pick] / best);
    run_regrets.push_back(std::isfinite(run_pick) ? run_pick / best : INFINITY);
    taus.push_back(kendall_tau(pred, meas));
    pick_total += meas[pick];
    best_total += best;
    run_pick_total += std::isfinite(run_pick) ? run_pick : NAN;
    out << (s ? ", " : "") << "{\"sizes\": " << json_quoted(shape_text(sizes)) << ", \"regret_pick\": "
        << num(regrets.back(), 6) << ", \"regret_run_pick\": " << num(run_regrets.back(), 6) << ", \"kendall_tau\": "
        << num(taus.back(), 4) << ", \"model_best_legal_was_measured\": " << (measured_top ? "true" : "false")
        << ", \"candidates\": [";
    for (size_t i = 0; i < plans.size(); ++i)
      out << (i ? ", " : "") << "{\"plan\": " << json_quoted(plans[i]) << ", \"predicted_us\": " << num(pred[i], 6)
          << ", \"measured_us\": " << num(meas[i], 6) << ", \"pick\": " << (i == pick ? "true" : "false")
          << ", \"features\": " << features_json(feats[i]) << "}";
    out << "]}";
  }
  auto line = [&](const char* name, const std::vector<double>& v) {
    std::cout << "  " << name << ": median " << num(quantile(v, 0.5)) << ", p90 " << num(quantile(v, 0.9)) << ", max "
              << num(quantile(v, 1.0)) << "\n";
  };
  std::cout << k.name << " offline on " << regrets.size() << " held-out shapes of " << o.evaluate
            << " (the pick among the candidates that run measured)\n";
  line("regret of the model's pick", regrets);
  line("regret of the run's pick  ", run_regrets);
  std::cout << "  Kendall tau: median " << num(quantile(taus, 0.5), 3) << "\n"
            << "  suite total: model's picks " << num(pick_total) << " us, run's picks " << num(run_pick_total)
            << " us, best measured " << num(best_total) << " us\n"
            << "  the model's best legal candidate was among the measured on " << best_legal_measured << " of "
            << regrets.size() << " shapes\n";
  out << "], \"regret_pick\": {\"median\": " << num(quantile(regrets, 0.5), 5) << ", \"p90\": "
      << num(quantile(regrets, 0.9), 5) << ", \"max\": " << num(quantile(regrets, 1.0), 5)
      << "}, \"kendall_tau_median\": " << num(quantile(taus, 0.5), 4) << ", \"model_best_legal_was_measured\": "
      << best_legal_measured << "}\n";
  if (!o.out.empty()) write_file_atomic(o.out, out.str());
  return 0;
}

}  // namespace

int plans_command(int argc, char** argv) {
  Options o = parse(argc, argv);
  TileKernel k = load(o.file);
  Calibration cal = load_calibration(o.calibration, o.target, o.threads);
  Ranking r = rank_candidates(k, o.target, o.sizes, cal, o.threads);
  std::optional<TuningCache> cache = open_cache(o);
  std::vector<TunedShape> known;
  if (cache)
    for (TunedShape& e : cache->entries())
      if (e.kernel_hash == kernel_hash(k) && e.target == o.target && e.threads == o.threads && e.sizes == o.sizes)
        known.push_back(e);
  std::cout << k.name << " on " << target_name(o.target) << ", " << shape_text(o.sizes) << ", " << o.threads
            << " thread(s): " << r.set.tried << " candidates tried, " << r.ranked.size() << " legal\n";
  for (const auto& [why, n] : r.set.rejected) std::cout << "  rejected " << n << ": " << why << "\n";
  std::cout << "model: " << (cal.samples > 0 ? "calibrated (" + cal.machine + ", " + std::to_string(cal.samples) +
                                                   " runs, median fit error " + num(100 * cal.fit_median_rel_err, 3) + "%)"
                                             : std::string("fallback coefficients (no calibration)"))
            << "\n";
  PlanChoice choice = choose_plan(k, o.target, o.sizes, cal, o.threads, cache ? &*cache : nullptr);
  std::cout << "choice: " << choice.plan.to_string() << "\n  from " << choice.source << "\n";
  std::cout << "rank  predicted_us  measured_us  plan  (why it lost to rank 1)\n";
  for (size_t i = 0; i < r.ranked.size() && i < size_t(o.top); ++i) {
    const Plan& p = r.ranked[i].candidate->plan;
    std::string measured = "-";
    for (const TunedShape& e : known)
      if (e.plan == p) measured = num(e.best_us);
    std::cout << (i + 1) << "  " << num(r.ranked[i].predicted_us) << "  " << measured << "  " << p.to_string() << "  "
              << (i == 0 ? "(best predicted)" : why_lost(cal, r.ranked[0], r.ranked[i])) << "\n";
  }
  return 0;
}

int tune_command(int argc, char** argv) {
  Options o = parse(argc, argv);
  // --flush-denormals: FTZ and DAZ on this thread (the one that runs launches with
  // --threads 1). Measured: cpu GEMM candidates ran 3-10x slower in some processes
  // and not in others, and never with denormals flushed (docs/planner.md).
  if (o.flush_denormals) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(_mm_getcsr() | 0x8040);
#else
    user_error(ErrorKind::Unsupported, "--flush-denormals is implemented for x86 only");
#endif
  }
  TileKernel k = load(o.file);
  // Offline: no measurement, so no GPU needed.
  if (!o.refit.empty()) return refit(k, o, argc, argv);
  if (!o.evaluate.empty()) return evaluate(k, o, load_calibration(o.calibration, o.target, o.threads));
#ifdef TESSEL_WITH_CUDA
  // Measuring on cuda needs the device (measure.h): say so before compiling anything.
  std::string no_gpu;
  if (o.target == TargetKind::Cuda && !cuda_gpu_available(&no_gpu))
    user_error(ErrorKind::Runtime, "tune on the cuda target measures on a GPU: " + no_gpu);
#endif
  if (o.calibrate) return calibrate(k, o, argc, argv);
  Calibration cal = load_calibration(o.calibration, o.target, o.threads);
  if (o.heldout > 0) return heldout(k, o, cal, argc, argv);
  return tune_shapes(k, o, cal);
}

}  // namespace tessel
