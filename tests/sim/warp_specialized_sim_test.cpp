// Issue 14, warp specialization on the sim: tests/cuda/data/ws_wgmma_gemm.gir is a
// GEMM whose producer role (one warpgroup) issues tma copies into three stages and
// whose consumer role (two wgmma warpgroups) waits for them, multiplies, and
// releases each stage on an "empty" mbarrier. The roles run concurrently (each
// until it blocks in a wait), with 0 races and the exact product on small shapes;
// each protocol break is reported naming both ops (a wait removed, a wrong phase,
// a producer that overwrites a stage before its release), and roles that wait on
// each other forever are a deadlock error (or, after races, one more race that
// ends the launch).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "race_assertions.h"
#include "small_int_gemm.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel {
namespace {

using test::has;
using test::names_race;
using test::races_text;
using test::edit;
using Gemm = test::SmallIntGemm;

std::string ws_text(const std::string& file = "ws_wgmma_gemm.gir") {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/tests/cuda/data/" + file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Also the variant that keeps one wgmma in flight and releases the stage before
// (ws_wgmma_gemm_overlap.gir).
TEST(WarpSpecializedSim, ProducerAndConsumerRolesRunWithoutRaces) {
  for (const char* file : {"ws_wgmma_gemm.gir", "ws_wgmma_gemm_overlap.gir"}) {
    SCOPED_TRACE(file);
    const std::string text = ws_text(file);
    GroupProgram p = parse_group_program(text);
    verify_group_program(p);
    EXPECT_EQ(print_group_program(p), text);  // the text form round-trips
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{128, 128, 64}, {130, 136, 448}, {64, 64, 1000}}) {
      Gemm g(m, n, k);
      SimResult r = g.sim(text);
      EXPECT_EQ(r.race_count, 0) << m << "x" << n << "x" << k << races_text(r).substr(0, 4000);
      EXPECT_EQ(g.error(), 0.0) << m << "x" << n << "x" << k;
    }
  }
}

// The overlapped variant releasing the stage of the mma still in flight (its
// mma.wait lets one stay in flight, but it releases this k's stage, not k - 1's):
// the producer refills the stage while that mma still reads it.
TEST(WarpSpecializedSim, OverlappedReleaseOfTheStageInFlightIsARace) {
  Gemm g(128, 128, 448);
  SimResult r = g.sim(edit(ws_text("ws_wgmma_gemm_overlap.gir"),
                           "        if #17 k > 0 {\n          mbar.arrive #15 empty@((k + 2) % 3)\n        } else {\n        }\n",
                           "        mbar.arrive #15 empty@(k % 3)\n"));
  EXPECT_TRUE(names_race(r, 7, 13) || names_race(r, 13, 7)) << races_text(r).substr(0, 2000);
}

// The consumers' wait removed: their mma reads a stage whose copy has not landed.
TEST(WarpSpecializedSim, ConsumerReadBeforeThePhaseCompletesIsARace) {
  Gemm g(128, 128, 448);
  SimResult r = g.sim(edit(ws_text(), "        mbar.wait #12 full@(k % 3) parity (floordiv(k, 3) % 2)\n", ""));
  EXPECT_TRUE(names_race(r, 7, 13, "in flight"));
}

// The consumers wait on the wrong phase: parity 1 on a fresh barrier passes at once.
TEST(WarpSpecializedSim, ConsumerOnTheWrongPhaseIsARace) {
  Gemm g(128, 128, 448);
  SimResult r = g.sim(edit(ws_text(), "parity (floordiv(k, 3) % 2)", "parity ((floordiv(k, 3) + 1) % 2)"));
  EXPECT_TRUE(names_race(r, 7, 13, "in flight"));
}

// The producer's wait on "empty" removed: it refills a stage the consumers still read.
TEST(WarpSpecializedSim, ProducerOverwritingAStageEarlyIsARace) {
  Gemm g(128, 128, 448);
  SimResult r = g.sim(edit(ws_text(), "        mbar.wait #5 empty@(k % 3) parity ((floordiv(k, 3) + 1) % 2)\n", ""));
  ASSERT_GT(r.race_count, 0);
  EXPECT_TRUE(names_race(r, 7, 7, "in flight") || names_race(r, 13, 7)) << races_text(r).substr(0, 2000);
}

// The producer on the wrong phase of "empty" (always parity 1): from the fourth k
// step on it refills stage 0 while the copy of the first is in flight or read.
TEST(WarpSpecializedSim, ProducerOnTheWrongPhaseIsARace) {
  Gemm g(128, 128, 448);
  SimResult r = g.sim(edit(ws_text(), "parity ((floordiv(k, 3) + 1) % 2)", "parity 1"));
  ASSERT_GT(r.race_count, 0);
  EXPECT_TRUE(names_race(r, 7, 7, "in flight") || names_race(r, 13, 7)) << races_text(r).substr(0, 2000);
}

// Consumers that release a stage before their async mma is done reading it.
TEST(WarpSpecializedSim, ReleaseBeforeTheMmaCompletesIsARace) {
  Gemm g(128, 128, 448);
  SimResult r = g.sim(edit(ws_text(), "        mma.wait #14 pending 0\n        mbar.arrive #15 empty@(k % 3)\n",
                           "        mbar.arrive #15 empty@(k % 3)\n        mma.wait #14 pending 0\n"));
  EXPECT_TRUE(names_race(r, 13, 7)) << races_text(r).substr(0, 2000);
}

// Roles that wait on each other forever: the consumers never release, so the
// producer waits on "empty" and the consumers on "full". An error, not a hang.
TEST(WarpSpecializedSim, RolesWaitingOnEachOtherAreADeadlockError) {
  Gemm g(128, 128, 448);
  for (const std::string& text :
       {edit(ws_text(), "        mbar.arrive #15 empty@(k % 3)\n", ""),
        edit(ws_text(), "parity ((floordiv(k, 3) + 1) % 2)", "parity (floordiv(k, 3) % 2)"),
        edit(ws_text(), "        mbar.arrive #9 full@(k % 3) leader\n", "")}) {
    try {
      g.sim(text);
      ADD_FAILURE() << "no deadlock reported";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Runtime) << e.what();
      EXPECT_TRUE(has(e.what(), "deadlock: every role is blocked")) << e.what();
      EXPECT_TRUE(has(e.what(), "mbar.wait #")) << e.what();
    }
  }
}

// An error inside one role (here an out-of-range slot) ends the run with that
// error; the other role's thread is unwound, not left blocked.
TEST(WarpSpecializedSim, AnErrorInsideARoleIsReportedAndTheRolesStop) {
  Gemm g(128, 128, 448);
  try {
    g.sim(edit(ws_text(), "mbar.arrive #15 empty@(k % 3)", "mbar.arrive #15 empty@(k + 3)"));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime) << e.what();
    EXPECT_TRUE(has(e.what(), "outside [0, 3)")) << e.what();
  }
}

TEST(WarpSpecializedSim, RolesAreVerified) {
  auto verify_error = [](const std::string& text) {
    try {
      verify_group_program(parse_group_program(text));
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Verify) << e.what();
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(verify_error(edit(ws_text(), "role workers 2 to 3 regs 40", "role workers 1 to 3 regs 40")),
            "op #3 (roles): role workers 0 to 2: worker 1 is in two roles");
  EXPECT_EQ(verify_error(edit(ws_text(), "role workers 2 to 3 regs 40", "role workers 2 to 4 regs 40")),
            "op #3 (roles): role workers 2 to 4: not a non-empty range of the 3 workers");
  EXPECT_EQ(verify_error(edit(ws_text(), "regs 40", "regs 41")),
            "op #3 (roles): role workers 2 to 3: regs 41 (24 to 256, a multiple of 8, or none)");
  EXPECT_EQ(verify_error(edit(ws_text(), "      frag.fill #10 acc = 0\n", "      frag.fill #10 acc = 0\n      fence #17\n")),
            "op #17 (fence): a fence inside a role (roles meet only through mbarriers; copies and reductions "
            "inside roles are not supported yet)");
}

}  // namespace
}  // namespace tessel
