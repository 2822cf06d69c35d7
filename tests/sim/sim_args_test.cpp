// Bad launch arguments are user errors (ErrorKind::InvalidArgument) naming the
// argument, never a crash.
#include <gtest/gtest.h>

#include <functional>

#include "gemm_programs.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel::test {
namespace {

void expect_invalid(const std::function<void(LaunchArgs&)>& spoil, const std::string& words) {
  GroupProgram p = make_gemm({}).program;
  GemmData data(9, 9, 9, 1.0, 0.0, 1);
  LaunchArgs args = data.args();
  spoil(args);
  try {
    run_sim(p, args);
    FAIL() << "expected an error mentioning " << words;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(SimArgs, MissingSize) {
  expect_invalid([](LaunchArgs& a) { a.sizes.erase("K"); }, "missing size parameter 'K'");
}

TEST(SimArgs, MissingLeadingDimension) {
  expect_invalid([](LaunchArgs& a) { a.sizes.erase("ldb"); }, "missing size parameter 'ldb'");
}

TEST(SimArgs, NegativeSize) {
  expect_invalid([](LaunchArgs& a) { a.sizes["M"] = -3; }, "size parameter 'M' is negative (-3)");
}

TEST(SimArgs, MissingScalar) {
  expect_invalid([](LaunchArgs& a) { a.scalars.erase("beta"); }, "missing scalar parameter 'beta'");
}

TEST(SimArgs, MissingTensor) {
  expect_invalid([](LaunchArgs& a) { a.tensors.erase("B"); }, "missing tensor 'B'");
}

TEST(SimArgs, NullTensor) {
  expect_invalid([](LaunchArgs& a) { a.tensors["C"] = nullptr; }, "tensor 'C' is a null pointer");
}

// C is written: rows of ldc = 4 < N = 9 elements would overlap.
TEST(SimArgs, OverlappingWrittenTensor) {
  expect_invalid([](LaunchArgs& a) { a.sizes["ldc"] = 4; },
                 "tensor 'C': it is written (inout) but its elements overlap: stride of dim 0 "
                 "(ldc) is 4, less than dim 1's stride 1 times its extent 9");
}

// A is only read: overlapping rows are a legal (if odd) view, and the sim runs it.
TEST(SimArgs, OverlappingReadTensorIsAllowed) {
  GroupProgram p = make_gemm({}).program;
  GemmData data(9, 9, 9, 1.0, 0.0, 1);
  LaunchArgs args = data.args();
  args.sizes["lda"] = 4;
  EXPECT_EQ(run_sim(p, args).race_count, 0);
}

TEST(SimArgs, NegativeStride) {
  GroupProgram p = make_gemm({}).program;
  p.tensors[1].strides[1] = expr_sym("K") - expr_sym("lda");  // 9 - 12
  GemmData data(9, 9, 9, 1.0, 0.0, 1);
  try {
    run_sim(p, data.args());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_STREQ(e.what(), "tensor 'B': stride of dim 1 ((K - lda)) is -3, negative");
  }
}

}  // namespace
}  // namespace tessel::test
