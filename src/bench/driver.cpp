#include "bench/driver.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "bench/attention_bench.h"
#include "bench/gemm_impl.h"
#include "bench/machine.h"
#include "bench/report.h"
#include "bench/results.h"
#include "bench/schedule.h"
#include "bench/subprocess.h"
#include "bench/plan_spec.h"
#include "bench/worker.h"
#include "ops/gemm_precision.h"
#include "tessel/error.h"

namespace fs = std::filesystem;

namespace tessel::bench {

const char* const kBenchUsage =
    "usage: tessel bench --out DIR [--impl LIST] [--shapes LIST] [--rounds R]\n"
    "         [--warmup-ms W] [--samples S] [--sample-ms T] [--threads N]\n"
    "         [--tile BMxBNxBK] [--dtype fp32|tf32|bf16|fp16] [--plan SPEC] [--beta B]\n"
    "         [--reference PATH] [--seed S]\n"
    "  Counterbalanced paired rounds of GEMM (fp32 unless --dtype), every output checked against an\n"
    "  FP64 oracle; writes results.json, results.md and gflops.png into DIR, which\n"
    "  must not exist.\n"
    "  --impl     tessel,openblas,blis,libxsmm,reference (default tessel,openblas), and\n"
    "             where the cuda target is built tessel-cuda,cublas; the first is the\n"
    "             candidate the others are compared with. libxsmm: its JIT kernel per\n"
    "             shape, dispatched once, then called (one thread: --threads 1; built\n"
    "             where libxsmm-dev is installed)\n"
    "  --shapes   MxNxK,... and the names seed (the default, eight shapes) and large\n"
    "  --rounds 4 --warmup-ms 200 --samples 9 --sample-ms 40 --threads 1 (0 = all)\n"
    "  --tile     run tessel with this tile instead of its dispatch\n"
    "  --dtype    how A and B are stored (cuda impls; default fp32); tf32, bf16, fp16\n"
    "             compare with cuBLAS's GemmEx (fp32 accumulation; tf32: TF32 math)\n"
    "  --beta     C = A B + beta C, C's old values random (cpu impls; libxsmm: 0 or 1;\n"
    "             default 0: C is NaN before each checked call and never read)\n"
    "  --plan     tessel's plan over its dispatch, KEY=VALUE,...: tile=BMxBNxBK,\n"
    "             workers=N, grid=RxC, frag=1|2, batch=B, window=W, copy=sync|async|tma,\n"
    "             producers=P, cluster=C, persistent=G, band=B, atom=...\n"
    "  --reference PATH  another tessel executable, measured as impl 'reference':\n"
    "             it runs tessel-cuda when that is the candidate, else tessel\n"
    "  tessel bench --op attention ...: fused attention beside PyTorch\n"
    "             (tessel bench --op attention --help)\n";

namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

[[noreturn]] void bad(const std::string& message) {
  user_error(ErrorKind::InvalidArgument, message);
}

double parse_number(const std::string& what, const std::string& s, double lo, double hi) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !(v >= lo && v <= hi))
    bad(what + ": '" + s + "' is not a number in [" + std::to_string(int64_t(lo)) + ", " +
        std::to_string(int64_t(hi)) + "]");
  return v;
}

BenchConfig parse_config(int argc, char** argv) {
  BenchConfig c;
  std::string impls = "tessel,openblas", shapes = "seed";
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (i + 1 >= argc) bad(s + " needs a value (see tessel bench --help)");
    std::string v = argv[++i];
    if (s == "--impl") impls = v;
    else if (s == "--shapes") shapes = v;
    else if (s == "--rounds") c.rounds = int(parse_number(s, v, 1, 1000));
    else if (s == "--warmup-ms") c.warmup_ms = parse_number(s, v, 0, 1e6);
    else if (s == "--samples") c.samples = int(parse_number(s, v, 1, 10000));
    else if (s == "--sample-ms") c.sample_ms = parse_number(s, v, 0, 1e6);
    else if (s == "--threads") c.threads = int(parse_number(s, v, 0, 4096));
    else if (s == "--tile") c.tile = v;
    else if (s == "--dtype") c.dtype = precision_name(parse_precision(v));
    else if (s == "--plan") c.plan = v;
    else if (s == "--beta") c.beta = parse_number(s, v, -1e6, 1e6);
    else if (s == "--reference") c.reference = v;
    else if (s == "--out") c.out_dir = v;
    else bad("bench: unknown option " + s + " (see tessel bench --help)");
  }
  if (c.out_dir.empty()) bad("bench: --out DIR is required");
  c.shapes = parse_shape_list(shapes);
  if (!c.tile.empty()) {
    try {
      parse_shape(c.tile);  // a tile is written like a shape
    } catch (const Error& e) {
      bad(std::string("--tile: ") + e.what());
    }
  }
  std::set<std::string> seen;
  for (const std::string& name : split(impls, ',')) {
    if (name.empty()) continue;  // "a,,b" names two
    bool gpu = name == "cublas" || name == "tessel-cuda";
    if (gpu && !cuda_impls_built()) bad(name + " is not available in this build");
    if (!gpu && name != "tessel" && name != "openblas" && name != "blis" && name != "libxsmm" &&
        name != "reference")
      bad("unknown implementation '" + name +
          "' (known: tessel, openblas, blis, libxsmm, tessel-cuda, cublas, reference)");
    if (name == "libxsmm" && c.threads != 1)
      bad("--impl libxsmm runs on one thread (a JIT kernel per call); use --threads 1, not " +
          std::to_string(c.threads));
    if (name == "reference" && c.reference.empty()) bad("--impl reference needs --reference PATH");
    if (seen.insert(name).second) c.impls.push_back(name);
  }
  if (!c.reference.empty() && !seen.count("reference")) c.impls.push_back("reference");
  if (c.impls.empty()) bad("--impl: no implementations in '" + impls + "'");
  if (!c.plan.empty()) {
    for (const std::string& name : c.impls)
      if (name == "tessel") bad("--plan: tessel-cuda takes a plan spec; the cpu's tessel takes --tile");
    Plan p;
    bench::apply_plan_spec(c.plan, p);  // the spec's form; its limits show in the probe run
  }
  if (c.dtype != "fp32")
    for (const std::string& name : c.impls)
      if (name != "cublas" && name != "tessel-cuda" && name != "reference")
        bad("--dtype " + c.dtype + ": " + name + " multiplies fp32 only (tessel-cuda and cublas take it)");
  if (c.beta != 0)
    for (const std::string& name : c.impls) {
      if (name == "cublas" || name == "tessel-cuda")
        bad("--beta: " + name + " runs beta 0 only (the cpu impls take it)");
      if (name == "libxsmm" && c.beta != 1) bad("--beta: libxsmm's kernels take beta 0 or 1");
    }
  std::error_code ec;
  if (fs::exists(c.out_dir, ec)) bad("output directory '" + c.out_dir + "' already exists");
  if (!c.reference.empty()) {
    c.reference = fs::absolute(c.reference).string();
    if (access(c.reference.c_str(), X_OK) != 0 || fs::is_directory(c.reference, ec))
      bad("reference '" + c.reference + "' is not an executable file");
  }
  return c;
}


// The executable that runs a worker for `impl`, and the impl name it is given.
// The reference runs what the candidate (the first impl) runs: tessel on the
// cpu, tessel-cuda on the GPU.
std::pair<std::string, std::string> worker_for(const BenchConfig& c, const std::string& self,
                                               const std::string& impl) {
  if (impl == "reference") {
    const std::string& candidate = c.impls.front();
    return {c.reference, candidate == "tessel-cuda" ? candidate : "tessel"};
  }
  return {self, impl};
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// Runs one worker with a fresh, empty kernel cache; fills `m` from its line.
void measure(const std::string& exe, const WorkerRequest& req, Measurement& m) {
  char dir[] = "/tmp/tessel-bench-cache-XXXXXX";
  if (!mkdtemp(dir)) user_error(ErrorKind::Runtime, "cannot create a cache directory in /tmp");
  std::vector<std::string> argv = worker_args(req);
  argv.insert(argv.begin(), exe);
  ProcessResult p = run_process(argv, {{"TESSEL_CACHE_DIR", dir}});
  std::error_code ec;
  fs::remove_all(dir, ec);
  m.median_us = m.device_median_us = m.first_call_ms = m.load_ms = m.compile_ms = NAN;
  m.cpu_share = m.cpu_median_us = NAN;
  m.rel_err = m.bound = NAN;
  Json j = Json::parse(last_line(p.out), nullptr, false);
  if (p.status != 0 || !j.is_object() || !j.contains("samples_us")) {
    std::string why = last_line(p.err);
    m.error = "worker exited with status " + std::to_string(p.status) + (why.empty() ? "" : ": " + why);
    return;
  }
  m.worker_json = last_line(p.out);
  auto num = [](const Json& v) { return v.is_number() ? v.get<double>() : NAN; };
  for (const Json& v : j["samples_us"]) m.samples_us.push_back(num(v));
  std::vector<double> device, share;
  if (j.contains("cpu_share"))
    for (const Json& v : j["cpu_share"]) share.push_back(num(v));
  m.cpu_share = median(share);
  std::vector<double> cpu_us;
  for (size_t i = 0; i < share.size() && i < m.samples_us.size(); ++i)
    cpu_us.push_back(share[i] * m.samples_us[i]);
  if (j.contains("device_samples_us"))
    for (const Json& v : j["device_samples_us"]) device.push_back(num(v));
  const Json& cold = j["cold"];
  m.first_call_ms = num(cold.value("first_call_ms", Json()));
  m.load_ms = num(cold.value("load_ms", Json()));
  m.compile_ms = num(cold.value("compile_ms", Json()));
  double e1 = num(j.value("rel_err_first", Json())), e2 = num(j.value("rel_err_last", Json()));
  m.rel_err = std::isfinite(e1) && std::isfinite(e2) ? std::max(e1, e2) : INFINITY;
  m.bound = num(j.value("bound", Json()));
  m.valid = j.value("valid", false);
  if (!m.valid) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "FP64 check failed: relative error %.3g (first call), %.3g "
                  "(after timing), bound %.3g", e1, e2, m.bound);
    m.error = buf;
    return;
  }
  m.median_us = median(m.samples_us);
  m.device_median_us = median(device);
  m.cpu_median_us = median(cpu_us);
}

// A tiny run of every implementation before the real ones: a library that does
// not load or a reference that does not run stops the benchmark here, with a
// clear message, instead of filling the report with failures. Records versions.
// The reference goes first: it is the one most likely not to run.
std::vector<ImplInfo> probe(const BenchConfig& c, const std::string& self) {
  std::vector<std::string> order = c.impls;
  std::stable_partition(order.begin(), order.end(), [](const std::string& i) { return i == "reference"; });
  std::vector<ImplInfo> infos;
  for (const std::string& impl : order) {
    auto [exe, worker_impl] = worker_for(c, self, impl);
    WorkerRequest req;
    req.impl = worker_impl;
    req.warmup_ms = 0, req.samples = 1, req.sample_ms = 0, req.threads = c.threads;
    req.tile = worker_impl.starts_with("tessel") ? c.tile : "";
    req.plan = worker_impl.starts_with("tessel") ? c.plan : "";
    req.dtype = c.dtype;
    req.beta = c.beta;
    Measurement m;
    measure(exe, req, m);
    if (m.worker_json.empty()) {
      std::string who = impl == "reference" ? "reference '" + exe + "'" : impl;
      user_error(ErrorKind::Runtime, who + " does not run: " + m.error);
    }
    ImplInfo info;
    info.name = impl;
    info.executable = exe;
    info.executable_sha256 = file_sha256(exe);
    Json j = Json::parse(m.worker_json);
    if (j.contains("library")) {
      info.library = j["library"].value("path", "");
      info.library_sha256 = file_sha256(info.library);
      info.version = j["library"].value("version", "");
    } else {
      info.version = "tessel (executable " + info.executable_sha256.substr(0, 12) + ")";
    }
    infos.push_back(info);
  }
  return infos;
}


// A python that has matplotlib: Debian's first (python3-matplotlib), then PATH's.
std::string find_python() {
  for (std::string py : {"/usr/bin/python3", "python3"})
    if (!shell_output(shell_quote(py) + " -c 'import matplotlib; print(1)' 2>/dev/null").empty())
      return py;
  return "";
}

// scripts/plot_bench.py of the source tree this file was built from, or beside
// the executable's build directory.
std::string find_plot_script(const std::string& self) {
  for (fs::path p : {fs::path(__FILE__).parent_path() / "../../scripts/plot_bench.py",
                     fs::path(self).parent_path() / "../scripts/plot_bench.py"}) {
    std::error_code ec;
    if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return "";
}

// Draws gflops.png; returns "" on success, else why not.
std::string plot(const std::string& self, const fs::path& dir) {
  std::string script = find_plot_script(self);
  if (script.empty()) return "scripts/plot_bench.py not found";
  std::string python = find_python();
  if (python.empty()) return "no python3 with matplotlib (Debian: python3-matplotlib)";
  std::string cmd = shell_quote(python) + " " + shell_quote(script) + " " +
                    shell_quote((dir / "results.json").string()) + " " +
                    shell_quote((dir / "gflops.png").string()) + " 2>&1 >/dev/null; echo $?";
  std::string out = shell_output(cmd);
  if (last_line(out) != "0") return "plot_bench.py failed: " + out;
  return "";
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) user_error(ErrorKind::Runtime, "cannot write " + path.string());
}

}  // namespace

int run_bench_command(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--op") return run_attention_bench(argc, argv);
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(kBenchUsage, stdout);
      return 0;
    }
  BenchResults r;
  r.config = parse_config(argc, argv);
  const BenchConfig& c = r.config;
  r.config.command = quoted_command(argc, argv);
  std::string self = self_executable();
  r.impls = probe(c, self);
  std::error_code ec;
  if (!fs::create_directories(c.out_dir, ec) || ec)
    user_error(ErrorKind::Runtime, "cannot create output directory '" + c.out_dir + "'" +
                                       (ec ? ": " + ec.message() : ""));
  r.machine = machine_info();
  r.started = utc_now();

  // Every round measures the same inputs (seed 1), so one FP64 oracle per shape
  // serves the whole run.
  char oracle_tmp[] = "/tmp/tessel-bench-oracle-XXXXXX";
  if (!mkdtemp(oracle_tmp)) user_error(ErrorKind::Runtime, "cannot create a directory in /tmp");
  std::string oracle_dir = oracle_tmp;
  std::vector<ScheduledRun> schedule = make_schedule(c.rounds, int(c.shapes.size()), c.impls);
  bool tty = isatty(2);
  auto start = Clock::now();
  // Before any run has finished, the ETA assumes the configured times plus
  // process start, oracle and compile.
  double guess_s = (c.warmup_ms + c.samples * c.sample_ms) / 1e3 + 0.3;
  for (size_t i = 0; i < schedule.size(); ++i) {
    const ScheduledRun& run = schedule[i];
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    double per_run = i > 0 ? elapsed / double(i) : guess_s;
    std::fprintf(stderr, "%sbench: run %zu/%zu  round %d/%d  %s  %s  ETA %s%s", tty ? "\r\033[K" : "",
                 i + 1, schedule.size(), run.round + 1, c.rounds, c.shapes[run.shape].name().c_str(),
                 run.impl.c_str(), duration_text(per_run * double(schedule.size() - i)).c_str(),
                 tty ? "" : "\n");
    std::fflush(stderr);
    auto [exe, worker_impl] = worker_for(c, self, run.impl);
    WorkerRequest req;
    req.impl = worker_impl;
    req.shape = c.shapes[run.shape];
    req.warmup_ms = c.warmup_ms, req.samples = c.samples, req.sample_ms = c.sample_ms;
    req.threads = c.threads;
    req.tile = worker_impl.starts_with("tessel") ? c.tile : "";
    req.plan = worker_impl.starts_with("tessel") ? c.plan : "";
    req.dtype = c.dtype;
    req.beta = c.beta;
    req.oracle_dir = oracle_dir;
    Measurement m;
    m.round = run.round, m.position = run.position, m.shape = req.shape, m.impl = run.impl;
    measure(exe, req, m);
    if (!m.valid)
      std::fprintf(stderr, "%sbench: INVALID round %d %s %s: %s\n", tty ? "\r\033[K" : "",
                   run.round + 1, m.shape.name().c_str(), m.impl.c_str(), m.error.c_str());
    r.runs.push_back(std::move(m));
  }
  if (tty) std::fputs("\r\033[K", stderr);
  fs::remove_all(oracle_dir, ec);
  r.finished = utc_now();
  r.loadavg_finished = loadavg();

  fs::path dir(c.out_dir);
  write_text(dir / "results.json", results_json(r));
  std::string plot_note = plot(self, dir);
  if (!plot_note.empty()) std::fprintf(stderr, "bench: no plot: %s\n", plot_note.c_str());
  std::string md = results_markdown(r, plot_note.empty() ? "gflops.png" : "", plot_note);
  write_text(dir / "results.md", md);
  std::fputs(md.c_str(), stdout);
  int valid = 0;
  for (const Measurement& m : r.runs) valid += m.valid;
  std::fprintf(stderr, "bench: %d of %zu measurements valid; wrote %s\n", valid, r.runs.size(),
               c.out_dir.c_str());
  return valid == int(r.runs.size()) ? 0 : 1;  // like `tessel gemm --check`
}

}  // namespace tessel::bench
