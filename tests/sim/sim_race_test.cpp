// The race detector: a missing fence, a misplaced async wait and two groups writing
// one output element are each reported, naming both operations, whatever the worker
// order; a fence between independent effects is not needed; one worker never races
// with itself.
#include <gtest/gtest.h>

#include <set>

#include "gemm_programs.h"
#include "target/sim/sim.h"

namespace tessel::test {
namespace {

SimResult run(const GroupProgram& p, uint64_t seed = 1, int keep = 16) {
  GemmData data(13, 29, 11, 1.0, 0.0, 3);
  SimOptions options;
  options.seed = seed;
  options.max_races_recorded = keep;
  return run_sim(p, data.args(), options);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string op(const char* kind, int id) { return std::string(kind) + " #" + std::to_string(id); }

// Every recorded race is between `first` (recorded earlier) and one of `second`,
// by two different workers, on As or Bs, with both named in the message.
void expect_races(const SimResult& r, const std::set<int>& first, const char* first_kind,
                  const std::set<int>& second, const char* second_kind) {
  ASSERT_GT(r.race_count, 0);
  ASSERT_FALSE(r.races.empty());
  for (const Race& race : r.races) {
    EXPECT_TRUE(first.count(race.first_op)) << race.message;
    EXPECT_TRUE(second.count(race.second_op)) << race.message;
    EXPECT_NE(race.first_worker, race.second_worker) << race.message;
    EXPECT_TRUE(race.buffer == "As" || race.buffer == "Bs") << race.message;
    EXPECT_TRUE(contains(race.message, op(first_kind, race.first_op))) << race.message;
    EXPECT_TRUE(contains(race.message, op(second_kind, race.second_op))) << race.message;
    EXPECT_TRUE(contains(race.message, "race on " + race.buffer + "[" + std::to_string(race.row) +
                                           ", " + std::to_string(race.col) + "]"))
        << race.message;
  }
}

TEST(SimRace, FencedGemmHasNoRace) {
  for (uint64_t seed = 1; seed <= 4; ++seed) EXPECT_EQ(run(make_gemm({}).program, seed).race_count, 0);
}

// The seed report's point: copy A and copy B touch different buffers.
TEST(SimRace, FenceBetweenIndependentCopiesIsNotNeeded) {
  GemmProgram g = make_gemm({});
  remove_op(g.program, g.fence_after_a);
  EXPECT_EQ(run(g.program).race_count, 0);
}

TEST(SimRace, MissingFenceBeforeMmaIsReported) {
  GemmProgram g = make_gemm({});
  remove_op(g.program, g.fence_after_b);
  for (uint64_t seed = 1; seed <= 4; ++seed)
    expect_races(run(g.program, seed), {g.copy_a, g.copy_b}, "copy", {g.mma}, "mma");
}

TEST(SimRace, MissingFenceAfterMmaIsReported) {
  GemmProgram g = make_gemm({});
  remove_op(g.program, g.fence_after_mma);
  for (uint64_t seed = 1; seed <= 4; ++seed)
    expect_races(run(g.program, seed), {g.mma}, "mma", {g.copy_a, g.copy_b}, "copy");
}

TEST(SimRace, MessageSaysWhoReadsAndWrites) {
  GemmProgram g = make_gemm({});
  remove_op(g.program, g.fence_after_mma);
  SimResult r = run(g.program);
  ASSERT_FALSE(r.races.empty());
  const Race& race = r.races[0];
  std::string expected = "(v0): " + op("mma", g.mma) + " (worker " +
                         std::to_string(race.first_worker) + ") reads, " +
                         op("copy", race.second_op) + " (worker " +
                         std::to_string(race.second_worker) + ") writes, with no fence between";
  EXPECT_TRUE(contains(race.message, expected)) << race.message << "\nexpected: " << expected;
}

TEST(SimRace, OneWorkerNeverRacesWithItself) {
  GemmConfig cfg;
  cfg.worker_rows = cfg.worker_cols = 1;
  GemmProgram g = make_gemm(cfg);
  remove_op(g.program, g.fence_after_a);
  remove_op(g.program, g.fence_after_b);
  remove_op(g.program, g.fence_after_mma);
  GemmData data(13, 29, 11, 1.0, 0.5, 3);
  std::vector<float> before = data.c;
  EXPECT_EQ(run_sim(g.program, data.args()).race_count, 0);
  EXPECT_LE(data.error_ratio(before), 1.0);
}

TEST(SimRace, CountsAllKeepsSome) {
  GemmProgram g = make_gemm({});
  remove_op(g.program, g.fence_after_b);
  SimResult r = run(g.program, 1, 3);
  EXPECT_GT(r.race_count, 3);
  EXPECT_EQ(r.races.size(), 3u);
}

TEST(SimRace, AsyncWaitBeforeConsumerIsRaceFree) {
  GemmConfig cfg;
  cfg.async = true;
  EXPECT_EQ(run(make_gemm(cfg).program).race_count, 0);
}

TEST(SimRace, AsyncWaitAfterConsumerIsReported) {
  GemmConfig cfg;
  cfg.async = true;
  cfg.wait_after_mma = true;
  GemmProgram g = make_gemm(cfg);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SimResult r = run(g.program, seed);
    ASSERT_FALSE(r.races.empty());
    for (const Race& race : r.races) {
      EXPECT_TRUE(race.first_op == g.copy_a || race.first_op == g.copy_b) << race.message;
      EXPECT_EQ(race.second_op, g.mma) << race.message;
      EXPECT_TRUE(contains(race.message, "async " + op("copy", race.first_op))) << race.message;
      EXPECT_TRUE(contains(race.message, "in flight")) << race.message;
    }
  }
}

// Without a fence after the wait, other workers' landed copies are unordered with
// the mma even though the wait came first.
TEST(SimRace, AsyncWaitWithoutFenceIsReported) {
  GemmConfig cfg;
  cfg.async = true;
  GemmProgram g = make_gemm(cfg);
  remove_op(g.program, g.fence_after_b);
  expect_races(run(g.program), {g.copy_a, g.copy_b}, "copy", {g.mma}, "mma");
}

TEST(SimRace, PipelinedGemmIsRaceFree) {
  for (uint64_t seed = 1; seed <= 3; ++seed)
    EXPECT_EQ(run(make_pipelined_gemm({}).program, seed).race_count, 0);
}

TEST(SimRace, PipelinedWaitingTooLittleIsReported) {
  GemmProgram g = make_pipelined_gemm({});
  find_op(g.program, g.wait).pending = 2;
  SimResult r = run(g.program);
  ASSERT_GT(r.race_count, 0);
  EXPECT_EQ(r.races[0].second_op, g.mma) << r.races[0].message;
  EXPECT_TRUE(contains(r.races[0].message, "in flight")) << r.races[0].message;
}

// The prefetch of tile k + 1 overwrites the version that the mma of tile k - 1 read.
TEST(SimRace, PipelinedMissingFenceAfterMmaIsReported) {
  GemmProgram g = make_pipelined_gemm({});
  remove_op(g.program, g.fence_after_mma);
  expect_races(run(g.program), {g.mma}, "mma", {g.copy_a, g.copy_b}, "copy");
}

// Two groups (i = 0, 1), one worker each: load x = C[load], then C[store] = x.
GroupProgram two_group_program(Expr load_row, Expr load_col, Expr store_row) {
  GroupProgram p;
  p.name = "two_groups";
  p.size_params = {"M", "N"};
  p.tensors = {{"C", DType::F32, {expr_sym("M"), expr_sym("N")}, {expr_sym("N"), expr_const(1)},
                Access::InOut}};
  p.grid = {{"i", expr_const(2)}};
  Buffer c{0, "C", Space::Global, DType::F32, 0, 0, 0};
  Buffer x{1, "x", Space::Private, DType::F32, 1, 1, -1};
  p.buffers = {c, x};
  GroupOp load;
  load.kind = GroupOpKind::FragLoad;
  load.id = p.new_op_id();
  load.frag = 1;
  load.src = {0, nullptr, std::move(load_row), std::move(load_col), nullptr, expr_sym("N"),
              expr_const(1)};
  GroupOp store;
  store.kind = GroupOpKind::FragStore;
  store.id = p.new_op_id();
  store.frag = 1;
  store.dst = {0, nullptr, std::move(store_row), expr_const(0), nullptr, expr_sym("N"),
               expr_const(1)};
  p.body = {load, store};
  return p;
}

SimResult run_two_groups(const GroupProgram& p) {
  std::vector<float> c = {1, 2, 3, 4};
  LaunchArgs args;
  args.sizes = {{"M", 2}, {"N", 2}};
  args.tensors = {{"C", c.data()}};
  return run_sim(p, args);
}

Expr i() { return expr_sym("i"); }

TEST(SimRace, GroupsOnTheirOwnRowsOrOnlyReadingDoNotRace) {
  EXPECT_EQ(run_two_groups(two_group_program(i(), expr_const(1), i())).race_count, 0);
  EXPECT_EQ(run_two_groups(two_group_program(expr_const(0), expr_const(1), i())).race_count, 0);
}

TEST(SimRace, TwoGroupsWritingOneElementIsReported) {
  SimResult r = run_two_groups(two_group_program(i(), expr_const(1), expr_const(1)));
  ASSERT_EQ(r.race_count, 1);
  const Race& race = r.races[0];
  EXPECT_EQ(race.buffer, "C");
  EXPECT_EQ(race.row, 1);
  EXPECT_EQ(race.col, 0);
  EXPECT_EQ(race.first_worker, 0);
  EXPECT_EQ(race.second_worker, 1);
  EXPECT_EQ(race.message,
            "race on C[1, 0]: frag.store #1 (group 0) writes, frag.store #1 (group 1) writes, "
            "in different groups");
}

TEST(SimRace, ReadingAnotherGroupsOutputIsReported) {
  SimResult r = run_two_groups(two_group_program(expr_const(0), expr_const(0), i()));
  ASSERT_EQ(r.race_count, 1);
  EXPECT_EQ(r.races[0].message,
            "race on C[0, 0]: frag.store #1 (group 0) writes, frag.load #0 (group 1) reads, "
            "in different groups");
}

}  // namespace
}  // namespace tessel::test
