// plan_barriers on hand-built GroupIR: which fences stay, and the statistics.
// Each test names the part of the rule it pins; the sim runs of the same programs
// are in plan_barriers_sim_test.cpp.
#include "passes/plan_barriers.h"

#include <gtest/gtest.h>

#include <map>

#include "examples.h"

namespace tessel::test {
namespace {

SymbolLookup sizes(std::map<std::string, int64_t> m) {
  return [m](const std::string& name, int64_t* v) {
    auto it = m.find(name);
    if (it == m.end()) return false;
    *v = it->second;
    return true;
  };
}

// Two shared buffers, a global tensor and a fragment, for the small cases.
struct Small {
  Builder b;
  int x, s0, s1, f;
  Small() {
    x = b.tensor("X");
    s0 = b.shared("S0", 8, 8);
    s1 = b.shared("S1", 8, 8);
    f = b.frag("F", 8, 8);
  }
  GroupOp write_s0() { return b.copy(ref(x), ref(s0), 8, 8); }
  GroupOp write_s1() { return b.copy(ref(x), ref(s1), 8, 8); }
  GroupOp read_s0() { return b.frag_load(f, ref(s0)); }
  GroupOp read_s1() { return b.frag_load(f, ref(s1)); }
  std::string plan() {
    plan_barriers(b.p);
    return shape(b.p.body);
  }
};

TEST(PlanBarriers, AlignedGemmCoalescesTheTwoInputCopies) {
  GroupProgram p = aligned_gemm();
  EXPECT_EQ(shape(p.body), "frag.fill for { copy fence copy fence mma fence } frag.store fence");
  int first_fence = p.body[1].bodies[0][1].id;
  BarrierStats st = plan_barriers(p);
  EXPECT_EQ(shape(p.body), "frag.fill for { copy copy fence mma fence } frag.store fence");
  EXPECT_EQ(st.static_before, 4);
  EXPECT_EQ(st.static_after, 3);
  EXPECT_EQ(st.loop_before, 3);
  EXPECT_EQ(st.loop_after, 2);
  EXPECT_EQ(st.dynamic_before, "3*L0 + 1");
  EXPECT_EQ(st.dynamic_after, "2*L0 + 1");
  ASSERT_EQ(st.legend.size(), 1u);
  EXPECT_EQ(st.legend[0], "L0 = ceildiv(K, 32)");
  EXPECT_EQ(st.removed, std::vector<int>{first_fence});
  // K = 1024: 32 iterations.
  EXPECT_EQ(count_fences_executed(aligned_gemm(), sizes({{"K", 1024}})), 97);
  EXPECT_EQ(count_fences_executed(p, sizes({{"K", 1024}})), 65);
  EXPECT_EQ(print_barrier_stats(st),
            "fence sites: 4 -> 3\n"
            "fence sites in loops: 3 -> 2\n"
            "fences executed per group: 3*L0 + 1 -> 2*L0 + 1\n"
            "  where L0 = ceildiv(K, 32)\n");
}

// The seed's guarded shared output path: six sites to five, 3L + 3 to 2L + 3.
TEST(PlanBarriers, RaggedGemmKeepsItsOutputFences) {
  GroupProgram p = ragged_gemm();
  BarrierStats st = plan_barriers(p);
  EXPECT_EQ(shape(p.body),
            "frag.fill for { copy copy fence mma fence } fence frag.store fence copy fence");
  EXPECT_EQ(st.static_before, 6);
  EXPECT_EQ(st.static_after, 5);
  EXPECT_EQ(st.dynamic_before, "3*L0 + 3");
  EXPECT_EQ(st.dynamic_after, "2*L0 + 3");
}

// `write S0; fence; write S1; fence; read S0`: adjacent pairs are independent, the
// dependence between the first and the last op is not.
TEST(PlanBarriers, NonadjacentRawKeepsTheLatestCut) {
  Small t;
  t.b.p.body = {t.write_s0(), t.b.fence(), t.write_s1(), t.b.fence(), t.read_s0(), t.b.fence()};
  EXPECT_EQ(t.plan(), "copy copy fence frag.load fence");
}

TEST(PlanBarriers, NonadjacentWarKeepsACut) {
  Small t;
  t.b.p.body = {t.read_s0(), t.b.fence(), t.read_s1(), t.b.fence(), t.write_s0(), t.b.fence()};
  EXPECT_EQ(t.plan(), "frag.load frag.load fence copy fence");
}

TEST(PlanBarriers, NonadjacentWawKeepsACut) {
  Small t;
  t.b.p.body = {t.write_s0(), t.b.fence(), t.read_s1(), t.b.fence(), t.write_s0(), t.b.fence()};
  EXPECT_EQ(t.plan(), "copy frag.load fence copy fence");
}

TEST(PlanBarriers, ReadsOfOneBufferNeedNoFence) {
  Small t;
  t.b.p.body = {t.read_s0(), t.b.fence(), t.read_s0(), t.b.fence(), t.read_s1(), t.b.fence()};
  EXPECT_EQ(t.plan(), "frag.load frag.load frag.load fence");
}

// Two different tensor parameters may be the same memory: write one, read the other.
TEST(PlanBarriers, AliasedGlobalParametersKeepTheFence) {
  Builder b;
  int x = b.tensor("X", Access::In), y = b.tensor("Y", Access::Out);
  int s0 = b.shared("S0", 8, 8), s1 = b.shared("S1", 8, 8);
  b.p.body = {b.copy(ref(s0), ref(y), 8, 8), b.fence(), b.copy(ref(x), ref(s1), 8, 8), b.fence()};
  plan_barriers(b.p);
  EXPECT_EQ(shape(b.p.body), "copy fence copy fence");
}

TEST(PlanBarriers, DoubleBufferedLoopNeedsOneFencePerIteration) {
  GroupProgram p = double_buffered(false);
  BarrierStats st = plan_barriers(p);
  EXPECT_EQ(shape(p.body), "frag.fill copy copy fence for { copy copy mma fence } frag.store fence");
  EXPECT_EQ(st.dynamic_before, "3*L0 + 3");
  EXPECT_EQ(st.dynamic_after, "L0 + 2");
  EXPECT_EQ(st.loop_after, 1);
}

TEST(PlanBarriers, DoubleBufferedLoopWithEqualSlotsKeepsTheCut) {
  GroupProgram p = double_buffered(true);
  plan_barriers(p);
  EXPECT_EQ(shape(p.body), "frag.fill copy copy fence for { copy copy fence mma fence } frag.store fence");
}

TEST(PlanBarriers, ResultDoesNotDependOnTheWorkerCount) {
  struct Workers { int n, rows, cols; };
  for (Workers w : {Workers{256, 16, 16}, Workers{100, 8, 8}, Workers{96, 8, 8}, Workers{33, 4, 8}}) {
    int workers = w.n;
    GroupProgram p = aligned_gemm(w.n, w.rows, w.cols);
    BarrierStats st = plan_barriers(p);
    EXPECT_EQ(shape(p.body), "frag.fill for { copy copy fence mma fence } frag.store fence") << workers;
    EXPECT_EQ(st.static_after, 3) << workers;
  }
}

// A user's barrier where a compiler fence would go away stays, by op kind; a call
// whose callee happens to be named "fence" is opaque, not a fence.
TEST(PlanBarriers, NativeBarrierInAFencePositionIsKept) {
  GroupProgram p = aligned_gemm();
  GroupOp& first = p.body[1].bodies[0][1];
  int id = first.id;
  first.kind = GroupOpKind::Barrier;
  plan_barriers(p);
  EXPECT_EQ(shape(p.body), "frag.fill for { copy barrier copy fence mma fence } frag.store fence");
  EXPECT_EQ(p.body[1].bodies[0][1].id, id);
}

TEST(PlanBarriers, CallNamedFenceIsABoundaryNotAFence) {
  Small t;
  t.b.p.body = {t.write_s0(), t.b.fence(), t.b.call("fence"), t.b.fence(), t.write_s1(), t.b.fence()};
  EXPECT_EQ(t.plan(), "copy fence call fence copy fence");
}

TEST(PlanBarriers, AsyncProtocolOpsAreBoundaries) {
  Small t;
  GroupOp copy = t.write_s0();
  copy.async = true;
  GroupOp commit = t.b.op(GroupOpKind::AsyncCommit), wait = t.b.op(GroupOpKind::AsyncWait);
  t.b.p.body = {copy, commit, t.b.fence(), wait, t.b.fence(), t.read_s1(), t.b.fence()};
  EXPECT_EQ(t.plan(), "copy async.commit fence async.wait fence frag.load fence");
}

// A fence before a loop stays when anything touched memory since the last kept
// fence, even if the loop body is unrelated: fences do not move across loops.
TEST(PlanBarriers, FenceBeforeALoopStays) {
  Small t;
  std::vector<GroupOp> body = {t.read_s1(), t.b.fence()};
  t.b.p.body = {t.write_s0(), t.b.fence(), t.b.loop("i", c(0), c(2), body), t.b.fence(),
                t.write_s0(), t.b.fence()};
  EXPECT_EQ(t.plan(), "copy fence for { frag.load fence } fence copy fence");
}

TEST(PlanBarriers, FencesAroundABranchStay) {
  Small t;
  std::vector<GroupOp> then_body = {t.read_s1(), t.b.fence(), t.read_s1(), t.b.fence()};
  t.b.p.body = {t.write_s0(), t.b.fence(), t.b.branch(s("g"), CmpOp::EQ, c(0), then_body, {}),
                t.b.fence(), t.write_s0(), t.b.fence()};
  BarrierStats st = plan_barriers(t.b.p);
  EXPECT_EQ(shape(t.b.p.body), "copy fence if { frag.load frag.load fence } {  } fence copy fence");
  EXPECT_EQ(st.dynamic_before, "2*C0 + 3");
  EXPECT_EQ(st.dynamic_after, "C0 + 3");
  EXPECT_EQ(st.legend, std::vector<std::string>{"C0 = (g == 0)"});
}

// A branch that only computes in registers is no boundary: the fences around it go
// as if its ops stood in line (a read of S0 after a read of S0 needs no cut).
TEST(PlanBarriers, BranchOfRegisterOpsIsNoBoundary) {
  Small t;
  int g = t.b.frag("G", 8, 8);
  GroupOp inner = t.b.branch(s("h"), CmpOp::LT, c(2), {t.b.add(g, t.f, t.f)}, {t.b.fill(g, 1)});
  t.b.p.body = {t.write_s0(), t.b.fence(), t.read_s0(), t.b.fence(),
                t.b.branch(s("g"), CmpOp::EQ, c(0), {t.b.add(g, t.f, t.f), inner}, {t.b.fill(g, 0)}),
                t.b.fence(), t.read_s0(), t.b.fence()};
  EXPECT_EQ(t.plan(), "copy fence frag.load if { ew if { ew } { frag.fill } } { frag.fill } frag.load fence");
}

// The fence at the top of a loop body orders the previous iteration's read of S0
// before this iteration's write of S0 (the back edge).
TEST(PlanBarriers, FenceAtTheTopOfALoopGuardsTheBackEdge) {
  Small t;
  std::vector<GroupOp> body = {t.b.fence(), t.write_s0(), t.b.fence(), t.read_s0()};
  t.b.p.body = {t.b.loop("i", c(0), c(2), body)};
  EXPECT_EQ(t.plan(), "for { fence copy fence frag.load }");
}

// Across the back edge the loop variable moves on: this iteration's write of slot
// (k + 1) % 2 is the same slot as the previous iteration's write of k % 2.
TEST(PlanBarriers, BackEdgeSlotsAreComparedAcrossIterations) {
  Builder b;
  int x = b.tensor("X"), s1 = b.shared("S1", 8, 8, 2), f = b.frag("F", 8, 8);
  Expr k = s("k");
  std::vector<GroupOp> body = {b.fence(), b.copy(ref(x), ref(s1, 0, 0, expr_mod(k + 1, c(2))), 8, 8),
                               b.fence(), b.frag_store(f, ref(s1, 0, 0, expr_mod(k, c(2))))};
  b.p.body = {b.fill(f, 1), b.loop("k", c(0), c(3), body)};
  plan_barriers(b.p);
  EXPECT_EQ(shape(b.p.body), "frag.fill for { fence copy fence frag.store }");
}

// The same fence also orders the code before the loop against the first iteration.
TEST(PlanBarriers, FenceAtTheTopOfALoopGuardsTheCodeBeforeIt) {
  Small t;
  std::vector<GroupOp> body = {t.b.fence(), t.read_s0(), t.b.fence()};
  t.b.p.body = {t.write_s0(), t.b.loop("i", c(0), c(2), body)};
  EXPECT_EQ(t.plan(), "copy for { fence frag.load fence }");
}

TEST(PlanBarriers, LastFenceOfEachRegionStays) {
  Small t;
  std::vector<GroupOp> body = {t.read_s1(), t.b.fence(), t.read_s1(), t.b.fence()};
  t.b.p.body = {t.b.loop("i", c(0), c(2), body), t.b.fence(), t.b.fence()};
  EXPECT_EQ(t.plan(), "for { frag.load frag.load fence } fence");
}

TEST(PlanBarriers, NestedLoopsAndBranchesCountLikeTheWalk) {
  Small t;
  std::vector<GroupOp> inner = {t.write_s0(), t.b.fence(), t.write_s1(), t.b.fence(), t.read_s0(),
                                t.b.fence()};
  std::vector<GroupOp> outer = {
      t.b.loop("j", c(0), s("J"), inner), t.b.fence(),
      t.b.branch(s("i"), CmpOp::LT, c(1), {t.read_s1(), t.b.fence(), t.read_s1(), t.b.fence()},
                 {t.b.fence()})};
  t.b.p.body = {t.b.loop("i", c(1), s("I"), outer), t.b.fence()};
  GroupProgram before = t.b.p;
  BarrierStats st = plan_barriers(t.b.p);
  EXPECT_EQ(st.dynamic_before, "C2*L0 + 3*L0*L1 + 2*L0 + 1");
  EXPECT_EQ(st.dynamic_after, "2*L0*L1 + 2*L0 + 1");
  EXPECT_EQ(st.legend,
            (std::vector<std::string>{"L0 = (I - 1)", "L1 = J", "C2 = (i < 1)"}));
  // i runs 1..4: the branch is never taken.
  auto sz = sizes({{"I", 5}, {"J", 3}});
  EXPECT_EQ(count_fences_executed(before, sz), 3 * 4 * 3 + 2 * 4 + 1);
  EXPECT_EQ(count_fences_executed(t.b.p, sz), 2 * 4 * 3 + 2 * 4 + 1);
}

TEST(PlanBarriers, OptionOffLeavesTheProgramUnchanged) {
  GroupProgram p = aligned_gemm();
  std::string before = shape(p.body);
  BarrierStats st = plan_barriers(p, BarrierPlanOptions{.coalesce = false});
  EXPECT_EQ(shape(p.body), before);
  EXPECT_TRUE(st.removed.empty());
  EXPECT_EQ(st.static_after, st.static_before);
  EXPECT_EQ(st.dynamic_after, st.dynamic_before);
}

}  // namespace
}  // namespace tessel::test
