// Issue 14: transaction-counting mbarriers and tma copies on the sim. A two-stage
// GEMM pipeline written by hand in GroupIR (tma loads into two stages completing
// on "full" barriers, consumers releasing each stage on an "empty" barrier) runs
// with 0 races and the right product; each protocol break is reported naming
// both ops (a wait removed, a wrong phase, a producer that overwrites a stage
// before the consumers released it, an init with no fence after it), and a wait
// on a phase that can never complete is a deadlock error, not a hang.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
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

GroupProgram program(const std::string& text) {
  GroupProgram p = parse_group_program(text);
  verify_group_program(p);
  return p;
}

// C = A * B, 16x16 output tiles, k steps of 8, two stages. Workers all run every
// op: worker 0 issues the tma copies and the leader arrivals, every worker waits
// and arrives on "empty" (count 4) after its mma read the stage.
const char* kTmaGemm = R"(group tma_gemm(sizes M, N, K; tensors A: f32[M, K] strides(K, 1) in, B: f32[K, N] strides(N, 1) in, C: f32[M, N] strides(N, 1) out; scalars) {
  grid i = ceildiv(M, 16), j = ceildiv(N, 16)
  workers 4 grid 2x2 lanes 1
  atom fma 1x1
  buffer A: global f32 tensor A
  buffer B: global f32 tensor B
  buffer C: global f32 tensor C
  buffer As: shared f32[16, 8] row panel 1 versions 2
  buffer Bs: shared f32[8, 16] row panel 1 versions 2
  buffer acc: private f32[16, 16] row panel 1 versions 1
  mbarrier full[2]
  mbarrier empty[2]
  mbar.init #0 full count 1
  mbar.init #1 empty count 4
  fence #2
  frag.fill #3 acc = 0
  for #4 s = 0 to 2 {
    mbar.expect_tx #5 full@s bytes 1024
    tma #6 A[(i * 16), (s * 8)] strides(K, 1) -> As@s[0, 0] 16x8 mbar full@s guard src(M, K)
    tma #7 B[(s * 8), (j * 16)] strides(N, 1) -> Bs@s[0, 0] 8x16 mbar full@s guard src(K, N)
    mbar.arrive #8 full@s leader
  }
  for #9 k = 0 to ceildiv(K, 8) {
    mbar.wait #10 full@(k % 2) parity (floordiv(k, 2) % 2)
    mma #11 acc += As@(k % 2)[0, 0] * Bs@(k % 2)[0, 0] 16x16x8
    mbar.arrive #12 empty@(k % 2)
    if #13 (k + 2) < ceildiv(K, 8) {
      mbar.wait #14 empty@(k % 2) parity (floordiv(k, 2) % 2)
      mbar.expect_tx #15 full@(k % 2) bytes 1024
      tma #16 A[(i * 16), ((k + 2) * 8)] strides(K, 1) -> As@(k % 2)[0, 0] 16x8 mbar full@(k % 2) guard src(M, K)
      tma #17 B[((k + 2) * 8), (j * 16)] strides(N, 1) -> Bs@(k % 2)[0, 0] 8x16 mbar full@(k % 2) guard src(K, N)
      mbar.arrive #18 full@(k % 2) leader
    } else {
    }
  }
  frag.store #19 C[(i * 16), (j * 16)] strides(N, 1) <- acc guard dst(M, N)
}
)";

TEST(MbarrierSim, PipelinedTmaGemmRunsWithoutRaces) {
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{16, 16, 32}, {37, 21, 48}, {5, 40, 19}}) {
    Gemm g(m, n, k);
    SimResult r = g.sim(kTmaGemm);
    EXPECT_EQ(r.race_count, 0) << m << "x" << n << "x" << k << races_text(r);
    EXPECT_EQ(g.error(), 0.0) << m << "x" << n << "x" << k;
  }
}

TEST(MbarrierSim, TextRoundTrips) {
  GroupProgram p = program(kTmaGemm);
  std::string printed = print_group_program(p);
  EXPECT_EQ(printed, std::string(kTmaGemm));
  EXPECT_EQ(print_group_program(program(printed)), printed);
}

// A wait removed: the mma reads stage 0 while the copy into it is still in flight.
TEST(MbarrierSim, ReadBeforeThePhaseCompletesIsARace) {
  Gemm g(16, 16, 32);
  SimResult r = g.sim(edit(kTmaGemm, "    mbar.wait #10 full@(k % 2) parity (floordiv(k, 2) % 2)\n", ""));
  EXPECT_TRUE(names_race(r, 6, 11, "in flight"));
  EXPECT_TRUE(names_race(r, 7, 11, "in flight"));
}

// A wrong phase: the wait's parity is that of the phase before, which counts as
// completed at once, so the mma reads while the copy is in flight.
TEST(MbarrierSim, WaitOnTheWrongPhaseIsARace) {
  Gemm g(16, 16, 32);
  SimResult r = g.sim(edit(kTmaGemm, "parity (floordiv(k, 2) % 2)\n    mma", "parity ((floordiv(k, 2) + 1) % 2)\n    mma"));
  EXPECT_TRUE(names_race(r, 6, 11, "before waiting for the mbarrier phase"));
}

// The producer overwrites a stage before the consumers released it: its wait on
// the "empty" barrier is gone, so the tma copy for k + 2 is not ordered after the
// mma of k by the other workers (their arrivals reach no one).
TEST(MbarrierSim, OverwriteBeforeReleaseIsARace) {
  Gemm g(16, 16, 32);
  SimResult r = g.sim(edit(kTmaGemm, "      mbar.wait #14 empty@(k % 2) parity (floordiv(k, 2) % 2)\n", ""));
  EXPECT_TRUE(names_race(r, 11, 16, "released"));
  EXPECT_TRUE(names_race(r, 11, 17, "released"));
}

// Consumers that arrive on "empty" before their mma is done reading (an async mma
// waited for after the arrival) release the stage too early.
TEST(MbarrierSim, ReleaseBeforeTheAsyncMmaCompletesIsARace) {
  std::string early = edit(kTmaGemm, "16x16x8\n    mbar.arrive #12 empty@(k % 2)\n",
                           "16x16x8 async\n    mbar.arrive #12 empty@(k % 2)\n    mma.wait #20 pending 0\n");
  std::string fixed = edit(kTmaGemm, "16x16x8\n    mbar.arrive #12 empty@(k % 2)\n",
                           "16x16x8 async\n    mma.wait #20 pending 0\n    mbar.arrive #12 empty@(k % 2)\n");
  Gemm g(16, 16, 32);
  EXPECT_TRUE(names_race(g.sim(early), 11, 16));
  SimResult ok = g.sim(fixed);
  EXPECT_EQ(ok.race_count, 0) << races_text(ok);
}

// mbar.init orders nothing by itself: the other workers need a fence after it.
TEST(MbarrierSim, UseAfterInitWithoutAFenceIsARace) {
  Gemm g(16, 16, 32);
  SimResult r = g.sim(edit(kTmaGemm, "  fence #2\n", ""));
  EXPECT_TRUE(names_race(r, 0, 10, "mbar.init"));
}

// A phase that can never complete (more bytes announced than any copy brings, or
// an arrival missing) is a deadlock error naming the wait, not a hang.
TEST(MbarrierSim, WaitThatCanNeverCompleteIsADeadlockError) {
  Gemm g(16, 16, 32);
  for (const std::string& text :
       {edit(kTmaGemm, "mbar.expect_tx #5 full@s bytes 1024", "mbar.expect_tx #5 full@s bytes 1536"),
        edit(kTmaGemm, "    mbar.arrive #8 full@s leader\n", ""),
        edit(kTmaGemm, "    mbar.arrive #12 empty@(k % 2)\n", ""),
        // The producer on the wrong phase of "empty": its consumers have arrived
        // already (every worker runs every op), so it waits for the next phase.
        edit(kTmaGemm, "mbar.wait #14 empty@(k % 2) parity (floordiv(k, 2) % 2)",
             "mbar.wait #14 empty@(k % 2) parity ((floordiv(k, 2) + 1) % 2)")}) {
    try {
      g.sim(text);
      ADD_FAILURE() << "no deadlock reported";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Runtime);
      EXPECT_TRUE(has(e.what(), "deadlock")) << e.what();
      EXPECT_TRUE(has(e.what(), "can never complete")) << e.what();
      EXPECT_TRUE(has(e.what(), "mbar.wait #")) << e.what();
    }
  }
}

// Fewer bytes announced than the copies bring: the phase completes when the first
// copy lands, and the second lands in the next phase, after the consumers read.
TEST(MbarrierSim, TooFewTransactionBytesIsARace) {
  Gemm g(16, 16, 32);
  SimResult r = g.sim(edit(kTmaGemm, "mbar.expect_tx #5 full@s bytes 1024", "mbar.expect_tx #5 full@s bytes 512"));
  EXPECT_TRUE(names_race(r, 7, 11)) << races_text(r);
}

// A copy that no wait ever needs never lands for anyone.
TEST(MbarrierSim, CopyNeverWaitedForIsReported) {
  Gemm g(16, 16, 32);
  // One more k step of prefetch than the loop consumes.
  SimResult r = g.sim(edit(kTmaGemm, "if #13 (k + 2) < ceildiv(K, 8)", "if #13 (k + 2) < (ceildiv(K, 8) + 1)"));
  EXPECT_TRUE(names_race(r, 16, -1, "never lands")) << races_text(r);
}

TEST(MbarrierSim, MisuseIsAnError) {
  Gemm g(16, 16, 32);
  auto runtime_error = [&](const std::string& text, const std::string& says) {
    try {
      g.sim(text);
      ADD_FAILURE() << "no error; wanted: " << says;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Runtime) << e.what();
      EXPECT_TRUE(has(e.what(), says)) << e.what();
    }
  };
  runtime_error(edit(kTmaGemm, "  mbar.init #0 full count 1\n", ""), "before any mbar.init");
  runtime_error(edit(kTmaGemm, "parity (floordiv(k, 2) % 2)\n    mma", "parity (k + 2)\n    mma"), "is not 0 or 1");
  runtime_error(edit(kTmaGemm, "mbar.arrive #12 empty@(k % 2)", "mbar.arrive #12 empty@(k + 2)"), "outside [0, 2)");
}

// Two leader arrivals per phase of a count-1 barrier: the second is reported (and
// left out), and the run goes on.
TEST(MbarrierSim, ArrivalBeyondTheCountIsReported) {
  Gemm g(16, 16, 32);
  SimResult r = g.sim(edit(kTmaGemm, "    mbar.arrive #8 full@s leader\n",
                           "    mbar.arrive #8 full@s leader\n    mbar.arrive #20 full@s leader\n"));
  EXPECT_TRUE(names_race(r, 20, -1, "already has its 1 arrivals"));
}

}  // namespace
}  // namespace tessel
