// The cpu target on GEMM programs (hand-built in the lowering's shape): every plan
// gives the FP64 oracle's answer on ragged shapes, both beta branches, any atom
// (micro-kernel or scalar fallback), several workers and several threads.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "gemm_oracle.h"
#include "hand_gemm.h"
#include "target/cpu/cpu_emit.h"
#include "target/cpu/cpu_isa.h"
#include "target/cpu/cpu_jit.h"
#include "target/cpu/cpu_microkernel.h"

namespace tessel::testing {
namespace {

class CpuGemm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Tests share one scratch cache, apart from the user's.
    static char dir[] = "/tmp/tessel-test-cpu-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    setenv("TESSEL_CACHE_DIR", dir, 1);
    set_cpu_scratch_poison(true);  // reading unwritten staging must show
  }
  static void TearDownTestSuite() { set_cpu_scratch_poison(false); }
};

const GemmCase kShapes[] = {
    {1, 1, 1, 1.0, 0.0},        {13, 29, 7, -0.75, 0.0},  {13, 29, 7, 1.25, -0.5},
    {127, 193, 61, 0.5, 0.0},   {127, 193, 61, 2.0, 1.5}, {256, 1024, 128, 1.0, 0.0},
    {256, 1024, 128, -1.5, 0.25}, {100, 70, 300, 1.0, 1.0},
};

void check_plan(const HandGemm& plan, uint32_t seed) {
  auto kernel = compile_cpu(hand_gemm_program(plan));
  for (const GemmCase& g : kShapes) check_gemm(*kernel, g, seed++);
}

TEST_F(CpuGemm, DefaultTileAllShapes) { check_plan(HandGemm{}, 1); }

TEST_F(CpuGemm, SmallTileManyKBlocksAndEdges) {
  HandGemm plan;
  plan.bm = 24, plan.bn = 64, plan.bk = 16;
  check_plan(plan, 100);
}

TEST_F(CpuGemm, Atom14x32) {
  HandGemm plan;
  plan.bm = 28, plan.bn = 96, plan.bk = 40, plan.atom_m = 14, plan.atom_n = 32;
  check_plan(plan, 200);
}

TEST_F(CpuGemm, Atom1x1ScalarFallback) {
  HandGemm plan;
  plan.bm = 8, plan.bn = 8, plan.bk = 8, plan.atom_m = 1, plan.atom_n = 1;
  check_plan(plan, 300);
}

TEST_F(CpuGemm, AtomWithoutMicroKernel) {
  HandGemm plan;  // NR not a multiple of 16: the scalar loop does everything
  plan.bm = 12, plan.bn = 24, plan.bk = 8, plan.atom_m = 3, plan.atom_n = 12;
  check_plan(plan, 400);
}

TEST_F(CpuGemm, TileNotAMultipleOfAtom) {
  HandGemm plan;  // the micro-kernel covers 24x32 of 30x40; scalar loops the rest
  plan.bm = 30, plan.bn = 40, plan.bk = 8, plan.atom_m = 12, plan.atom_n = 32;
  check_plan(plan, 500);
}

TEST_F(CpuGemm, FourWorkersOnATwoByTwoGrid) {
  HandGemm plan;
  plan.bm = 48, plan.bn = 128, plan.bk = 32, plan.workers = 4, plan.worker_rows = 2, plan.worker_cols = 2;
  plan.batch = 8;
  check_plan(plan, 600);
}

TEST_F(CpuGemm, WorkersSurplusOwnNothing) {
  HandGemm plan;  // 3 workers on a 2x1 worker grid: worker 2 owns no fragment part
  plan.bm = 48, plan.bn = 64, plan.bk = 16, plan.workers = 3, plan.worker_rows = 2, plan.worker_cols = 1;
  check_plan(plan, 700);
}

TEST_F(CpuGemm, ThreadsGiveTheSameResult) {
  HandGemm plan;
  plan.bm = 24, plan.bn = 64, plan.bk = 32;
  auto kernel = compile_cpu(hand_gemm_program(plan));
  for (int threads : {0, 2, 3})
    for (GemmCase g : kShapes) {
      g.threads = threads;
      check_gemm(*kernel, g, 800 + threads);
    }
}

TEST_F(CpuGemm, EmittedSourceIsHeaderFreeAndUsesTheMicroKernel) {
  std::string src = emit_cpu(hand_gemm_program(HandGemm{}));
  EXPECT_EQ(src.find("#include"), std::string::npos);
  // The default tile's k loop (256) calls the built-in kernel where there is one.
  const bool built_in = cpu_prebuilt_microkernel(12, 32, cpu_isa()) >= 0;
  EXPECT_NE(src.find(built_in ? "tsl_mma_blocks((const void*)tsl_ukr_12x32_p," : "tsl_ukr_12x32_256_32("), std::string::npos)
      << src;
}

}  // namespace
}  // namespace tessel::testing
