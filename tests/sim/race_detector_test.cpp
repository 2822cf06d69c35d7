// The race detector's shadow state on its own: whether it reports a race depends on
// which accesses happened in an interval, never on their order.
#include "target/sim/race_detector.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessel {
namespace {

struct Fixture {
  GroupProgram program;
  Fixture() {
    Buffer s;
    s.id = 0;
    s.name = "S";
    s.space = Space::Shared;
    s.rows = s.cols = 2;
    s.versions = 2;
    program.buffers = {s};
    program.tensors = {{"G", DType::F32, {expr_sym("M"), expr_sym("N")},
                        {expr_sym("N"), expr_const(1)}, Access::InOut}};
    for (GroupOpKind kind : {GroupOpKind::Copy, GroupOpKind::Mma}) {
      GroupOp op;
      op.kind = kind;
      op.id = program.new_op_id();
      program.body.push_back(op);
    }
  }
  const GroupOp& copy() const { return program.body[0]; }
  const GroupOp& mma() const { return program.body[1]; }
  RaceDetector detector() const { return RaceDetector(program, {TensorStorage{0, 0}}, {4}, 4); }  // G: 2 x 2
};

struct Access {
  int worker;
  bool write;
};

bool truth(const std::vector<Access>& accesses) {
  for (const Access& x : accesses)
    for (const Access& y : accesses)
      if (x.worker != y.worker && (x.write || y.write)) return true;
  return false;
}

// Every sequence of up to four accesses (three workers, read or write) to one
// element in one interval: a race is reported exactly when two different workers
// touched it and one of them wrote. Sequences cover every order of every set.
TEST(RaceDetector, OutcomeDependsOnTheSetOfAccessesNotTheirOrder) {
  Fixture f;
  for (int length = 1; length <= 4; ++length) {
    int combos = 1;
    for (int i = 0; i < length; ++i) combos *= 6;
    for (int code = 0; code < combos; ++code) {
      std::vector<Access> seq;
      for (int i = 0, c = code; i < length; ++i, c /= 6) seq.push_back({c % 3, c % 6 >= 3});
      RaceDetector shared = f.detector(), global = f.detector();
      shared.begin_group(0);
      for (const Access& a : seq)
        shared.shared_access(0, 1, 1, 0, 5, a.worker, a.write ? f.copy() : f.mma(), a.write);
      for (const Access& a : seq) {
        global.begin_group(a.worker);  // groups here stand for workers
        global.global_access(0, 3, 1, 1, 0, a.write ? f.copy() : f.mma(), a.write);
      }
      EXPECT_EQ(shared.result().race_count > 0, truth(seq)) << "sequence code " << code;
      // Global: groups run one after another, so only sorted sequences are real.
      bool sorted = true;
      for (size_t i = 1; i < seq.size(); ++i) sorted = sorted && seq[i - 1].worker <= seq[i].worker;
      if (sorted) {
        EXPECT_EQ(global.result().race_count > 0, truth(seq)) << "sequence code " << code;
      }
    }
  }
}

TEST(RaceDetector, FenceEndsTheInterval) {
  Fixture f;
  RaceDetector d = f.detector();
  d.begin_group(0);
  d.shared_access(0, 0, 0, 1, 1, 0, f.copy(), true);
  d.new_interval();
  d.shared_access(0, 0, 0, 1, 1, 1, f.mma(), false);
  EXPECT_EQ(d.result().race_count, 0);
  d.shared_access(0, 0, 0, 1, 1, 2, f.copy(), true);
  ASSERT_EQ(d.result().race_count, 1);
  EXPECT_EQ(d.result().races[0].message,
            "race on S[0, 1] (v0): mma #1 (worker 1) reads, copy #0 (worker 2) writes, "
            "with no fence between");
}

TEST(RaceDetector, NewGroupStartsFresh) {
  Fixture f;
  RaceDetector d = f.detector();
  d.begin_group(0);
  d.shared_access(0, 0, 0, 0, 0, 0, f.copy(), true);
  d.begin_group(1);
  d.shared_access(0, 0, 0, 0, 0, 1, f.mma(), false);
  EXPECT_EQ(d.result().race_count, 0);
}

TEST(RaceDetector, AsyncCopyInFlightRacesWithEveryAccessUntilItLands) {
  Fixture f;
  RaceDetector d = f.detector();
  d.begin_group(0);
  d.async_issue(0, 1, 0, 0, 4, 0, f.copy(), 7);
  d.new_interval();
  d.shared_access(0, 1, 0, 0, 4, 0, f.mma(), false);  // even the issuing worker
  ASSERT_EQ(d.result().race_count, 1);
  EXPECT_EQ(d.result().races[0].message,
            "race on S[0, 0] (v1): async copy #0 (worker 0) is in flight, mma #1 (worker 0) "
            "reads, before the async.wait that completes the copy");
  d.async_land(0, 4, 7);
  d.shared_access(0, 1, 0, 0, 4, 0, f.copy(), true);  // landing: a write by the issuer
  d.shared_access(0, 1, 0, 0, 4, 0, f.mma(), false);
  EXPECT_EQ(d.result().race_count, 1);
  d.shared_access(0, 1, 0, 0, 4, 1, f.mma(), false);  // another worker, no fence yet
  EXPECT_EQ(d.result().race_count, 2);
}

TEST(RaceDetector, AsyncIssueRacesWithEarlierReadInTheSameInterval) {
  Fixture f;
  RaceDetector d = f.detector();
  d.begin_group(0);
  d.shared_access(0, 0, 1, 1, 3, 1, f.mma(), false);
  d.async_issue(0, 0, 1, 1, 3, 0, f.copy(), 1);
  EXPECT_EQ(d.result().race_count, 1);
}

// Within one group, global elements follow the shared rule among workers; across
// groups, the launch-wide one.
TEST(RaceDetector, GlobalElementWithinAGroupRacesAmongWorkersUntilAFence) {
  Fixture f;
  RaceDetector d = f.detector();
  d.begin_group(0);
  d.global_access(0, 2, 1, 0, 0, f.copy(), true);
  d.global_access(0, 2, 1, 0, 0, f.mma(), false);  // the writer itself
  EXPECT_EQ(d.result().race_count, 0);
  d.global_access(0, 2, 1, 0, 3, f.copy(), true);
  ASSERT_EQ(d.result().race_count, 1);
  EXPECT_EQ(d.result().races[0].message,
            "race on G[1, 0]: copy #0 (worker 0) writes, copy #0 (worker 3) writes, with no "
            "fence between");
  d.new_interval();
  d.global_access(0, 2, 1, 0, 1, f.mma(), false);
  EXPECT_EQ(d.result().race_count, 1);
  d.begin_group(1);  // another group reading what group 0 wrote
  d.global_access(0, 2, 1, 0, 1, f.mma(), false);
  ASSERT_EQ(d.result().race_count, 2);
  EXPECT_EQ(d.result().races[1].message,
            "race on G[1, 0]: copy #0 (group 0) writes, mma #1 (group 1) reads, in different groups");
}

TEST(RaceDetector, KeepsAtMostTheConfiguredNumber) {
  Fixture f;
  RaceDetector d = f.detector();  // keeps 4
  d.begin_group(0);
  for (int w = 0; w < 10; ++w) d.shared_access(0, 0, 0, 0, 0, w, f.copy(), true);
  EXPECT_EQ(d.result().race_count, 9);
  EXPECT_EQ(d.result().races.size(), 4u);
}

}  // namespace
}  // namespace tessel
