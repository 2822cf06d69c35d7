// pipeline_loops on hand-built GroupIR: what the GEMM does not exercise. Each
// program is run on the sim unpipelined and pipelined with the same inputs; the
// outputs must match bit for bit, race free.
#include "passes/pipeline.h"

#include <gtest/gtest.h>

#include <functional>

#include "../passes/build.h"
#include "../passes/sim_check.h"
#include "ir/group_text.h"

namespace tessel::test {
namespace {

// Y (4 x 8) = sum over k in [lo, T) of rows 4k, 4k + 1 of X: each iteration stages
// a 4 x 8 tile whose source bound depends on k (rows from 4k + 2 on read as 0).
// With `in_branch`, the staged tile is read inside an if on k (odd iterations add
// it twice): a branch of plain consumers is itself a consumer, pipelined like one.
GroupProgram masked_row_sum(int64_t lo, bool in_branch = false) {
  Builder b(4, 2, 2);
  GroupProgram& p = b.p;
  p.name = "masked_row_sum";
  p.grid = {{"g", c(1)}};
  int x = b.tensor("X", Access::In), y = b.tensor("Y", Access::Out);
  p.size_params.push_back("T");
  int st = b.shared("S", 4, 8);
  int acc = b.frag("acc", 4, 8), t = b.frag("t", 4, 8);
  GroupOp copy = b.copy(ref(x, s("k") * 4, c(0)), ref(st), 4, 8);
  copy.src_row_bound = s("k") * 4 + 2;
  copy.src_col_bound = s("X_cols");
  std::vector<GroupOp> body = {copy, b.fence(), b.frag_load(t, ref(st)), b.add(acc, acc, t), b.fence()};
  if (in_branch)
    body = {copy, b.fence(),
            b.branch(expr_mod(s("k"), c(2)), CmpOp::EQ, c(0), {b.frag_load(t, ref(st)), b.add(acc, acc, t)},
                     {b.frag_load(t, ref(st)), b.add(t, t, t), b.add(acc, acc, t)}),
            b.fence()};
  GroupOp loop = b.loop("k", c(lo), s("T"), std::move(body));
  loop.pipelined = true;
  p.body = {b.fill(acc, 0), std::move(loop), b.fence(), b.frag_store(acc, ref(y)), b.fence()};
  return with_global_strides(p);
}

std::map<std::string, int64_t> sizes(int64_t t) {
  // X holds exactly the rows the loop reads (at least one tile, so it is not empty).
  return {{"X_rows", 4 * std::max<int64_t>(t, 1)}, {"X_cols", 8}, {"Y_rows", 4}, {"Y_cols", 8}, {"T", t}};
}

// Every window and protocol against the unpipelined program, for trip counts
// shorter and longer than the window.
void expect_same_as_unpipelined(int64_t lo, bool in_branch = false) {
  GroupProgram base = masked_row_sum(lo, in_branch);
  for (int64_t trips : {0, 1, 2, 3, 7}) {
    auto sz = sizes(lo + trips);
    SimRun want = run_on_sim(base, sz, 3);
    ASSERT_EQ(want.result.race_count, 0);
    for (int w = 1; w <= 4; ++w)
      for (bool async : {false, true}) {
        GroupProgram p = base;
        PipelineStats st = pipeline_loops(p, PipelineOptions{w, async});
        plan_barriers(p);
        std::string what = "lo " + std::to_string(lo) + ", " + std::to_string(trips) + " trips, W = " +
                           std::to_string(w) + (async ? " async" : " sync");
        EXPECT_EQ(st.loops_pipelined, w == 1 && !async ? 0 : 1) << what;
        SimRun got = run_on_sim(p, sz, 3, 1 + w);
        EXPECT_EQ(got.result.race_count, 0)
            << what << (got.result.races.empty() ? "" : ": " + got.result.races[0].message);
        EXPECT_TRUE(same_bits(got.tensors.at("Y"), want.tensors.at("Y")))
            << what << "\n" << print_group_program(p);
      }
  }
}

// The prefetch for iteration k + W - 1 must use that iteration's bounds, not k's.
TEST(PipelinePass, CopyBoundsThatDependOnTheLoopVariable) { expect_same_as_unpipelined(0); }

// Versions count iterations from the loop's lower bound.
TEST(PipelinePass, LoopThatDoesNotStartAtZero) { expect_same_as_unpipelined(3); }

// The staged tile read in both branches of an if: the versions inside follow.
TEST(PipelinePass, ConsumersInsideABranch) { expect_same_as_unpipelined(1, true); }

// A loop the pass cannot pipeline is left alone and counted, with the reason.
TEST(PipelinePass, UnsupportedBodyIsSkippedWithAReason) {
  struct Case {
    const char* what;
    std::function<void(GroupProgram&, std::vector<GroupOp>&)> spoil;
    const char* reason;
  };
  const Case cases[] = {
      {"a second copy into the staged buffer after its consumers",
       [](GroupProgram&, std::vector<GroupOp>& body) { body.push_back(body[0]); },
       "staging copy #0 follows an op that accesses its buffer: it cannot be issued ahead"},
      {"a staging copy after a store to global memory",
       [](GroupProgram& p, std::vector<GroupOp>& body) {
         GroupOp store = body[2];
         store.kind = GroupOpKind::FragStore;
         store.dst = body[0].src;
         store.frag = p.find_buffer("t");
         store.id = 90;
         GroupOp copy = body[0];
         copy.dst.buffer = p.find_buffer("S2");
         copy.id = 91;
         body.push_back(store);
         body.push_back(copy);
       },
       "staging copy #91 follows an op that writes global memory: it cannot be issued ahead"},
      {"a consumer that writes the staged buffer",
       [](GroupProgram& p, std::vector<GroupOp>& body) {
         GroupOp store = body[2];
         store.kind = GroupOpKind::FragStore;
         store.dst = body[2].src;
         store.id = 90;
         body.push_back(store);
         (void)p;
       },
       "op #90 writes the staged buffer S"},
      {"a call", [](GroupProgram&, std::vector<GroupOp>& body) {
         GroupOp call = body[1];
         call.kind = GroupOpKind::Call;
         call.callee = "f";
         call.id = 90;
         body.push_back(call);
       },
       "op #90 in the body is not a plain consumer"},
  };
  for (const Case& k : cases) {
    GroupProgram p = masked_row_sum(0);
    p.buffers.push_back(p.buffers[p.find_buffer("S")]);
    p.buffers.back().id = static_cast<int>(p.buffers.size()) - 1;
    p.buffers.back().name = "S2";
    p.next_op_id = 100;
    k.spoil(p, p.body[1].bodies[0]);
    GroupProgram before = p;
    PipelineStats st = pipeline_loops(p, PipelineOptions{2, false});
    EXPECT_EQ(st.loops_pipelined, 0) << k.what;
    EXPECT_EQ(st.loops_skipped, 1) << k.what;
    EXPECT_EQ(st.skipped_reason, k.reason) << k.what;
    EXPECT_EQ(print_group_program(p), print_group_program(before)) << k.what;
  }
}

// Every staging copy is pipelined, not only those at the top of the body or those
// an mma reads: a second tile staged after the first one's consumers moves up
// (nothing before it touches its buffer or writes global memory).
TEST(PipelinePass, StagingCopyAfterConsumersMovesUp) {
  GroupProgram base = masked_row_sum(0);
  Builder b(4, 2, 2);
  b.p = base;
  b.p.next_op_id = 100;
  int s2 = b.shared("S2", 4, 8), u = b.frag("u", 4, 8);
  std::vector<GroupOp>& body = b.p.body[1].bodies[0];
  GroupOp copy = body[0];
  copy.id = b.p.new_op_id();
  copy.dst.buffer = s2;
  copy.src.row = copy.src.row + 2;  // rows 4k + 2 and 4k + 3 this time
  copy.src_row_bound = s("k") * 4 + 4;
  body.insert(body.end() - 1, {copy, b.fence(), b.frag_load(u, ref(s2)), b.add(b.p.find_buffer("acc"),
                                                                                 b.p.find_buffer("acc"), u)});
  base = b.p;
  auto sz = sizes(5);
  sz["X_rows"] = 22;
  SimRun want = run_on_sim(base, sz, 3);
  ASSERT_EQ(want.result.race_count, 0);
  for (int w = 2; w <= 3; ++w)
    for (bool async : {false, true}) {
      GroupProgram p = base;
      PipelineStats st = pipeline_loops(p, PipelineOptions{w, async});
      EXPECT_EQ(st.loops_pipelined, 1) << st.skipped_reason;
      EXPECT_EQ(p.buffer(s2).versions, w);
      plan_barriers(p);
      SimRun got = run_on_sim(p, sz, 3, 1 + w);
      EXPECT_EQ(got.result.race_count, 0)
          << (got.result.races.empty() ? "" : got.result.races[0].message) << print_group_program(p);
      EXPECT_TRUE(same_bits(got.tensors.at("Y"), want.tensors.at("Y"))) << print_group_program(p);
    }
}

}  // namespace
}  // namespace tessel::test
