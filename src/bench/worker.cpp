#include "bench/worker.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/gemm_impl.h"
#include "ops/gemm_precision.h"
#include "ops/gemm_reference.h"
#include "runtime/kernel_cache.h"
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
    else if (s == "--oracle-dir") r.oracle_dir = v;
    else if (s == "--dtype") r.dtype = precision_name(parse_precision(v));
    else if (s == "--plan") r.plan = v;
    else if (s == "--beta") r.beta = parse_number(s, v, -1e6, 1e6);
    else bad("unknown option " + s);
  }
  return r;
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

struct Batch {
  double host_us = 0, device_us = NAN;  // per call
  double cpu_share = 0;  // process CPU time / wall: 1 per busy thread when nothing else ran
  int64_t calls = 0;
};

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

// Calls until about `ms` have passed (at least once), then waits for the
// device: host wall per call, amortized over the batch, launch included; and,
// on a GPU, device-event time per call over the same batch. The clock is read
// after a run of calls that doubles until a run takes kClockEveryUs: a read costs
// about 25 ns in this project's VM (tsc clock source), 8% of a 32^3 call.
constexpr double kClockEveryUs = 10;
Batch time_batch(GemmImpl& impl, double ms) {
  Batch b;
  impl.sync();
  bool device = impl.has_device_timer();
  double cpu_start = process_cpu_ms();
  auto start = Clock::now();
  if (device) impl.device_timer_start();
  for (int64_t run = 1;;) {
    for (int64_t i = 0; i < run; ++i) impl.call();
    b.calls += run;
    const double elapsed = ms_since(start);
    if (elapsed >= ms) break;
    if (elapsed * 1e3 / double(b.calls) * double(run) < kClockEveryUs) run *= 2;
  }
  if (device) b.device_us = impl.device_timer_stop_ms() * 1e3 / double(b.calls);
  impl.sync();
  double wall_ms = ms_since(start);
  b.host_us = wall_ms * 1e3 / double(b.calls);
  b.cpu_share = (process_cpu_ms() - cpu_start) / wall_ms;
  return b;
}

// The FP64 oracle of A * B for this request's inputs: read from the oracle
// directory when an earlier worker left it there, else computed (and left there).
std::vector<double> oracle(const WorkerRequest& r, const std::vector<float>& a,
                           const std::vector<float>& b) {
  const Shape& s = r.shape;
  size_t bytes = size_t(s.m * s.n) * sizeof(double);
  std::string path;
  if (!r.oracle_dir.empty()) {
    path = r.oracle_dir + "/oracle-" + s.name() + "-" + std::to_string(r.seed) +
           (r.dtype == "fp32" ? "" : "-" + r.dtype) + ".f64";
    std::string data;
    if (read_file(path, &data) && data.size() == bytes) {
      std::vector<double> want(s.m * s.n);
      std::memcpy(want.data(), data.data(), bytes);
      return want;
    }
  }
  std::vector<double> want =
      gemm_oracle(s.m, s.n, s.k, 1.0, a.data(), s.k, b.data(), s.n, 0.0, nullptr, s.n);
  if (!path.empty())
    write_file_atomic(path, std::string(reinterpret_cast<const char*>(want.data()), bytes));
  return want;
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
  if (!r.oracle_dir.empty()) args.insert(args.end(), {"--oracle-dir", r.oracle_dir});
  if (r.dtype != "fp32") args.insert(args.end(), {"--dtype", r.dtype});
  if (!r.plan.empty()) args.insert(args.end(), {"--plan", r.plan});
  if (r.beta != 0) args.insert(args.end(), {"--beta", num(r.beta)});  // (so a reference of before runs beta 0)
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

  if (r.beta != 0 && (r.impl == "tessel-cuda" || r.impl == "cublas"))
    bad("--beta: " + r.impl + " runs beta 0 only (the cpu implementations take it)");
  std::mt19937_64 rng(r.seed);
  std::vector<float> a(s.m * s.k), b(s.k * s.n);
  fill_random(a, rng);
  fill_random(b, rng);
  // 16-bit storage: the oracle multiplies the stored values.
  const GemmPrecision precision = parse_precision(r.dtype);
  for (float& x : a) x = round_to_storage(precision, x);
  for (float& x : b) x = round_to_storage(precision, x);
  std::vector<double> want = oracle(r, a, b);
  // beta != 0: C's old values are random too, the same before each checked call.
  std::vector<float> c0;
  if (r.beta != 0) {
    c0.resize(s.m * s.n);
    fill_random(c0, rng);
    for (size_t i = 0; i < want.size(); ++i) want[i] += r.beta * double(c0[i]);
  }
  auto reset_output = [&](GemmImpl& impl) {
    if (r.beta != 0) impl.set_output(c0);
    else impl.poison();
  };
  double bound = precision_error_bound(precision, s.k);
  out["dtype"] = r.dtype;
  auto check = [&](GemmImpl& impl) {
    std::vector<float> c = impl.output();
    return gemm_relative_error(s.m, s.n, c.data(), s.n, want);
  };

  // Loading is part of the cold cost: dlopen for a library, device setup and
  // operand upload on a GPU; tessel's capture and compile happen in the first call.
  auto load_start = Clock::now();
  ImplRequest ir{r.impl, s, r.threads, r.tile, r.dtype, r.plan, float(r.beta)};
  std::unique_ptr<GemmImpl> impl = make_cpu_impl(ir, a, b);
  if (!impl) impl = make_cuda_impl(ir, a, b);
  if (!impl) bad(r.impl + " is not available in this build");
  reset_output(*impl);
  impl->sync();
  double load_ms = ms_since(load_start);

  auto first_start = Clock::now();
  impl->call();
  impl->sync();
  double first_call_ms = ms_since(first_start);
  double err_first = check(*impl);
  ImplFacts facts = impl->facts();
  Json cold = {{"load_ms", load_ms}, {"first_call_ms", first_call_ms}};
  if (!facts.plan.empty()) {
    cold["compile_ms"] = facts.compile_ms;  // capture, planning, lowering, JIT compile
    cold["first_launch_us"] = facts.first_launch_us;
    out["plan"] = facts.plan;
  }
  if (!facts.library_path.empty())
    out["library"] = {{"path", facts.library_path}, {"version", facts.library_version}};
  out["cold"] = cold;

  time_batch(*impl, r.warmup_ms);
  Json host = Json::array(), device = Json::array(), calls = Json::array(), share = Json::array();
  for (int i = 0; i < r.samples; ++i) {
    Batch batch = time_batch(*impl, r.sample_ms);
    host.push_back(batch.host_us);
    device.push_back(number(batch.device_us));
    calls.push_back(batch.calls);
    share.push_back(number(batch.cpu_share));
  }
  out["samples_us"] = host;
  if (impl->has_device_timer()) out["device_samples_us"] = device;
  out["calls"] = calls;
  out["cpu_share"] = share;

  reset_output(*impl);
  impl->call();
  double err_last = check(*impl);
  out["rel_err_first"] = number(err_first);
  out["rel_err_last"] = number(err_last);
  out["bound"] = bound;
  out["valid"] = err_first <= bound && err_last <= bound;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace tessel::bench
