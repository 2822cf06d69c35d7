// Paired plan comparisons on the cuda target (fp32 GEMM, device pointers).
//   bench_cuda_plans barriers   [--rounds R]   issue 3: barrier planning on vs off
//   bench_cuda_plans pipelining [--rounds R]   issue 4: window 1/2 sync, 3/4 async, fragments x2
//   bench_cuda_plans sweep      [--rounds R]   mma.sync and wgmma tile plans for bf16 / tf32 at 4096^3
// Every variant runs the same plan except for the one choice compared. Rounds are
// counterbalanced (ABBA: round r runs the variants in forward order when r % 4 is 0
// or 3, backward otherwise). Each measurement: host-wall (calls back to back, one
// synchronize; total / calls, launch included) and device-event time (median of
// per-call events). Before each timed batch C is NaN-poisoned and one call's output
// is checked: against the FP64 oracle over the complete output (barriers, and
// pipelining up to 2048), or, for 4096 and 8192, every element finite and every
// 16th (4096) / 64th (8192) row complete against FP64.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda_timing.h"
#include "ops/gemm.h"
#include "ops/gemm_precision.h"
#include "ops/gemm_reference.h"

using namespace tessel;

namespace {

void ck(cudaError_t e, const char* what) { tessel_bench::cuda_timing_check(e, what); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

using tessel_bench::Timing;

// Host-wall per call over a batch sized to ~30 ms (at most 3000 calls), and device time per call.
Timing time_calls(const std::function<void()>& call, double guess_us) {
  return tessel_bench::time_calls(call, guess_us, {30000, 3000}, median);
}

struct Problem {
  int64_t m, n, k;
  std::vector<float> a, b;
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  std::vector<double> oracle;  // complete output, when checked completely
  int64_t row_step = 1;        // rows checked against FP64 (1 = all)
  std::vector<double> sampled; // FP64 rows 0, step, 2 step, ...

  GemmPrecision precision;
  double bound;

  // A and B are drawn, rounded to the precision's storage type (the oracle sees the
  // stored values) and stored on the device.
  Problem(int64_t m_, int64_t n_, int64_t k_, GemmPrecision p = GemmPrecision::F32)
      : m(m_), n(n_), k(k_), a(m_ * k_), b(k_ * n_), precision(p) {
    std::mt19937_64 rng(m * 131 + n * 7 + k);
    fill_random(a, rng);
    fill_random(b, rng);
    DType st = storage_dtype(p);
    size_t esz = dtype_bytes(st);
    auto store = [&](std::vector<float>& v, float** dst) {
      std::vector<char> bytes(v.size() * esz);
      for (size_t i = 0; i < v.size(); ++i) {
        if (st == DType::F32) {
          std::memcpy(&bytes[i * 4], &v[i], 4);
        } else {
          uint16_t h = st == DType::BF16 ? float_to_bf16(v[i]) : float_to_f16(v[i]);
          std::memcpy(&bytes[i * 2], &h, 2);
          v[i] = st == DType::BF16 ? bf16_to_float(h) : f16_to_float(h);
        }
      }
      ck(cudaMalloc(dst, bytes.size()), "malloc");
      ck(cudaMemcpy(*dst, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "copy");
    };
    store(a, &da);
    store(b, &db);
    ck(cudaMalloc(&dc, m * n * 4), "malloc");
    // fp32: the fp32 bound; bf16/fp16 (exact products of the stored values, fp32
    // sums in the tensor cores): 1e-3; tf32 (operands rounded in the kernel): 2e-3.
    bound = p == GemmPrecision::F32 ? gemm_error_bound(k) : p == GemmPrecision::TF32 ? 2e-3 : 1e-3;
    if (m * n * k <= int64_t(2048) * 2048 * 2048 / 4) {
      oracle = gemm_oracle(m, n, k, 1.0, a.data(), k, b.data(), n, 0.0, nullptr, n);
    } else {
      row_step = m >= 8192 ? 64 : 16;
      if (m * n * k <= int64_t(2048) * 2048 * 2048) row_step = 1;
      int64_t rows = (m + row_step - 1) / row_step;
      sampled.assign(rows * n, 0.0);
      unsigned threads = std::max(1u, std::thread::hardware_concurrency());
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          std::vector<double> acc(n);
          for (int64_t s = t; s < rows; s += threads) {
            int64_t r = s * row_step;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t q = 0; q < k; ++q) {
              double x = a[r * k + q];
              const float* brow = &b[q * n];
              for (int64_t c = 0; c < n; ++c) acc[c] += x * brow[c];
            }
            std::copy(acc.begin(), acc.end(), sampled.begin() + s * n);
          }
        });
      for (auto& th : pool) th.join();
    }
  }
  ~Problem() {
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
  }

  // Relative error of the device's C (complete, or the sampled rows plus a
  // finiteness scan of every element).
  double check() const {
    std::vector<float> c(m * n);
    ck(cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost), "copy");
    if (!oracle.empty()) return gemm_relative_error(m, n, c.data(), n, oracle);
    for (float x : c)
      if (!std::isfinite(x)) return INFINITY;
    double num = 0, den = 0;
    for (int64_t s = 0; s * row_step < m; ++s)
      for (int64_t col = 0; col < n; ++col) {
        double ref = sampled[s * n + col], d = c[s * row_step * n + col] - ref;
        num += d * d;
        den += ref * ref;
      }
    return std::sqrt(num / den);
  }
};

struct Variant {
  std::string name;
  GemmOptions options;
};

struct Result {
  std::vector<double> host, dev;
  double worst_error = 0;
};

// Runs every variant on one problem for `rounds` counterbalanced rounds.
std::vector<Result> compare(Problem& p, const std::vector<Variant>& variants, int rounds, bool* ok) {
  std::vector<Result> out(variants.size());
  double bound = p.bound;
  double guess = 2.0 * p.m * p.n * p.k / 30e6 + 5;
  for (const Variant& v : variants) {  // compile and load outside the timing
    gemm(p.m, p.n, p.k, 1, p.da, p.k, p.db, p.n, 0, p.dc, p.n, v.options);
  }
  ck(cudaDeviceSynchronize(), "warm-up");
  for (int r = 0; r < rounds; ++r) {
    bool forward = r % 4 == 0 || r % 4 == 3;
    for (size_t s = 0; s < variants.size(); ++s) {
      size_t i = forward ? s : variants.size() - 1 - s;
      const GemmOptions& o = variants[i].options;
      auto call = [&] { gemm(p.m, p.n, p.k, 1, p.da, p.k, p.db, p.n, 0, p.dc, p.n, o); };
      ck(cudaMemset(p.dc, 0xff, p.m * p.n * 4), "poison");
      call();
      ck(cudaDeviceSynchronize(), "checked run");
      double err = p.check();
      out[i].worst_error = std::max(out[i].worst_error, err);
      if (!(err <= bound)) {
        std::printf("CHECK FAILED: %s %ldx%ldx%ld round %d error %.3g bound %.3g\n", variants[i].name.c_str(),
                    (long)p.m, (long)p.n, (long)p.k, r, err, bound);
        *ok = false;
      }
      Timing t = time_calls(call, guess);
      out[i].host.push_back(t.host_us);
      out[i].dev.push_back(t.dev_us);
    }
  }
  return out;
}

std::string ratio_text(const std::vector<double>& base, const std::vector<double>& x) {
  // Paired per round: base time / x time (> 1: x is faster).
  std::vector<double> r;
  for (size_t i = 0; i < base.size(); ++i) r.push_back(base[i] / x[i]);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.3f [%.3f, %.3f]", median(r), *std::min_element(r.begin(), r.end()),
                *std::max_element(r.begin(), r.end()));
  return buf;
}

std::string shape_name(int64_t m, int64_t n, int64_t k) {
  char b[64];
  std::snprintf(b, sizeof b, "%ldx%ldx%ld", (long)m, (long)n, (long)k);
  return b;
}

int barriers(int rounds) {
  const int64_t shapes[][3] = {{32, 32, 32},     {128, 128, 128}, {512, 512, 512}, {1024, 1024, 1024},
                               {256, 1024, 128}, {1024, 128, 256}, {127, 193, 61}, {513, 257, 129}};
  bool ok = true;
  std::printf("| shape | plan | fences/group on | off | on host us | off host us | on dev us | off dev us | "
              "host off/on median [min, max] | dev off/on median [min, max] | max rel err |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|\n");
  // The default plans (cp.async, window 2), then the seed's configuration (window 1,
  // synchronous copies), where planning removes one fence per k step.
  for (int seed_config = 0; seed_config < 2; ++seed_config)
  for (auto& s : shapes) {
    Problem p(s[0], s[1], s[2]);
    GemmOptions on;
    on.target = TargetKind::Cuda;
    on.device_pointers = true;
    on.plan = default_gemm_plan(TargetKind::Cuda, p.m, p.n, p.k, GemmPrecision::F32);
    if (seed_config) {
      on.plan->window = 1;
      on.plan->async_copy = false;
    }
    GemmOptions off = on;
    off.coalesce_barriers = false;
    GemmReport rep = gemm(p.m, p.n, p.k, 1, p.da, p.k, p.db, p.n, 0, p.dc, p.n, on);
    std::vector<Result> r = compare(p, {{"on", on}, {"off", off}}, rounds, &ok);
    std::printf("| %s | %s | %ld | %ld | %.2f | %.2f | %.2f | %.2f | %s | %s | %.2g |\n",
                shape_name(p.m, p.n, p.k).c_str(), rep.plan.to_string().c_str(),
                (long)rep.fences_dynamic_after, (long)rep.fences_dynamic_before, median(r[0].host),
                median(r[1].host), median(r[0].dev), median(r[1].dev), ratio_text(r[1].host, r[0].host).c_str(),
                ratio_text(r[1].dev, r[0].dev).c_str(), std::max(r[0].worst_error, r[1].worst_error));
    std::fflush(stdout);
  }
  return ok ? 0 : 1;
}

int pipelining(int rounds) {
  bool ok = true;
  std::printf("| size | tile | variant | host us | dev us | TF/s (dev) | dev W1/this median [min, max] | max rel err |\n");
  std::printf("|---|---|---|---:|---:|---:|---|---:|\n");
  for (int64_t size : {1024, 2048, 4096, 8192}) {
    Problem p(size, size, size);
    Plan base = default_gemm_plan(TargetKind::Cuda, size, size, size, GemmPrecision::F32);
    std::vector<Variant> variants;
    // The last two: register-level double buffering of the fragments (frag_buffers 2).
    struct Pipe {
      int window;
      bool async;
      int frag_buffers;
    };
    for (Pipe x : {Pipe{1, false, 1}, Pipe{2, false, 1}, Pipe{3, true, 1}, Pipe{4, true, 1}, Pipe{1, false, 2},
                   Pipe{4, true, 2}}) {
      Variant v;
      v.name = "W" + std::to_string(x.window) + (x.async ? " async" : " sync") + (x.frag_buffers == 2 ? " frag x2" : "");
      v.options.target = TargetKind::Cuda;
      v.options.device_pointers = true;
      Plan plan = base;
      plan.window = x.window;
      plan.async_copy = x.async;
      plan.frag_buffers = x.frag_buffers;
      v.options.plan = plan;
      variants.push_back(v);
    }
    std::vector<Result> r = compare(p, variants, rounds, &ok);
    for (size_t i = 0; i < variants.size(); ++i) {
      double dev = median(r[i].dev);
      char tile[64];
      std::snprintf(tile, sizeof tile, "%ldx%ldx%ld w=%d", (long)base.tile("BM"), (long)base.tile("BN"), (long)base.tile("BK"), base.workers);
      std::printf("| %ld^2 | %s | %s | %.2f | %.2f | %.1f | %s | %.2g |\n", (long)size, tile, variants[i].name.c_str(),
                  median(r[i].host), dev, 2.0 * size * size * size / (dev * 1e6),
                  ratio_text(r[0].dev, r[i].dev).c_str(), r[i].worst_error);
      std::fflush(stdout);
    }
  }
  return ok ? 0 : 1;
}

// Tile plans for the mma.sync and wgmma atoms at 4096^3 (each checked against FP64
// on the stored operands); the first of each precision is the default plan.
int sweep(int rounds) {
  bool ok = true;
  std::printf("| dtype | plan | warp tile | host us | dev us | TF/s (dev) | dev default/this median [min, max] | max rel err |\n");
  std::printf("|---|---|---|---:|---:|---:|---|---:|\n");
  const int64_t s = 4096;
  for (GemmPrecision prec : {GemmPrecision::BF16, GemmPrecision::TF32}) {
    Problem p(s, s, s, prec);
    Plan base = default_gemm_plan(TargetKind::Cuda, s, s, s, prec);
    struct Alt {
      AtomKind atom;
      int64_t bm, bn, bk;
      int workers, window;  // workers: warps (mma.sync) or warpgroups (wgmma)
    };
    std::vector<Alt> alts;
    const AtomKind S = AtomKind::MmaSync, W = AtomKind::Wgmma;
    if (prec == GemmPrecision::BF16)
      alts = {{S, 128, 256, 32, 8, 3}, {W, 256, 128, 64, 4, 4}, {W, 256, 128, 64, 4, 3}, {W, 192, 128, 64, 3, 4},
              {W, 128, 128, 64, 2, 4}, {W, 128, 128, 64, 2, 3}, {W, 128, 256, 64, 2, 4}, {W, 128, 64, 64, 1, 4}};
    else
      alts = {{S, 128, 128, 32, 4, 4}, {S, 128, 128, 32, 8, 3}, {S, 128, 256, 32, 8, 3}};
    std::vector<Variant> variants;
    Variant d;
    d.name = "default";
    d.options.target = TargetKind::Cuda;
    d.options.device_pointers = true;
    d.options.precision = prec;
    d.options.plan = base;
    variants.push_back(d);
    for (const Alt& x : alts) {
      Variant v = d;
      Plan plan = base;
      plan.atom = x.atom;
      plan.atom_m = x.atom == W ? 64 : 16;
      plan.atom_n = x.atom == W ? 64 : 8;
      plan.tiles["BM"] = x.bm;
      plan.tiles["BN"] = x.bn;
      plan.tiles["BK"] = x.bk;
      plan.workers = x.workers;
      plan.window = x.window;
      v.options.plan = plan;
      v.name = "alt";
      variants.push_back(v);
    }
    std::vector<Result> r = compare(p, variants, rounds, &ok);
    for (size_t i = 0; i < variants.size(); ++i) {
      GemmReport rep = gemm(p.m, p.n, p.k, 1, p.da, p.k, p.db, p.n, 0, p.dc, p.n, variants[i].options);
      double dev = median(r[i].dev);
      char warp[32];
      std::snprintf(warp, sizeof warp, "%ldx%ld", (long)(rep.plan.tile("BM") / rep.plan.worker_rows),
                    (long)(rep.plan.tile("BN") / rep.plan.worker_cols));
      std::printf("| %s | %s%s | %s | %.2f | %.2f | %.1f | %s | %.2g |\n", precision_name(prec),
                  rep.plan.to_string().c_str(), i == 0 ? " (default)" : "", warp, median(r[i].host), dev,
                  2.0 * s * s * s / (dev * 1e6), ratio_text(r[0].dev, r[i].dev).c_str(), r[i].worst_error);
      std::fflush(stdout);
    }
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_cuda_plans barriers|pipelining [--rounds R]\n");
    return 2;
  }
  std::string mode = argv[1];
  int rounds = 4;
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--rounds" && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
  cudaDeviceProp prop;
  ck(cudaGetDeviceProperties(&prop, 0), "props");
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::printf("device %s, %d SMs, driver API %d, %d rounds (ABBA)\n\n", prop.name, prop.multiProcessorCount,
              driver, rounds);
  if (mode == "barriers") return barriers(rounds);
  if (mode == "pipelining") return pipelining(rounds);
  if (mode == "sweep") return sweep(rounds);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
