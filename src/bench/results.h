// The results of one `tessel bench` run: what was asked, where it ran, every
// measurement, and the statistics derived from them. The writers (report.h) turn
// this into results.json and results.md.
#pragma once
#include <string>
#include <vector>

#include "bench/machine.h"
#include "bench/shape.h"
#include "bench/stats.h"

namespace tessel::bench {

struct BenchConfig {
  std::vector<std::string> impls;  // in the user's order; impls[0] is the candidate
  std::vector<Shape> shapes;
  int rounds = 4;
  double warmup_ms = 200;
  int samples = 9;
  double sample_ms = 40;
  int threads = 1;
  std::string tile;       // tessel's named plan, "" = dispatch
  std::string dtype = "fp32";  // --dtype: how A and B are stored (cuda impls)
  std::string plan;       // --plan: tessel's plan spec (bench/plan_spec.h), "" = none
  double beta = 0;        // --beta: C = A B + beta C (cpu impls)
  std::string reference;  // the --reference executable, "" when none
  std::string out_dir;
  std::string command;    // the command line, shell-quoted
};

struct ImplInfo {
  std::string name;
  std::string executable, executable_sha256;  // the worker that ran it
  std::string library, library_sha256;       // the CBLAS file loaded, "" for tessel
  std::string version;                        // library version, or "tessel <sha prefix>"
};

struct Measurement {
  int round = 0, position = 0;  // position: place in its (round, shape) order
  Shape shape;
  std::string impl;
  bool valid = false;
  std::string error;                // why invalid; "" when valid
  std::vector<double> samples_us;   // per batch, host wall per call
  double median_us = 0;             // median of the batches (NaN when invalid)
  double device_median_us = 0;      // GPU: median of device-event time per call, else NaN
  double cpu_share = 0;             // median over batches of process CPU time / wall
  double cpu_median_us = 0;         // median over batches of process CPU time per call
  double first_call_ms = 0;         // the cold first call
  double load_ms = 0, compile_ms = 0;  // compile_ms: tessel only (NaN otherwise)
  double rel_err = 0, bound = 0;    // the larger of the two checks, and the bound
  std::string worker_json;          // the worker's line, verbatim ("" when it failed)
};

struct BenchResults {
  BenchConfig config;
  MachineInfo machine;
  std::vector<ImplInfo> impls;
  std::vector<Measurement> runs;  // in execution order
  std::string started, finished, loadavg_finished;
};

// Per-round median times of `impl` on `shape`, NaN for invalid or missing rounds:
// host wall (median_us) by default, or device_median_us, cpu_median_us.
std::vector<double> round_medians(const BenchResults& r, const Shape& shape,
                                  const std::string& impl,
                                  double Measurement::*time = &Measurement::median_us);

// Speedup of the candidate (impls[0]) over `peer` on `shape`, paired by round.
PairedRatio candidate_ratio(const BenchResults& r, const Shape& shape, const std::string& peer,
                            double Measurement::*time = &Measurement::median_us);

}  // namespace tessel::bench
