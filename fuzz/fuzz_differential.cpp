// The differential fuzzer (issue 13): a random well-typed TileIR kernel
// (eval/random_kernel.h) and a random plan are compiled and run on sim, on cpu and
// through the FP64 evaluator, and the outputs compared (tests/property/differential.h).
// Every compile step's output (lower, pipeline, plan_barriers with and without the
// pipeline, the GroupIR text round trip) is also re-verified and re-simulated: 0 races
// and the evaluator's numbers at every step; and the final program computes the same
// bits in two worker orders (a difference is a race the detector missed).
//
// A finding: an output outside the tolerance, a race, a pass output that does not
// verify, a crash or sanitizer report, an internal assert, or an exception that is
// not a tessel::Error. A tessel::Error (the lowering refusing a plan) is counted and
// shown, not a finding: the plans are valid by construction, so `--strict` (plain
// mode) and TESSEL_DIFFFUZZ_STRICT=1 (libFuzzer) make it one too.
//
// Two builds of this file:
//   - fuzz_differential (TESSEL_FUZZ=ON, clang, scripts/fuzz.sh): a libFuzzer target.
//     Input bytes: 4 pick the kernel seed, then one byte each for workers, window,
//     sync/async, copy batch, atom, cpu threads, then 4 for the sim worker order;
//     missing bytes read 0. TESSEL_DIFFFUZZ_NO_CPU=1 skips the cpu JIT.
//   - tessel_difffuzz (always built; no clang needed): a loop over seeds,
//       tessel_difffuzz --seeds A:B [--plans P] [--seconds S] [--no-cpu] [--strict]
//                       [--out DIR] [--log-every N] [--resume FILE]
//     runs P plans (default 1; plans after the first draw from wider choices: 1-16
//     workers, window 1-4) for each kernel seed in [A, B) (B empty: no end; stop
//     after S seconds), prints a progress line every N programs and a summary, and
//     writes each failing kernel's report to DIR/fail-SEED-PLAN.txt. Exit status 1
//     when anything failed. `--seeds S:S+1` reruns seed S exactly as the property
//     test ran it (plan 0 is the property test's plan). With --resume, the first
//     seed is the one FILE holds (when it exists), and the next one untried is
//     written there at the end, so that successive runs go on where the last stopped.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <string>

#include "../tests/property/differential.h"

namespace {

using namespace tessel;
using namespace tessel::difftest;

struct Totals {
  int64_t programs = 0, failures = 0, errors = 0, stage_runs = 0, pipelined = 0;
  std::map<std::string, int64_t> error_kinds;  // first line of each tessel::Error seen
};

struct Options {
  bool cpu = true, strict = false;
};

// Checks one kernel with one plan; returns "" or the report of what failed.
std::string check(const RandomKernel& rk, const PlanChoice& choice, const Options& o, Totals& t) {
  ++t.programs;
  Reference ref = reference(rk);
  std::vector<Verdict> verdicts;
  std::string problem;
  Stages stages;
  try {
    stages = compile_stages(rk, choice.plan, &problem);
  } catch (const Error& e) {
    ++t.errors;
    std::string msg = e.what();
    ++t.error_kinds[msg.substr(0, msg.find('\n'))];
    if (!o.strict) return "";
    Verdict v;
    v.what = "compile";
    v.ok = false;
    v.error = msg;
    return describe(rk, choice, {v});
  }
  if (!problem.empty()) return describe(rk, choice, {}) + problem + "\n";
  t.pipelined += stages.loops_pipelined;
  for (size_t i = 0; i < stages.names.size(); ++i) {
    verdicts.push_back(simulate_stage(rk, ref, stages.programs[i], stages.names[i], choice.sim_seed));
    ++t.stage_runs;
  }
  verdicts.push_back(same_in_any_order(rk, ref, stages, choice.sim_seed));
  verdicts.push_back(run_target(rk, ref, choice, TargetKind::Sim));
  if (o.cpu) verdicts.push_back(run_target(rk, ref, choice, TargetKind::Cpu));
  for (const Verdict& v : verdicts)
    if (!v.ok) return describe(rk, choice, verdicts);
  return "";
}

RandomKernel kernel_for(uint64_t seed) {
  RandomKernelOptions ko;
  ko.narrow_tensors = false;  // sim and cpu read f32 tensors
  return random_kernel(seed, ko);
}

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto byte = [&](size_t i) -> uint32_t { return i < size ? data[i] : 0; };
  uint64_t seed = byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24;
  PlanDraw d;
  d.workers = kWorkerChoices[byte(4) % 6];
  d.window = 1 + static_cast<int>(byte(5) % 3);
  d.async = byte(6) & 1;
  d.copy_batch = kCopyBatchChoices[byte(7) % 5];
  d.atom_pick = static_cast<int>(byte(8));
  d.threads = 1 + static_cast<int>(byte(9) & 1);
  d.sim_seed = 1 + (byte(10) | byte(11) << 8 | byte(12) << 16 | byte(13) << 24);
  static Totals totals;
  static const Options options = [] {
    set_cpu_scratch_poison(true);
    Options o;
    o.cpu = !env_on("TESSEL_DIFFFUZZ_NO_CPU");
    o.strict = env_on("TESSEL_DIFFFUZZ_STRICT");
    return o;
  }();
  std::string report;
  try {
    RandomKernel rk = kernel_for(seed);
    report = check(rk, make_plan(rk, d), options, totals);
  } catch (const std::exception& e) {
    report = "kernel seed " + std::to_string(seed) + ": an exception escaped: " + e.what() + "\n";
  }
  if (!report.empty()) {
    std::fprintf(stderr, "%s", report.c_str());
    std::abort();
  }
  return 0;
}

#ifdef TESSEL_DIFFFUZZ_MAIN
#include <chrono>
#include <filesystem>
#include <iostream>

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "tessel_difffuzz: %s\nusage: tessel_difffuzz --seeds A:B [--plans P] [--seconds S] "
               "[--no-cpu] [--strict] [--out DIR] [--log-every N] [--resume FILE]\n",
               why.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t lo = 0, hi = UINT64_MAX;
  int plans = 1;
  double seconds = 0;
  int64_t log_every = 100;
  std::string out_dir, resume;
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--seeds") {
      std::string v = value();
      size_t colon = v.find(':');
      if (colon == std::string::npos) usage("--seeds takes A:B");
      lo = std::strtoull(v.substr(0, colon).c_str(), nullptr, 10);
      std::string h = v.substr(colon + 1);
      hi = h.empty() ? UINT64_MAX : std::strtoull(h.c_str(), nullptr, 10);
    } else if (a == "--plans") {
      plans = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--seconds") {
      seconds = std::atof(value().c_str());
    } else if (a == "--no-cpu") {
      o.cpu = false;
    } else if (a == "--strict") {
      o.strict = true;
    } else if (a == "--out") {
      out_dir = value();
    } else if (a == "--resume") {
      resume = value();
    } else if (a == "--log-every") {
      log_every = std::max<int64_t>(1, std::atoll(value().c_str()));
    } else {
      usage("unknown argument " + a);
    }
  }
  if (hi == UINT64_MAX && seconds <= 0) usage("an open seed range needs --seconds");
  if (!resume.empty()) {
    std::ifstream in(resume);
    uint64_t next = 0;
    if (in >> next) lo = next;
    if (lo >= hi) usage("--resume " + resume + " starts at " + std::to_string(lo) + ", past the range");
  }
  set_cpu_scratch_poison(true);
  if (!out_dir.empty()) std::filesystem::create_directories(out_dir);
  Totals t;
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto progress = [&](uint64_t seed) {
    std::printf("[%.0f s] programs %lld (seeds %llu..%llu), failures %lld, tessel::Errors %lld, stage sims %lld, "
                "loops pipelined %lld, %.2f programs/s\n",
                elapsed(), static_cast<long long>(t.programs), static_cast<unsigned long long>(lo),
                static_cast<unsigned long long>(seed), static_cast<long long>(t.failures),
                static_cast<long long>(t.errors), static_cast<long long>(t.stage_runs),
                static_cast<long long>(t.pipelined), t.programs / std::max(elapsed(), 1e-9));
    std::fflush(stdout);
  };
  uint64_t seed = lo;
  for (; seed < hi && (seconds <= 0 || elapsed() < seconds); ++seed) {
    for (int p = 0; p < plans; ++p) {
      std::string report;
      try {
        RandomKernel rk = kernel_for(seed);
        // Plan 0 is the property test's plan for this seed; the others draw wider.
        PlanChoice c = p == 0 ? random_plan(rk, seed)
                              : random_plan(rk, seed ^ (static_cast<uint64_t>(p) << 40), true);
        report = check(rk, c, o, t);
      } catch (const std::exception& e) {
        report = "kernel seed " + std::to_string(seed) + ": an exception escaped: " + e.what() + "\n";
      }
      if (!report.empty()) {
        ++t.failures;
        std::printf("FAILURE (seed %llu, plan %d)\n%s", static_cast<unsigned long long>(seed), p,
                    report.c_str());
        if (!out_dir.empty())
          std::ofstream(out_dir + "/fail-" + std::to_string(seed) + "-" + std::to_string(p) + ".txt") << report;
      }
      if (t.programs % log_every == 0) progress(seed);
    }
  }
  progress(seed);
  if (!resume.empty()) std::ofstream(resume) << seed << "\n";
  for (const auto& [msg, n] : t.error_kinds) std::printf("  tessel::Error x%lld: %s\n", static_cast<long long>(n), msg.c_str());
  std::printf("%lld programs in %.1f s: %lld failed\n", static_cast<long long>(t.programs), elapsed(),
              static_cast<long long>(t.failures));
  return t.failures ? 1 : 0;
}
#endif
