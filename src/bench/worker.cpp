#include "bench/worker.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "bench/cblas_library.h"
#include "ops/gemm.h"
#include "ops/gemm_reference.h"
#include "tessel/error.h"

namespace tessel::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

[[noreturn]] void bad(const std::string& message) {
  user_error(ErrorKind::InvalidArgument, "bench-worker: " + message);
}

double parse_number(const std::string& what, const std::string& s, double lo, double hi) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !(v >= lo && v <= hi))
    bad(what + ": '" + s + "' is not a number in [" + std::to_string(lo) + ", " +
        std::to_string(hi) + "]");
  return v;
}

WorkerRequest parse_request(int argc, char** argv) {
  WorkerRequest r;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (i + 1 >= argc) bad(s + " needs a value");
    std::string v = argv[++i];
    if (s == "--impl") r.impl = v;
    else if (s == "--shape") r.shape = parse_shape(v);
    else if (s == "--warmup-ms") r.warmup_ms = parse_number(s, v, 0, 1e6);
    else if (s == "--samples") r.samples = int(parse_number(s, v, 1, 1e6));
    else if (s == "--sample-ms") r.sample_ms = parse_number(s, v, 0, 1e6);
    else if (s == "--threads") r.threads = int(parse_number(s, v, 0, 4096));
    else if (s == "--tile") r.tile = v;
    else if (s == "--seed") r.seed = uint64_t(parse_number(s, v, 0, 1e15));
    else bad("unknown option " + s);
  }
  if (r.impl != "tessel" && r.impl != "openblas" && r.impl != "blis")
    bad("unknown implementation '" + r.impl + "'");
  return r;
}

// A named plan: the dispatch's plan for this shape with the tile replaced (the
// front door then picks the atom and worker grid the tile allows), as in `tessel gemm --tile`.
Plan tile_plan(const std::string& tile, const Shape& s) {
  Shape t = parse_shape(tile);
  Plan p = default_gemm_plan(TargetKind::Cpu, s.m, s.n, s.k);
  p.bm = t.m, p.bn = t.n, p.bk = t.k;
  p.atom_m = p.atom_n = 1;
  return p;
}

// What the kernel cache looks like before the first call: a benchmark that
// claims cold costs must show that nothing was cached.
std::string cache_state() {
  const char* dir = std::getenv("TESSEL_CACHE_DIR");
  if (!dir || !*dir) return "default cache directory (may be warm)";
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec) || std::filesystem::is_empty(dir, ec))
    return "cold: empty TESSEL_CACHE_DIR";
  return "warm: TESSEL_CACHE_DIR not empty";
}

// Calls f until about `ms` have passed (at least once); returns us per call.
double time_batch(const std::function<void()>& f, double ms, int64_t* calls_out) {
  int64_t calls = 0;
  auto start = Clock::now();
  double elapsed = 0;
  do {
    f();
    ++calls;
    elapsed = ms_since(start);
  } while (elapsed < ms);
  if (calls_out) *calls_out = calls;
  return elapsed * 1e3 / double(calls);
}

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

}  // namespace

std::vector<std::string> worker_args(const WorkerRequest& r) {
  auto num = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  std::vector<std::string> args = {"bench-worker",   "--impl",      r.impl,
                                   "--shape",        r.shape.name(), "--warmup-ms",
                                   num(r.warmup_ms), "--samples",   std::to_string(r.samples),
                                   "--sample-ms",    num(r.sample_ms), "--threads",
                                   std::to_string(r.threads), "--seed", std::to_string(r.seed)};
  if (!r.tile.empty()) args.insert(args.end(), {"--tile", r.tile});
  return args;
}

int run_bench_worker(int argc, char** argv) {
  WorkerRequest r = parse_request(argc, argv);
  const Shape& s = r.shape;
  Json out;
  out["impl"] = r.impl;
  out["shape"] = s.name();
  out["threads"] = r.threads;
  out["cache"] = cache_state();

  // Loading is part of the cold cost: dlopen for a BLAS, nothing for tessel
  // (its capture and compile happen in the first call).
  auto load_start = Clock::now();
  std::unique_ptr<CblasLibrary> blas;
  if (r.impl != "tessel") {
    blas = std::make_unique<CblasLibrary>(r.impl);
    blas->set_threads(r.threads > 0 ? r.threads : int(std::thread::hardware_concurrency()));
    out["library"] = {{"path", blas->path()}, {"version", blas->version()}};
  }
  double load_ms = ms_since(load_start);

  std::mt19937_64 rng(r.seed);
  std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n);
  fill_random(a, rng);
  fill_random(b, rng);
  std::vector<double> want = gemm_oracle(s.m, s.n, s.k, 1.0, a.data(), s.k, b.data(), s.n, 0.0,
                                         nullptr, s.n);
  double bound = gemm_error_bound(s.k);

  GemmOptions options;
  options.threads = r.threads;
  if (!r.tile.empty()) options.plan = tile_plan(r.tile, s);
  GemmReport report;
  std::function<void()> call;
  if (blas)
    call = [&] { blas->sgemm(int(s.m), int(s.n), int(s.k), 1.0f, a.data(), b.data(), 0.0f, c.data()); };
  else
    call = [&] {
      report = gemm(s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n, options);
    };
  auto poison = [&] { std::fill(c.begin(), c.end(), NAN); };

  poison();
  auto first_start = Clock::now();
  call();
  double first_call_ms = ms_since(first_start);
  double err_first = gemm_relative_error(s.m, s.n, c.data(), s.n, want);
  Json cold = {{"load_ms", load_ms}, {"first_call_ms", first_call_ms}};
  if (!blas) {
    cold["compile_ms"] = report.compile_ms;  // capture, planning, lowering, JIT compile
    cold["first_launch_us"] = report.run_us;
    out["plan"] = report.plan.to_string();
  }
  out["cold"] = cold;

  time_batch(call, r.warmup_ms, nullptr);
  Json samples = Json::array(), calls = Json::array();
  for (int i = 0; i < r.samples; ++i) {
    int64_t n = 0;
    samples.push_back(time_batch(call, r.sample_ms, &n));
    calls.push_back(n);
  }
  out["samples_us"] = samples;
  out["calls"] = calls;

  poison();
  call();
  double err_last = gemm_relative_error(s.m, s.n, c.data(), s.n, want);
  out["rel_err_first"] = number(err_first);
  out["rel_err_last"] = number(err_last);
  out["bound"] = bound;
  out["valid"] = err_first <= bound && err_last <= bound;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace tessel::bench
