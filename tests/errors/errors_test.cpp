// Bad input reaches typed user errors, never a crash: the front door, plans,
// targets, the verifier (through the DSL) and the CLI's exit status.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "dsl/dsl.h"
#include "lower/lower.h"
#include "ops/gemm.h"
#include "tessel/error.h"

namespace tessel {
namespace {

// Runs `body`, which must throw tessel::Error of `kind` whose message contains `text`.
template <class F>
void expect_error(ErrorKind kind, const std::string& text, F body) {
  try {
    body();
    FAIL() << "expected an error containing '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

struct Buffers {
  std::vector<float> a = std::vector<float>(64, 1.0f), b = a, c = a;
};

TEST(GemmErrors, NegativeSizes) {
  Buffers x;
  expect_error(ErrorKind::InvalidArgument, "M = -1", [&] {
    gemm(-1, 4, 4, 1, x.a.data(), 4, x.b.data(), 4, 0, x.c.data(), 4);
  });
  expect_error(ErrorKind::InvalidArgument, "K = -3", [&] {
    gemm(4, 4, -3, 1, x.a.data(), 4, x.b.data(), 4, 0, x.c.data(), 4);
  });
}

TEST(GemmErrors, LeadingDimensionSmallerThanTheRow) {
  Buffers x;
  expect_error(ErrorKind::InvalidArgument, "lda = 3 is smaller than the row (K = 4)", [&] {
    gemm(4, 4, 4, 1, x.a.data(), 3, x.b.data(), 4, 0, x.c.data(), 4);
  });
  expect_error(ErrorKind::InvalidArgument, "ldc = 2", [&] {
    gemm(4, 4, 4, 1, x.a.data(), 4, x.b.data(), 4, 0, x.c.data(), 2);
  });
}

TEST(GemmErrors, NullData) {
  Buffers x;
  expect_error(ErrorKind::InvalidArgument, "A is null", [&] {
    gemm(4, 4, 4, 1, nullptr, 4, x.b.data(), 4, 0, x.c.data(), 4);
  });
  expect_error(ErrorKind::InvalidArgument, "C is null", [&] {
    gemm(4, 4, 4, 1, x.a.data(), 4, x.b.data(), 4, 0, nullptr, 4);
  });
}

TEST(GemmErrors, SizesThatOverflow64BitOffsets) {
  Buffers x;
  expect_error(ErrorKind::InvalidArgument, "overflows", [&] {
    gemm(int64_t{1} << 40, 4, int64_t{1} << 30, 1, x.a.data(), int64_t{1} << 30, x.b.data(), 4,
         0, x.c.data(), 4);
  });
}

TEST(GemmErrors, UnknownTarget) {
  expect_error(ErrorKind::InvalidArgument, "unknown target 'gpu'", [] { parse_target("gpu"); });
}

TEST(GemmErrors, TileThatDoesNotFit) {
  Buffers x;
  GemmOptions o;
  Plan p;
  p.tiles = {{"BM", 1 << 16}, {"BN", 1 << 16}, {"BK", 8}};
  o.plan = p;
  expect_error(ErrorKind::Plan, "does not fit", [&] {
    gemm(4, 4, 4, 1, x.a.data(), 4, x.b.data(), 4, 0, x.c.data(), 4, o);
  });
  p.tiles["BM"] = 0;
  o.plan = p;
  expect_error(ErrorKind::Plan, "tile parameter BM = 0 out of range", [&] {
    gemm(4, 4, 4, 1, x.a.data(), 4, x.b.data(), 4, 0, x.c.data(), 4, o);
  });
  p = Plan{};
  p.atom_m = 0;  // checked before anything divides by it
  o.plan = p;
  expect_error(ErrorKind::Plan, "atom 0x1: each extent in [1, 4194304]", [&] {
    gemm(4, 4, 4, 1, x.a.data(), 4, x.b.data(), 4, 0, x.c.data(), 4, o);
  });
}

// A hand-written kernel whose mma operands do not chain: the verifier names the
// problem and this file's line.
TEST(VerifierErrors, BadKernelPointsAtTheUsersLine) {
  KernelBuilder kb("bad");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", M, K, K, Access::In);
  Tensor C = kb.tensor("C", M, N, N, Access::InOut);
  int line = 0;
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile a = kb.load(A, i * BM, 0, BM, BK);
    Tile acc = kb.constant(0.0, BM, BN);
    line = __LINE__ + 1;
    Tile d = kb.mma(a, a, acc);  // BM x BK times BM x BK: inner extents differ
    kb.store(C, i * BM, j * BN, d);
  });
  expect_error(ErrorKind::Verify, "errors_test.cpp:" + std::to_string(line),
               [&] { kb.finish(); });
}

TEST(VerifierErrors, StoreToAnInputTensor) {
  KernelBuilder kb("bad_store");
  Sym M = kb.size("M"), N = kb.size("N");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN");
  Tensor X = kb.tensor("X", M, N, N, Access::In);
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    kb.store(X, i * BM, j * BN, kb.load(X, i * BM, j * BN, BM, BN));
  });
  expect_error(ErrorKind::Verify, "X", [&] { kb.finish(); });
}

TEST(LoweringErrors, KernelWithoutAGrid) {
  KernelBuilder kb("no_grid");
  kb.barrier();
  TileKernel k = kb.finish_unverified();
  expect_error(ErrorKind::Unsupported, "parallel", [&] { lower_to_group(k, Plan{}); });
}

int cli(const std::string& args) {
  std::string cmd = std::string(TESSEL_CLI) + " " + args + " >/dev/null 2>&1";
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(CliErrors, BadArgumentsExitWithStatus2) {
  EXPECT_EQ(cli("gemm 4 4"), 2);
  EXPECT_EQ(cli("gemm 4 4 x"), 2);
  EXPECT_EQ(cli("gemm -4 4 4"), 2);
  EXPECT_EQ(cli("gemm 4 4 4 --target gpu"), 2);
  EXPECT_EQ(cli("gemm 4 4 4 --tile 8x8"), 2);
  EXPECT_EQ(cli("gemm 4 4 4 --tile 0x8x8"), 2);
  EXPECT_EQ(cli("gemm 4 4 4 --workers 0"), 2);
  EXPECT_EQ(cli("gemm 4 4 4 --threads 4294967297"), 2);  // must not wrap to 1
  EXPECT_EQ(cli("gemm 4 4 4 --window 99"), 2);
  EXPECT_EQ(cli("gemm 4 4 4 --frobnicate"), 2);
  EXPECT_EQ(cli("gemm 4 4 4 --alpha nan"), 2);
  EXPECT_EQ(cli("gemm 99999999999 99999999999 99999999999"), 2);
  EXPECT_EQ(cli("multiply 4 4 4"), 2);
  EXPECT_EQ(cli("gemm 5 6 7 --check"), 0);
  EXPECT_EQ(cli("gemm 5 6 7 --target sim --check --json"), 0);
  const std::string softmax = std::string(TESSEL_SOURCE_DIR) + "/kernels/softmax.tir --size M=5 --size N=9";
  EXPECT_EQ(cli("run " + softmax + " --repeat 0"), 2);
  EXPECT_EQ(cli("run " + softmax + " --repeat x"), 2);
  EXPECT_EQ(cli("run " + softmax + " --repeat 3 --check"), 0);
}

}  // namespace
}  // namespace tessel
