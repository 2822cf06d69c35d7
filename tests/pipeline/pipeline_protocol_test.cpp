// Pipelined programs broken on purpose, as a buggy pass would break them: the sim's
// race detector must report each, naming the ops involved. Every test first runs
// the unbroken program (zero races) so that a race can only come from the break.
#include <gtest/gtest.h>

#include <regex>

#include "ir/group_text.h"
#include "pipeline_util.h"
#include "target/sim/sim.h"

namespace tessel::test {
namespace {

// A 40 x 24 x 61 GEMM (8 iterations of BK = 8, the last ragged) on fixed inputs.
SimResult run(const GroupProgram& p) {
  const int64_t m = 40, n = 24, k = 61;
  GemmInputs in({m, n, k, 1.0f, 0.0f});
  LaunchArgs args;
  args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
  args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
  args.tensors = {{"A", in.a.data()}, {"B", in.b.data()}, {"C", in.c.data()}};
  return run_sim(p, args);
}

// The pipelined K loop: the only For at the top level.
std::vector<GroupOp>& loop_body(GroupProgram& p) {
  for (GroupOp& op : p.body)
    if (op.kind == GroupOpKind::For) return op.bodies[0];
  throw std::runtime_error("no loop");
}

size_t find(const std::vector<GroupOp>& body, GroupOpKind kind) {
  for (size_t i = 0; i < body.size(); ++i)
    if (body[i].kind == kind) return i;
  ADD_FAILURE() << "no " << group_op_name(kind) << " in the loop body";
  return 0;
}

// The race messages, and whether one of them names both ops.
std::string messages(const SimResult& r) {
  std::string s;
  for (const Race& race : r.races) s += race.message + "\n";
  return s;
}
bool names_both(const SimResult& r, int first, int second) {
  for (const Race& race : r.races) {
    bool a = race.message.find("#" + std::to_string(first) + " ") != std::string::npos;
    bool b = race.message.find("#" + std::to_string(second) + " ") != std::string::npos;
    if (a && b) return true;
  }
  return false;
}
// A staging copy (in the loop or the prologue) against the mma.
bool names_mma_and_a_copy(const SimResult& r, int mma) {
  for (const Race& race : r.races)
    if (race.message.find("mma #" + std::to_string(mma) + " ") != std::string::npos &&
        race.message.find("copy #") != std::string::npos)
      return true;
  return false;
}

GroupProgram pipelined(int window, bool async) {
  GroupProgram p = compile_plan(sim_plan(window, async)).program;
  EXPECT_EQ(run(p).race_count, 0) << "W = " << window << (async ? " async" : " sync") << " unbroken:\n"
                                  << print_group_program(p);
  return p;
}

// (a) The wait moved after the mma: the mma reads a version whose copy is still in flight.
TEST(PipelineProtocol, WaitAfterTheConsumerRaces) {
  for (int w : {2, 3, 4}) {
    GroupProgram p = pipelined(w, true);
    std::vector<GroupOp>& body = loop_body(p);
    size_t wait = find(body, GroupOpKind::AsyncWait);
    GroupOp moved = body[wait];
    body.erase(body.begin() + wait);
    size_t mma = find(body, GroupOpKind::Mma);
    int mma_id = body[mma].id;
    body.insert(body.begin() + mma + 1, moved);
    SimResult r = run(p);
    EXPECT_GT(r.race_count, 0) << "W = " << w;
    EXPECT_TRUE(names_mma_and_a_copy(r, mma_id)) << "W = " << w << ":\n" << messages(r);
  }
}

// (b) The staged buffers get one version fewer than the window (every version
// index taken modulo W - 1): the prefetch lands in the version being read.
GroupProgram one_version_short(const GroupProgram& p, int window) {
  std::string text = print_group_program(p);
  std::string w = std::to_string(window), w1 = std::to_string(window - 1);
  text = std::regex_replace(text, std::regex("versions " + w), "versions " + w1);
  text = std::regex_replace(text, std::regex("@\\((.*?) % " + w + "\\)\\["), "@($1 % " + w1 + ")[");
  return parse_group_program(text);
}

TEST(PipelineProtocol, OneVersionTooFewRaces) {
  for (bool async : {false, true})
    for (int w : {2, 3, 4}) {
      GroupProgram p = one_version_short(pipelined(w, async), w);
      std::vector<GroupOp>& body = loop_body(p);
      int mma = body[find(body, GroupOpKind::Mma)].id;
      int copy = body[find(body, GroupOpKind::Copy)].id;
      SimResult r = run(p);
      std::string what = "W = " + std::to_string(w) + (async ? " async" : " sync");
      EXPECT_GT(r.race_count, 0) << what << "\n" << print_group_program(p);
      EXPECT_TRUE(names_both(r, copy, mma)) << what << ":\n" << messages(r);
    }
}

// (c) The fence after the wait dropped: the wait covers only the waiting worker's
// own copies, so the mma reads elements other workers' copies (the prologue's
// first) may still be writing.
TEST(PipelineProtocol, NoFenceAfterTheWaitRaces) {
  for (int w : {2, 3, 4}) {
    GroupProgram p = pipelined(w, true);
    std::vector<GroupOp>& body = loop_body(p);
    size_t wait = find(body, GroupOpKind::AsyncWait);
    ASSERT_EQ(body[wait + 1].kind, GroupOpKind::Fence);
    body.erase(body.begin() + wait + 1);
    int mma = body[find(body, GroupOpKind::Mma)].id;
    SimResult r = run(p);
    EXPECT_GT(r.race_count, 0) << "W = " << w;
    EXPECT_TRUE(names_mma_and_a_copy(r, mma)) << "W = " << w << ":\n" << messages(r);
  }
}

// (d) Sync copies: the one fence left in the loop is needed.
TEST(PipelineProtocol, SyncWithoutTheLoopFenceRaces) {
  for (int w : {2, 3, 4}) {
    GroupProgram p = pipelined(w, false);
    std::vector<GroupOp>& body = loop_body(p);
    body.erase(body.begin() + find(body, GroupOpKind::Fence));
    int mma = body[find(body, GroupOpKind::Mma)].id;
    int copy = body[find(body, GroupOpKind::Copy)].id;
    SimResult r = run(p);
    EXPECT_GT(r.race_count, 0) << "W = " << w;
    EXPECT_TRUE(names_both(r, copy, mma)) << "W = " << w << ":\n" << messages(r);
  }
}

}  // namespace
}  // namespace tessel::test
