// The cached call path of tessel::gemm (src/ops/gemm.cpp's per-thread memo of the
// last call's bound launch) and the BoundLaunch it runs: repeated calls on new
// buffers, scalars and plans compute the right thing (complete output against
// the FP64 oracle, C poisoned with NaN when beta == 0), GemmOptions::report and
// LaunchOptions::timed leave the report empty, and every check of the slow path
// (sizes, null pointers, overlap) still refuses bad calls that hit the memo.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <vector>

#include "../expect_error.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_reference.h"
#include "ir/tile_text.h"
#include "plan/tuning_cache.h"
#include "target/cpu/cpu_jit.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

using test::expect_error;

// Operands of one call, fresh random values (never zero); C is NaN where beta == 0
// would never read it, random otherwise.
struct Operands {
  int64_t m, n, k, lda, ldb, ldc;
  std::vector<float> a, b, c;
  Operands(int64_t m_, int64_t n_, int64_t k_, int64_t pad, float beta, uint64_t seed)
      : m(m_), n(n_), k(k_), lda(k_ + pad), ldb(n_ + pad), ldc(n_ + pad),
        a(m * lda), b(k * ldb), c(m * ldc) {
    std::mt19937_64 rng(seed);
    fill_random(a, rng);
    fill_random(b, rng);
    fill_random(c, rng);
    if (beta == 0) std::fill(c.begin(), c.end(), NAN);
  }
};

// Runs one call and checks the complete output against the oracle.
GemmReport checked_call(Operands& x, float alpha, float beta, const GemmOptions& o) {
  std::vector<double> want =
      gemm_oracle(x.m, x.n, x.k, alpha, x.a.data(), x.lda, x.b.data(), x.ldb, beta, x.c.data(), x.ldc);
  GemmReport r = gemm(x.m, x.n, x.k, alpha, x.a.data(), x.lda, x.b.data(), x.ldb, beta, x.c.data(), x.ldc, o);
  EXPECT_LE(gemm_relative_error(x.m, x.n, x.c.data(), x.ldc, want), gemm_error_bound(x.k))
      << x.m << "x" << x.n << "x" << x.k << " alpha " << alpha << " beta " << beta;
  return r;
}

// Repeated calls of one shape (the memo) on new buffers and scalars; with
// report = false the report is empty, with report = true it carries the plan of
// the call that made the memo and a launch time.
TEST(GemmCall, RepeatedCallsOnNewBuffersWithAndWithoutReport) {
  const float scalars[][2] = {{1.0f, 0.0f}, {-0.5f, 2.0f}, {1.5f, 0.0f}, {0.25f, -1.0f}, {2.0f, 0.0f}};
  for (auto [m, n, k, pad] : {std::array<int64_t, 4>{32, 32, 32, 0}, {37, 45, 29, 3}, {5, 70, 3, 1}}) {
    GemmOptions loud, quiet;
    loud.threads = quiet.threads = 1;
    quiet.report = false;
    Operands first(m, n, k, pad, 0.0f, 1);
    GemmReport made = checked_call(first, 1.0f, 0.0f, loud);
    ASSERT_FALSE(made.plan.tiles.empty());
    uint64_t seed = 10;
    for (auto [alpha, beta] : scalars) {
      Operands x(m, n, k, pad, beta, ++seed);
      GemmReport q = checked_call(x, alpha, beta, quiet);
      EXPECT_TRUE(q.plan.tiles.empty());
      EXPECT_EQ(q.run_us, 0);
      Operands y(m, n, k, pad, beta, ++seed);
      GemmReport l = checked_call(y, alpha, beta, loud);
      EXPECT_EQ(l.plan, made.plan);
      EXPECT_GT(l.run_us, 0);
    }
  }
}

// A call with a plan of its own is served by the memo too, and a different plan
// (or none) is not served by the memo of another.
TEST(GemmCall, ExplicitPlansAreMemoizedAndTellApart) {
  const int64_t m = 50, n = 70, k = 40;
  GemmOptions big, small, none;
  big.threads = small.threads = none.threads = 1;
  Plan p = default_gemm_plan(TargetKind::Cpu, m, n, k);
  set_gemm_tile(p, 48, 64, 16);
  big.plan = p;
  set_gemm_tile(p, 12, 32, 8);
  small.plan = p;
  uint64_t seed = 100;
  for (int round = 0; round < 2; ++round)
    for (const GemmOptions* o : {&big, &big, &small, &small, &none, &big}) {
      Operands x(m, n, k, 2, 0.0f, ++seed);
      GemmReport r = checked_call(x, 1.25f, 0.0f, *o);
      std::string want = o->plan ? gemm_tile_string(*o->plan)
                                 : gemm_tile_string(default_gemm_plan(TargetKind::Cpu, m, n, k));
      EXPECT_EQ(gemm_tile_string(r.plan), want);
    }
}

// Bad calls of a shape the memo holds are refused as on the first call, with or
// without a report, and the memo still serves good calls afterwards.
TEST(GemmCall, MemoizedCallsAreCheckedLikeTheFirst) {
  const int64_t m = 32, n = 32, k = 32;
  for (bool report : {true, false}) {
    GemmOptions o;
    o.threads = 1;
    o.report = report;
    Operands x(m, n, k, 0, 0.0f, 7);
    checked_call(x, 1.0f, 0.0f, o);
    checked_call(x, 1.0f, 0.0f, o);  // the memo
    expect_error(ErrorKind::InvalidArgument, "A is null", [&] {
      gemm(m, n, k, 1.0f, nullptr, k, x.b.data(), n, 0.0f, x.c.data(), n, o);
    });
    expect_error(ErrorKind::InvalidArgument, "C is null", [&] {
      gemm(m, n, k, 1.0f, x.a.data(), k, x.b.data(), n, 0.0f, nullptr, n, o);
    });
    expect_error(ErrorKind::InvalidArgument, "ldc = 31", [&] {
      gemm(m, n, k, 1.0f, x.a.data(), k, x.b.data(), n, 0.0f, x.c.data(), n - 1, o);
    });
    // C over A (and over B), same shape and leading dimensions: refused before
    // anything runs, so A keeps its values.
    std::vector<float> a_before = x.a;
    expect_error(ErrorKind::InvalidArgument, "overlap", [&] {
      gemm(m, n, k, 1.0f, x.a.data(), k, x.b.data(), n, 0.0f, x.a.data() + 5, n, o);
    });
    EXPECT_EQ(0, std::memcmp(a_before.data(), x.a.data(), a_before.size() * sizeof(float)));
    expect_error(ErrorKind::InvalidArgument, "overlap", [&] {
      gemm(m, n, k, 1.0f, x.a.data(), k, x.b.data(), n, 0.0f, x.b.data(), n, o);
    });
    Operands y(m, n, k, 0, 0.5f, 8);
    checked_call(y, -1.0f, 0.5f, o);
  }
}

// PreparedGemm (the header's example): one shape prepared, then runs on new
// buffers and scalars, padded leading dimensions, beta 0 (C NaN) and not; the
// sim target and an empty output take the front door and are right too.
TEST(PreparedGemm, RunsOnNewBuffersAndScalars) {
  struct Shape { int64_t m, n, k, pad; TargetKind target; };
  for (const Shape& s : {Shape{32, 32, 32, 0, TargetKind::Cpu}, Shape{48, 48, 48, 0, TargetKind::Cpu},
                         Shape{77, 45, 29, 3, TargetKind::Cpu}, Shape{130, 70, 140, 1, TargetKind::Cpu},
                         Shape{20, 40, 12, 2, TargetKind::Sim}}) {
    GemmOptions o;
    o.threads = 1;
    o.target = s.target;
    Operands first(s.m, s.n, s.k, s.pad, 0.0f, 11);
    PreparedGemm g(s.m, s.n, s.k, first.lda, first.ldb, first.ldc, o);
    if (s.target == TargetKind::Cpu) {
      EXPECT_FALSE(g.plan().tiles.empty());
    }
    // Every call's operands live to the end: new buffers at new addresses.
    const float betas[] = {0.0f, 0.5f, 0.0f, -1.0f};
    std::vector<Operands> calls;
    for (size_t i = 0; i < 4; ++i) calls.emplace_back(s.m, s.n, s.k, s.pad, betas[i], 20 + i);
    for (size_t i = 0; i < 4; ++i) {
      Operands& x = calls[i];
      const float beta = betas[i];
      const float alpha = beta == 0 ? 1.0f : -0.75f;
      std::vector<double> want =
          gemm_oracle(x.m, x.n, x.k, alpha, x.a.data(), x.lda, x.b.data(), x.ldb, beta, x.c.data(), x.ldc);
      g.run(alpha, x.a.data(), x.b.data(), beta, x.c.data());
      EXPECT_LE(gemm_relative_error(x.m, x.n, x.c.data(), x.ldc, want), gemm_error_bound(x.k))
          << s.m << "x" << s.n << "x" << s.k << " beta " << beta;
    }
  }
  PreparedGemm empty(0, 5, 3, 3, 5, 5);
  empty.run(1.0f, nullptr, nullptr, 0.0f, nullptr);
}

// Runs on the buffers of the run before take the one-group shortcut (the group
// function called directly, with the prepared object's own scratch): fresh values in
// the same buffers and new scalars every run, and C over A refused even after
// shortcut runs. With the scratch poisoned, the group function of arrays; without,
// the one of registers where the unit has it (tiny kernels: 1x1x1 to 16^3, padded
// rows too), whose leaves jump to the general body for other scalars or strides.
TEST(PreparedGemm, RunsOnTheSameBuffersMatchTheOracle) {
  struct Shape { int64_t m, n, k, pad; };
  for (bool poison : {true, false}) {
    SCOPED_TRACE(poison ? "scratch poisoned" : "not poisoned");
    set_cpu_scratch_poison(poison);
    for (const Shape& s : {Shape{32, 32, 32, 0}, Shape{16, 16, 16, 0}, Shape{48, 48, 48, 0}, Shape{77, 45, 29, 3},
                           Shape{5, 7, 3, 1}, Shape{1, 1, 1, 0}, Shape{130, 70, 140, 1}}) {
      GemmOptions o;
      o.threads = 1;
      Operands x(s.m, s.n, s.k, s.pad, 0.0f, 60);
      PreparedGemm g(s.m, s.n, s.k, x.lda, x.ldb, x.ldc, o);
      const float alphas[] = {1.0f, -0.75f, 2.0f, 1.0f, 0.5f, 1.0f};
      const float betas[] = {0.0f, 0.5f, 0.0f, -1.0f, 1.0f, 1.0f};
      for (int run = 0; run < 6; ++run) {
        Operands fresh(s.m, s.n, s.k, s.pad, betas[run], 61 + run);  // new values, copied into x's buffers
        std::copy(fresh.a.begin(), fresh.a.end(), x.a.begin());
        std::copy(fresh.b.begin(), fresh.b.end(), x.b.begin());
        std::copy(fresh.c.begin(), fresh.c.end(), x.c.begin());
        std::vector<double> want = gemm_oracle(x.m, x.n, x.k, alphas[run], x.a.data(), x.lda, x.b.data(), x.ldb,
                                               betas[run], x.c.data(), x.ldc);
        g.run(alphas[run], x.a.data(), x.b.data(), betas[run], x.c.data());
        EXPECT_LE(gemm_relative_error(x.m, x.n, x.c.data(), x.ldc, want), gemm_error_bound(x.k))
            << s.m << "x" << s.n << "x" << s.k << " run " << run;
      }
      std::vector<float> shared(std::max(x.a.size(), x.c.size()), 1.0f);  // A and C in one buffer: refused
      expect_error(ErrorKind::InvalidArgument, "overlap",
                   [&] { g.run(1.0f, shared.data(), x.b.data(), 0.0f, shared.data()); });
      std::fill(x.c.begin(), x.c.end(), NAN);  // and the shortcut's buffers still run right after
      std::vector<double> want = gemm_oracle(x.m, x.n, x.k, 1.0, x.a.data(), x.lda, x.b.data(), x.ldb, 0.0, nullptr,
                                             x.ldc);
      g.run(1.0f, x.a.data(), x.b.data(), 0.0f, x.c.data());
      EXPECT_LE(gemm_relative_error(x.m, x.n, x.c.data(), x.ldc, want), gemm_error_bound(x.k));
    }
  }
  set_cpu_scratch_poison(false);
}

// Bad sizes and options are refused when the shape is prepared; bad pointers and
// an overlap with C when it runs (the first run and the bound ones alike), and the
// prepared shape still runs good calls afterwards.
TEST(PreparedGemm, RefusesBadSizesPointersAndOverlaps) {
  expect_error(ErrorKind::InvalidArgument, "ldc = 31", [] { PreparedGemm(32, 32, 32, 32, 32, 31); });
  expect_error(ErrorKind::InvalidArgument, "non-negative", [] { PreparedGemm(-1, 32, 32, 32, 32, 32); });
  GemmOptions bad_threads;
  bad_threads.threads = -2;
  expect_error(ErrorKind::InvalidArgument, "threads = -2", [&] { PreparedGemm(8, 8, 8, 8, 8, 8, bad_threads); });
  GemmOptions split;
  split.split_k = 2;
  expect_error(ErrorKind::Unsupported, "split_k = 2", [&] { PreparedGemm(8, 8, 8, 8, 8, 8, split); });

  const int64_t m = 40, n = 48, k = 24;
  GemmOptions o;
  o.threads = 1;
  PreparedGemm g(m, n, k, k, n, n, o);
  for (int round = 0; round < 2; ++round) {  // before the first binding, and after
    Operands x(m, n, k, 0, 0.0f, 40 + round);
    expect_error(ErrorKind::InvalidArgument, "A is null",
                 [&] { g.run(1.0f, nullptr, x.b.data(), 0.0f, x.c.data()); });
    expect_error(ErrorKind::InvalidArgument, "C is null",
                 [&] { g.run(1.0f, x.a.data(), x.b.data(), 0.0f, nullptr); });
    std::vector<float> b_before = x.b;  // C over B: refused before anything runs
    expect_error(ErrorKind::InvalidArgument, "overlap",
                 [&] { g.run(1.0f, x.a.data(), x.b.data(), 0.0f, x.b.data()); });
    EXPECT_EQ(0, std::memcmp(b_before.data(), x.b.data(), b_before.size() * sizeof(float)));
    std::vector<double> want = gemm_oracle(m, n, k, 1.0, x.a.data(), k, x.b.data(), n, 0.0, nullptr, n);
    g.run(1.0f, x.a.data(), x.b.data(), 0.0f, x.c.data());
    EXPECT_LE(gemm_relative_error(m, n, x.c.data(), n, want), gemm_error_bound(k));
  }
}

// A bound launch with LaunchOptions::timed false reports no time; its re-pointed
// tensors are checked for overlap as at bind.
TEST(GemmCall, UntimedBoundLaunchStillRefusesAnOverlap) {
  const int64_t m = 16, n = 32, k = 8;
  Operands x(m, n, k, 0, 0.0f, 3);
  GemmReport made = gemm(m, n, k, 1.0f, x.a.data(), k, x.b.data(), n, 0.0f, x.c.data(), n);
  Kernel kernel = compile(gemm_kernel(), made.plan);
  KernelArgs args;
  args.tensors["A"] = TensorArg::host(x.a.data(), {m, k});
  args.tensors["B"] = TensorArg::host(x.b.data(), {k, n});
  args.tensors["C"] = TensorArg::host(x.c.data(), {m, n});
  args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
  BoundLaunch launch = kernel.bind(args);
  LaunchOptions untimed;
  untimed.timed = false;
  std::fill(x.c.begin(), x.c.end(), NAN);
  EXPECT_EQ(launch.run(untimed).run_us, 0);
  std::vector<double> want = gemm_oracle(m, n, k, 1.0, x.a.data(), k, x.b.data(), n, 0.0, nullptr, n);
  EXPECT_LE(gemm_relative_error(m, n, x.c.data(), n, want), gemm_error_bound(k));
  launch.set_tensor(2, x.b.data() + 3);  // C now over B
  expect_error(ErrorKind::InvalidArgument, "overlap", [&] { launch.run(untimed); });
  launch.set_tensor(0, x.b.data());  // A and B on one buffer: both read-only, allowed
  launch.set_tensor(2, x.c.data());
  launch.run(untimed);
}

// kernels/gemm*.tir are the front door's kernels: `tessel tune` on them records
// entries under the hash tessel::gemm looks up (source locations left out).
TEST(GemmCall, KernelFilesAreTheFrontDoorsKernels) {
  for (auto [file, dtype] : {std::pair{"gemm.tir", DType::F32}, {"front_door/gemm_bf16.tir", DType::BF16},
                             {"front_door/gemm_f16.tir", DType::F16}}) {
    std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/kernels/" + file);
    std::stringstream text;
    text << in.rdbuf();
    ASSERT_FALSE(text.str().empty()) << file;
    EXPECT_EQ(kernel_hash(parse_tile_kernel(text.str())), kernel_hash(gemm_kernel(dtype))) << file;
  }
  EXPECT_NE(kernel_hash(gemm_kernel(DType::F32)), kernel_hash(gemm_kernel(DType::BF16)));
}

// tessel::gemm runs the tuning cache's winner for its kernel, target, threads and
// shape: the exact shape, else the nearest of its class; another class keeps the
// default rules, and a winner recorded while the process runs is seen by the next
// call that chooses a plan. Outputs checked against the oracle throughout.
TEST(GemmCall, TuningCacheWinnersReachTheFrontDoor) {
  char tmpl[] = "/tmp/tessel-gemm-tuned-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const char* was = std::getenv("TESSEL_CACHE_DIR");
  const std::string saved = was ? was : "";
  setenv("TESSEL_CACHE_DIR", dir.c_str(), 1);
  GemmOptions o;
  o.threads = 1;
  auto winner = [](int64_t bm, int64_t bn, int64_t bk) {
    Plan p = default_gemm_plan(TargetKind::Cpu, 100, 100, 100, GemmPrecision::F32, "", 1);
    p.direct = false;
    set_gemm_tile(p, bm, bn, bk);
    return p;
  };
  const std::string hash = kernel_hash(gemm_kernel(DType::F32));
  TuningCache(dir).record(TunedShape{hash, TargetKind::Cpu, 1, {{"M", 100}, {"N", 100}, {"K", 100}}, 5.0, winner(48, 64, 16)});
  uint64_t seed = 500;
  auto call = [&](int64_t m, int64_t n, int64_t k) {
    Operands x(m, n, k, 1, 0.0f, ++seed);
    return checked_call(x, 0.75f, 0.0f, o);
  };
  GemmReport r = call(100, 100, 100);
  EXPECT_EQ(r.plan_source, "tuning cache (exact shape)");
  EXPECT_EQ(gemm_tile_string(r.plan), "48x64x16");
  r = call(90, 110, 120);  // the same class (each size rounded up to 128)
  EXPECT_EQ(r.plan_source, "tuning cache (nearest shape of its class)");
  EXPECT_EQ(gemm_tile_string(r.plan), "48x64x16");
  r = call(300, 110, 120);
  EXPECT_EQ(r.plan_source, "default rules");
  TuningCache(dir).record(TunedShape{hash, TargetKind::Cpu, 1, {{"M", 300}, {"N", 110}, {"K", 120}}, 9.0, winner(24, 32, 8)});
  call(100, 100, 100);  // another shape, so that the next call chooses its plan again
  r = call(300, 110, 120);
  EXPECT_EQ(r.plan_source, "tuning cache (exact shape)");
  EXPECT_EQ(gemm_tile_string(r.plan), "24x32x8");
  o.threads = 2;  // winners are per thread count
  EXPECT_EQ(call(100, 100, 100).plan_source, "default rules");
  if (saved.empty()) unsetenv("TESSEL_CACHE_DIR");
  else setenv("TESSEL_CACHE_DIR", saved.c_str(), 1);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace tessel
