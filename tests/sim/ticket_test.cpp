// Tickets (TileOpKind::Ticket, GroupOpKind::Ticket): a group takes the next ticket
// of a u32 counter element, and the group that draws a round's last ticket sees the
// stores of the groups before it. Checked here: the verifiers' rules, the text
// forms, the FP64 evaluator's rounds, the sim (groups run in an order each seed
// shuffles; a read of another group's store is ordered only by a ticket drawn
// after it), and split-K in one kernel on the sim and the cpu target against the
// evaluator, C NaN-poisoned where it must be overwritten.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "check/checked_run.h"
#include "compiler/compile.h"
#include "dsl/dsl.h"
#include "eval/evaluate.h"
#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "ir/tile_text.h"
#include "ir/tile_verify.h"
#include "ops/gemm_kernel.h"
#include "race_assertions.h"
#include "target/sim/sim.h"
#include "tessel/error.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

using test::has;
using test::races_text;

// Y[j] = 2 * (X[0, j] + ... + X[S - 1, j]): group (s, j) stores 2 X[s] into its
// slice of P, takes a ticket of T[j], and the group that draws `reader` (S - 1:
// the last, which is right; 0: the first, which reads slices not yet stored) sums
// the slices in order.
TileKernel slice_sum(bool first_reads) {
  KernelBuilder kb("slice_sum");
  Sym S = kb.size("S"), N = kb.size("N");
  Sym BN = kb.tile("BN");
  Tensor X = kb.tensor("X", {S, N}, Access::In);
  Tensor P = kb.tensor("P", {S, N}, Access::InOut);
  Tensor T = kb.tensor("T", {ceil_div(N, 8)}, Access::InOut, DType::U32);
  Tensor Y = kb.tensor("Y", {N}, Access::Out);
  kb.parallel(S, ceil_div(N, BN), [&](Sym s, Sym j) {
    Tile x = kb.load(X, {s, j * BN}, 1, BN);
    kb.store(P, {s, j * BN}, kb.mul(x, kb.constant(2.0, 1, 1)));
    Sym t = kb.ticket(T, j, S);
    kb.if_(t, CmpOp::EQ, first_reads ? Sym(0) : S - 1, [&] {
      Tile sum = kb.serial(S, kb.constant(0.0, 1, BN), [&](Sym u, Tile part) {
        return kb.add(part, kb.load(P, {u, j * BN}, 1, BN));
      });
      kb.store(Y, {j * BN}, sum);
    });
  });
  return kb.finish();
}

Plan sim_plan(int64_t bn) {
  Plan p;
  p.target = TargetKind::Sim;
  p.tiles["BN"] = bn;
  p.workers = 2, p.worker_rows = 1, p.worker_cols = 2;
  return p;
}

struct SliceRun {
  SimResult sim;
  std::vector<float> y, t;
};

SliceRun run_slices(const TileKernel& k, int64_t s, int64_t n, uint64_t seed, float counter_start = 0) {
  CompiledGroup g = compile_to_group(k, sim_plan(8), CompileOptions{});
  SliceRun out;
  std::vector<float> x(s * n), p(s * n, NAN);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) - 3.0f + 0.25f;
  out.y.assign(n, NAN);
  out.t.assign((n + 7) / 8, counter_start);
  LaunchArgs args;
  args.sizes = {{"S", s}, {"N", n}};
  args.tensors = {{"X", x.data()}, {"P", p.data()}, {"T", out.t.data()}, {"Y", out.y.data()}};
  SimOptions o;
  o.seed = seed;
  out.sim = run_sim(g.program, args, o);
  return out;
}

TEST(Ticket, LastDrawerSeesEveryStoreOfItsRound) {
  const TileKernel k = slice_sum(false);
  for (uint64_t seed : {1, 2, 3, 7}) {
    SliceRun r = run_slices(k, 5, 37, seed);
    EXPECT_EQ(r.sim.race_count, 0) << races_text(r.sim);
    for (int64_t j = 0; j < 37; ++j) {
      double want = 0;
      for (int64_t s = 0; s < 5; ++s) want += 2.0 * (float((s * 37 + j) % 7) - 3.0f + 0.25f);
      EXPECT_EQ(r.y[j], want) << "seed " << seed << " j " << j;
    }
    for (float c : r.t) EXPECT_EQ(c, 0.0f) << "a counter was left inside its round";
  }
}

// The first drawer reads slices the others have not stored: a race between the
// sum's load and another group's store, whatever the order (the first drawer can
// only have run before the others stored), and no race without the ticket's
// ordering being what the detector relies on.
TEST(Ticket, FirstDrawerReadingTheRoundIsARace) {
  const TileKernel k = slice_sum(true);
  CompiledGroup g = compile_to_group(k, sim_plan(8), CompileOptions{});
  int load = -1, store = -1;
  std::function<void(const std::vector<GroupOp>&)> find = [&](const std::vector<GroupOp>& ops) {
    for (const GroupOp& op : ops) {
      if (op.kind == GroupOpKind::FragLoad && g.program.buffer(op.src.buffer).name == "P") load = op.id;
      if (op.kind == GroupOpKind::FragStore && g.program.buffer(op.dst.buffer).name == "P") store = op.id;
      for (const auto& body : op.bodies) find(body);
    }
  };
  find(g.program.body);
  ASSERT_GE(load, 0);
  ASSERT_GE(store, 0);
  for (uint64_t seed : {1, 2, 3}) {
    SliceRun r = run_slices(k, 4, 16, seed);
    EXPECT_GT(r.sim.race_count, 0) << "seed " << seed;
    bool named = false;
    for (const Race& race : r.sim.races)
      named |= ((race.first_op == load && race.second_op == store) ||
                (race.first_op == store && race.second_op == load)) &&
               has(race.message, "in different groups");
    EXPECT_TRUE(named) << races_text(r.sim);
  }
}

TEST(Ticket, CounterOutsideItsRoundIsAnError) {
  const TileKernel k = slice_sum(false);
  float bad;
  const uint32_t five = 5;  // S = 5: tickets 0..4
  std::memcpy(&bad, &five, 4);
  try {
    run_slices(k, 5, 8, 1, bad);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_TRUE(has(e.what(), "not a ticket of [0, 5)")) << e.what();
  }
  std::vector<double> x(40, 1.0), p(40, 0.0), t(1, 5.0), y(8, 0.0);
  EvalArgs a;
  a.sizes = {{"S", 5}, {"N", 8}};
  a.tiles = {{"BN", 8}};
  a.tensors = {{"X", x}, {"P", p}, {"T", t}, {"Y", y}};
  try {
    evaluate(k, a);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_TRUE(has(e.what(), "not a ticket in [0, 5)")) << e.what();
  }
}

std::string tile_verify_error(const TileKernel& k) {
  try {
    verify_tile_kernel(k);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Verify);
    return e.what();
  }
  return "";
}

TEST(Ticket, TileVerifierRules) {
  const char* head =
      "kernel k(sizes N; tiles BN; tensors T: u32[N] strides(1) inout, F: f32[N] strides(1) inout; scalars) {\n"
      "  parallel j = ceildiv(N, BN) {\n";
  auto error = [&](const std::string& body) {
    return tile_verify_error(parse_tile_kernel(head + body + "  }\n}\n"));
  };
  EXPECT_EQ(error("    ticket t = 4 on T[j]\n    %c = const index t : f32[1, BN]\n    store %c to F[(j * BN)]\n"), "");
  EXPECT_TRUE(has(error("    ticket t = 4 on F[j]\n"), "a counter is a rank-1 u32 tensor declared inout"));
  EXPECT_TRUE(has(error("    %x = load T[j] : f32[1, BN]\n"), "which is u32"));
  // Inside a group's branches and loops (stream-K takes one a shared tile), not
  // outside every parallel nest.
  EXPECT_EQ(error("    if j == 0 {\n      ticket t = 4 on T[j]\n    } else {\n    }\n"), "");
  EXPECT_TRUE(has(tile_verify_error(parse_tile_kernel(
                      "kernel k(sizes N; tiles BN; tensors T: u32[N] strides(1) inout; scalars) {\n"
                      "  ticket t = 4 on T[0]\n}\n")),
                  "outside a parallel nest's body"));
  EXPECT_TRUE(has(error("    if j == 0 {\n    } else {\n    }\n    %c = const index t : f32[1, BN]\n"),
                  "unknown symbol 't'"));
  EXPECT_TRUE(has(error("    ticket t = 4 on T[j]\n    ticket t = 4 on T[j]\n"), "already bound"));
  EXPECT_TRUE(has(error("    ticket j = 4 on T[j]\n"), "already bound"));
}

TEST(Ticket, GroupTextRoundTripsAndVerifierRules) {
  const std::string text =
      "group g(sizes N; tensors T: u32[N] strides(1) inout, F: f32[N] strides(1) inout; scalars) {\n"
      "  grid j = N\n"
      "  workers 1 grid 1x1 lanes 1\n"
      "  atom fma 1x1\n"
      "  buffer T: global u32 tensor T\n"
      "  buffer F: global f32 tensor F\n"
      "  ticket #0 t = 3 on T[0, j] strides(0, 1)\n"
      "  if #1 t == 2 {\n"
      "  } else {\n"
      "  }\n"
      "}\n";
  GroupProgram p = parse_group_program(text);
  EXPECT_NO_THROW(verify_group_program(p));
  EXPECT_EQ(print_group_program(p), text);
  const GroupOp& t = p.body.at(0);
  EXPECT_EQ(t.kind, GroupOpKind::Ticket);
  EXPECT_EQ(t.iv, "t");
  EXPECT_EQ(expr_to_string(t.hi), "3");
  auto error = [](const std::string& program) {
    try {
      verify_group_program(parse_group_program(program));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_TRUE(has(error(test::edit(text, "on T[0, j]", "on F[0, j]")), "a ticket's counter is u32, inout"));
  EXPECT_TRUE(has(error(test::edit(text, "ticket #0 t =", "ticket #0 j =")), "already bound"));
  EXPECT_TRUE(has(error(test::edit(text, "if #1 t == 2", "if #1 u == 2")), "unknown symbol 'u'"));
}

// Split-K in one kernel against the evaluator, on the sim and on the cpu target
// (whose groups run on threads: the ticket is an atomic step there).
TEST(Ticket, SplitKInOneKernelMatchesTheEvaluator) {
  const TileKernel k = gemm_split_k_fused_kernel(DType::F32);
  Plan sim;
  sim.target = TargetKind::Sim;
  sim.tiles = {{"BM", 16}, {"BN", 16}, {"BK", 8}};
  sim.workers = 4, sim.worker_rows = 2, sim.worker_cols = 2;
  sim.window = 2;
  sim.async_copy = true;
  const std::map<std::string, int64_t> sizes = {{"M", 45}, {"N", 37}, {"K", 70}, {"S", 3}, {"KS", 24}, {"Q", 9}};
  Plan cpu = default_plan(k, TargetKind::Cpu, sizes);
  cpu.tiles = sim.tiles;
  for (const Plan& plan : {sim, cpu}) {
    Kernel compiled = compile(k, plan);
    for (double beta : {0.0, 0.5})
      for (uint64_t seed : {1, 2}) {
        CheckedRun r = run_checked(compiled, sizes, {{"beta", beta}}, seed, {},
                                   beta == 0 ? std::set<std::string>{"C"} : std::set<std::string>{});
        EXPECT_TRUE(r.ok) << target_name(plan.target) << " beta " << beta << ": worst " << r.worst << " bound "
                          << r.bound << " races " << r.launch.races;
      }
  }
}

}  // namespace
}  // namespace tessel
