// Helpers for the pipelining tests: one GEMM through the front door with a chosen
// window and copy protocol, on fixed random inputs, and the compiled GroupIR of a
// plan for the tests that inspect or break the program.
#pragma once
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_reference.h"

namespace tessel::test {

struct Shape {
  int64_t m, n, k;
  float alpha, beta;
};

inline std::string describe(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
         " alpha " + std::to_string(s.alpha) + " beta " + std::to_string(s.beta);
}

inline std::string describe(const Plan& p) { return p.to_string(); }

// Inputs drawn once per shape (same seed for every plan), so outputs can be
// compared bit for bit. C is NaN when beta == 0: every element must be written.
struct GemmInputs {
  Shape s;
  std::vector<float> a, b, c;
  explicit GemmInputs(const Shape& shape, uint64_t seed = 1) : s(shape) {
    std::mt19937_64 rng(seed);
    a.resize(std::max<int64_t>(1, s.m * s.k));
    b.resize(std::max<int64_t>(1, s.k * s.n));
    c.resize(std::max<int64_t>(1, s.m * s.n));
    fill_random(a, rng);
    fill_random(b, rng);
    fill_random(c, rng);
    if (s.beta == 0) std::fill(c.begin(), c.end(), NAN);
  }
  std::vector<double> oracle() const {
    return gemm_oracle(s.m, s.n, s.k, s.alpha, a.data(), std::max<int64_t>(1, s.k), b.data(), s.n,
                       s.beta, c.data(), s.n);
  }
};

struct GemmRun {
  std::vector<float> c;
  GemmReport report;
};

inline GemmRun run_gemm(const GemmInputs& in, const Plan& plan, uint64_t sim_seed = 1) {
  GemmOptions o;
  o.target = plan.target;
  o.plan = plan;
  o.threads = 1;
  o.sim_seed = sim_seed;
  GemmRun r;
  r.c = in.c;
  const Shape& s = in.s;
  r.report = gemm(s.m, s.n, s.k, s.alpha, in.a.data(), std::max<int64_t>(1, s.k), in.b.data(), s.n,
                  s.beta, r.c.data(), s.n, o);
  return r;
}

inline bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

inline Plan with_window(Plan p, int window, bool async) {
  p.window = window;
  p.async_copy = async;
  return p;
}

// The sim's GEMM plan: a small tile, 4 workers as 2x2 (the front door re-picks
// the worker grid for other worker counts), and the given schedule.
inline Plan sim_plan(int window, bool async, int64_t bm = 16, int64_t bn = 16, int64_t bk = 8,
                     int workers = 4) {
  Plan p = default_gemm_plan(TargetKind::Sim, 64, 64, 64);
  p.tiles = {{"BM", bm}, {"BN", bn}, {"BK", bk}};
  p.workers = workers;
  p.worker_rows = p.worker_cols = 2;
  return with_window(p, window, async);
}

// GroupIR after pipelining and barrier planning (the program a target runs).
inline CompiledGroup compile_plan(const Plan& plan) {
  return compile_to_group(gemm_kernel(), plan, CompileOptions{});
}

}  // namespace tessel::test
