// The tessel command line.
//   tessel gemm M N K [options]      run one GEMM on random inputs
//   tessel explain M N K [options]   print TileIR, the plan and GroupIR after every step
//   tessel bench --out DIR [options] benchmark against peers (src/bench/driver.h)
//   tessel run|explain KERNEL.tir, opt|sim FILE.gir   kernels as text (kernel_commands.h)
//   tessel plans|tune KERNEL.tir      the planner (plan_commands.h)
// Bad arguments print one line on stderr and exit with status 2.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/driver.h"
#include "bench/worker.h"
#include "kernel_commands.h"
#include "plan_commands.h"
#include "ops/gemm.h"
#include "ops/gemm_reference.h"
#include "kernel_commands.h"
#include "tessel/error.h"
#include "tessel/version.h"

using namespace tessel;

namespace {

const char* kUsage =
    "usage: tessel gemm|explain M N K [--target cpu|sim|cuda] [--dtype fp32|tf32|bf16|fp16] [--arch sm_NN] [--alpha A] [--beta B]\n"
    "         [--threads T] [--tile BMxBNxBK] [--workers W] [--copy-batch C] [--window W] [--copy sync|async|tma]\n"
    "         [--producers P] [--cluster C] [--persistent G] [--tile-band B] [--atom fma|mma.sync|wgmma]\n"
    "         [--frag-buffers 1|2] [--split-k S] [--no-coalesce-barriers] [--seed S] [--check] [--json]\n"
    "  gemm:    C = alpha*A*B + beta*C on random fp32 inputs (row-major).\n"
    "           --check compares the complete output with an FP64 oracle.\n"
    "           --split-k S (cuda): K in S slices summed by a second kernel; 0 = the default's choice, 1 = none.\n"
    "  explain: TileIR, the plan and GroupIR after every compile step; on cuda, the kernel a call with\n"
    "           this --beta compiles (for beta 0, one without C's loads).\n"
    "usage: tessel bench --out DIR [options]   (tessel bench --help)\n"
    "usage: tessel run KERNEL.tir --size NAME=V ... [--target sim|cpu|cuda] [--tile NAME=V ...] [--workers W]\n"
    "         [--scalar NAME=V ...] [--seed S] [--threads T] [--check] [--json] [--repeat N] [--fix-sizes]\n"
    "           --fix-sizes: a kernel for these --size values only (Plan::sizes: bounds become constants)\n"
    "           --repeat N: also N warm launches on one set of inputs, their median time (cuda: tensors\n"
    "           in device memory, and the device time too); without --check, off the sim, only that\n"
    "       tessel explain KERNEL.tir --size NAME=V ... [plan options]\n"
    "       tessel opt FILE.gir [--pass plan-barriers|pipeline=W|pipeline-async=W|tma=W|tma-ws=W[,C] ...]\n"
    "                 [--size NAME=V ... --pass specialize]\n"
    "       tessel sim FILE.gir --size NAME=V ... [--scalar NAME=V ...] [--seed S]\n"
    "usage: tessel plans KERNEL.tir --size NAME=V,... [--top K] [--calibration FILE]   (docs/planner.md)\n"
    "       tessel tune KERNEL.tir --shapes \"NAME=V,...;...\" | --calibrate --draws N --out FILE | --heldout N --out DIR\n"
    "                 | --refit FILE.samples.json[,MORE...] --out FILE | --evaluate heldout-KERNEL.json --calibration FILE\n";

[[noreturn]] void bad(const std::string& message) {
  user_error(ErrorKind::InvalidArgument, message);
}

int64_t parse_int(const std::string& what, const std::string& s) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) bad(what + ": '" + s + "' is not an integer");
  return v;
}

// An int option: values outside [lo, hi] are refused with the number the user gave,
// before any narrowing can change it.
int parse_int_option(const std::string& what, const std::string& s, int64_t lo, int64_t hi) {
  int64_t v = parse_int(what, s);
  if (v < lo || v > hi)
    bad(what + " " + std::to_string(v) + " out of range [" + std::to_string(lo) + ", " +
        std::to_string(hi) + "]");
  return static_cast<int>(v);
}

double parse_double(const std::string& what, const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v)) bad(what + ": '" + s + "' is not a finite number");
  return v;
}

struct Args {
  std::string command;
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1, beta = 0;
  bool check = false, json = false;
  uint64_t seed = 42;
  GemmOptions options;
};

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<std::string> pos;
  std::optional<Plan> plan;
  int64_t workers = -1, copy_batch = -1, window = -1, frag_buffers = -1, producers = -1, cluster = -1, persistent = -1,
          tile_band = -1;
  std::string atom;
  std::string tile, copy;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) bad(s + " needs a value");
      return argv[++i];
    };
    if (s == "--target") a.options.target = parse_target(value());
    else if (s == "--alpha") a.alpha = parse_double(s, value());
    else if (s == "--beta") a.beta = parse_double(s, value());
    else if (s == "--threads") a.options.threads = parse_int_option(s, value(), 0, 4096);
    else if (s == "--tile") tile = value();
    else if (s == "--workers") workers = parse_int_option(s, value(), 1, 1 << 20);
    else if (s == "--copy-batch") copy_batch = parse_int_option(s, value(), 1, 1 << 20);
    else if (s == "--window") window = parse_int_option(s, value(), 1, 1 << 20);
    else if (s == "--copy") copy = value();
    else if (s == "--producers") producers = parse_int_option(s, value(), 0, 1024);
    else if (s == "--cluster") cluster = parse_int_option(s, value(), 1, 1024);
    else if (s == "--persistent") persistent = parse_int_option(s, value(), 0, 1 << 16);
    else if (s == "--tile-band") tile_band = parse_int_option(s, value(), 1, 1 << 16);
    else if (s == "--split-k") a.options.split_k = static_cast<int>(parse_int_option(s, value(), 0, 4096));
    else if (s == "--atom") atom = value();
    else if (s == "--frag-buffers") frag_buffers = parse_int_option(s, value(), 1, 2);
    else if (s == "--seed") a.seed = static_cast<uint64_t>(parse_int(s, value()));
    else if (s == "--dtype") a.options.precision = parse_precision(value());
    else if (s == "--arch") a.options.arch = value();
    else if (s == "--no-coalesce-barriers") a.options.coalesce_barriers = false;
    else if (s == "--check") a.check = true;
    else if (s == "--json") a.json = true;
    else if (s.size() > 1 && s[0] == '-' && !std::isdigit(static_cast<unsigned char>(s[1])))
      bad("unknown option " + s);
    else pos.push_back(s);
  }
  if (pos.size() != 4) bad("expected a command and three sizes M N K");
  a.command = pos[0];
  if (a.command != "gemm" && a.command != "explain") bad("unknown command '" + a.command + "'");
  a.m = parse_int("M", pos[1]);
  a.n = parse_int("N", pos[2]);
  a.k = parse_int("K", pos[3]);
  if (!copy.empty() && copy != "sync" && copy != "async" && copy != "tma")
    bad("--copy: expected sync, async or tma, got '" + copy + "'");
  if (!atom.empty() && atom != "fma" && atom != "mma.sync" && atom != "wgmma")
    bad("--atom: expected fma, mma.sync or wgmma, got '" + atom + "'");
  if (!tile.empty() || workers >= 0 || copy_batch >= 0 || window >= 0 || !copy.empty() || !atom.empty() ||
      frag_buffers >= 0 || producers >= 0 || cluster >= 0 || persistent >= 0 || tile_band >= 0) {
    Plan p = default_gemm_plan(a.options.target, a.m, a.n, a.k, a.options.precision, a.options.arch);
    if (!atom.empty()) {  // the atom's own register block; --workers counts its workers
      p.atom = atom == "wgmma" ? AtomKind::Wgmma : atom == "mma.sync" ? AtomKind::MmaSync : AtomKind::Fma;
      p.atom_m = p.atom == AtomKind::Wgmma ? 64 : p.atom == AtomKind::MmaSync ? 16 : p.atom_m;
      p.atom_n = p.atom == AtomKind::Wgmma ? 64 : p.atom == AtomKind::MmaSync ? 8 : p.atom_n;
    }
    if (!tile.empty()) {
      std::vector<int64_t> ext;
      std::stringstream ss(tile);
      for (std::string part; std::getline(ss, part, 'x');) ext.push_back(parse_int("--tile", part));
      if (ext.size() != 3) bad("--tile: expected BMxBNxBK, got '" + tile + "'");
      set_gemm_tile(p, ext[0], ext[1], ext[2]);
      if (a.options.target != TargetKind::Cuda) p.atom_m = p.atom_n = 1;  // the front door picks the atom the tile allows
    }
    // validate_plan holds the targets' tighter limits.
    if (workers >= 0) p.workers = static_cast<int>(workers);
    if (copy_batch >= 0) p.copy_batch = static_cast<int>(copy_batch);
    if (window >= 0) p.window = static_cast<int>(window);
    if (!copy.empty()) p.async_copy = copy == "async", p.tma = copy == "tma";
    if (!p.tma) p.producers = 0;  // producers issue tma copies: a thread-copy plan has none
    if (producers >= 0) p.producers = static_cast<int>(producers);
    if (cluster >= 0) p.cluster = static_cast<int>(cluster);
    if (persistent >= 0) p.persistent = static_cast<int>(persistent);
    if (tile_band >= 0) p.tile_band = static_cast<int>(tile_band);
    if (frag_buffers >= 0) p.frag_buffers = static_cast<int>(frag_buffers);
    a.options.plan = p;
  }
  a.options.sim_seed = a.seed;
  a.options.count_fences = true;
  return a;
}

// `tessel explain` on a file rather than sizes: any argument that is not a number.
bool is_text_kernel(const std::string& arg) {
  return !arg.empty() && !std::isdigit(static_cast<unsigned char>(arg[0])) && arg[0] != '-';
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

int run_gemm(const Args& a) {
  int64_t lda = std::max<int64_t>(1, a.k), ldb = std::max<int64_t>(1, a.n), ldc = ldb;
  // The CLI allocates its own inputs: refuse what cannot be allocated before trying.
  constexpr int64_t kMaxElements = int64_t{1} << 33;
  int64_t ea = 0, eb = 0, ec = 0;
  if (a.m < 0 || a.n < 0 || a.k < 0) bad("sizes must be non-negative");
  if (__builtin_mul_overflow(a.m, lda, &ea) || __builtin_mul_overflow(a.k, ldb, &eb) ||
      __builtin_mul_overflow(a.m, ldc, &ec) || ea > kMaxElements || eb > kMaxElements ||
      ec > kMaxElements)
    bad("gemm " + std::to_string(a.m) + "x" + std::to_string(a.n) + "x" + std::to_string(a.k) +
        " needs more than " + std::to_string(kMaxElements) + " elements per matrix");
  std::mt19937_64 rng(a.seed);
  std::vector<float> A(a.m * lda), B(a.k * ldb), C(a.m * ldc);
  fill_random(A, rng);
  fill_random(B, rng);
  fill_random(C, rng);
  for (float& x : A) x = round_to_storage(a.options.precision, x);  // what the device stores
  for (float& x : B) x = round_to_storage(a.options.precision, x);
  if (a.beta == 0) std::fill(C.begin(), C.end(), NAN);  // must all be overwritten
  std::vector<double> oracle;
  if (a.check)
    oracle = gemm_oracle(a.m, a.n, a.k, a.alpha, A.data(), lda, B.data(), ldb, a.beta, C.data(), ldc);
  GemmOptions options = a.options;
  options.time_device = options.target == TargetKind::Cuda;
  GemmReport r = gemm(a.m, a.n, a.k, float(a.alpha), A.data(), lda, B.data(), ldb, float(a.beta),
                      C.data(), ldc, options);
  double err = a.check ? gemm_relative_error(a.m, a.n, C.data(), ldc, oracle) : NAN;
  double bound = precision_error_bound(a.options.precision, a.k);
  bool ok = !a.check || (err <= bound && r.races == 0);
  const Plan& p = r.plan;
  if (a.json) {
    std::printf(
        "{\"version\": \"%s\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"target\": \"%s\", \"alpha\": %s, \"beta\": %s, "
        "\"threads\": %d, \"plan_source\": \"%s\", \"plan\": {\"tile\": [%lld, %lld, %lld], \"workers\": %d, "
        "\"worker_grid\": [%d, %d], \"window\": %d, \"copy\": \"%s\", \"copy_batch\": %d, \"atom\": [%lld, %lld], \"atom_kind\": \"%s\", \"frag_buffers\": %d, \"producers\": %d, \"cluster\": %d, \"persistent\": %d, \"tile_band\": %d, \"split_k\": %lld}, "
        "\"rel_err\": %s, \"bound\": %s, \"ok\": %s, \"races\": %lld, \"compile_ms\": %s, "
        "\"run_us\": %s, \"device_us\": %s, \"dtype\": \"%s\", \"fences\": {\"static_before\": %d, \"static_after\": %d, "
        "\"loop_before\": %d, \"loop_after\": %d, \"dynamic_before\": %lld, "
        "\"dynamic_after\": %lld, \"dynamic_before_formula\": \"%s\", "
        "\"dynamic_after_formula\": \"%s\"}}\n",
        version(), (long long)a.m, (long long)a.n, (long long)a.k, target_name(p.target),
        json_number(a.alpha).c_str(), json_number(a.beta).c_str(), a.options.threads, r.plan_source.c_str(),
        (long long)p.tile("BM"), (long long)p.tile("BN"), (long long)p.tile("BK"), p.workers, p.worker_rows,
        p.worker_cols, p.window, p.tma ? "tma" : p.async_copy ? "async" : "sync", p.copy_batch, (long long)p.atom_m, (long long)p.atom_n,
        atom_name(p.atom), p.frag_buffers, p.producers, p.cluster, p.persistent, p.tile_band, (long long)r.split_k, a.check ? json_number(err).c_str() : "null", json_number(bound).c_str(),
        a.check ? (ok ? "true" : "false") : "null", (long long)r.races,
        json_number(r.compile_ms).c_str(), json_number(r.run_us).c_str(),
        options.time_device ? json_number(r.device_us).c_str() : "null", precision_name(a.options.precision),
        r.fences.static_before,
        r.fences.static_after, r.fences.loop_before, r.fences.loop_after,
        (long long)r.fences_dynamic_before, (long long)r.fences_dynamic_after,
        r.fences.dynamic_before.c_str(), r.fences.dynamic_after.c_str());
  } else {
    std::printf("gemm %lldx%lldx%lld on %s, plan (%s) %s%s\n", (long long)a.m, (long long)a.n, (long long)a.k,
                target_name(p.target), r.plan_source.c_str(), p.to_string().c_str(),
                r.split_k > 1 ? (", split-K " + std::to_string(r.split_k) + " slices").c_str() : "");
    double gflops = r.run_us > 0 ? 2.0 * a.m * a.n * a.k / (r.run_us * 1e3) : 0;
    std::printf("compile %.1f ms, run %.1f us (%.1f GFLOP/s, one cold call)\n", r.compile_ms,
                r.run_us, gflops);
    if (options.time_device) std::printf("device %.1f us (CUDA events)\n", r.device_us);
    if (a.check)
      std::printf("rel_err %.3g (bound %.3g), races %lld: %s\n", err, bound, (long long)r.races,
                  ok ? "ok" : "FAILED");
    for (const std::string& race : r.race_messages) std::printf("  %s\n", race.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    std::string command = argc >= 2 ? argv[1] : "";
    if (command == "bench") return bench::run_bench_command(argc - 1, argv + 1);
    if (command == "bench-worker") return bench::run_bench_worker(argc - 1, argv + 1);  // internal
    // Kernels given as text files; `explain M N K` stays GEMM's.
    if (command == "plans") return plans_command(argc, argv);  // plan_commands.h
    if (command == "tune") return tune_command(argc, argv);
    if (command == "run") return run_command(argc, argv);
    if (command == "opt") return opt_command(argc, argv);
    if (command == "sim") return sim_command(argc, argv);
    if (command == "explain" && argc >= 3 && is_text_kernel(argv[2])) return explain_file_command(argc, argv);
    if (command == "run") return run_command(argc, argv);
    if (command == "opt") return opt_command(argc, argv);
    if (command == "sim") return sim_command(argc, argv);
    if (command == "--version" || command == "version") {
      std::printf("tessel %s\n", version());
      return 0;
    }
    // `explain FILE.tir ...`: a kernel from text; `explain M N K ...`: a GEMM.
    if (command == "explain" && argc >= 3 && std::string(argv[2]).find(".tir") != std::string::npos)
      return explain_file_command(argc, argv);
    Args a = parse_args(argc, argv);
    if (a.command == "explain") {
      std::fputs(explain_gemm(a.m, a.n, a.k, a.options, float(a.beta)).c_str(), stdout);
      return 0;
    }
    return run_gemm(a);
  } catch (const Error& e) {
    std::fprintf(stderr, "tessel: %s: %s\n", error_kind_name(e.kind()), e.what());
    if (e.kind() == ErrorKind::InvalidArgument && argc < 2) std::fputs(kUsage, stderr);
    return 2;
  } catch (const std::length_error&) {
    std::fprintf(stderr, "tessel: a problem of this size cannot be allocated\n");
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tessel: out of memory for a problem of this size\n");
    return 2;
  }
}
