// The seeds' double-buffering table remade on the cpu target: square fp32 GEMM,
// one thread, single buffered (W = 1 sync) against double buffered (W = 2 sync)
// and the async schedules (W = 2, 3 async; on the cpu an async copy is an ordinary
// copy and commit / wait are no-ops, see docs/pipelining.md).
//
// Per size: every variant's complete output must equal W = 1 sync bit for bit and
// is checked against the FP64 oracle (the complete output up to 1024^2; above
// that a random sample of rows, because the oracle is a naive triple loop). Then
// `--batches` timing batches; each batch times every variant once, in an order
// rotated from batch to batch so that slow phases of the shared machine fall on
// all of them; a variant's time in a batch is host-wall time per call over at
// least `--min-ms`. Reported: the median over batches, and min..max.
//
//   build/bench_pipeline_cpu [--batches B] [--min-ms T] [--tile BMxBNxBK] [N ...]
// (default sizes 1024 2048 4096).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "ops/gemm.h"
#include "ops/gemm_reference.h"

using namespace tessel;

namespace {

using Clock = std::chrono::steady_clock;

struct Variant {
  const char* name;
  int window;
  bool async;
};
constexpr Variant kVariants[] = {
    {"W=1 sync (single)", 1, false},
    {"W=2 sync (double)", 2, false},
    {"W=2 async", 2, true},
    {"W=3 async", 3, true},
};
constexpr int kVariantCount = sizeof(kVariants) / sizeof(kVariants[0]);
constexpr int64_t kFullCheckMax = 1024;  // complete FP64 check up to this size
constexpr int kSampledRows = 32;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

struct Options {
  int batches = 7;
  double min_ms = 100;
  int64_t bm = 0, bn = 0, bk = 0;  // 0: the default plan's tile
  std::vector<int64_t> sizes;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "bench_pipeline_cpu: %s\nusage: bench_pipeline_cpu [--batches B] [--min-ms T] "
               "[--tile BMxBNxBK] [N ...]\n", why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(s + " needs a value");
      return argv[++i];
    };
    if (s == "--batches") o.batches = std::atoi(value().c_str());
    else if (s == "--min-ms") o.min_ms = std::atof(value().c_str());
    else if (s == "--tile") {
      long long m, n, k;
      std::string t = value();
      if (std::sscanf(t.c_str(), "%lldx%lldx%lld", &m, &n, &k) != 3) usage("bad tile '" + t + "'");
      o.bm = m, o.bn = n, o.bk = k;
    } else if (std::atoll(s.c_str()) > 0) o.sizes.push_back(std::atoll(s.c_str()));
    else usage("unknown argument '" + s + "'");
  }
  if (o.batches < 1) usage("--batches must be positive");
  if (o.sizes.empty()) o.sizes = {1024, 2048, 4096};
  return o;
}

struct Problem {
  int64_t n;
  std::vector<float> a, b;
};

// One call: C = A * B (beta = 0, so C starts as NaN and every element must be written).
std::vector<float> run(const Problem& p, const Plan& plan) {
  std::vector<float> c(p.n * p.n, NAN);
  GemmOptions o;
  o.plan = plan;
  o.threads = 1;
  gemm(p.n, p.n, p.n, 1.0f, p.a.data(), p.n, p.b.data(), p.n, 0.0f, c.data(), p.n, o);
  return c;
}

// Relative error against the FP64 oracle: on every row, or on a random sample of
// rows (the oracle of one row is the oracle of a 1 x N GEMM).
double check(const Problem& p, const std::vector<float>& c, bool* sampled) {
  const int64_t n = p.n;
  *sampled = n > kFullCheckMax;
  if (!*sampled) {
    std::vector<double> want = gemm_oracle(n, n, n, 1.0, p.a.data(), n, p.b.data(), n, 0.0, nullptr, n);
    return gemm_relative_error(n, n, c.data(), n, want);
  }
  std::mt19937_64 rng(n);
  std::uniform_int_distribution<int64_t> row(0, n - 1);
  std::vector<float> got;
  std::vector<double> want;
  for (int i = 0; i < kSampledRows; ++i) {
    int64_t r = row(rng);
    std::vector<double> w = gemm_oracle(1, n, n, 1.0, p.a.data() + r * n, n, p.b.data(), n, 0.0, nullptr, n);
    want.insert(want.end(), w.begin(), w.end());
    got.insert(got.end(), c.begin() + r * n, c.begin() + (r + 1) * n);
  }
  return gemm_relative_error(kSampledRows, n, got.data(), n, want);
}

// Microseconds per call, over at least min_ms (at least one call).
double time_calls(const Problem& p, const Plan& plan, std::vector<float>& c, double min_ms) {
  GemmOptions o;
  o.plan = plan;
  o.threads = 1;
  int calls = 0;
  auto start = Clock::now();
  double ms = 0;
  do {
    gemm(p.n, p.n, p.n, 1.0f, p.a.data(), p.n, p.b.data(), p.n, 0.0f, c.data(), p.n, o);
    ++calls;
    ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  } while (ms < min_ms);
  return ms * 1e3 / calls;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse(argc, argv);
  std::printf("bench_pipeline_cpu: cpu target, 1 thread, fp32 square GEMM, %d batches, >= %.0f ms "
              "per variant per batch; load average at start %s\n\n",
              opt.batches, opt.min_ms, loadavg().c_str());
  std::printf("| N | variant | plan | GFLOP/s (median) | min..max | vs W=1 | FP64 rel_err | bits = W=1 |\n"
              "|---|---|---|---|---|---|---|---|\n");
  bool all_ok = true;
  for (int64_t n : opt.sizes) {
    Problem p{n, std::vector<float>(n * n), std::vector<float>(n * n)};
    std::mt19937_64 rng(42);
    fill_random(p.a, rng);
    fill_random(p.b, rng);
    Plan plans[kVariantCount];
    std::vector<float> reference;
    double err[kVariantCount];
    bool same[kVariantCount], sampled = false;
    for (int v = 0; v < kVariantCount; ++v) {
      Plan& plan = plans[v];
      plan = default_gemm_plan(TargetKind::Cpu, n, n, n);
      if (opt.bm) set_gemm_tile(plan, opt.bm, opt.bn, opt.bk);
      plan.window = kVariants[v].window;
      plan.async_copy = kVariants[v].async;
      std::vector<float> c = run(p, plan);  // compiles, warms the caches
      if (v == 0) reference = c;
      same[v] = std::memcmp(c.data(), reference.data(), c.size() * sizeof(float)) == 0;
      err[v] = check(p, c, &sampled);
      all_ok &= same[v] && err[v] <= gemm_error_bound(n);
    }
    std::vector<double> us[kVariantCount];
    std::vector<float> c(n * n);
    for (int b = 0; b < opt.batches; ++b)
      for (int i = 0; i < kVariantCount; ++i) {
        int v = (b + i) % kVariantCount;
        us[v].push_back(time_calls(p, plans[v], c, opt.min_ms));
      }
    double flop = 2.0 * double(n) * double(n) * double(n);
    double base = median(us[0]);
    for (int v = 0; v < kVariantCount; ++v) {
      double med = median(us[v]);
      double lo = *std::max_element(us[v].begin(), us[v].end());
      double hi = *std::min_element(us[v].begin(), us[v].end());
      std::string tile = gemm_tile_string(plans[v]);
      std::printf("| %lld | %s | %s | %.1f | %.1f..%.1f | %.3f | %.2e%s | %s |\n", (long long)n,
                  kVariants[v].name, tile.c_str(), flop / (med * 1e3), flop / (lo * 1e3),
                  flop / (hi * 1e3), base / med, err[v], sampled ? " (32 rows)" : "",
                  same[v] ? "yes" : "NO");
    }
    std::fflush(stdout);
  }
  std::printf("\nload average at end %s\n", loadavg().c_str());
  if (!all_ok) std::printf("FAILED: an output differs from W=1 or misses the FP64 bound\n");
  return all_ok ? 0 : 1;
}
