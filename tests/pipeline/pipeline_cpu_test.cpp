// The larger seed shapes on the cpu target, in packed plans (four threads'; up to
// two read these shapes in place, with no copies to pipeline): every window and
// protocol gives the bits of W = 1 sync (the cpu runs async copies synchronously,
// and the window only reorders copies), and W = 1 sync meets the FP64 oracle on the
// complete output.
#include <gtest/gtest.h>

#include <regex>

#include "pipeline_util.h"
#include "target/cpu/cpu_emit.h"

namespace tessel::test {
namespace {

void expect_windows_agree_on_cpu(const Shape& s) {
  GemmInputs in(s, 23);
  Plan base = default_gemm_plan(TargetKind::Cpu, s.m, s.n, s.k, GemmPrecision::F32, "", 4);
  GemmRun ref = run_gemm(in, with_window(base, 1, false));
  EXPECT_LE(gemm_relative_error(s.m, s.n, ref.c.data(), s.n, in.oracle()), gemm_error_bound(s.k))
      << describe(s);
  for (int w = 1; w <= 3; ++w)
    for (bool async : {false, true}) {
      GemmRun r = run_gemm(in, with_window(base, w, async));
      EXPECT_TRUE(same_bits(r.c, ref.c)) << describe(s) << ", " << describe(r.report.plan);
    }
}

TEST(PipelineCpu, Square512) { expect_windows_agree_on_cpu({512, 512, 512, 1.0f, 0.0f}); }

// K = 129 with BK = 128: two iterations, the second one element deep, fewer
// iterations than W = 3; M and N ragged against the 96 x 256 tile.
TEST(PipelineCpu, Ragged513x257x129) { expect_windows_agree_on_cpu({513, 257, 129, -0.5f, 1.5f}); }

// Small BK so that the loop is long and every window's steady state runs.
TEST(PipelineCpu, LongLoopSmallTile) {
  Shape s{100, 70, 333, 1.0f, 0.0f};
  GemmInputs in(s, 29);
  Plan base = default_gemm_plan(TargetKind::Cpu, s.m, s.n, s.k, GemmPrecision::F32, "", 4);
  base.tiles["BK"] = 16;
  GemmRun ref = run_gemm(in, with_window(base, 1, false));
  EXPECT_LE(gemm_relative_error(s.m, s.n, ref.c.data(), s.n, in.oracle()), gemm_error_bound(s.k));
  for (int w = 1; w <= 4; ++w)
    for (bool async : {false, true})
      EXPECT_TRUE(same_bits(run_gemm(in, with_window(base, w, async)).c, ref.c)) << w << async;
}

// The cpu target has no copy engine: an async copy is an ordinary copy and
// commit / wait / fence are comments, so W = 2 async is W = 2 sync's code.
// Apart from comments, the two emitted units are the same text.
TEST(PipelineCpu, AsyncIsSyncOnTheCpu) {
  auto code = [](bool async) {
    Plan plan = with_window(default_gemm_plan(TargetKind::Cpu, 1024, 1024, 1024), 2, async);
    std::string text = emit_cpu(compile_plan(plan).program);
    return std::regex_replace(text, std::regex("[ ]*//[^\n]*\n"), "");
  };
  std::string sync = code(false), async = code(true);
  EXPECT_EQ(sync, async);
  // And W = 2 differs from W = 1: the same copies, one iteration ahead.
  EXPECT_NE(sync, [] {
    Plan plan = default_gemm_plan(TargetKind::Cpu, 1024, 1024, 1024);
    return std::regex_replace(emit_cpu(compile_plan(plan).program), std::regex("[ ]*//[^\n]*\n"), "");
  }());
}

}  // namespace
}  // namespace tessel::test
