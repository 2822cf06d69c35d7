#include "bench/attention_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench/machine.h"
#include "bench/schedule.h"
#include "bench/shape.h"
#include "bench/stats.h"
#include "bench/subprocess.h"
#include "ir/tile_text.h"
#include "ops/library.h"
#include "tessel/error.h"

namespace fs = std::filesystem;

namespace tessel::bench {

const char* const kAttentionBenchUsage =
    "usage: tessel bench --op attention --out DIR [--target cpu|cuda] [--dtype fp32|bf16|fp16]\n"
    "         [--shapes BxHxSxD,...] [--causal no|yes|both] [--impl LIST] [--rounds R]\n"
    "         [--repeat N] [--threads T] [--python PATH]\n"
    "  Fused attention O = softmax(Q K^T / sqrt(D)) V (Sq = Skv = S, H heads for Q, K and\n"
    "  V) beside PyTorch's scaled_dot_product_attention, interleaved rounds in one run;\n"
    "  writes results.md and results.json into DIR, which must not exist.\n"
    "  --target   cpu (default; fp32 only) or cuda (bf16 unless --dtype)\n"
    "  --shapes   default: cpu 1x8x1024x64,1x8x1024x128; cuda 4x16x4096x64,4x16x4096x128,16x16x1024x64\n"
    "  --impl     tessel (the candidate, always first) and any of torch (PyTorch's choice),\n"
    "             torch-math, torch-flash, torch-efficient, torch-cudnn; default cpu\n"
    "             tessel,torch; cuda tessel,torch-flash,torch-cudnn,torch-efficient\n"
    "  --rounds 3 --repeat 10 (launches a measurement, their median) --threads 1 (cpu)\n"
    "  --python   the Python with PyTorch (default: python3 on PATH)\n";

namespace {

using Json = nlohmann::json;

[[noreturn]] void bad(const std::string& message) { user_error(ErrorKind::InvalidArgument, message); }

// The PyTorch side of a measurement, run as `python -c kTorchWorker ARGS`. It prints
// one JSON line: {"ms": median} or {"error": why} (a backend PyTorch cannot run on
// this shape or device is an error of that measurement, not of the run).
const char* const kTorchWorker = R"PY(
import json, statistics, sys, time
def main(a):
    import torch
    if a[0] == "--probe":
        info = {"torch": torch.__version__}
        if a[1] == "cuda":
            if not torch.cuda.is_available():
                raise SystemExit("torch.cuda.is_available() is False")
            info["device"] = torch.cuda.get_device_name()
        print(json.dumps(info))
        return
    backend, device, dtype = a[0], a[1], a[2]
    b, h, s, d, causal, repeat, threads = (int(x) for x in a[3:10])
    torch.set_num_threads(threads)
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    q, k, v = (torch.randn(b, h, s, d, device=device, dtype=dt) for _ in range(3))
    f = torch.nn.functional.scaled_dot_product_attention
    run = lambda: f(q, k, v, is_causal=bool(causal), scale=d ** -0.5)
    def timed():
        if device == "cuda":
            run(); torch.cuda.synchronize()
            times = []
            for _ in range(repeat):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(); run(); e1.record(); torch.cuda.synchronize()
                times.append(e0.elapsed_time(e1))
            return statistics.median(times)
        run()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter(); run(); times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)
    try:
        if backend == "torch":
            ms = timed()
        else:
            from torch.nn.attention import sdpa_kernel, SDPBackend
            which = {"torch-math": SDPBackend.MATH, "torch-flash": SDPBackend.FLASH_ATTENTION,
                     "torch-efficient": SDPBackend.EFFICIENT_ATTENTION, "torch-cudnn": SDPBackend.CUDNN_ATTENTION}
            with sdpa_kernel(which[backend]):
                ms = timed()
        print(json.dumps({"ms": ms}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e).splitlines()[0] if str(e) else type(e).__name__}))
main(sys.argv[1:])
)PY";

struct AttentionShape {
  int64_t b = 0, h = 0, s = 0, d = 0;
  std::string name() const {
    return std::to_string(b) + "x" + std::to_string(h) + "x" + std::to_string(s) + "x" + std::to_string(d);
  }
};

struct Config {
  std::string out_dir, target = "cpu", dtype, causal = "both", python;
  std::vector<AttentionShape> shapes;
  std::vector<std::string> impls;
  int rounds = 3, repeat = 10, threads = 1;
};

// One case of the run: a shape with or without the causal mask.
struct Case {
  AttentionShape shape;
  bool causal = false;
  std::string kernel_file;  // the kernel's text, in the output directory
  std::string name() const { return shape.name() + (causal ? " causal" : ""); }
  double flop() const {  // 2 mmas of 2 S^2 D each; half the scores under the mask
    return 4.0 * double(shape.b * shape.h) * double(shape.s) * double(shape.s) * double(shape.d) / (causal ? 2 : 1);
  }
};

int64_t positive(const std::string& text, const std::string& what) {
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v <= 0) bad(what + " '" + text + "': expected a positive integer");
  return v;
}

Config parse(int argc, char** argv) {
  Config c;
  std::string shapes, impls;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) bad(a + " needs a value");
      return argv[++i];
    };
    if (a == "--op") {
      if (value() != "attention") bad("--op: only 'attention' is an op here (GEMM is the default, without --op)");
    } else if (a == "--out") c.out_dir = value();
    else if (a == "--target") c.target = value();
    else if (a == "--dtype") c.dtype = value();
    else if (a == "--shapes") shapes = value();
    else if (a == "--causal") c.causal = value();
    else if (a == "--impl") impls = value();
    else if (a == "--rounds") c.rounds = int(positive(value(), "--rounds"));
    else if (a == "--repeat") c.repeat = int(positive(value(), "--repeat"));
    else if (a == "--threads") c.threads = int(positive(value(), "--threads"));
    else if (a == "--python") c.python = value();
    else bad("unknown option " + a + " for --op attention (tessel bench --op attention --help)");
  }
  if (c.out_dir.empty()) bad("--out DIR is required");
  if (fs::exists(c.out_dir)) bad("output directory '" + c.out_dir + "' exists; give a new one");
  if (c.target != "cpu" && c.target != "cuda") bad("--target '" + c.target + "': expected cpu or cuda");
  if (c.dtype.empty()) c.dtype = c.target == "cpu" ? "fp32" : "bf16";
  if (c.dtype != "fp32" && c.dtype != "bf16" && c.dtype != "fp16") bad("--dtype '" + c.dtype + "': expected fp32, bf16 or fp16");
  if (c.target == "cpu" && c.dtype != "fp32") bad("--dtype " + c.dtype + ": the cpu target runs fp32 attention only");
  if (c.causal != "no" && c.causal != "yes" && c.causal != "both") bad("--causal '" + c.causal + "': expected no, yes or both");
  if (shapes.empty())
    shapes = c.target == "cpu" ? "1x8x1024x64,1x8x1024x128" : "4x16x4096x64,4x16x4096x128,16x16x1024x64";
  for (const std::string& s : split(shapes, ',')) {
    std::vector<std::string> p = split(s, 'x');
    if (p.size() != 4) bad("shape '" + s + "': expected BxHxSxD");
    c.shapes.push_back({positive(p[0], "B in '" + s + "'"), positive(p[1], "H in '" + s + "'"),
                        positive(p[2], "S in '" + s + "'"), positive(p[3], "D in '" + s + "'")});
  }
  if (impls.empty()) impls = c.target == "cpu" ? "tessel,torch" : "tessel,torch-flash,torch-cudnn,torch-efficient";
  c.impls = split(impls, ',');
  for (size_t i = 0; i < c.impls.size(); ++i) {
    const std::string& x = c.impls[i];
    bool known = x == "tessel" || x == "torch" || x == "torch-math" || x == "torch-flash" || x == "torch-efficient" ||
                 x == "torch-cudnn";
    if (!known) bad("--impl '" + x + "': expected tessel, torch, torch-math, torch-flash, torch-efficient or torch-cudnn");
    if ((i == 0) != (x == "tessel")) bad("--impl: tessel comes first (the candidate), once");
  }
  if (c.python.empty() && c.impls.size() > 1) {  // the PyTorch peers' python
    std::string found = shell_output("command -v python3 2>/dev/null");
    while (!found.empty() && (found.back() == '\n' || found.back() == ' ')) found.pop_back();
    c.python = found;
  }
  return c;
}

// The last JSON object a worker printed.
Json last_json(const std::string& out) {
  size_t at = out.rfind("\n{");
  std::string line = out.substr(at == std::string::npos ? 0 : at + 1);
  Json j = Json::parse(line, nullptr, false);
  return j.is_object() ? j : Json();
}

std::string tail(const std::string& s) {
  std::string t = s.size() > 400 ? s.substr(s.size() - 400) : s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

std::vector<std::string> size_args(const AttentionShape& s) {
  return {"--size", "B=" + std::to_string(s.b),   "--size", "Hq=" + std::to_string(s.h),
          "--size", "Hkv=" + std::to_string(s.h), "--size", "Sq=" + std::to_string(s.s),
          "--size", "Skv=" + std::to_string(s.s), "--size", "D=" + std::to_string(s.d)};
}

struct Measurement {
  double ms = NAN;
  std::string error;  // why there is no time
};

Measurement measure_tessel(const Config& c, const std::string& self, const Case& k) {
  std::vector<std::string> argv = {self, "run", k.kernel_file, "--target", c.target, "--repeat", std::to_string(c.repeat),
                                   "--json", "--scalar", "scale=" + std::to_string(1.0 / std::sqrt(double(k.shape.d)))};
  for (const std::string& a : size_args(k.shape)) argv.push_back(a);
  if (c.target == "cpu") argv.insert(argv.end(), {"--threads", std::to_string(c.threads)});
  ProcessResult r = run_process(argv);
  Json j = last_json(r.out);
  if (r.status != 0 || j.is_null()) return {NAN, "tessel run exited " + std::to_string(r.status) + ": " + tail(r.err)};
  const Json& us = c.target == "cuda" ? j["device_us"] : j["warm_us"];
  if (!us.is_number()) return {NAN, "tessel run reported no time"};
  return {us.get<double>() / 1e3, ""};
}

Measurement measure_torch(const Config& c, const std::string& impl, const Case& k) {
  const AttentionShape& s = k.shape;
  ProcessResult r = run_process({c.python, "-c", kTorchWorker, impl, c.target, c.dtype, std::to_string(s.b),
                                 std::to_string(s.h), std::to_string(s.s), std::to_string(s.d), k.causal ? "1" : "0",
                                 std::to_string(c.repeat), std::to_string(c.threads)});
  Json j = last_json(r.out);
  if (r.status != 0 || j.is_null()) return {NAN, "python exited " + std::to_string(r.status) + ": " + tail(r.err)};
  if (j.contains("error")) return {NAN, j["error"].get<std::string>()};
  return {j["ms"].get<double>(), ""};
}

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

int run_attention_bench(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(kAttentionBenchUsage, stdout);
      return 0;
    }
  Config c = parse(argc, argv);
  const std::string self = self_executable();
  bool torch = c.impls.size() > 1;
  Json torch_info;
  if (torch) {
    if (c.python.empty()) user_error(ErrorKind::Runtime, "no python3 on PATH for the PyTorch peers (--python PATH)");
    ProcessResult p = run_process({c.python, "-c", kTorchWorker, "--probe", c.target});
    torch_info = last_json(p.out);
    if (p.status != 0 || torch_info.is_null())
      user_error(ErrorKind::Runtime, "PyTorch does not run under " + c.python + " (pip install torch; or --impl tessel): " +
                                         tail(p.err));
  }
  std::error_code ec;
  if (!fs::create_directories(c.out_dir, ec) || ec)
    user_error(ErrorKind::Runtime, "cannot create output directory '" + c.out_dir + "'");

  // The kernels' text, then one --check run of each at a small ragged shape with
  // grouped-query heads, per head_dim of the run.
  std::vector<Case> cases;
  const DType dtype = c.dtype == "bf16" ? DType::BF16 : c.dtype == "fp16" ? DType::F16 : DType::F32;
  for (bool causal : {false, true}) {
    if ((causal && c.causal == "no") || (!causal && c.causal == "yes")) continue;
    TileKernel kernel = attention_kernel(causal ? AttentionMask::Causal : AttentionMask::None, dtype);
    std::string file = (fs::path(c.out_dir) / (kernel.name + ".tir")).string();
    std::ofstream(file) << print_tile_kernel(kernel);
    std::vector<int64_t> checked;
    for (const AttentionShape& s : c.shapes) {
      cases.push_back({s, causal, file});
      if (std::find(checked.begin(), checked.end(), s.d) != checked.end()) continue;
      checked.push_back(s.d);
      std::vector<std::string> check = {self, "run", file, "--target", c.target, "--check", "--size", "B=2", "--size", "Hq=4",
                                        "--size", "Hkv=2", "--size", "Sq=77", "--size", "Skv=93", "--size",
                                        "D=" + std::to_string(s.d)};
      ProcessResult r = run_process(check);
      std::fprintf(stderr, "bench: check %s D=%lld: %s\n", kernel.name.c_str(), (long long)s.d,
                   r.status == 0 ? tail(r.out).c_str() : "FAILED");
      if (r.status != 0)
        user_error(ErrorKind::Runtime, "the --check run of " + kernel.name + " failed: " + tail(r.out + r.err));
    }
  }

  // times[case][impl][round]
  std::vector<std::vector<std::vector<double>>> times(
      cases.size(), std::vector<std::vector<double>>(c.impls.size(), std::vector<double>(c.rounds, NAN)));
  Json runs = Json::array();
  std::vector<ScheduledRun> schedule = make_schedule(c.rounds, int(cases.size()), c.impls);
  const std::string started = utc_now();
  auto start = std::chrono::steady_clock::now();
  bool tessel_failed = false;
  for (size_t i = 0; i < schedule.size(); ++i) {
    const ScheduledRun& run = schedule[i];
    const Case& k = cases[run.shape];
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "bench: run %zu/%zu  round %d/%d  %s  %s  ETA %s\n", i + 1, schedule.size(), run.round + 1,
                 c.rounds, k.name().c_str(), run.impl.c_str(),
                 i > 0 ? duration_text(elapsed / double(i) * double(schedule.size() - i)).c_str() : "-");
    Measurement m = run.impl == "tessel" ? measure_tessel(c, self, k) : measure_torch(c, run.impl, k);
    size_t impl = size_t(std::find(c.impls.begin(), c.impls.end(), run.impl) - c.impls.begin());
    times[run.shape][impl][run.round] = m.ms;
    if (run.impl == "tessel" && !m.error.empty()) tessel_failed = true;
    if (!m.error.empty()) std::fprintf(stderr, "bench:   %s: %s\n", run.impl.c_str(), m.error.c_str());
    runs.push_back({{"round", run.round},
                    {"case", k.name()},
                    {"impl", run.impl},
                    {"ms", std::isfinite(m.ms) ? Json(m.ms) : Json()},
                    {"error", m.error}});
  }

  // The report: per case, each implementation's median over rounds, and each peer's
  // time over tessel's, paired by round.
  std::ostringstream md;
  md << "# Attention: tessel beside PyTorch's scaled_dot_product_attention\n\n"
     << "Command: `" << quoted_command(argc, argv) << "`\n\nStarted " << started << "; target " << c.target << ", "
     << c.dtype << ", " << c.rounds << " interleaved rounds, the median of " << c.repeat
     << " launches a measurement (" << (c.target == "cuda" ? "device time" : "host wall, " + std::to_string(c.threads) + " thread(s)")
     << "), Sq = Skv = S, scale 1/sqrt(D)";
  if (torch) md << "; torch " << torch_info.value("torch", "?") << (torch_info.contains("device") ? ", " + torch_info["device"].get<std::string>() : "");
  // GFLOP/s on the cpu, TFLOP/s on cuda.
  const std::string unit = c.target == "cuda" ? "TFLOP/s" : "GFLOP/s";
  const double per_ms = c.target == "cuda" ? 1e9 : 1e6;
  md << ". " << unit << " count 4 B H S^2 D, halved for causal. peer / tessel is the peer's time over tessel's "
        "in the same round (above 1: tessel is faster), median [min, max] over rounds.\n\n";
  md << "| B x H x S x D | causal | tessel ms | tessel " << unit << " |";
  for (size_t p = 1; p < c.impls.size(); ++p) md << " " << c.impls[p] << " " << unit << " | " << c.impls[p] << " / tessel |";
  md << "\n|---|---|---:|---:|";
  for (size_t p = 1; p < c.impls.size(); ++p) md << "---:|---:|";
  md << "\n";
  Json summary = Json::array();
  for (size_t k = 0; k < cases.size(); ++k) {
    double mine = median(times[k][0]);
    md << "| " << cases[k].shape.name() << " | " << (cases[k].causal ? "yes" : "no") << " | " << fixed(mine, 3) << " | "
       << fixed(cases[k].flop() / mine / per_ms, 1) << " |";
    Json row = {{"case", cases[k].name()}, {"tessel_ms", std::isfinite(mine) ? Json(mine) : Json()}};
    for (size_t p = 1; p < c.impls.size(); ++p) {
      double theirs = median(times[k][p]);
      PairedRatio r = paired_ratio(times[k][p], times[k][0]);
      md << " " << fixed(cases[k].flop() / theirs / per_ms, 1) << " | "
         << (r.valid ? fixed(r.median, 3) + " [" + fixed(r.min, 3) + ", " + fixed(r.max, 3) + "]" : "-") << " |";
      row[c.impls[p] + "_ms"] = std::isfinite(theirs) ? Json(theirs) : Json();
      row[c.impls[p] + "_over_tessel"] = r.valid ? Json(r.median) : Json();
    }
    md << "\n";
    summary.push_back(row);
  }
  std::ofstream(fs::path(c.out_dir) / "results.md") << md.str();
  Json j = {{"command", quoted_command(argc, argv)}, {"started", started}, {"finished", utc_now()},
            {"target", c.target}, {"dtype", c.dtype}, {"rounds", c.rounds}, {"repeat", c.repeat},
            {"threads", c.threads}, {"impls", c.impls}, {"torch", torch_info}, {"machine_load", loadavg()},
            {"summary", summary}, {"runs", runs}};
  std::ofstream(fs::path(c.out_dir) / "results.json") << j.dump(2) << "\n";
  std::fputs(md.str().c_str(), stdout);
  return tessel_failed ? 1 : 0;
}

}  // namespace tessel::bench
