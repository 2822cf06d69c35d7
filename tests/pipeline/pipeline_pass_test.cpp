// pipeline_loops on hand-built GroupIR: what the GEMM does not exercise. Each
// program is run on the sim unpipelined and pipelined with the same inputs; the
// outputs must match bit for bit, race free.
#include "passes/pipeline.h"

#include <gtest/gtest.h>

#include "../passes/build.h"
#include "../passes/sim_check.h"
#include "ir/group_text.h"

namespace tessel::test {
namespace {

// Y (4 x 8) = sum over k in [lo, T) of rows 4k, 4k + 1 of X: each iteration stages
// a 4 x 8 tile whose source bound depends on k (rows from 4k + 2 on read as 0).
GroupProgram masked_row_sum(int64_t lo) {
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
  GroupOp loop = b.loop("k", c(lo), s("T"), std::move(body));
  loop.pipelined = true;
  p.body = {b.fill(acc, 0), std::move(loop), b.fence(), b.frag_store(acc, ref(y)), b.fence()};
  return p;
}

std::map<std::string, int64_t> sizes(int64_t t) {
  // X holds exactly the rows the loop reads (at least one tile, so it is not empty).
  return {{"X_rows", 4 * std::max<int64_t>(t, 1)}, {"X_cols", 8}, {"Y_rows", 4}, {"Y_cols", 8}, {"T", t}};
}

// Every window and protocol against the unpipelined program, for trip counts
// shorter and longer than the window.
void expect_same_as_unpipelined(int64_t lo) {
  GroupProgram base = masked_row_sum(lo);
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

// A loop whose body is not copies-then-consumers is left alone and counted.
TEST(PipelinePass, UnsupportedBodyIsSkippedWithAReason) {
  GroupProgram p = masked_row_sum(0);
  std::vector<GroupOp>& body = p.body[1].bodies[0];
  body.push_back(body[0]);  // a second staging copy after the consumers
  GroupProgram before = p;
  PipelineStats st = pipeline_loops(p, PipelineOptions{2, false});
  EXPECT_EQ(st.loops_pipelined, 0);
  EXPECT_EQ(st.loops_skipped, 1);
  EXPECT_NE(st.skipped_reason.find("not a plain consumer"), std::string::npos) << st.skipped_reason;
  EXPECT_EQ(print_group_program(p), print_group_program(before));
}

}  // namespace
}  // namespace tessel::test
