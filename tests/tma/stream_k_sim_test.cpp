// Stream-K (gemm_stream_k_kernel, src/ops/gemm_kernel.h): G groups each run L
// consecutive k steps of the whole product, so a tile may be shared by groups that
// sum their partials through P in group order. Under the Hopper plans (wgmma, tma
// stages, with and without a producer) and the sim's fma plan, on the sim race
// checker: 0 races, C exact on small integers (NaN-poisoned at beta 0, the partial
// slots NaN too), the same bits whatever order the groups run in (each seed lets
// another group draw a tile's last ticket), and every counter back at 0. Ranges
// shorter and longer than a tile's steps, and ragged M, N and K.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <random>
#include <string>
#include <vector>

#include "../sim/race_assertions.h"
#include "split_plans.h"
#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ir/tile_text.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel {
namespace {

using test::races_text;
using test::split_sim_plan;
using test::split_wgmma_plan;
using test::worst_gemm_error;

struct Shape {
  int64_t m, n, k, groups;  // groups: the G asked for; without waves, L follows, and G from L
  int64_t band = 2;         // TB: tile rows a band
  int64_t waves = 0;        // W: whole waves of G tiles before the shared steps
};

void expect_stream_k_exact(const GroupProgram& program, const Plan& plan, const Shape& s, double beta,
                           const std::string& what) {
  const int64_t bm = plan.tile("BM"), bn = plan.tile("BN"), bk = plan.tile("BK");
  const int64_t kt = (s.k + bk - 1) / bk, tiles = (s.m + bm - 1) / bm * ((s.n + bn - 1) / bn);
  const int64_t rest = tiles - s.waves * s.groups, steps = rest * kt;
  const int64_t l = std::max<int64_t>(1, (steps + s.groups - 1) / s.groups),
                g = s.waves > 0 ? s.groups : (steps + l - 1) / l;
  ASSERT_GE(rest, 0) << what;
  std::mt19937_64 rng(uint64_t(s.m * 31 + s.n * 7 + s.k + s.groups));
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<float> a(s.m * s.k), b(s.k * s.n), c0(s.m * s.n);
  for (float& x : a) x = float(small(rng));
  for (float& x : b) x = float(small(rng));
  for (float& x : c0) x = beta == 0 ? NAN : float(small(rng));
  std::vector<float> first;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    std::vector<float> c = c0, p(2 * g * bm * bn, NAN), t(rest + 1, 0.0f);  // t: u32 zeros, one spare
    SimOptions o;
    o.seed = seed;
    o.max_races_recorded = 1 << 12;
    LaunchArgs args;
    args.sizes = {{"M", s.m},  {"N", s.n},  {"K", s.k},      {"lda", s.k},     {"ldb", s.n},
                  {"ldc", s.n}, {"G", g},   {"L", l},        {"Q", rest + 1}, {"PS", 2 * g},
                  {"sps", bm * bn}, {"ldp", bn}, {"TB", s.band}, {"W", s.waves}};
    args.scalars = {{"alpha", 1.0}, {"beta", beta}};
    args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}, {"P", p.data()}, {"T", t.data()}};
    SimResult r = run_sim(program, args, o);
    EXPECT_EQ(r.race_count, 0) << what << races_text(r).substr(0, 2000);
    for (float x : t) EXPECT_EQ(x, 0.0f) << what << ": a counter was left at a ticket";
    EXPECT_EQ(worst_gemm_error(s.m, s.n, s.k, beta, a, b, c0, c), 0.0)
        << what << " beta " << beta << " seed " << seed << " (G " << g << ", W " << s.waves << ", L " << l << ")";
    if (first.empty()) first = c;
    EXPECT_EQ(0, std::memcmp(first.data(), c.data(), c.size() * sizeof(float)))
        << what << ": seed " << seed << " summed C differently";
  }
}

std::string shape_name(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " in " +
         std::to_string(s.groups) + " groups after " + std::to_string(s.waves) + " waves, bands of " +
         std::to_string(s.band);
}

TEST(StreamKSim, HopperPlansExactRaceFreeInAnyOrder) {
  // 128x128x64 tiles: 130x200x300 has 4 tiles of 5 k steps. 3 groups of 7 steps
  // share tiles between two groups, 7 of 3 among up to three, 2 of 10 take whole
  // tiles only; 64x64x128 (one tile of 2 steps) in 2 groups of 1.
  // After a whole wave: 3 groups share the last tile (L 2), 2 groups take one each.
  const std::vector<Shape> shapes = {{130, 200, 300, 3}, {130, 200, 300, 7}, {130, 200, 300, 2},
                                     {64, 64, 128, 2},   {130, 200, 300, 3, 2, 1}, {130, 200, 300, 2, 1, 1}};
  // 128x80 tiles: the sum's second part is the last 16 columns. 130x200x300 has 6
  // tiles of 5 steps: 4 groups of 8 share tiles with their neighbours in C.
  const std::vector<Shape> narrow = {{130, 200, 300, 4}, {130, 200, 300, 3, 2, 1}};
  for (auto [producers, bn] : {std::pair{0, 128}, {1, 128}, {1, 80}}) {
    const Plan plan = split_wgmma_plan(producers, 128, bn);
    CompiledGroup g = compile_to_group(gemm_stream_k_kernel(DType::BF16), plan, CompileOptions{});
    EXPECT_EQ(g.tma.loops_converted, 1) << g.tma.skipped_reason;
    for (const Shape& s : bn == 80 ? narrow : shapes)
      for (double beta : {0.0, 2.0})
        expect_stream_k_exact(g.program, plan, s, beta, plan.to_string() + " " + shape_name(s));
  }
}

TEST(StreamKSim, SimPlanExactRaceFreeInAnyOrder) {
  const Plan plan = split_sim_plan();
  CompiledGroup g = compile_to_group(gemm_stream_k_kernel(DType::F32), plan, CompileOptions{});
  // 16x16x8 tiles: 33x47x29 has 9 tiles of 4 k steps (7 groups of 6: shared tiles;
  // bands of 2 tile rows leave a band of 1), 40x20x100 6 of 13 (4 groups of 20; 3 of
  // 26: whole tiles), 5x3x100 one of 13 (5 groups of 3), 16x16x8 one of 1 (one group).
  // After whole waves, 33x47x29: 4 groups share 5 tiles' steps (L 5); 3 groups, 3
  // tiles (L 4: whole); 2 groups, 5 tiles (L 10); 3 groups after all 9 (nothing shared).
  for (const Shape& s : {Shape{33, 47, 29, 7}, Shape{33, 47, 29, 5, 1}, Shape{33, 47, 29, 4, 8},
                         Shape{40, 20, 100, 4, 1}, Shape{40, 20, 100, 3, 3}, Shape{16, 16, 8, 2}, Shape{5, 3, 100, 6},
                         Shape{33, 47, 29, 4, 2, 1}, Shape{33, 47, 29, 3, 2, 2}, Shape{33, 47, 29, 2, 3, 2},
                         Shape{33, 47, 29, 3, 2, 3}})
    for (double beta : {0.0, -1.0}) expect_stream_k_exact(g.program, plan, s, beta, "sim " + shape_name(s));
}

// A pipeline's stage base is part of both text forms: TileIR and the lowered GroupIR
// print it (`stages_from`), parse it back and print the same text; the parsed
// GroupIR, pipelined by tma_pipeline, still runs exact and race-free.
TEST(StreamKSim, StageBaseSurvivesBothTextForms) {
  const TileKernel k = gemm_stream_k_kernel(DType::BF16);
  const std::string tir = print_tile_kernel(k);
  EXPECT_NE(tir.find("stages_from"), std::string::npos);
  EXPECT_EQ(print_tile_kernel(parse_tile_kernel(tir)), tir);
  const Plan plan = split_wgmma_plan(1, 128, 128);
  CompileOptions co;
  co.keep_stages = true;
  CompiledGroup g = compile_to_group(parse_tile_kernel(tir), plan, co);
  ASSERT_FALSE(g.stages.empty());
  const std::string& lowered = g.stages[1].ir;  // after lowering, before the passes
  EXPECT_NE(lowered.find("stages_from"), std::string::npos) << g.stages[1].name;
  EXPECT_EQ(print_group_program(parse_group_program(lowered)), lowered);
  expect_stream_k_exact(g.program, plan, Shape{130, 200, 300, 3}, 0.0, "parsed");
}

// Every op of `ops`, nested bodies included, in program order.
void for_each_op(const std::vector<GroupOp>& ops, const std::function<void(const GroupOp&)>& fn) {
  for (const GroupOp& op : ops) {
    fn(op);
    for (const auto& body : op.bodies) for_each_op(body, fn);
  }
}

std::string tensor_name(const GroupProgram& p, const BufferRef& ref) {
  return p.tensors[p.buffer(ref.buffer).tensor].name;
}

// Every window of P is a whole slot (P's extents are BM x BN, its slot clamped into
// range): its loads and stores are unguarded, so targets emit no ragged path for them
// (whose per-element addresses spilled); C's stay guarded.
TEST(StreamKSim, PartialSlotsNeedNoGuards) {
  CompiledGroup g = compile_to_group(gemm_stream_k_kernel(DType::BF16), split_wgmma_plan(1, 128, 256),
                                     CompileOptions{});
  const GroupProgram& p = g.program;
  std::map<std::string, int> guarded, unguarded;
  for_each_op(p.body, [&](const GroupOp& op) {
    const bool load = op.kind == GroupOpKind::FragLoad, store = op.kind == GroupOpKind::FragStore;
    const BufferRef& ref = load ? op.src : op.dst;
    if ((load || store) && p.buffer(ref.buffer).space == Space::Global) {
      const bool guards = load ? op.src_row_bound || op.src_col_bound : op.dst_row_bound || op.dst_col_bound;
      ++(guards ? guarded : unguarded)[tensor_name(p, ref)];
    }
  });
  EXPECT_EQ(guarded.count("P"), 0u);
  EXPECT_EQ(unguarded["P"], 5);  // the partial's store, four parts' loads
  EXPECT_GE(guarded["C"], 4);
  EXPECT_EQ(unguarded.count("C"), 0u);
}

// The sum's parts cover the tile's columns exactly: at BN 80, a whole tile's store,
// then parts of 64 and 16 columns (and a part past BN that never runs, kept at 16).
TEST(StreamKSim, SumPartsCoverTheTileColumnsExactly) {
  CompiledGroup g = compile_to_group(gemm_stream_k_kernel(DType::BF16), split_wgmma_plan(1, 128, 80),
                                     CompileOptions{});
  std::set<int64_t> widths;
  for_each_op(g.program.body, [&](const GroupOp& op) {
    if (op.kind == GroupOpKind::FragStore && tensor_name(g.program, op.dst) == "C")
      widths.insert(g.program.buffer(op.frag).cols);
  });
  EXPECT_EQ(widths, (std::set<int64_t>{80, 64, 16}));
}

// The front door runs stream-K on the cuda target only, and not beside split_k.
TEST(StreamKSim, FrontDoorRefusesOtherTargetsAndSplitK) {
  std::vector<float> a(64 * 64, 1.0f), b(64 * 64, 1.0f), c(64 * 64, 0.0f);
  GemmOptions o;
  o.stream_k = true;
  for (TargetKind target : {TargetKind::Cpu, TargetKind::Sim}) {
    o.target = target;
    try {
      gemm(64, 64, 64, 1.0f, a.data(), 64, b.data(), 64, 0.0f, c.data(), 64, o);
      ADD_FAILURE() << "stream_k ran on " << target_name(target);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
    }
  }
  o.target = TargetKind::Cuda;
  o.split_k = 2;
  try {
    gemm(64, 64, 64, 1.0f, a.data(), 64, b.data(), 64, 0.0f, c.data(), 64, o);
    ADD_FAILURE() << "stream_k ran beside split_k";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("stream_k"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessel
