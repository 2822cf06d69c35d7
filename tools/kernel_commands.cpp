#include "kernel_commands.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "check/checked_run.h"
#include "ops/gemm_precision.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_memory.h"
#endif
#include "ir/group_text.h"
#include "ir/tile_text.h"
#include "passes/pipeline.h"
#include "plan/default_plan.h"
#include "plan/dispatch.h"
#include "passes/plan_barriers.h"
#include "passes/specialize_sizes.h"
#include "passes/tma_pipeline.h"
#include "ir/group_verify.h"
#include "runtime/tensor_check.h"
#include "target/sim/sim.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

[[noreturn]] void bad(const std::string& message) { user_error(ErrorKind::InvalidArgument, message); }

int64_t to_int(const std::string& what, const std::string& s) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) bad(what + ": '" + s + "' is not an integer");
  return v;
}

double to_double(const std::string& what, const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v)) bad(what + ": '" + s + "' is not a finite number");
  return v;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) bad("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// NAME=V
std::pair<std::string, std::string> name_value(const std::string& option, const std::string& s) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) bad(option + " takes NAME=VALUE, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

struct Options {
  std::string file;
  std::map<std::string, int64_t> sizes, tiles;
  std::map<std::string, double> scalars;
  TargetKind target = TargetKind::Cpu;
  int workers = -1, threads = 0, window = 1, repeat = 0, producers = 0, cluster = 1, persistent = 0, tile_band = 8;
  bool async_copy = false, tma = false, check = false, json = false;
  bool fix_sizes = false;  // --fix-sizes: the plan fixes the --size values (Plan::sizes)
  bool plan_options = false;  // some option above names part of a plan
  uint64_t seed = 42;
  std::vector<std::string> passes;
};

Options parse(int argc, char** argv, int first) {
  Options o;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) bad(s + " needs a value");
      return argv[++i];
    };
    if (s == "--tile" || s == "--workers" || s == "--window" || s == "--copy" || s == "--producers" ||
        s == "--cluster" ||
        s == "--persistent" || s == "--tile-band")
      o.plan_options = true;
    if (s == "--size") {
      auto [n, v] = name_value(s, value());
      o.sizes[n] = to_int("--size " + n, v);
    } else if (s == "--tile") {
      auto [n, v] = name_value(s, value());
      o.tiles[n] = to_int("--tile " + n, v);
    } else if (s == "--scalar") {
      auto [n, v] = name_value(s, value());
      o.scalars[n] = to_double("--scalar " + n, v);
    } else if (s == "--target") {
      o.target = parse_target(value());
    } else if (s == "--workers") {
      o.workers = static_cast<int>(to_int(s, value()));
    } else if (s == "--threads") {
      o.threads = static_cast<int>(to_int(s, value()));
    } else if (s == "--window") {
      o.window = static_cast<int>(to_int(s, value()));
    } else if (s == "--copy") {
      std::string c = value();
      if (c != "sync" && c != "async" && c != "tma") bad("--copy takes sync, async or tma, got '" + c + "'");
      o.async_copy = c == "async";
      o.tma = c == "tma";
    } else if (s == "--producers") {
      o.producers = static_cast<int>(to_int(s, value()));
    } else if (s == "--cluster") {
      o.cluster = static_cast<int>(to_int(s, value()));
    } else if (s == "--persistent") {
      o.persistent = static_cast<int>(to_int(s, value()));
    } else if (s == "--tile-band") {
      o.tile_band = static_cast<int>(to_int(s, value()));
    } else if (s == "--seed") {
      o.seed = static_cast<uint64_t>(to_int(s, value()));
    } else if (s == "--repeat") {
      int64_t n = to_int(s, value());
      if (n < 1 || n > 1000000) bad("--repeat takes 1 to 1000000, got " + std::to_string(n));
      o.repeat = static_cast<int>(n);
    } else if (s == "--pass") {
      o.passes.push_back(value());
    } else if (s == "--fix-sizes") {
      o.fix_sizes = true;
    } else if (s == "--check") {
      o.check = true;
    } else if (s == "--json") {
      o.json = true;
    } else if (!s.empty() && s[0] == '-') {
      bad("unknown option " + s);
    } else if (o.file.empty()) {
      o.file = s;
    } else {
      bad("unexpected argument '" + s + "'");
    }
  }
  if (o.file.empty()) bad("no input file");
  return o;
}

TileKernel load_kernel(const Options& o) { return parse_tile_kernel(read_file(o.file)); }

// With no plan options, the dispatcher's plan (tuning cache, calibrated model, else
// the default); else the default plan with the user's options over it.
PlanChoice plan_options_applied(const TileKernel& k, const Options& o) {
  if (!o.plan_options) {
    const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return dispatch_plan(k, o.target, o.sizes, threads);  // counted as `tessel tune` counts them
  }
  PlanChoice choice;
  choice.source = "default plan with the command line's plan options";
  Plan& p = choice.plan;
  p = default_plan(k, o.target, o.sizes);
  for (const auto& [n, v] : o.tiles) p.tiles[n] = v;  // the lowering refuses unknown names
  p.window = o.window;
  p.async_copy = o.async_copy;
  p.tma = o.tma;
  p.producers = o.producers;
  p.cluster = o.cluster;
  p.persistent = o.persistent;
  p.tile_band = o.tile_band;
  if (o.workers > 0) p.workers = o.workers;
  if (!o.tiles.empty() || o.workers > 0) fit_worker_grid(k, p);
  return choice;
}

// That plan; with --fix-sizes, the --size values fixed in it (Plan::sizes).
PlanChoice plan_for(const TileKernel& k, const Options& o) {
  PlanChoice choice = plan_options_applied(k, o);
  if (o.fix_sizes)
    for (const auto& [name, value] : o.sizes) choice.plan.sizes.push_back({name, value});
  return choice;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out + "\"";
}

// --repeat N: the kernel bound once to random inputs, launched once to warm up,
// then N times; the median wall time of one launch (on cuda until the kernel has
// ended). On cuda the tensors are put in
// device memory once (16-bit ones as 16-bit storage), so a launch moves no data,
// and *device_us gets the median device time of one launch (CUDA events).
double warm_launch_us(const Kernel& compiled, const Options& o, const LaunchOptions& lo, double* device_us) {
  const TileKernel& k = compiled.tile_kernel();
  std::map<std::string, int64_t> sizes = o.sizes;
  default_strides(k.tensors, sizes);
  std::map<std::string, HostTensor> tensors = random_tensors(k.tensors, sizes, o.seed);
  KernelArgs args;
  for (auto& [name, t] : tensors) args.tensors[name] = TensorArg::host(t.data.data(), t.layout.shape, t.layout.strides);
  for (const TensorParam& t : k.tensors) args.tensors[t.name].dtype = t.dtype;
  args.scalars = random_scalars(k.scalars, o.scalars, o.seed);
  args.sizes = sizes;  // as run_checked gives them: the launch checks they agree
  const bool cuda = compiled.plan().target == TargetKind::Cuda;
#ifdef TESSEL_WITH_CUDA
  std::vector<DeviceBuffer> on_device;
  if (cuda)
    for (auto& [name, t] : tensors) {
      TensorArg& a = args.tensors[name];
      const size_t n = t.data.size();
      on_device.emplace_back(std::max<size_t>(1, n) * dtype_bytes(a.dtype));
      if (a.dtype == DType::BF16 || a.dtype == DType::F16) {
        std::vector<uint16_t> h(n);
        for (size_t i = 0; i < n; ++i) h[i] = a.dtype == DType::BF16 ? float_to_bf16(t.data[i]) : float_to_f16(t.data[i]);
        on_device.back().upload(h.data(), n * 2);
      } else {
        on_device.back().upload(t.data.data(), n * sizeof(float));
      }
      a.data = on_device.back().get();
      a.on_device = true;
    }
#endif
  BoundLaunch launch = compiled.bind(args);
  launch.run(lo);
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  std::vector<double> us, dev;
  for (int i = 0; i < o.repeat; ++i) {
#ifdef TESSEL_WITH_CUDA
    if (cuda) {
      // A launch on device tensors returns before the kernel ends: the wall time
      // runs until the end event is reached.
      DeviceTimer timer;
      const auto t0 = std::chrono::steady_clock::now();
      timer.start();
      launch.run(lo);
      dev.push_back(timer.stop_ms() * 1e3);
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      continue;
    }
#endif
    us.push_back(launch.run(lo).run_us);
  }
  *device_us = dev.empty() ? 0 : median(dev);
  (void)cuda;
  return median(us);
}

}  // namespace

int run_command(int argc, char** argv) {
  Options o = parse(argc, argv, 2);
  TileKernel k = load_kernel(o);
  PlanChoice choice = plan_for(k, o);
  const Plan& plan = choice.plan;
  Kernel compiled = compile(k, plan);
  LaunchOptions lo;
  lo.threads = o.threads;
  lo.sim_seed = o.seed;
  // --repeat without --check off the sim times the kernel only: the FP64 oracle takes
  // minutes at benchmark sizes, and nothing would read it.
  const bool timing_only = o.repeat > 0 && !o.check && plan.target != TargetKind::Sim;
  CheckedRun r;
  if (!timing_only) r = run_checked(compiled, o.sizes, o.scalars, o.seed, lo);
  bool ok = o.check ? r.ok : r.launch.races == 0;
  double device_us = 0;
  double warm_us = o.repeat > 0 ? warm_launch_us(compiled, o, lo, &device_us) : 0;
  std::string per_tensor;
  for (const auto& [name, e] : r.rel_err)
    per_tensor += (per_tensor.empty() ? "" : ", ") + json_string(name) + ": " + json_number(e);
  if (o.json) {
    std::cout << "{\"kernel\": " << json_string(k.name) << ", \"version\": " << json_string(version())
              << ", \"target\": " << json_string(target_name(plan.target))
              << ", \"plan\": " << json_string(plan.to_string())
              << ", \"plan_source\": " << json_string(choice.source) << ", \"sizes\": {";
    bool first = true;
    for (const auto& [n, v] : o.sizes) {
      std::cout << (first ? "" : ", ") << json_string(n) << ": " << v;
      first = false;
    }
    std::cout << "}, \"checked\": " << (o.check ? "true" : "false")
              << ", \"rel_err\": " << (o.check ? json_number(r.worst) : "null")
              << ", \"bound\": " << (o.check ? json_number(r.bound) : "null")
              << ", \"rel_err_by_tensor\": {" << (o.check ? per_tensor : "") << "}"
              << ", \"ok\": " << (ok ? "true" : "false") << ", \"races\": " << r.launch.races
              << ", \"compile_ms\": " << json_number(compiled.compile_ms())
              << ", \"run_us\": " << json_number(r.launch.run_us)
              << ", \"warm_us\": " << (o.repeat > 0 ? json_number(warm_us) : "null")
              << ", \"device_us\": " << (device_us > 0 ? json_number(device_us) : "null") << "}\n";
  } else {
    std::cout << k.name << " on " << target_name(plan.target) << " (" << plan.to_string() << "): "
              << json_number(r.launch.run_us) << " us";
    if (o.repeat > 0) std::cout << ", warm " << json_number(warm_us) << " us (median of " << o.repeat << ")";
    if (device_us > 0) std::cout << ", device " << json_number(device_us) << " us";
    if (o.check) std::cout << ", rel_err " << json_number(r.worst) << " (bound " << json_number(r.bound) << ")";
    if (plan.target == TargetKind::Sim) std::cout << ", races " << r.launch.races;
    std::cout << (ok ? ", ok" : ", FAILED") << "\n";
    for (const std::string& m : r.launch.race_messages) std::cout << "  " << m << "\n";
  }
  return ok ? 0 : 1;
}

int explain_file_command(int argc, char** argv) {
  Options o = parse(argc, argv, 2);
  TileKernel k = load_kernel(o);
  PlanChoice choice = plan_for(k, o);
  std::cout << "// plan from: " << choice.source << "\n" << compile(k, choice.plan).explain();
  return 0;
}

int opt_command(int argc, char** argv) {
  Options o = parse(argc, argv, 2);
  GroupProgram p = parse_group_program(read_file(o.file));
  for (const std::string& pass : o.passes) {
    if (pass == "plan-barriers") {
      plan_barriers(p, BarrierPlanOptions{});
    } else if (pass == "specialize") {  // the --size values
      specialize_sizes(p, {o.sizes.begin(), o.sizes.end()});
    } else if (pass.rfind("pipeline=", 0) == 0 || pass.rfind("pipeline-async=", 0) == 0) {
      PipelineOptions po;
      po.async = pass.rfind("pipeline-async=", 0) == 0;
      po.window = static_cast<int>(to_int("--pass " + pass, pass.substr(pass.find('=') + 1)));
      pipeline_loops(p, po);
    } else if (pass.rfind("tma=", 0) == 0 || pass.rfind("tma-ws=", 0) == 0) {
      // tma-ws: one producer worker (a producer role) beside the program's workers;
      // tma-ws=W,C: in clusters of C groups.
      TmaPipelineOptions to;
      std::string window = pass.substr(pass.find('=') + 1);
      if (size_t comma = window.find(','); comma != std::string::npos) {
        to.cluster = static_cast<int>(to_int("--pass " + pass, window.substr(comma + 1)));
        if (to.cluster < 1 || to.cluster > 8) bad("--pass " + pass + ": the cluster takes 1 to 8");
        window = window.substr(0, comma);
      }
      to.window = static_cast<int>(to_int("--pass " + pass, window));
      if (to.window < 1 || to.window > 8) bad("--pass " + pass + ": the window takes 1 to 8");
      to.producers = pass.rfind("tma-ws=", 0) == 0 ? 1 : 0;
      to.async_consumers = p.atom == AtomKind::Wgmma;
      verify_group_program(p);
      tma_pipeline(p, to);
      verify_group_program(p);
    } else {
      bad("unknown pass '" + pass +
          "' (expected plan-barriers, specialize, pipeline=W, pipeline-async=W, tma=W, tma-ws=W or tma-ws=W,C)");
    }
  }
  std::cout << print_group_program(p);
  return 0;
}

int sim_command(int argc, char** argv) {
  Options o = parse(argc, argv, 2);
  GroupProgram p = parse_group_program(read_file(o.file));
  default_strides(p.tensors, o.sizes);
  auto tensors = random_tensors(p.tensors, o.sizes, o.seed);
  LaunchArgs args;
  args.sizes = o.sizes;
  args.scalars = random_scalars(p.scalars, o.scalars, o.seed);
  for (auto& [name, h] : tensors) args.tensors[name] = h.data.data();
  SimOptions so;
  so.seed = o.seed;
  SimResult r = run_sim(p, args, so);
  std::cout << p.name << ": " << r.race_count << " race" << (r.race_count == 1 ? "" : "s") << "\n";
  for (const Race& race : r.races) std::cout << "  " << race.message << "\n";
  return r.race_count == 0 ? 0 : 1;
}

}  // namespace tessel
