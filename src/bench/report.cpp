#include "bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tessel/version.h"

namespace tessel::bench {
namespace {

using Json = nlohmann::ordered_json;

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json numbers(const std::vector<double>& v) {
  Json a = Json::array();
  for (double x : v) a.push_back(number(x));
  return a;
}

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string ratio_text(const PairedRatio& p) {
  if (p.valid == 0) return "n/a";
  return fixed(p.median, 3) + " [" + fixed(p.min, 3) + ", " + fixed(p.max, 3) + "]";
}

double gflops(const Shape& s, double us) { return s.flop() / (us * 1e3); }

std::string shape_title(const Shape& s) {
  return std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k);
}

// Median over valid rounds of one cold-cost field.
template <class F>
double cold_median(const BenchResults& r, const Shape& s, const std::string& impl, F field) {
  std::vector<double> v;
  for (const Measurement& m : r.runs)
    if (m.shape == s && m.impl == impl && m.valid) v.push_back(field(m));
  return median(v);
}

}  // namespace

std::string results_json(const BenchResults& r) {
  const BenchConfig& c = r.config;
  Json j;
  j["tool"] = "tessel bench";
  j["tessel_version"] = version();
  j["command"] = c.command;
  j["started"] = r.started;
  j["finished"] = r.finished;
  Json shapes = Json::array();
  for (const Shape& s : c.shapes) shapes.push_back(s.name());
  j["config"] = {{"impls", c.impls},
                 {"candidate", c.impls.front()},
                 {"shapes", shapes},
                 {"rounds", c.rounds},
                 {"warmup_ms", c.warmup_ms},
                 {"samples", c.samples},
                 {"sample_ms", c.sample_ms},
                 {"threads", c.threads},
                 {"tile", c.tile},
                 {"dtype", c.dtype},
                 {"plan", c.plan},
                 {"beta", c.beta},
                 {"reference", c.reference},
                 {"timing", "host wall, amortized per call over each batch (device-event "
                            "time too on a GPU); row-major, A and B stored as dtype, C fp32, alpha 1, beta as "
                            "given, inputs preallocated, the same random inputs (seed 1) every round"},
                 {"cold", "every measurement runs in a fresh worker process with an empty "
                          "TESSEL_CACHE_DIR"},
                 {"validation", "complete output against the FP64 oracle, C NaN-poisoned (beta 0) or "
                                "reset to its random old values, after the first call and after the timed batches"}};
  const MachineInfo& m = r.machine;
  j["machine"] = {{"hostname", m.hostname},         {"kernel", m.kernel},
                  {"cpu_model", m.cpu_model},       {"logical_cpus", m.logical_cpus},
                  {"gpu_model", m.gpu_model},       {"jit_compiler", m.jit_compiler},
                  {"build_compiler", m.build_compiler}, {"loadavg_start", m.loadavg},
                  {"loadavg_end", r.loadavg_finished},  {"env", m.env}};
  Json impls = Json::array();
  for (const ImplInfo& i : r.impls)
    impls.push_back({{"name", i.name},
                     {"executable", i.executable},
                     {"executable_sha256", i.executable_sha256},
                     {"library", i.library},
                     {"library_sha256", i.library_sha256},
                     {"version", i.version}});
  j["impls"] = impls;
  Json runs = Json::array();
  for (const Measurement& x : r.runs) {
    Json worker = nullptr;
    if (!x.worker_json.empty()) worker = Json::parse(x.worker_json, nullptr, false);
    runs.push_back({{"round", x.round},
                    {"position", x.position},
                    {"shape", x.shape.name()},
                    {"impl", x.impl},
                    {"valid", x.valid},
                    {"error", x.error},
                    {"median_us", number(x.median_us)},
                    {"device_median_us", number(x.device_median_us)},
                    {"cpu_share", number(x.cpu_share)},
                    {"cpu_median_us", number(x.cpu_median_us)},
                    {"samples_us", numbers(x.samples_us)},
                    {"first_call_ms", number(x.first_call_ms)},
                    {"load_ms", number(x.load_ms)},
                    {"compile_ms", number(x.compile_ms)},
                    {"rel_err", number(x.rel_err)},
                    {"bound", number(x.bound)},
                    {"worker", worker}});
  }
  j["runs"] = runs;
  Json summary = Json::array();
  for (const Shape& s : c.shapes) {
    Json per_impl, ratios;
    for (const std::string& impl : c.impls) {
      std::vector<double> rm = round_medians(r, s, impl);
      double med = median(rm);
      int valid = int(std::count_if(rm.begin(), rm.end(), [](double v) { return std::isfinite(v); }));
      std::vector<double> dm = round_medians(r, s, impl, &Measurement::device_median_us);
      per_impl[impl] = {{"median_us", number(med)},
                        {"gflops", number(gflops(s, med))},
                        {"round_medians_us", numbers(rm)},
                        {"device_median_us", number(median(dm))},
                        {"device_round_medians_us", numbers(dm)},
                        {"cpu_median_us",
                         number(median(round_medians(r, s, impl, &Measurement::cpu_median_us)))},
                        {"valid_rounds", valid}};
      if (impl == c.impls.front()) continue;
      PairedRatio p = candidate_ratio(r, s, impl);
      ratios[impl] = {{"speedup_per_round", numbers(p.per_round)},
                      {"median", number(p.median)},
                      {"min", number(p.min)},
                      {"max", number(p.max)},
                      {"valid_rounds", p.valid},
                      {"cpu_time_median",
                       number(candidate_ratio(r, s, impl, &Measurement::cpu_median_us).median)}};
    }
    summary.push_back({{"shape", s.name()},
                       {"m", s.m},
                       {"n", s.n},
                       {"k", s.k},
                       {"flop", s.flop()},
                       {"impls", per_impl},
                       {"speedup_of_candidate_over", ratios}});
  }
  j["summary"] = summary;
  return j.dump(1) + "\n";
}

std::string results_markdown(const BenchResults& r, const std::string& plot,
                             const std::string& plot_note) {
  const BenchConfig& c = r.config;
  const std::string& cand = c.impls.front();
  std::ostringstream md;
  md << "# tessel bench, " << r.started << "\n\n";
  md << "```sh\n" << c.command << "\n```\n\n";
  md << "Machine: " << r.machine.cpu_model << ", " << r.machine.logical_cpus << " logical CPUs, "
     << r.machine.kernel << (r.machine.gpu_model.empty() ? "" : ", GPU " + r.machine.gpu_model)
     << ". Load average " << r.machine.loadavg << " at the start, " << r.loadavg_finished
     << " at the end.\n";
  md << "Threads per implementation: " << c.threads << (c.threads == 0 ? " (all cores)" : "")
     << ". Environment:";
  if (r.machine.env.empty()) md << " no OPENBLAS_*, BLIS_*, OMP_*, TESSEL_* or CXX variables";
  for (const auto& [k, v] : r.machine.env) md << " `" << k << "=" << v << "`";
  md << ".\n\n";
  md << "| Implementation | Version | Worker executable (sha256) | Library (sha256) |\n"
     << "|---|---|---|---|\n";
  for (const ImplInfo& i : r.impls) {
    md << "| " << i.name << " | " << i.version << " | `" << i.executable << "` ("
       << i.executable_sha256.substr(0, 16) << ") | ";
    if (!i.library.empty()) md << "`" << i.library << "` (" << i.library_sha256.substr(0, 16) << ")";
    md << " |\n";
  }
  md << "\nMethod: " << c.rounds << " rounds; each rotates the shape order and counterbalances "
     << "the implementation order (pairs of rounds, the second reversed). Each measurement is a "
     << "fresh worker process with an empty kernel cache: a cold first call, " << fixed(c.warmup_ms, 0)
     << " ms warm-up, then " << c.samples << " timing batches of " << fixed(c.sample_ms, 0)
     << " ms. fp32, row-major, alpha = 1, beta = " << c.beta
     << (c.beta != 0 ? " (C's old values random)" : "") << ", inputs preallocated, the same random inputs "
     << "every round. Times are synchronized "
     << "host-wall per call, amortized over a batch (the clock read every 10 us or so), including dispatch. "
     << "Every measurement checks "
     << "the complete output against the FP64 oracle, after the first call and after the timed "
     << "batches, with C " << (c.beta != 0 ? "reset to its old values" : "poisoned by NaN")
     << "; a failed check marks it invalid and leaves it out. "
     << "Values are medians of per-round medians; a speedup is the peer's time over " << cand
     << "'s in the same round, shown as median [min, max] over rounds (an observed range, not a "
     << "confidence interval).\n\n";

  md << "## Warm time per call (us)\n\n| M x N x K |";
  for (const std::string& i : c.impls) md << " " << i << " us |";
  for (size_t i = 1; i < c.impls.size(); ++i) md << " " << cand << " speedup over " << c.impls[i] << " |";
  md << "\n|---|";
  for (size_t i = 0; i < 2 * c.impls.size() - 1; ++i) md << "---:|";
  md << "\n";
  for (const Shape& s : c.shapes) {
    md << "| " << shape_title(s) << " |";
    for (const std::string& i : c.impls) md << " " << fixed(median(round_medians(r, s, i)), 3) << " |";
    for (size_t i = 1; i < c.impls.size(); ++i) md << " " << ratio_text(candidate_ratio(r, s, c.impls[i])) << " |";
    md << "\n";
  }

  md << "\n## Process CPU time per call (us)\n\nThe same batches measured in CPU time "
     << "(all threads of the worker) instead of wall time: with one thread, what a call costs "
     << "when other work shares the machine and takes the CPU away; it misses time spent "
     << "waiting (memory stalls count, sleeping does not).\n\n| M x N x K |";
  for (const std::string& i : c.impls) md << " " << i << " us |";
  for (size_t i = 1; i < c.impls.size(); ++i) md << " " << cand << " speedup over " << c.impls[i] << " |";
  md << "\n|---|";
  for (size_t i = 0; i < 2 * c.impls.size() - 1; ++i) md << "---:|";
  md << "\n";
  for (const Shape& s : c.shapes) {
    md << "| " << shape_title(s) << " |";
    for (const std::string& i : c.impls)
      md << " " << fixed(median(round_medians(r, s, i, &Measurement::cpu_median_us)), 3) << " |";
    for (size_t i = 1; i < c.impls.size(); ++i)
      md << " " << ratio_text(candidate_ratio(r, s, c.impls[i], &Measurement::cpu_median_us)) << " |";
    md << "\n";
  }

  md << "\n## GFLOP/s (from the wall times above)\n\n| M x N x K |";
  for (const std::string& i : c.impls) md << " " << i << " |";
  md << "\n|---|";
  for (size_t i = 0; i < c.impls.size(); ++i) md << "---:|";
  md << "\n";
  for (const Shape& s : c.shapes) {
    md << "| " << shape_title(s) << " |";
    for (const std::string& i : c.impls) md << " " << fixed(gflops(s, median(round_medians(r, s, i))), 1) << " |";
    md << "\n";
  }

  std::vector<std::string> gpu;
  for (const std::string& i : c.impls)
    for (const Shape& s : c.shapes)
      if (std::isfinite(median(round_medians(r, s, i, &Measurement::device_median_us)))) {
        gpu.push_back(i);
        break;
      }
  if (!gpu.empty()) {
    md << "\n## Device-event time per call (us, GPU; same batches)\n\n| M x N x K |";
    for (const std::string& i : gpu) md << " " << i << " us |";
    md << "\n|---|";
    for (size_t i = 0; i < gpu.size(); ++i) md << "---:|";
    md << "\n";
    for (const Shape& s : c.shapes) {
      md << "| " << shape_title(s) << " |";
      for (const std::string& i : gpu) md << " " << fixed(median(round_medians(r, s, i, &Measurement::device_median_us)), 3) << " |";
      md << "\n";
    }
  }

  md << "\n## Cold costs (ms, median over rounds)\n\nFirst call in a fresh process: for tessel "
     << "capture, planning, JIT compile (in parentheses) and first launch; for a library (CBLAS, "
     << "cuBLAS) the first call after loading it (dlopen, and on a GPU device setup and operand "
     << "upload: in parentheses).\n\n| M x N x K |";
  for (const std::string& i : c.impls) md << " " << i << " first call (compile or load) |";
  md << "\n|---|";
  for (size_t i = 0; i < c.impls.size(); ++i) md << "---:|";
  md << "\n";
  for (const Shape& s : c.shapes) {
    md << "| " << shape_title(s) << " |";
    for (const std::string& i : c.impls) {
      double first = cold_median(r, s, i, [](const Measurement& m) { return m.first_call_ms; });
      double part = cold_median(r, s, i, [](const Measurement& m) {
        return std::isfinite(m.compile_ms) ? m.compile_ms : m.load_ms;
      });
      md << " " << fixed(first, 2) << " (" << fixed(part, 2) << ") |";
    }
    md << "\n";
  }

  int valid = int(std::count_if(r.runs.begin(), r.runs.end(), [](const Measurement& m) { return m.valid; }));
  md << "\n## Validation\n\n" << valid << " of " << r.runs.size() << " measurements validated.";
  for (const std::string& i : c.impls) {
    double worst = 0;
    for (const Measurement& m : r.runs)
      if (m.impl == i && std::isfinite(m.rel_err) && m.bound > 0) worst = std::max(worst, m.rel_err / m.bound);
    md << " Largest " << i << " error: " << fixed(worst, 3) << " of the bound.";
  }
  md << "\n";
  // Contention: a single-threaded run that got less than a whole core was
  // sharing the machine, and its times are slower than the code.
  std::vector<double> shares;
  for (const Measurement& m : r.runs) shares.push_back(m.cpu_share);
  double lowest = NAN;
  for (double v : shares)
    if (std::isfinite(v) && !(v >= lowest)) lowest = v;
  md << "\nCPU share during the timed batches (process CPU time / wall time; 1.0 per busy thread "
     << "when nothing else ran): median " << fixed(median(shares), 2) << ", lowest "
     << fixed(lowest, 2) << ".\n";
  for (const Measurement& m : r.runs)
    if (!m.valid)
      md << "- INVALID: round " << m.round << ", " << m.shape.name() << ", " << m.impl << ": "
         << m.error << "\n";

  md << "\n## Plot\n\n";
  if (!plot.empty()) md << "![GFLOP/s per shape](" << plot << ")\n";
  else md << "No plot: " << plot_note << "\n";
  md << "\nRaw samples, machine, versions and hashes: [results.json](results.json).\n";
  return md.str();
}

}  // namespace tessel::bench
