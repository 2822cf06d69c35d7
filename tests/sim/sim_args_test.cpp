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

TEST(SimArgs, LeadingDimensionSmallerThanCols) {
  expect_invalid([](LaunchArgs& a) { a.sizes["lda"] = 4; }, "tensor 'A': ld lda = 4 is less than cols K = 9");
}

}  // namespace
}  // namespace tessel::test
