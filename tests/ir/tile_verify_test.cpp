#include "ir/tile_verify.h"

#include <gtest/gtest.h>

#include "ir/tile_text.h"
#include "ir_examples.h"
#include "tessel/error.h"

namespace tessel {
namespace {

// Verifies a kernel whose grid body is `body`; returns the Verify message ("" if valid).
std::string verify_message(const TileKernel& k) {
  try {
    verify_tile_kernel(k);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Verify) << e.what();
    return e.what();
  }
  return "";
}

std::string verify_error(const std::string& body) {
  std::string text =
      "kernel k(sizes M; tiles BM, BN, BK; tensors A: f32[M, M] ld M in, C: f32[M, M] ld M out, "
      "V: f32[M] strides(1) inout, T: f32[M, M, M] strides((M * M), M, 1) inout; "
      "scalars s: f32) {\n  parallel i = M {\n" + body + "  }\n}\n";
  return verify_message(parse_tile_kernel(text));
}

// Verifies a kernel with the given tensor declarations and an empty body.
std::string verify_tensors(const std::string& tensors) {
  return verify_message(parse_tile_kernel("kernel k(sizes M, N; tiles BM; tensors " + tensors +
                                          "; scalars) {\n}\n"));
}

// A [BM, BN] tile %x, a column %col [BM, 1], a row %row [1, BN] and a scalar %p.
const std::string kShapes =
    "%x = load A[0, 0] : f32[BM, BN]\n%col = load A[0, 0] : f32[BM, 1]\n"
    "%row = load A[0, 0] : f32[1, BN]\n%p = param s : f32\n";

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
            "g.cpp:5: add operand shapes [BM, BK] and [BM, BN] do not broadcast: each extent must "
            "be equal or 1");
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
  EXPECT_EQ(verify_error("%a = const index (i * BM) : f32\n%b = const index (Y + M) : f32  @g.cpp:6\n"),
            "g.cpp:6: const: unknown symbol 'Y' in the value (Y + M)");
}

TEST(TileVerify, NestArity) {
  EXPECT_EQ(verify_error("parallel a = 1, b = 2, c = 3 {\n}\n"), "");
  EXPECT_EQ(verify_error("parallel a = 1, b = 2, c = 3, d = 4  @g.cpp:6 {\n}\n"),
            "g.cpp:6: parallel has 4 loop dimensions; 1 to 3 expected");
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

TEST(TileVerify, LibraryAndGoldenKernelsAreValid) {
  EXPECT_NO_THROW(verify_tile_kernel(parse_tile_kernel(test::read_data("ops.tir"))));
}

TEST(TileVerify, BroadcastByIdentity) {
  // Column and row operands stretch; scalars stretch everywhere.
  EXPECT_EQ(verify_error(kShapes + "%a = add %x, %col : f32[BM, BN]\n%b = mul %row, %a : f32[BM, BN]\n"
                                   "%c = sub %col, %row : f32[BM, BN]\n%d = max %p, %row : f32[1, BN]\n"
                                   "%e = min %p, %p : f32\n"),
            "");
  EXPECT_EQ(verify_error(kShapes + "%a = div %col, %x : f32[BM, 1]  @g.cpp:3\n"),
            "g.cpp:3: div result type f32[BM, 1] does not match its operands' shape [BM, BN]");
  EXPECT_EQ(verify_error(kShapes + "%y = load A[0, 0] : f32[BN, BM]\n%a = add %x, %y : f32[BM, BN]  @g.cpp:4\n"),
            "g.cpp:4: add operand shapes [BM, BN] and [BN, BM] do not broadcast: each extent must be "
            "equal or 1");
  EXPECT_EQ(verify_error(kShapes + "%a = add %x, %p : f32  @g.cpp:5\n"),
            "g.cpp:5: add result type f32 does not match its operands' shape [BM, BN]");
}

TEST(TileVerify, UnaryOpsKeepTheShape) {
  for (const char* op : {"exp", "exp2", "log", "neg", "abs", "sqrt", "rsqrt", "recip", "tanh"}) {
    EXPECT_EQ(verify_error(kShapes + "%a = " + op + " %x : f32[BM, BN]\n"), "") << op;
    EXPECT_EQ(verify_error(kShapes + "%a = " + op + " %x : f32[BM, 1]  @g.cpp:3\n"),
              std::string("g.cpp:3: ") + op + " result type f32[BM, 1] does not match its operands' "
              "shape [BM, BN]") << op;
    EXPECT_EQ(verify_error(kShapes + "%a = " + op + " %x, %x : f32[BM, BN]  @g.cpp:4\n"),
              std::string("g.cpp:4: ") + op + " takes 1 operands and gives 1 results, not 2 and 1")
        << op;
  }
}

TEST(TileVerify, CompareAndSelect) {
  EXPECT_EQ(verify_error(kShapes + "%c = cmp.le %x, %col : f32[BM, BN]\n"
                                   "%s = select %c, %x, %p : f32[BM, BN]\n"
                                   "%r = cmp.ne %row, %p : f32[1, BN]\n"
                                   "%t = select %r, %x, %col : f32[BM, BN]\n"),
            "");
  EXPECT_EQ(verify_error(kShapes + "%c = load A[0, 0] : f32[BN, BN]\n"
                                   "%s = select %c, %x, %x : f32[BM, BN]  @g.cpp:7\n"),
            "g.cpp:7: select condition shape [BN, BN] does not broadcast to the values' shape [BM, BN]");
  EXPECT_EQ(verify_error(kShapes + "%y = load A[0, 0] : f32[BN, BM]\n"
                                   "%s = select %p, %x, %y : f32[BM, BN]  @g.cpp:8\n"),
            "g.cpp:8: select value shapes [BM, BN] and [BN, BM] do not broadcast: each extent must be "
            "equal or 1");
  EXPECT_EQ(verify_error(kShapes + "%s = select %x, %x : f32[BM, BN]  @g.cpp:9\n"),
            "g.cpp:9: select takes 3 operands and gives 1 results, not 2 and 1");
}

TEST(TileVerify, Reduce) {
  EXPECT_EQ(verify_error(kShapes + "%a = reduce.sum %x axis 1 : f32[BM, 1]\n"
                                   "%b = reduce.max %x axis 0 : f32[1, BN]\n"),
            "");
  EXPECT_EQ(verify_error(kShapes + "%a = reduce.min %x axis 2 : f32[BM, 1]  @g.cpp:3\n"),
            "g.cpp:3: reduce axis 2 is neither 0 (rows) nor 1 (columns)");
  EXPECT_EQ(verify_error(kShapes + "%a = reduce.max %x axis 1 : f32[1, BN]  @g.cpp:4\n"),
            "g.cpp:4: reduce.max of [BM, BN] along axis 1 gives [BM, 1], not f32[1, BN]");
  EXPECT_EQ(verify_error(kShapes + "%a = reduce.sum %p axis 1 : f32  @g.cpp:5\n"),
            "g.cpp:5: reduce operand f32 is not a 2-D tile");
}

TEST(TileVerify, IndexTransposeBroadcastCast) {
  EXPECT_EQ(verify_error("%a = index axis 0 : f32[BM, BN]\n%b = transpose %a : f32[BN, BM]\n"
                         "%c = load A[0, 0] : f32[1, BN]\n%d = broadcast %c : f32[BM, BN]\n"
                         "%p = param s : f32\n%e = broadcast %p : f32[BM, BN]\n"
                         "%f = cast %d : bf16[BM, BN]\n%g = cast %f : f64[BM, BN]\n"
                         "%h = cast %g : f16[BM, BN]\n%j = cast %p : bf16\n"),
            "");
  EXPECT_EQ(verify_error("%a = index axis -1 : f32[BM, BN]  @g.cpp:3\n"),
            "g.cpp:3: index axis -1 is neither 0 (rows) nor 1 (columns)");
  EXPECT_EQ(verify_error("%a = index axis 0 : f32  @g.cpp:4\n"),
            "g.cpp:4: index result f32 is not a 2-D tile");
  EXPECT_EQ(verify_error(kShapes + "%a = transpose %x : f32[BM, BN]  @g.cpp:5\n"),
            "g.cpp:5: transpose of [BM, BN] gives [BN, BM], not f32[BM, BN]");
  EXPECT_EQ(verify_error(kShapes + "%a = broadcast %col : f32[BN, BN]  @g.cpp:6\n"),
            "g.cpp:6: broadcast of [BM, 1] to [BN, BN]: each extent must be equal to the result's or 1");
  EXPECT_EQ(verify_error(kShapes + "%a = broadcast %x : f32[1, BN]  @g.cpp:7\n"),
            "g.cpp:7: broadcast of [BM, BN] to [1, BN]: each extent must be equal to the result's or 1");
  EXPECT_EQ(verify_error(kShapes + "%a = cast %x : bf16[BM, 1]  @g.cpp:8\n"),
            "g.cpp:8: cast result type bf16[BM, 1] does not match its operands' shape [BM, BN]");
  TileKernel k = parse_tile_kernel(
      "kernel k(sizes; tiles; tensors; scalars) {\n  %a = const 1 : f32\n  %b = cast %a : f32  @g.cpp:9\n}\n");
  k.values[1].type.dtype = static_cast<DType>(42);
  EXPECT_EQ(verify_message(k), "g.cpp:9: cast to an invalid dtype; casts go to f32, bf16, f16 or f64");
}

TEST(TileVerify, MmaOperandsMayBeComputed) {
  EXPECT_EQ(verify_error(kTiles + "%e = exp %a : f32[BM, BK]\n%t = transpose %b : f32[BN, BK]\n"
                                  "%u = transpose %t : f32[BK, BN]\n%d = mma %e, %u, %c : f32[BM, BN]\n"
                                  "%f = mma %e, %u, %d : f32[BM, BN]\n"),
            "");
  EXPECT_EQ(verify_error(kTiles + "%p = param s : f32\n%d = mma %a, %p, %c : f32[BM, BN]  @g.cpp:3\n"),
            "g.cpp:3: mma operand f32 is not a 2-D tile");
}

TEST(TileVerify, LoadAndStoreCoordinatesAndDims) {
  EXPECT_EQ(verify_error("%a = load T[0, 0, 0] : f32[BM, BN]\n%b = load T[i, 0, 0] dims(0, 2) : f32[BM, BN]\n"
                         "%c = load V[0] : f32[1, BN]\n%d = load V[0] dims(0, -1) : f32[BM, 1]\n"
                         "store %b to T[0, i, 0] dims(2, 1)\nstore %d to V[(i * BM)] dims(0, -1)\n"),
            "");
  EXPECT_EQ(verify_error("%a = load T[0, 0] : f32[BM, BN]  @g.cpp:3\n"),
            "g.cpp:3: load of tensor T at 2 coordinates; its rank is 3, so it needs 3");
  EXPECT_EQ(verify_error("%a = load T[0, 0, 0] dims(0, 3) : f32[BM, BN]  @g.cpp:4\n"),
            "g.cpp:4: load of tensor T with dims(0, 3): dimension 3 is not one of the tensor's 0..2");
  EXPECT_EQ(verify_error("%a = load T[0, 0, 0] dims(1, 1) : f32[BM, BN]  @g.cpp:5\n"),
            "g.cpp:5: load of tensor T with dims(1, 1): the tile's rows and columns must span "
            "different dimensions");
  EXPECT_EQ(verify_error("%a = load A[0, 0] dims(-1, 0) : f32[1, BN]  @g.cpp:6\n"),
            "g.cpp:6: load of tensor A with dims(-1, 0): dimension -1 is not one of the tensor's 0..1");
  EXPECT_EQ(verify_error("%a = load V[0] : f32[BM, BN]  @g.cpp:7\n"),
            "g.cpp:7: load of tensor V with dims(-1, 0): the tile's rows run along a unit axis, so its "
            "extent must be 1, not BM");
  EXPECT_EQ(verify_error("%a = load V[0] dims(-1, -1) : f32[1, 1]  @g.cpp:8\n"),
            "g.cpp:8: load of tensor V with dims(-1, -1): the tile's rows and columns must span "
            "different dimensions");
  EXPECT_EQ(verify_error("%a = load V[0] dims(0, 1) : f32[BM, 1]  @g.cpp:9\n"),
            "g.cpp:9: load of tensor V with dims(0, 1): dimension 1 is not one of the tensor's 0..0 "
            "(or -1, a unit axis)");
  EXPECT_EQ(verify_error("%a = load V[0] dims(0, -1) : f32[BM, 1]\nstore %a to V[0] dims(-1, 0)  @g.cpp:10\n"),
            "g.cpp:10: store of tensor V with dims(-1, 0): the tile's rows run along a unit axis, so "
            "its extent must be 1, not BM");
  EXPECT_EQ(verify_error("%a = load V[0] : f32[1, BM]\nstore %a to T[0, 0]  @g.cpp:11\n"),
            "g.cpp:11: store of tensor T at 2 coordinates; its rank is 3, so it needs 3");
  EXPECT_EQ(verify_error("%a = load T[0, 0, (j * 2)] : f32[BM, BN]  @g.cpp:12\n"),
            "g.cpp:12: load: unknown symbol 'j' in a coordinate (j * 2)");
}

TEST(TileVerify, TensorDeclarations) {
  EXPECT_EQ(verify_tensors("A: f32[M] strides(1) in, B: f64[M, N, M, N] strides(0, 0, 0, 1) in"), "");
  EXPECT_EQ(verify_tensors("A: f32[] strides() in"),
            "tensor A has rank 0; ranks 1 to 4 are supported");
  EXPECT_EQ(verify_tensors("A: f32[M, N, M, N, M] strides(1, 1, 1, 1, 1) in"),
            "tensor A has rank 5; ranks 1 to 4 are supported");
  EXPECT_EQ(verify_tensors("A: f32[M, N] strides(1) in"),
            "tensor A has 2 extents but 1 strides; it needs one stride per extent");
  EXPECT_EQ(verify_tensors("A: f32[M, (Q + 1)] strides(N, 1) in"),
            "tensor A: unknown size or tile parameter 'Q' in the extent of dimension 1 (Q + 1)");
  EXPECT_EQ(verify_tensors("A: f32[M, N] strides(Z, 1) in"),
            "tensor A: unknown size or tile parameter 'Z' in the stride of dimension 0 Z");
  // Tile sizes are the plan's constants: the lowering binds them.
  EXPECT_EQ(verify_tensors("A: f32[M, BM] strides(BM, 1) in"), "");
  EXPECT_EQ(verify_tensors("A: f32[M] strides(1) in, A: f32[N] strides(1) out"),
            "tensor 'A' is declared twice among the kernel's parameters");
}

TEST(TileVerify, LoopsCarryManyValues) {
  EXPECT_EQ(verify_error(kShapes + "%m, %l = serial k = M iter(%a: f32[BM, 1] = %col, %b: f32[1, BN] = %row) : f32[BM, 1], f32[1, BN] {\n"
                                   "%c = reduce.max %x axis 1 : f32[BM, 1]\n%d = max %a, %c : f32[BM, 1]\n"
                                   "yield %d, %b\n}\n"),
            "");
  EXPECT_EQ(verify_error(kShapes + "%m, %l = serial k = M iter(%a: f32[BM, 1] = %col, %b: f32[1, BN] = %row) : f32[BM, 1], f32[1, BN] {\n"
                                   "yield %a, %a  @g.cpp:3\n}\n"),
            "g.cpp:3: yield value 1 has type f32[BM, 1] but the enclosing serial result has f32[1, BN]");
  EXPECT_EQ(verify_error(kShapes + "%m = pipeline k = (M + Z) iter(%a: f32[BM, 1] = %col) : f32[BM, 1]  @g.cpp:4 {\n"
                                   "yield %a\n}\n"),
            "g.cpp:4: pipeline: unknown symbol 'Z' in the extent of k (M + Z)");
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
