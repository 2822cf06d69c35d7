// Issue 14, the lowering's side: Plan::tma (and Plan::producers) turn the staged
// tiles of any pipeline loop into tma copies synchronized by full/empty mbarriers
// (src/passes/tma_pipeline.h). Every program the plans produce runs on the sim
// race checker with 0 races and the complete output against an oracle: GEMM (exact
// small-integer products, NaN-poisoned C) on ragged shapes for the sim's fma atom
// and for wgmma plans, with and without a producer role, every window; the strided
// (transposed) and batched GEMMs and attention through the public API against the
// FP64 evaluator. Dropping one wait or release, or flipping a phase, is reported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "../sim/race_assertions.h"
#include "check/checked_run.h"
#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_precision.h"
#include "ops/library.h"
#include "plan/default_plan.h"
#include "target/sim/sim.h"
#include "tessel/error.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

using test::names_race;
using test::races_text;

// The sim's fma atom: 16x16x8 tiles over a 2x2 worker grid.
Plan sim_plan(int window, int producers) {
  Plan p;
  p.target = TargetKind::Sim;
  set_gemm_tile(p, 16, 16, 8);
  p.workers = 4, p.worker_rows = 2, p.worker_cols = 2;
  p.window = window;
  p.tma = true;
  p.producers = producers;
  return p;
}

// A wgmma plan's GroupIR (bf16 operands in the swizzled layouts, warpgroup workers).
Plan wgmma_plan(int64_t bm, int64_t bn, int warpgroups, int window, int producers) {
  Plan p = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16, "sm_90");
  EXPECT_EQ(p.atom, AtomKind::Wgmma);
  set_gemm_tile(p, bm, bn, 64);
  p.workers = warpgroups, p.worker_rows = warpgroups, p.worker_cols = 1;
  p.window = window;
  p.async_copy = false;
  p.tma = true;
  p.producers = producers;
  return p;
}

GroupProgram gemm_program(const Plan& plan, DType ab = DType::F32) {
  validate_plan(plan);
  CompiledGroup g = compile_to_group(gemm_kernel(ab), plan, CompileOptions{});
  EXPECT_EQ(g.tma.loops_converted, 1) << g.tma.skipped_reason;
  return g.program;
}

// C = alpha A B + beta C on small integers (exact in fp32), C poisoned with NaN when
// beta = 0; the largest difference from the exact result.
struct IntGemm {
  int64_t m, n, k;
  double beta;
  std::vector<float> a, b, c, c0;

  IntGemm(int64_t m_, int64_t n_, int64_t k_, double beta_ = 0)
      : m(m_), n(n_), k(k_), beta(beta_), a(m * k + 1), b(k * n + 1), c(m * n), c0(m * n) {  // K = 0: no null
    std::mt19937_64 rng(static_cast<uint64_t>(m * 131 + n * 7 + k));
    std::uniform_int_distribution<int> small(-3, 3);
    for (float& x : a) x = static_cast<float>(small(rng));
    for (float& x : b) x = static_cast<float>(small(rng));
    for (float& x : c0) x = beta == 0 ? NAN : static_cast<float>(small(rng));
  }

  SimResult run(const GroupProgram& p) {
    c = c0;
    LaunchArgs args;
    args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
    args.scalars = {{"alpha", 1.0}, {"beta", beta}};
    args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
    SimOptions o;
    o.max_races_recorded = 1 << 16;
    return run_sim(p, args, o);
  }

  double error() const {
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = beta == 0 ? 0.0 : beta * c0[i * n + j];  // c0 is NaN at beta 0
        for (int64_t kk = 0; kk < k; ++kk) s += double(a[i * k + kk]) * b[kk * n + j];
        float got = c[i * n + j];
        worst = std::max(worst, std::isnan(got) ? INFINITY : std::fabs(got - s));
      }
    return worst;
  }
};

using Shape = std::tuple<int64_t, int64_t, int64_t>;

void expect_exact(const GroupProgram& p, const std::vector<Shape>& shapes, const std::string& what) {
  for (auto [m, n, k] : shapes)
    for (double beta : {0.0, 2.0}) {
      IntGemm g(m, n, k, beta);
      SimResult r = g.run(p);
      EXPECT_EQ(r.race_count, 0) << what << " " << m << "x" << n << "x" << k << races_text(r).substr(0, 3000);
      EXPECT_EQ(g.error(), 0.0) << what << " " << m << "x" << n << "x" << k << " beta " << beta;
    }
}

TEST(TmaPipelineSim, FmaGemmEveryWindowWithAndWithoutProducers) {
  // Ragged in every dimension; K = 0 (no stage), one stage, fewer stages than the
  // window, and many rounds of every slot.
  const std::vector<Shape> shapes = {{33, 47, 29}, {16, 16, 8}, {5, 3, 0}, {20, 9, 3}, {17, 18, 100}};
  for (int producers : {0, 1, 2})
    for (int window : {1, 2, 3, 4}) {
      Plan plan = sim_plan(window, producers);
      GroupProgram p = gemm_program(plan);
      EXPECT_EQ(p.workers, 4 + producers);
      EXPECT_EQ(p.mbarriers.size(), 2u);
      expect_exact(p, shapes, plan.to_string());
    }
}

// The default fp32 plans through tensor maps (the fma atom, 256 workers): 128x64
// tiles (kFmaMid* in gemm.cpp) with four stages and three, exact and race-free on
// ragged shapes, one k tile and several.
TEST(TmaPipelineSim, DefaultFp32TilesThroughTensorMapsRaceFree) {
  for (auto [m, n, k, tile] : {std::tuple<int64_t, int64_t, int64_t, std::string>{1000, 1000, 1000, "128x64/4"},
                               {2000, 2000, 256, "128x64/3"}}) {
    const Plan plan = default_gemm_plan(TargetKind::Cuda, m, n, k, GemmPrecision::F32, "sm_90");
    ASSERT_EQ(std::to_string(plan.tile("BM")) + "x" + std::to_string(plan.tile("BN")) + "/" +
                  std::to_string(plan.window),
              tile);
    ASSERT_TRUE(plan.tma);
    expect_exact(gemm_program(plan), {{130, 70, 100}, {128, 64, 32}, {260, 130, 70}}, plan.to_string());
  }
}

TEST(TmaPipelineSim, WgmmaGemmKeepsOneMmaInFlightRaceFree) {
  const std::vector<Shape> shapes = {{70, 130, 300}, {128, 128, 64}, {64, 64, 1}, {130, 72, 200}};
  for (auto [bm, bn, wg] : {std::tuple<int64_t, int64_t, int>{64, 64, 1}, {128, 128, 2}})
    for (int producers : {0, 1})
      for (int window : {1, 2, 3, 4}) {
        Plan plan = wgmma_plan(bm, bn, wg, window, producers);
        GroupProgram p = gemm_program(plan, DType::BF16);
        std::string text = print_group_program(p);
        if (window >= 2) EXPECT_NE(text.find("mma.wait"), std::string::npos) << text;  // the async mma, its wait
        EXPECT_EQ(text.find("copy #"), std::string::npos) << text;     // every staging copy became tma
        if (producers) EXPECT_NE(text.find("regs 40"), std::string::npos) << text;
        expect_exact(p, shapes, plan.to_string());
      }
  // The default plans' three-consumer tiles: 4 stages and a producer warpgroup.
  for (auto [bm, bn] : {std::pair<int64_t, int64_t>{192, 192}, {192, 128}}) {
    Plan plan = wgmma_plan(bm, bn, 3, 4, 1);
    expect_exact(gemm_program(plan, DType::BF16), {{200, 130, 300}, {192, 192, 64}, {70, 200, 1}}, plan.to_string());
  }
  // Tile widths that are no multiple of B's 64-column panels (wgmma n 208, 160, 80,
  // 48): B's last panel is copied whole, its further columns unused.
  for (auto [bm, bn, wg] : {std::tuple<int64_t, int64_t, int>{128, 208, 2}, {192, 160, 3}, {64, 80, 1}, {128, 48, 2}}) {
    Plan plan = wgmma_plan(bm, bn, wg, 4, 1);
    GroupProgram p = gemm_program(plan, DType::BF16);
    EXPECT_EQ(print_group_program(p).find("copy #"), std::string::npos) << plan.to_string();
    expect_exact(p, {{200, 430, 300}, {bm, bn, 64}, {70, 200, 1}, {130, 250, 70}}, plan.to_string());
  }
}

// The pass works from what the lowering staged, whatever the kernel: transposed
// operands (strides), a batched GEMM (rank-3 tensors, a 3-D grid), and attention's
// K/V stream (a body that also computes, with shared scratch and reductions).
CheckedRun checked(const TileKernel& k, const std::map<std::string, int64_t>& sizes,
                   const std::function<void(Plan&)>& change, int* converted) {
  Plan p = default_plan(k, TargetKind::Sim, sizes);
  change(p);
  fit_worker_grid(k, p);
  CompiledGroup g = compile_to_group(k, p, CompileOptions{});
  *converted = g.tma.loops_converted;
  Kernel compiled = compile(k, p);
  return run_checked(compiled, sizes, {}, 7);
}

void expect_ok(const CheckedRun& r, const std::string& what) {
  EXPECT_TRUE(r.ok) << what << ": rel_err " << r.worst << " bound " << r.bound;
  EXPECT_EQ(r.launch.races, 0) << what;
  for (const std::string& m : r.launch.race_messages) ADD_FAILURE() << what << ": " << m;
}

TEST(TmaPipelineSim, TransposedAndBatchedGemmsThroughThePublicApi) {
  for (int window : {2, 3})
    for (int producers : {0, 1}) {
      auto change = [&](Plan& p) {
        p.tiles["BM"] = 16, p.tiles["BN"] = 8, p.tiles["BK"] = 8;
        p.workers = 2;
        p.window = window;
        p.tma = true;
        p.producers = producers;
      };
      int converted = 0;
      // A transposed (column-major M x K) and B transposed, ragged.
      std::map<std::string, int64_t> strided = {{"M", 23}, {"N", 19}, {"K", 37}, {"sam", 1}, {"sak", 23},
                                                {"sbk", 1}, {"sbn", 37}, {"ldc", 19}};
      expect_ok(checked(gemm_strided_kernel(), strided, change, &converted), "strided W" + std::to_string(window));
      EXPECT_EQ(converted, 1);
      std::map<std::string, int64_t> batched = {{"batch", 3}, {"M", 17}, {"N", 12}, {"K", 30}};
      expect_ok(checked(batched_gemm_kernel(), batched, change, &converted), "batched W" + std::to_string(window));
      EXPECT_EQ(converted, 1);
    }
}

TEST(TmaPipelineSim, AttentionStreamsKAndVThroughStages) {
  const std::map<std::string, int64_t> sizes = {{"B", 1}, {"Hq", 2}, {"Hkv", 1}, {"Sq", 19}, {"Skv", 45}, {"D", 16}};
  for (int window : {1, 2, 3}) {
    int converted = 0;
    auto change = [&](Plan& p) {
      p.window = window;
      p.tma = true;
    };
    expect_ok(checked(attention_kernel(), sizes, change, &converted), "attention W" + std::to_string(window));
    EXPECT_EQ(converted, 1);
  }
  // Its body shares scratch in shared memory between workers: a producer role,
  // whose consumers have no fences, is refused, naming the op.
  Plan p = default_plan(attention_kernel(), TargetKind::Sim, sizes);
  p.tma = true, p.window = 2, p.producers = 1;
  try {
    compile_to_group(attention_kernel(), p, CompileOptions{});
    ADD_FAILURE() << "a producer role over attention's body compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Plan) << e.what();
    EXPECT_TRUE(test::has(e.what(), "producers: op #")) << e.what();
  }
}

TEST(TmaPipelineSim, PlansThatCannotTakeTmaAreTypedErrors) {
  auto plan_error = [](const Plan& p, const std::string& says) {
    try {
      validate_plan(p);
      ADD_FAILURE() << p.to_string() << " validated; wanted: " << says;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Plan) << e.what();
      EXPECT_TRUE(test::has(e.what(), says)) << e.what();
    }
  };
  Plan p = sim_plan(2, 1);
  p.tma = false;
  plan_error(p, "plan copy=tma");
  p = sim_plan(2, -1);
  plan_error(p, "producers -1 out of range");
  p = sim_plan(2, 0);
  p.target = TargetKind::Cpu;
  plan_error(p, "not cpu");
  Plan sync = default_gemm_plan(TargetKind::Cuda, 1500, 1100, 64, GemmPrecision::TF32, "sm_90");
  ASSERT_EQ(sync.atom, AtomKind::MmaSync) << sync.to_string();
  sync.tma = true;
  plan_error(sync, "this plan has the mma.sync atom");
  Plan big = wgmma_plan(128, 128, 2, 3, 7);  // 9 warpgroups = 1152 threads
  plan_error(big, "1152 threads per block");
  EXPECT_EQ(sim_plan(3, 1).to_string(), "BK=8 BM=16 BN=16 workers=4(2x2) copy_batch=4 window=3 copy=tma atom=1x1 producers=1");
}

// ---- protocol breaks: the produced program with one op removed or changed ----

GroupOp* find_op(std::vector<GroupOp>& ops, const std::function<bool(const GroupOp&)>& pred,
                 std::vector<GroupOp>** owner = nullptr) {
  for (GroupOp& op : ops) {
    if (pred(op)) {
      if (owner) *owner = &ops;
      return &op;
    }
    for (auto& body : op.bodies)
      if (GroupOp* f = find_op(body, pred, owner)) return f;
  }
  return nullptr;
}

// The k loop: the one whose body waits on "full".
struct Protocol {
  GroupProgram p;
  int full = -1, empty = -1;
  int consumer_wait = -1, producer_wait = -1, release = -1, mma = -1;
  std::vector<int> tmas;

  explicit Protocol(GroupProgram program) : p(std::move(program)) {
    full = p.find_mbarrier("full"), empty = p.find_mbarrier("empty");
    auto is = [&](GroupOpKind k, int mbar) {
      return [=](const GroupOp& op) { return op.kind == k && op.mbar == mbar; };
    };
    consumer_wait = find_op(p.body, is(GroupOpKind::MbarWait, full))->id;
    // The producer's wait in the steady state (the prologue's first round passes at once).
    last(p.body, [&](const GroupOp& op) { return op.kind == GroupOpKind::MbarWait && op.mbar == empty; },
         &producer_wait);
    release = find_op(p.body, [&](const GroupOp& op) {
                return op.kind == GroupOpKind::MbarArrive && op.mbar == empty;
              })->id;
    mma = find_op(p.body, [](const GroupOp& op) { return op.kind == GroupOpKind::Mma; })->id;
    collect(p.body);
  }
  static void last(const std::vector<GroupOp>& ops, const std::function<bool(const GroupOp&)>& pred, int* id) {
    for (const GroupOp& op : ops) {
      if (pred(op)) *id = op.id;
      for (const auto& body : op.bodies) last(body, pred, id);
    }
  }
  void collect(const std::vector<GroupOp>& ops) {
    for (const GroupOp& op : ops) {
      if (op.kind == GroupOpKind::Tma) tmas.push_back(op.id);
      for (const auto& body : op.bodies) collect(body);
    }
  }
  GroupProgram without(int id) const {
    GroupProgram q = p;
    std::vector<GroupOp>* owner = nullptr;
    GroupOp* op = find_op(q.body, [&](const GroupOp& o) { return o.id == id; }, &owner);
    owner->erase(owner->begin() + (op - owner->data()));
    verify_group_program(q);
    return q;
  }
  GroupProgram flipped(int id) const {
    GroupProgram q = p;
    GroupOp* op = find_op(q.body, [&](const GroupOp& o) { return o.id == id; });
    op->parity = expr_mod(op->parity + expr_const(1), expr_const(2));
    return q;
  }
  // A tma that overwrites a stage: the race names it second, and first the mma
  // still reading the stage or the tma whose data it overwrites in flight.
  bool overwrite_race(const SimResult& r) const {
    for (const Race& race : r.races)
      if (std::count(tmas.begin(), tmas.end(), race.second_op) &&
          (race.first_op == mma || std::count(tmas.begin(), tmas.end(), race.first_op)) &&
          test::has(race.message, "#" + std::to_string(race.second_op)))
        return true;
    return false;
  }
  bool race_between_tma_and_mma(const SimResult& r) const {
    for (int t : tmas)
      if (names_race(r, t, mma) || names_race(r, mma, t)) return true;
    return false;
  }
};

void protocol_breaks(const Plan& plan, DType ab) {
  SCOPED_TRACE(plan.to_string());
  Protocol g(gemm_program(plan, ab));
  IntGemm ok(40, 40, 300);
  ASSERT_EQ(ok.run(g.p).race_count, 0);
  // The consumers' wait removed: the mma reads a stage the copy engine still writes.
  {
    IntGemm x(40, 40, 300);
    SimResult r = x.run(g.without(g.consumer_wait));
    EXPECT_TRUE(g.race_between_tma_and_mma(r)) << races_text(r).substr(0, 3000);
  }
  // A wrong phase: the wait returns a round early, before the copy landed.
  {
    IntGemm x(40, 40, 300);
    SimResult r = x.run(g.flipped(g.consumer_wait));
    EXPECT_GT(r.race_count, 0);
    EXPECT_TRUE(g.race_between_tma_and_mma(r)) << races_text(r).substr(0, 3000);
  }
  // The producer's wait for the release removed: a tma overwrites a stage that an
  // mma still reads.
  {
    IntGemm x(40, 40, 300);
    SimResult r = x.run(g.without(g.producer_wait));
    EXPECT_TRUE(g.overwrite_race(r)) << races_text(r).substr(0, 3000);
  }
  // The release removed: the producer waits forever, a deadlock naming its wait.
  {
    IntGemm x(40, 40, 300);
    try {
      SimResult r = x.run(g.without(g.release));
      ADD_FAILURE() << "no deadlock; " << r.race_count << " races" << races_text(r).substr(0, 2000);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Runtime) << e.what();
      EXPECT_TRUE(test::has(e.what(), "deadlock")) << e.what();
      EXPECT_TRUE(test::has(e.what(), "#" + std::to_string(g.producer_wait))) << e.what();
    }
  }
}

TEST(TmaPipelineSim, ProtocolBreaksAreReportedNamingTheOps) {
  protocol_breaks(sim_plan(2, 0), DType::F32);
  protocol_breaks(sim_plan(3, 1), DType::F32);
  // Two warpgroups: with one, the worker that refills a stage is its only reader.
  protocol_breaks(wgmma_plan(128, 128, 2, 3, 0), DType::BF16);
  protocol_breaks(wgmma_plan(64, 64, 1, 3, 1), DType::BF16);
}

// setmaxnreg can only trade the registers a block was launched with: the roles'
// requests together must fit the launch's share of every thread (4 consumer
// warpgroups asking for more than a producer gave back hung on the H200).
TEST(TmaPipelineSim, RoleRegistersFitTheLaunchShare) {
  for (auto [bm, wg] : {std::pair<int64_t, int>{64, 1}, {128, 2}, {192, 3}, {256, 4}}) {
    Plan plan = wgmma_plan(bm, 128, wg, 3, 1);
    validate_plan(plan);
    GroupProgram p = gemm_program(plan, DType::BF16);
    const GroupOp* roles = nullptr;
    for (const GroupOp& op : p.body)
      if (op.kind == GroupOpKind::Roles) roles = &op;
    ASSERT_NE(roles, nullptr) << plan.to_string();
    const int64_t share = cuda_launch_register_share(p.workers * p.lanes);
    int64_t asked = 0;
    for (const WorkerRole& r : roles->roles) {
      EXPECT_TRUE(r.regs >= 24 && r.regs <= 256 && r.regs % 8 == 0) << r.regs;
      asked += int64_t{r.regs} * r.count * p.lanes;
    }
    EXPECT_LE(asked, share * p.workers * p.lanes) << plan.to_string();
    EXPECT_GT(roles->roles[1].regs, share) << "the consumers gain nothing: " << plan.to_string();
  }
  EXPECT_EQ(cuda_launch_register_share(640), 96);  // the launch that hung: 4 consumers + 1 producer
}

}  // namespace
}  // namespace tessel
