// The GroupIR a wgmma plan produces (one warpgroup per worker, bf16 operands staged
// for the swizzled layouts, every pipeline window) runs on the sim race checker:
// no races, and the complete output within the FP64 bound of the oracle. The sim
// interprets the same program the cuda emitter prints, so a protocol error the
// plan introduces shows here without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_precision.h"
#include "ops/gemm_reference.h"
#include "target/sim/sim.h"

namespace tessel {
namespace {

TEST(WgmmaProgram, EveryWindowRunsRaceFreeOnSim) {
  const int64_t m = 70, n = 130, k = 100;  // ragged in m, n and k (two k tiles of 64)
  std::mt19937_64 rng(11);
  std::vector<float> a(m * k), b(k * n), c0(m * n, NAN);
  fill_random(a, rng);
  fill_random(b, rng);
  for (float& x : a) x = round_to_storage(GemmPrecision::BF16, x);
  for (float& x : b) x = round_to_storage(GemmPrecision::BF16, x);
  std::vector<double> oracle = gemm_oracle(m, n, k, 1.0, a.data(), k, b.data(), n, 0.0, c0.data(), n);
  struct Tile {
    int64_t bm, bn;
    int warpgroups;
  };
  for (Tile t : {Tile{64, 64, 1}, Tile{128, 128, 2}})
    for (auto [window, async] : {std::pair{1, false}, {2, false}, {2, true}, {3, true}, {4, true}}) {
      Plan plan = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16);
      ASSERT_EQ(plan.atom, AtomKind::Wgmma);
      plan.tiles["BM"] = t.bm, plan.tiles["BN"] = t.bn, plan.workers = t.warpgroups;
      plan.worker_rows = t.warpgroups, plan.worker_cols = 1;
      plan.window = window;
      plan.async_copy = async;
      plan.tma = false;  // thread copies (tensor maps: tests/tma)
      plan.producers = 0;
      CompiledGroup g = compile_to_group(gemm_kernel(DType::BF16), plan, CompileOptions{});
      ASSERT_EQ(g.program.lanes, 128);
      if (window >= 2 && plan.async_copy) {
        // The asynchronous wgmma comes before the copies it overlaps (pipeline pass).
        std::string text = print_group_program(g.program);
        size_t mma = text.find("mma #"), copy = text.find("copy #", text.find("pipelined {"));
        EXPECT_LT(mma, copy) << text;
      }
      std::vector<float> c = c0;
      LaunchArgs args;
      args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
      args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
      args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
      SimResult r = run_sim(g.program, args);
      EXPECT_EQ(r.race_count, 0) << plan.to_string() << (r.races.empty() ? "" : "\n" + r.races[0].message);
      double err = gemm_relative_error(m, n, c.data(), n, oracle);
      EXPECT_LE(err, gemm_error_bound(k)) << plan.to_string();
    }
}

// The smallest class of 16-bit products on mma.sync (gemm.cpp, kCudaOneStepMaxK): one
// k step of a 16x32 tile where rows start on 4 bytes and K <= 256, or where they
// start on 2 (K or N odd) and 64 < K <= 128; the two-stage 32x32x64 tile otherwise.
// Each default plan's GroupIR on the sim: the oracle's answer (C NaN first), no races.
TEST(MmaSyncSmallPlans, OneKStepWhereItPaysAndRaceFreeOnSim) {
  struct Case {
    int64_t m, n, k;
    bool one_step;
  };
  uint64_t seed = 60;
  for (const Case& c : {Case{40, 36, 72, true}, Case{17, 45, 99, true}, Case{30, 40, 77, true},
                        Case{31, 33, 61, false}, Case{20, 30, 201, false}, Case{24, 40, 130, true}}) {
    Plan plan = default_gemm_plan(TargetKind::Cuda, c.m, c.n, c.k, GemmPrecision::F16, "sm_90a");
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + " " +
                 plan.to_string());
    ASSERT_EQ(plan.atom, AtomKind::MmaSync);
    EXPECT_EQ(plan.tile("BM"), c.one_step ? 16 : 32);
    EXPECT_EQ(plan.window, c.one_step ? 1 : 2);
    if (c.one_step) EXPECT_EQ(plan.tile("BK"), (c.k + 63) / 64 * 64);
    std::mt19937_64 rng(seed++);
    std::vector<float> a(c.m * c.k), b(c.k * c.n), out(c.m * c.n, NAN);
    fill_random(a, rng);
    fill_random(b, rng);
    for (float& x : a) x = round_to_storage(GemmPrecision::F16, x);
    for (float& x : b) x = round_to_storage(GemmPrecision::F16, x);
    std::vector<double> oracle = gemm_oracle(c.m, c.n, c.k, 1.0, a.data(), c.k, b.data(), c.n, 0.0, out.data(), c.n);
    CompiledGroup g = compile_to_group(gemm_kernel(DType::F16), plan, CompileOptions{});
    LaunchArgs args;
    args.sizes = {{"M", c.m}, {"N", c.n}, {"K", c.k}, {"lda", c.k}, {"ldb", c.n}, {"ldc", c.n}};
    args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
    args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", out.data()}};
    SimResult r = run_sim(g.program, args);
    EXPECT_EQ(r.race_count, 0) << (r.races.empty() ? "" : r.races[0].message);
    EXPECT_LE(gemm_relative_error(c.m, c.n, out.data(), c.n, oracle), gemm_error_bound(c.k));
  }
}

// A 4-stage wgmma GEMM (128x128 over 2 warpgroups, one mma in flight) on a
// 70x130x300 problem: five k tiles, so the steady state runs.
struct FourStageGemm {
  static constexpr int64_t m = 70, n = 130, k = 300;
  std::vector<float> a, b, c;
  GroupProgram program;
  LaunchArgs args;

  explicit FourStageGemm(uint64_t seed) : a(m * k), b(k * n), c(m * n, NAN) {
    std::mt19937_64 rng(seed);
    fill_random(a, rng);
    fill_random(b, rng);
    Plan plan = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16);
    plan.tiles["BM"] = 128, plan.tiles["BN"] = 128, plan.workers = 2, plan.worker_rows = 2, plan.worker_cols = 1;
    plan.window = 4;
    plan.async_copy = true;
    plan.tma = false;
    plan.producers = 0;
    program = compile_to_group(gemm_kernel(DType::BF16), plan, CompileOptions{}).program;
    args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
    args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
    args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
  }
};

// The async-mma protocol broken on purpose: an mma.wait that lets one group too many
// stay in flight, or none at all, lets the next copy refill a version an mma in
// flight still reads; the sim reports it, naming both ops.
TEST(WgmmaProgram, BrokenMmaWaitIsARaceOnSim) {
  FourStageGemm gemm(12);
  const GroupProgram& program = gemm.program;
  const LaunchArgs& args = gemm.args;
  ASSERT_EQ(run_sim(program, args).race_count, 0);
  // The async protocol round-trips through the text form.
  std::string text = print_group_program(program);
  EXPECT_NE(text.find("mma.wait #"), std::string::npos) << text;
  EXPECT_NE(text.find(") async"), std::string::npos) << text;  // an mma marked async
  EXPECT_EQ(print_group_program(parse_group_program(text)), text);
  auto loop_wait = [](GroupProgram& p) -> std::vector<GroupOp>::iterator {
    for (GroupOp& op : p.body)
      if (op.kind == GroupOpKind::For && op.pipelined)
        for (auto it = op.bodies[0].begin(); it != op.bodies[0].end(); ++it)
          if (it->kind == GroupOpKind::MmaWait) return it;
    ADD_FAILURE() << "no mma.wait in the pipelined loop";
    return {};
  };
  for (bool remove : {false, true}) {
    GroupProgram p = program;
    auto wait = loop_wait(p);
    ASSERT_EQ(wait->pending, 1);
    if (remove) {
      for (GroupOp& op : p.body)
        if (op.kind == GroupOpKind::For && op.pipelined) op.bodies[0].erase(wait);
    } else {
      wait->pending = 2;
    }
    SimResult r = run_sim(p, args);
    ASSERT_GT(r.race_count, 0) << (remove ? "mma.wait removed" : "mma.wait pending 2");
    EXPECT_NE(r.races[0].message.find("before the mma.wait"), std::string::npos) << r.races[0].message;
    EXPECT_NE(r.races[0].message.find("mma #"), std::string::npos) << r.races[0].message;
    EXPECT_NE(r.races[0].message.find("copy #"), std::string::npos) << r.races[0].message;
  }
}

// The accumulator side of the protocol: without the mma.wait after the loop the
// epilogue reads the accumulator an mma still writes; the sim names both.
TEST(WgmmaProgram, AccumulatorTouchedBeforeItsMmaWaitIsARaceOnSim) {
  FourStageGemm gemm(13);
  const LaunchArgs& args = gemm.args;
  GroupProgram p = gemm.program;
  auto drain = std::find_if(p.body.begin(), p.body.end(),
                            [](const GroupOp& op) { return op.kind == GroupOpKind::MmaWait; });
  ASSERT_NE(drain, p.body.end());
  ASSERT_EQ(drain->pending, 0);
  p.body.erase(drain);
  SimResult r = run_sim(p, args);
  ASSERT_GT(r.race_count, 0);
  EXPECT_NE(r.races[0].message.find("accumulates into it"), std::string::npos) << r.races[0].message;
  EXPECT_NE(r.races[0].message.find("before the mma.wait"), std::string::npos) << r.races[0].message;
}

}  // namespace
}  // namespace tessel
