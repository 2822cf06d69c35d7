#include "ir/tile_verify.h"

#include <gtest/gtest.h>

#include "ir/tile_text.h"
#include "ir_examples.h"
#include "tessel/error.h"

namespace tessel {
namespace {

// Verifies a kernel whose grid body is `body`; returns the Verify message ("" if valid).
std::string verify_error(const std::string& body) {
  std::string text =
      "kernel k(sizes M; tiles BM, BN, BK; tensors A: f32[M, M] ld M in, C: f32[M, M] ld M out; "
      "scalars s: f32) {\n  parallel i = M {\n" + body + "  }\n}\n";
  TileKernel k = parse_tile_kernel(text);
  try {
    verify_tile_kernel(k);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Verify) << e.what();
    return e.what();
  }
  return "";
}

const std::string kTiles =
    "%a = load A[0, 0] : f32[BM, BK]\n%b = load A[0, 0] : f32[BK, BN]\n"
    "%c = const 0 : f32[BM, BN]\n";

TEST(TileVerify, ExamplesAreValid) {
  EXPECT_NO_THROW(verify_tile_kernel(test::gemm_tile_kernel()));
  EXPECT_NO_THROW(verify_tile_kernel(parse_tile_kernel(test::read_data("forms.tir"))));
  EXPECT_EQ(verify_error(kTiles + "%d = mma %a, %b, %c : f32[BM, BN]\nstore %d to C[0, 0]\n"), "");
}

TEST(TileVerify, MmaInnerExtentsMustChain) {
  EXPECT_EQ(verify_error("%a = load A[0, 0] : f32[BM, BK]\n%b = load A[0, 0] : f32[BN, BK]\n"
                         "%c = const 0 : f32[BM, BN]\n%d = mma %a, %b, %c : f32[BM, BN]  @gemm.cpp:42\n"),
            "gemm.cpp:42: mma operand shapes [BM, BK] x [BN, BK] do not chain: inner extents BK "
            "and BN differ");
}

TEST(TileVerify, MmaAccumulatorMustMatchTheProduct) {
  EXPECT_EQ(verify_error(kTiles + "%e = const 0 : f32[BN, BM]\n%d = mma %a, %b, %e : f32[BN, BM]  @g.cpp:9\n"),
            "g.cpp:9: mma accumulator shape [BN, BM] differs from the product shape [BM, BN]");
}

TEST(TileVerify, ElementwiseShapesMustAgree) {
  EXPECT_EQ(verify_error(kTiles + "%d = add %a, %c : f32[BM, BN]  @g.cpp:5\n"),
            "g.cpp:5: add operand shapes [BM, BK] and [BM, BN] differ");
  EXPECT_EQ(verify_error(kTiles + "%p = param s : f32\n%d = mul %c, %p : f32[BM, BK]  @g.cpp:6\n"),
            "g.cpp:6: mul result type f32[BM, BK] does not match its operands' shape [BM, BN]");
}

TEST(TileVerify, UnknownTensorAndStoreToInput) {
  EXPECT_EQ(verify_error("%a = load Z[0, 0] : f32[BM, BK]  @g.cpp:3\n"),
            "g.cpp:3: load of unknown tensor 'Z'");
  EXPECT_EQ(verify_error(kTiles + "store %c to A[0, 0]  @g.cpp:4\n"),
            "g.cpp:4: store to tensor A, which is declared 'in'");
}

TEST(TileVerify, OnlyTwoDimensionalTilesMove) {
  EXPECT_NE(verify_error("%a = load A[0, 0] : f32  @g.cpp:3\n").find("g.cpp:3: load of a scalar f32"),
            std::string::npos);
  EXPECT_NE(verify_error("%a = load A[0] : f32[BM, BK]  @g.cpp:3\n")
                .find("g.cpp:3: load of tensor A at 1 coordinates"),
            std::string::npos);
}

TEST(TileVerify, UndefinedValuesAndScopes) {
  // %d lives in the loop body; using it after the loop is an error.
  EXPECT_EQ(verify_error(kTiles + "%r = serial k = M iter(%x: f32[BM, BN] = %c) : f32[BM, BN] {\n"
                                  "%d = mma %a, %b, %x : f32[BM, BN]\nyield %d\n}\n"
                                  "store %d to C[0, 0]  @g.cpp:20\n"),
            "g.cpp:20: store uses %d, which is not defined before it in an enclosing region");
}

TEST(TileVerify, YieldsMustMatchTheResults) {
  EXPECT_EQ(verify_error(kTiles + "%r = serial k = M iter(%x: f32[BM, BN] = %c) : f32[BM, BN] {\n"
                                  "yield %x, %x  @g.cpp:7\n}\n"),
            "g.cpp:7: yield passes 2 values but the enclosing serial has 1 results");
  EXPECT_EQ(verify_error(kTiles + "%r = if M < 3 : f32[BM, BN] {\nyield %c\n} else {\n"
                                  "yield %a  @g.cpp:8\n}\n"),
            "g.cpp:8: yield value 0 has type f32[BM, BK] but the enclosing if result has f32[BM, BN]");
  EXPECT_EQ(verify_error(kTiles + "%r = if M < 3 : f32[BM, BN]  @g.cpp:9 {\nyield %c\n} else {\n}\n"),
            "g.cpp:9: if has 1 results but a region of it does not end with a yield");
  EXPECT_EQ(verify_error(kTiles + "yield  @g.cpp:10\nbarrier\n"),
            "g.cpp:10: yield must be the last op of its region");
}

TEST(TileVerify, CarriedValuesKeepTheirType) {
  EXPECT_EQ(verify_error(kTiles + "%r = pipeline k = M iter(%x: f32[BM, BK] = %c) : f32[BM, BK]  @g.cpp:11 {\n"
                                  "yield %x\n}\n"),
            "g.cpp:11: pipeline carried value %x has type f32[BM, BK] but its initial value has "
            "f32[BM, BN]");
}

TEST(TileVerify, UnknownSymbols) {
  EXPECT_EQ(verify_error("%a = load A[(Q * 2), 0] : f32[BM, BK]  @g.cpp:3\n"),
            "g.cpp:3: load: unknown symbol 'Q' in a coordinate (Q * 2)");
  // An induction variable is out of scope after its loop.
  EXPECT_EQ(verify_error("serial k = M iter() {\n}\n%a = load A[k, 0] : f32[BM, BK]  @g.cpp:4\n"),
            "g.cpp:4: load: unknown symbol 'k' in a coordinate k");
  EXPECT_EQ(verify_error("%a = const 0 : f32[BM, X]  @g.cpp:5\n"),
            "g.cpp:5: const: unknown symbol 'X' in the shape of %a X");
}

TEST(TileVerify, NestArity) {
  EXPECT_EQ(verify_error("parallel a = 1, b = 2, c = 3  @g.cpp:6 {\n}\n"),
            "g.cpp:6: parallel has 3 loop dimensions; 1 or 2 expected");
  EXPECT_EQ(verify_error("serial a = 1, b = 2 iter()  @g.cpp:7 {\n}\n"),
            "g.cpp:7: serial has 2 loop dimensions; exactly 1 expected");
}

TEST(TileVerify, OpArityAndScalarParams) {
  EXPECT_EQ(verify_error(kTiles + "%d = mma %a, %b : f32[BM, BN]  @g.cpp:8\n"),
            "g.cpp:8: mma takes 3 operands and gives 1 results, not 2 and 1");
  EXPECT_EQ(verify_error("%p = param t : f32  @g.cpp:9\n"),
            "g.cpp:9: param of unknown scalar parameter 't'");
  EXPECT_EQ(verify_error("if param t == 0  @g.cpp:10 {\n} else {\n}\n"),
            "g.cpp:10: if tests unknown scalar parameter 't'");
}

TEST(TileVerify, NoLocationMeansNoPrefix) {
  EXPECT_EQ(verify_error("%a = load Z[0, 0] : f32[BM, BK]\n"), "load of unknown tensor 'Z'");
}

TEST(TileVerify, BrokenIdsAreUserErrors) {
  TileKernel k = test::gemm_tile_kernel();
  k.body.ops[0].regions[0].ops[3].operands[0] = 99;  // %s = mul %acc, %alpha
  try {
    verify_tile_kernel(k);
    FAIL() << "expected a Verify error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Verify);
    EXPECT_STREQ(e.what(), "mul refers to value id 99, but the kernel has 12 values");
  }
}

}  // namespace
}  // namespace tessel
