// The race checker's blind spots of issue 13, one test each: a small hand-written
// GroupIR program with the bug planted is reported (naming both ops where there are
// two), and the same program fixed runs with 0 races. Each of these was once
// accepted by the sim with 0 races.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "race_assertions.h"
#include "target/cpu/cpu_jit.h"
#include "target/sim/sim.h"
#include "tessel/error.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_kernel.h"
#endif

namespace tessel {
namespace {

using test::edit;
using test::has;
using test::names_race;
using test::races_text;

// Parses and verifies: the planted bugs are races, not IR errors.
GroupProgram program(const std::string& text) {
  GroupProgram p = parse_group_program(text);
  verify_group_program(p);
  return p;
}

// One group; the tensors named in `names` each get their own 16 floats of 1.0.
struct Launch {
  std::vector<std::vector<float>> storage;
  LaunchArgs args;
  explicit Launch(const std::vector<std::string>& names) : storage(names.size(), std::vector<float>(16, 1.0f)) {
    for (size_t i = 0; i < names.size(); ++i) args.tensors[names[i]] = storage[i].data();
  }
  SimResult sim(const GroupProgram& p) { return run_sim(p, args); }
};

// 1. Two workers of one group writing one global element (WAW on a tensor). Copy
// element e is done by worker (e / batch) % workers: Y[0, 1] is copy #0's by
// worker 1 and copy #1's by worker 0.
const char* kWaw = R"(group waw(sizes ; tensors X: f32[1, 4] strides(4, 1) in, Y: f32[1, 4] strides(4, 1) out; scalars ) {
  grid
  workers 4 grid 1x1 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Y: global f32 tensor Y
  copy #0 X[0, 0] strides(4, 1) -> Y[0, 0] strides(4, 1) 1x4 batch 1
  copy #1 X[0, 0] strides(4, 1) -> Y[0, 0] strides(4, 1) 1x4 batch 2
}
)";

TEST(BlindSpots, TwoWorkersOfOneGroupWriteOneGlobalElement) {
  Launch run({"X", "Y"});
  SimResult planted = run.sim(program(kWaw));
  EXPECT_TRUE(names_race(planted, 0, 1, "writes, copy #1"));
  std::string fixed = edit(kWaw, "  copy #1", "  fence #2\n  copy #1");
  SimResult r = run.sim(program(fixed));
  EXPECT_EQ(r.race_count, 0) << races_text(r);
}

// 2. A round trip through global memory inside one group: frag.store by each worker
// of its column, then a copy of the same elements back to scratch in which worker
// 0 reads worker 1's column.
const char* kRoundTrip = R"(group round_trip(sizes ; tensors Y: f32[1, 4] strides(4, 1) inout; scalars ) {
  grid
  workers 4 grid 1x4 lanes 1
  atom fma 1x1
  buffer Y: global f32 tensor Y
  buffer S: shared f32[1, 4] row panel 1 versions 1
  buffer f: private f32[1, 4] row panel 1 versions 1
  frag.fill #0 f = 2
  frag.store #1 Y[0, 0] strides(4, 1) <- f
  copy #2 Y[0, 0] strides(4, 1) -> S[0, 0] 1x4 batch 2
}
)";

TEST(BlindSpots, StoreThenCopyBackByAnotherWorkerWithoutAFence) {
  Launch run({"Y"});
  SimResult planted = run.sim(program(kRoundTrip));
  EXPECT_TRUE(names_race(planted, 1, 2, "with no fence between"));
  SimResult r = run.sim(program(edit(kRoundTrip, "  copy #2", "  fence #3\n  copy #2")));
  EXPECT_EQ(r.race_count, 0) << races_text(r);
}

// 3. An async mma whose fence comes before its mma.wait: the mma reads As until the
// wait, so the copy that refills As after the wait, with no fence between, races
// with the other worker's mma (over a 1 x 2 worker grid each mma reads all of As).
const char* kMmaWait = R"(group mma_wait(sizes ; tensors A: f32[2, 2] strides(2, 1) in, C: f32[2, 2] strides(2, 1) out; scalars ) {
  grid
  workers 2 grid 1x2 lanes 1
  atom fma 1x1
  buffer A: global f32 tensor A
  buffer C: global f32 tensor C
  buffer As: shared f32[2, 2] row panel 1 versions 1
  buffer f: private f32[2, 2] row panel 1 versions 1
  copy #0 A[0, 0] strides(2, 1) -> As[0, 0] 2x2 batch 1
  fence #1
  frag.fill #2 f = 0
  mma #3 f += As[0, 0] * As[0, 0] 2x2x2 async
  fence #4
  mma.wait #5 pending 0
  copy #6 A[0, 0] strides(2, 1) -> As[0, 0] 2x2 batch 1
  frag.store #7 C[0, 0] strides(2, 1) <- f
}
)";

TEST(BlindSpots, FenceBeforeMmaWaitDoesNotOrderTheMmasReads) {
  Launch run({"A", "C"});
  SimResult planted = run.sim(program(kMmaWait));
  EXPECT_TRUE(names_race(planted, 3, 6, "with no fence between"));
  // Fixed: the fence after the wait.
  std::string fixed = edit(edit(kMmaWait, "  fence #4\n", ""), "  copy #6", "  fence #4\n  copy #6");
  SimResult r = run.sim(program(fixed));
  EXPECT_EQ(r.race_count, 0) << races_text(r);
  // A holds ones, so every element of C = A * A is 2.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(run.storage[1][i], 2.0f) << i;
}

// 4. The source of an in-flight async copy overwritten after a fence but before the
// async.wait: worker 1's copy reads X[0, 1] until the wait, and worker 0 stores
// it. A fence orders nothing here; only the wait does.
const char* kSourceInFlight = R"(group source(sizes ; tensors X: f32[1, 4] strides(4, 1) inout; scalars ) {
  grid
  workers 2 grid 1x2 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer S: shared f32[1, 4] row panel 1 versions 1
  buffer f: private f32[1, 4] row panel 1 versions 1
  frag.fill #0 f = 3
  copy #1 X[0, 0] strides(4, 1) -> S[0, 0] 1x4 batch 1 async
  async.commit #2
  fence #3
  frag.store #4 X[0, 0] strides(4, 1) <- f
  async.wait #5 pending 0
  fence #6
}
)";

TEST(BlindSpots, AsyncCopySourceOverwrittenBeforeTheWait) {
  Launch run({"X"});
  SimResult planted = run.sim(program(kSourceInFlight));
  EXPECT_TRUE(names_race(planted, 1, 4, "before the async.wait that completes the copy"));
  // Fixed: wait, fence, then store.
  std::string fixed = edit(edit(kSourceInFlight, "  frag.store #4 X[0, 0] strides(4, 1) <- f\n", ""),
                           "  fence #6\n", "  fence #6\n  frag.store #4 X[0, 0] strides(4, 1) <- f\n");
  SimResult r = run.sim(program(fixed));
  EXPECT_EQ(r.race_count, 0) << races_text(r);
  EXPECT_EQ(run.storage[0][1], 3.0f);
  // The wait ends the read in its own interval: a store right after it, with no
  // fence between, still races with the other worker's copy (which the storing
  // worker cannot know has completed).
  std::string unfenced = edit(fixed, "  fence #6\n", "");
  SimResult u = run.sim(program(unfenced));
  EXPECT_TRUE(names_race(u, 1, 4, "with no fence between"));
}

// The same with a shared source: the async copy S -> T reads S until its wait, and
// a frag.store rewrites S in between (after a fence).
TEST(BlindSpots, AsyncCopySharedSourceOverwrittenBeforeTheWait) {
  const std::string text = R"(group shared_source(sizes ; tensors X: f32[1, 4] strides(4, 1) in; scalars ) {
  grid
  workers 2 grid 1x2 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer S: shared f32[1, 4] row panel 1 versions 1
  buffer T: shared f32[1, 4] row panel 1 versions 1
  buffer f: private f32[1, 4] row panel 1 versions 1
  frag.fill #0 f = 3
  copy #1 X[0, 0] strides(4, 1) -> S[0, 0] 1x4 batch 1
  fence #2
  copy #3 S[0, 0] -> T[0, 0] 1x4 batch 1 async
  async.commit #4
  fence #5
  frag.store #6 S[0, 0] <- f
  async.wait #7 pending 0
  fence #8
}
)";
  Launch run({"X"});
  SimResult planted = run.sim(program(text));
  EXPECT_TRUE(names_race(planted, 3, 6, "before the async.wait that completes the copy"));
  std::string fixed = edit(edit(text, "  frag.store #6 S[0, 0] <- f\n", ""), "  fence #8\n",
                           "  fence #8\n  frag.store #6 S[0, 0] <- f\n");
  SimResult r = run.sim(program(fixed));
  EXPECT_EQ(r.race_count, 0) << races_text(r);
}

// 5. Async copies that no async.wait completes before the program ends: one
// committed and never waited for, one never even committed (async.wait retires
// committed groups only).
const char* kNeverWaited = R"(group never_waited(sizes ; tensors X: f32[1, 4] strides(4, 1) in; scalars ) {
  grid
  workers 2 grid 1x1 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer S: shared f32[1, 4] row panel 1 versions 1
  buffer T: shared f32[1, 4] row panel 1 versions 1
  copy #0 X[0, 0] strides(4, 1) -> S[0, 0] 1x4 batch 1 async
  async.commit #1
  copy #2 X[0, 0] strides(4, 1) -> T[0, 0] 1x4 batch 1 async
}
)";

TEST(BlindSpots, AsyncCopyNeverWaitedFor) {
  Launch run({"X"});
  SimResult planted = run.sim(program(kNeverWaited));
  EXPECT_EQ(planted.race_count, 2) << races_text(planted);
  EXPECT_TRUE(names_race(planted, 0, -1, "is never waited for"));
  EXPECT_TRUE(names_race(planted, 2, -1, "is never waited for"));
  // A wait for the committed group leaves the uncommitted copy in flight.
  SimResult half = run.sim(program(edit(kNeverWaited, "  copy #2", "  async.wait #3 pending 0\n  copy #2")));
  EXPECT_EQ(half.race_count, 1) << races_text(half);
  EXPECT_TRUE(names_race(half, 2, -1, "is never waited for"));
  // Fixed: both committed and waited for.
  std::string fixed = kNeverWaited;
  fixed = edit(fixed, "}\n", "  async.commit #3\n  async.wait #4 pending 0\n}\n");
  SimResult r = run.sim(program(fixed));
  EXPECT_EQ(r.race_count, 0) << races_text(r);
}

// 6. Two tensor arguments on one storage: the sim keeps one shadow per tensor, so it
// could not see their races; a launch where a written tensor overlaps another is
// refused, naming both. Distinct storage runs with 0 races; read-only tensors may
// share storage.
TEST(BlindSpots, OverlappingTensorArgumentsAreRefusedAtLaunch) {
  const std::string text = R"(group alias(sizes ; tensors X: f32[1, 4] strides(4, 1) in, Y: f32[1, 4] strides(4, 1) out, Z: f32[1, 4] strides(4, 1) in; scalars ) {
  grid
  workers 2 grid 1x1 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Y: global f32 tensor Y
  buffer Z: global f32 tensor Z
  copy #0 X[0, 0] strides(4, 1) -> Y[0, 0] strides(4, 1) 1x4 batch 1
  copy #1 Z[0, 0] strides(4, 1) -> Y[0, 0] strides(4, 1) 1x4 batch 1
}
)";
  GroupProgram p = program(text);
  Launch run({"X", "Y", "Z"});
  // Planted: Y is X's storage, shifted by two elements (so the ranges overlap).
  run.args.tensors["Y"] = run.storage[0].data() + 2;
  try {
    SimResult r = run.sim(p);
    ADD_FAILURE() << "overlapping X and Y were accepted (" << r.race_count << " races)";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_TRUE(has(e.what(), "'X'") && has(e.what(), "'Y'") && has(e.what(), "overlap")) << e.what();
  }
  // Fixed: Y on its own storage.
  run.args.tensors["Y"] = run.storage[1].data();
  SimResult r = run.sim(p);
  EXPECT_EQ(r.race_count, 0) << races_text(r);
  // Two read-only tensors on one storage are fine.
  run.args.tensors["Z"] = run.storage[0].data();
  r = run.sim(p);
  EXPECT_EQ(r.race_count, 0) << races_text(r);
}

// 7. Two tensors the kernel declares may overlap (an in-place update), on one
// storage: the sim judges them as one, so a race between them shows. Planted: group
// i reads row i + 1 of X and writes row i of Y, with Y on X's storage: group i + 1
// writes what group i reads. Fixed: each group reads the row it writes.
const char* kShiftInPlace = R"(group shift(sizes ; tensors X: f32[4, 4] strides(4, 1) in, Y: f32[3, 4] strides(4, 1) out overlaps(X); scalars ) {
  grid i = 3
  workers 1 grid 1x1 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Y: global f32 tensor Y
  buffer f: private f32[1, 4] row panel 1 versions 1
  frag.load #0 f <- X[(i + 1), 0] strides(4, 1)
  frag.store #1 Y[i, 0] strides(4, 1) <- f
}
)";

TEST(BlindSpots, RacesBetweenDeclaredOverlappingTensorsAreSeen) {
  std::vector<float> x(16, 1.0f), y(12, 1.0f);
  LaunchArgs args;
  args.tensors = {{"X", x.data()}, {"Y", x.data()}};
  SimResult planted = run_sim(program(kShiftInPlace), args);
  EXPECT_TRUE(names_race(planted, 0, 1, "in different groups")) << races_text(planted);
  // The same program on two storages has no race: only the overlap makes one.
  args.tensors["Y"] = y.data();
  SimResult apart = run_sim(program(kShiftInPlace), args);
  EXPECT_EQ(apart.race_count, 0) << races_text(apart);
  // Fixed, in place again: each group reads its own row.
  args.tensors["Y"] = x.data();
  SimResult fixed = run_sim(program(edit(kShiftInPlace, "X[(i + 1), 0]", "X[i, 0]")), args);
  EXPECT_EQ(fixed.race_count, 0) << races_text(fixed);
  // Y shifted by one row onto X: group i writes row i + 1 of X, which group i + 1
  // reads; judged as one storage at an offset.
  args.tensors["Y"] = x.data() + 4;
  SimResult shifted = run_sim(program(edit(kShiftInPlace, "X[(i + 1), 0]", "X[i, 0]")), args);
  EXPECT_GT(shifted.race_count, 0) << "Y one row into X: group i writes X row i + 1, group i + 1 reads it";
}

// The same launch check on the cpu and cuda targets (cuda: before the device is
// touched, so this runs without a GPU; the pointers are never dereferenced).
TEST(BlindSpots, OverlappingTensorArgumentsAreRefusedOnCpuAndCuda) {
  const std::string text = R"(group copy_through(sizes ; tensors X: f32[4, 4] strides(4, 1) in, Y: f32[4, 4] strides(4, 1) out; scalars ) {
  grid
  workers 1 grid 1x1 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Y: global f32 tensor Y
  buffer f: private f32[4, 4] row panel 1 versions 1
  frag.load #0 f <- X[0, 0] strides(4, 1)
  frag.store #1 Y[0, 0] strides(4, 1) <- f
}
)";
  GroupProgram p = program(text);
  std::vector<float> x(32), y(16, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  LaunchArgs overlapping;
  overlapping.tensors = {{"X", x.data()}, {"Y", x.data() + 15}};  // Y starts at X's last element
  auto expect_refused = [&](const std::function<void()>& launch, const char* target) {
    try {
      launch();
      ADD_FAILURE() << target << ": overlapping X and Y were accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
      EXPECT_TRUE(has(e.what(), "tensor 'X' (in, bytes [") && has(e.what(), "tensor 'Y' (out, bytes [") &&
                  has(e.what(), "overlap in memory, and 'Y' is written"))
          << target << ": " << e.what();
    }
  };
  auto cpu = compile_cpu(p);
  expect_refused([&] { cpu->run(overlapping, 1); }, "cpu");
  EXPECT_EQ(x[15], 15.0f) << "the cpu kernel ran";
  LaunchArgs apart = overlapping;
  apart.tensors["Y"] = y.data();
  cpu->run(apart, 1);
  EXPECT_EQ(y[15], 15.0f);
#ifdef TESSEL_WITH_CUDA
  auto cuda = compile_cuda(p, "sm_90");
  expect_refused([&] { cuda->launch(overlapping); }, "cuda");
#endif
}

}  // namespace
}  // namespace tessel
