#include "plan_commands.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "ir/tile_text.h"
#include "plan/default_plan.h"
#include "plan/dispatch.h"
#include "plan/measure.h"
#include "runtime/kernel_cache.h"
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

struct Options {
  std::string file, calibration, out, shapes, fixed_plans;
  Sizes sizes;
  TargetKind target = TargetKind::Cpu;
  int threads = 0, top = 10, extra = 2, jobs = 2, rounds = 5, draws = 0, per_shape = 6, heldout = 0;
  double min_run_us = 2000;
  int64_t range_lo = 16, range_hi = 512;
  uint64_t seed = 1;
  bool calibrate = false, use_cache = true, flush_denormals = false;
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
    else if (s == "--seed") o.seed = static_cast<uint64_t>(to_int(s, value(), 0, INT64_MAX));
    else if (s == "--range") {
      std::string v = value();
      size_t c = v.find(':');
      if (c == std::string::npos) bad("--range takes LO:HI, got '" + v + "'");
      o.range_lo = to_int("--range LO", v.substr(0, c), 1, int64_t{1} << 30);
      o.range_hi = to_int("--range HI", v.substr(c + 1), o.range_lo, int64_t{1} << 30);
    } else if (s == "--calibration") o.calibration = value();
    else if (s == "--out") o.out = value();
    else if (s == "--shapes") o.shapes = value();
    else if (s == "--fixed-plans") o.fixed_plans = value();
    else if (s == "--calibrate") o.calibrate = true;
    else if (s == "--no-tuning-cache") o.use_cache = false;
    else if (s == "--flush-denormals") o.flush_denormals = true;
    else if (!s.empty() && s[0] == '-') bad("unknown option " + s);
    else if (o.file.empty()) o.file = s;
    else bad("unexpected argument '" + s + "'");
  }
  if (o.file.empty()) bad("no kernel file (KERNEL.tir)");
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

// Sizes that a shape draws: every size parameter except strides (symbols that only
// tensor strides name; default_strides makes those contiguous).
std::vector<std::string> drawn_sizes(const TileKernel& k) {
  std::set<std::string> in_shapes, in_strides;
  for (const TensorParam& t : k.tensors) {
    for (const Expr& e : t.shape) expr_symbols(e, [&](const std::string& s) { in_shapes.insert(s); });
    for (const Expr& e : t.strides) expr_symbols(e, [&](const std::string& s) { in_strides.insert(s); });
  }
  std::vector<std::string> out;
  for (const std::string& s : k.size_params)
    if (in_shapes.count(s) || !in_strides.count(s)) out.push_back(s);
  return out;
}

// Log-uniform integers in [lo, hi] per drawn size (ragged: no rounding).
std::vector<Sizes> draw_shapes(const TileKernel& k, int n, uint64_t seed, int64_t lo, int64_t hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(std::log(double(lo)), std::log(double(hi) + 1));
  std::vector<Sizes> out;
  for (int i = 0; i < n; ++i) {
    Sizes s;
    for (const std::string& name : drawn_sizes(k))
      s[name] = std::clamp<int64_t>(static_cast<int64_t>(std::exp(u(rng))), lo, hi);
    out.push_back(s);
  }
  return out;
}

std::string num(double v, int precision = 4) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream s;
  s.precision(precision);
  s << v;
  return s.str();
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
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

// Candidates to measure for one shape: the model's top `top`, the default plan, and
// `extra` others drawn at random from the rest.
std::vector<Plan> measured_set(const TileKernel& k, const Options& o, const Sizes& sizes, const Ranking& r,
                               std::mt19937_64& rng, size_t* default_index, const std::vector<Plan>& fixed = {}) {
  std::vector<Plan> plans;
  for (size_t i = 0; i < r.ranked.size() && plans.size() < size_t(o.top); ++i)
    plans.push_back(r.ranked[i].candidate->plan);
  Plan d = default_plan(k, o.target, sizes);
  auto at = std::find(plans.begin(), plans.end(), d);
  *default_index = at - plans.begin();
  if (at == plans.end()) plans.push_back(d);
  if (r.ranked.size() > plans.size()) {
    std::uniform_int_distribution<size_t> pick(0, r.ranked.size() - 1);
    for (int e = 0, tries = 0; e < o.extra && tries < 100; ++tries) {
      const Plan& p = r.ranked[pick(rng)].candidate->plan;
      if (std::find(plans.begin(), plans.end(), p) != plans.end()) continue;
      plans.push_back(p);
      ++e;
    }
  }
  for (const Plan& p : fixed)
    if (std::find(plans.begin(), plans.end(), p) == plans.end()) plans.push_back(p);
  return plans;
}

struct ShapeResult {
  Sizes sizes;
  std::vector<Plan> plans;
  std::vector<double> predicted, measured;  // NaN: failed to compile
  size_t pick = 0, def = 0, best = 0;
};

double predicted_for(const Ranking& r, const Plan& p) {
  for (const RankedCandidate& c : r.ranked)
    if (c.candidate->plan == p) return c.predicted_us;
  return NAN;  // the default plan may fall outside the candidate bounds
}

ShapeResult measure_shape(const TileKernel& k, const Options& o, const Sizes& sizes, const Ranking& r,
                          std::mt19937_64& rng, const std::string& label, const std::vector<Plan>& fixed = {}) {
  ShapeResult sr;
  sr.sizes = sizes;
  sr.plans = measured_set(k, o, sizes, r, rng, &sr.def, fixed);
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
    if (compiled[i].kernel) {
      kernels.push_back(*compiled[i].kernel);
      index.push_back(i);
    } else {
      std::fprintf(stderr, "  %s failed to compile: %s\n", sr.plans[i].to_string().c_str(), compiled[i].error.c_str());
    }
  }
  MeasureOptions mo;
  mo.threads = o.threads;
  mo.rounds = o.rounds;
  mo.min_run_us = o.min_run_us;
  mo.seed = o.seed;
  std::vector<double> us = measure_paired(kernels, sizes, mo);
  for (size_t j = 0; j < us.size(); ++j) sr.measured[index[j]] = us[j];
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

std::string machine_stamp() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown cpu";
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
    ShapeResult sr = measure_shape(k, o, shapes[s], r, rng, label);
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
  std::vector<Sizes> shapes = draw_shapes(k, o.draws, o.seed, o.range_lo, o.range_hi);
  std::vector<Sample> samples;
  std::mt19937_64 rng(o.seed ^ 0x9e3779b97f4a7c15ull);
  std::ostringstream json;
  json << "{\"command\": " << quoted(command_line(argc, argv)) << ", \"kernel\": " << quoted(k.name)
       << ", \"machine\": " << quoted(machine_stamp()) << ", \"threads\": " << o.threads << ", \"samples\": [";
  auto start = std::chrono::steady_clock::now();
  for (size_t s = 0; s < shapes.size(); ++s) {
    std::string label = "[" + std::to_string(s + 1) + "/" + std::to_string(shapes.size()) + "] " + shape_text(shapes[s]);
    Ranking r = rank_candidates(k, o.target, shapes[s], fallback, o.threads);
    if (r.ranked.empty()) continue;
    Options pick = o;
    pick.top = std::min(o.top, 3);  // the fallback's best few, the default, and random others: a spread
    pick.extra = o.per_shape;
    ShapeResult sr = measure_shape(k, pick, shapes[s], r, rng, label);
    MachineShape machine = machine_shape(o.target, o.threads);
    for (size_t i = 0; i < sr.plans.size(); ++i) {
      if (!std::isfinite(sr.measured[i])) continue;
      std::string why;
      auto c = realize_candidate(k, sr.plans[i], &why);
      if (!c) continue;
      Sample smp;
      smp.features = program_features(*c, shapes[s], machine);
      smp.us = sr.measured[i];
      samples.push_back(smp);
      json << (samples.size() > 1 ? ", " : "") << "{\"sizes\": " << quoted(shape_text(shapes[s]))
           << ", \"plan\": " << quoted(plan_to_line(sr.plans[i])) << ", \"us\": " << num(smp.us, 6) << "}";
    }
  }
  Calibration c = fit_calibration(samples, o.target, o.threads);
  c.machine = machine_stamp();
  c.fitted_on = command_line(argc, argv);
  write_file_atomic(o.out, print_calibration(c));
  json << "]}\n";
  write_file_atomic(o.out + ".samples.json", json.str());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << print_calibration(c) << "calibrated on " << samples.size() << " runs of " << shapes.size()
            << " shapes in " << num(secs, 3) << " s; wrote " << o.out << "\n";
  return 0;
}

int heldout(const TileKernel& k, const Options& o, const Calibration& cal, int argc, char** argv) {
  if (o.out.empty()) bad("--heldout needs --out DIR");
  std::vector<Sizes> shapes = draw_shapes(k, o.heldout, o.seed, o.range_lo, o.range_hi);
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
  std::vector<double> regret_pick, regret_default, taus;
  std::ostringstream json;
  json << "{\"command\": " << quoted(command_line(argc, argv)) << ", \"kernel\": " << quoted(k.name)
       << ", \"machine\": " << quoted(machine_stamp()) << ", \"threads\": " << o.threads
       << ", \"calibration\": " << quoted(cal.fitted_on) << ", \"distribution\": "
       << quoted("each size log-uniform integer in [" + std::to_string(o.range_lo) + ", " +
                 std::to_string(o.range_hi) + "], seed " + std::to_string(o.seed))
       << ", \"shapes\": [";
  auto start = std::chrono::steady_clock::now();
  for (size_t s = 0; s < shapes.size(); ++s) {
    std::string label = "[" + std::to_string(s + 1) + "/" + std::to_string(shapes.size()) + "] " + shape_text(shapes[s]);
    Ranking r = rank_candidates(k, o.target, shapes[s], cal, o.threads);
    if (r.ranked.empty()) continue;
    ShapeResult sr = measure_shape(k, o, shapes[s], r, rng, label, fixed);
    double best = sr.measured[sr.best];
    pick_total += sr.measured[sr.pick];
    best_total += best;
    default_total += sr.measured[sr.def];
    for (size_t f = 0; f < fixed.size(); ++f)
      fixed_total[f] += sr.measured[std::find(sr.plans.begin(), sr.plans.end(), fixed[f]) - sr.plans.begin()];
    double rp = sr.measured[sr.pick] / best, rd = sr.measured[sr.def] / best;
    std::vector<double> pred, meas;
    for (size_t i = 0; i < sr.plans.size(); ++i)
      if (std::isfinite(sr.predicted[i]) && std::isfinite(sr.measured[i])) {
        pred.push_back(sr.predicted[i]);
        meas.push_back(sr.measured[i]);
      }
    double tau = kendall_tau(pred, meas);
    regret_pick.push_back(rp);
    regret_default.push_back(rd);
    taus.push_back(tau);
    std::cout << label << ": regret pick " << num(rp) << ", default " << num(rd) << ", tau " << num(tau, 3)
              << " (best " << num(best) << " us: " << sr.plans[sr.best].to_string() << ")\n";
    json << (s ? ", " : "") << "{\"sizes\": " << quoted(shape_text(shapes[s])) << ", \"legal\": " << r.ranked.size()
         << ", \"regret_pick\": " << num(rp, 6) << ", \"regret_default\": " << num(rd, 6) << ", \"kendall_tau\": "
         << num(tau, 4) << ", \"candidates\": [";
    for (size_t i = 0; i < sr.plans.size(); ++i)
      json << (i ? ", " : "") << "{\"plan\": " << quoted(plan_to_line(sr.plans[i])) << ", \"predicted_us\": "
           << num(sr.predicted[i], 6) << ", \"measured_us\": " << num(sr.measured[i], 6)
           << ", \"pick\": " << (i == sr.pick ? "true" : "false") << ", \"default\": " << (i == sr.def ? "true" : "false")
           << "}";
    json << "]}";
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto summary = [&](const char* name, const std::vector<double>& v) {
    return std::string("\"") + name + "\": {\"median\": " + num(quantile(v, 0.5), 5) + ", \"p90\": " +
           num(quantile(v, 0.9), 5) + ", \"max\": " + num(quantile(v, 1.0), 5) + "}";
  };
  json << "], " << summary("regret_pick", regret_pick) << ", " << summary("regret_default", regret_default) << ", "
       << summary("kendall_tau", taus) << ", \"seconds\": " << num(secs, 5) << ", \"suite_total_us\": {\"pick\": "
       << num(pick_total, 7) << ", \"default\": " << num(default_total, 7) << ", \"best_measured\": " << num(best_total, 7)
       << ", \"fixed\": [";
  for (size_t f = 0; f < fixed.size(); ++f)
    json << (f ? ", " : "") << "{\"plan\": " << quoted(plan_to_line(fixed[f])) << ", \"total_us\": " << num(fixed_total[f], 7) << "}";
  json << "]}}\n";
  write_file_atomic(o.out + "/heldout-" + k.name + ".json", json.str());
  std::cout << k.name << ": " << regret_pick.size() << " held-out shapes in " << num(secs, 3) << " s\n"
            << "  regret of the planner's pick: median " << num(quantile(regret_pick, 0.5)) << ", p90 "
            << num(quantile(regret_pick, 0.9)) << ", max " << num(quantile(regret_pick, 1.0)) << "\n"
            << "  regret of the default plan:   median " << num(quantile(regret_default, 0.5)) << ", p90 "
            << num(quantile(regret_default, 0.9)) << ", max " << num(quantile(regret_default, 1.0)) << "\n"
            << "  Kendall tau (predicted vs measured order): median " << num(quantile(taus, 0.5), 3) << "\n"
            << "  suite total: planner's picks " << num(pick_total) << " us, default plans " << num(default_total)
            << " us, best measured " << num(best_total) << " us\n";
  for (size_t f = 0; f < fixed.size(); ++f)
    std::cout << "  fixed plan " << fixed[f].to_string() << ": " << num(fixed_total[f]) << " us\n";
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
  if (o.calibrate) return calibrate(k, o, argc, argv);
  Calibration cal = load_calibration(o.calibration, o.target, o.threads);
  if (o.heldout > 0) return heldout(k, o, cal, argc, argv);
  return tune_shapes(k, o, cal);
}

}  // namespace tessel
