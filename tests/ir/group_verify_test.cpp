#include "ir/group_verify.h"

#include <gtest/gtest.h>

#include "ir/group_text.h"
#include "ir_examples.h"
#include "tessel/error.h"

namespace tessel {
namespace {

std::string verify_error(const GroupProgram& p) {
  try {
    verify_group_program(p);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Verify) << e.what();
    return e.what();
  }
  return "";
}

// A program with a global A, shared S (2 versions), private f and g, and `body`.
std::string verify_error(const std::string& body, const std::string& buffers = "") {
  return verify_error(parse_group_program(
      "group g(sizes M; tensors A: f32[M, M] ld M inout; scalars s: f32) {\n"
      "  grid i = M\n  workers 4 grid 2x2 lanes 1\n  atom fma 2x2\n"
      "  buffer A: global f32 tensor A\n  buffer S: shared f32[8, 8] row panel 1 versions 2\n"
      "  buffer f: private f32[8, 8] row panel 1 versions 1\n"
      "  buffer g: private f32[8, 4] row panel 1 versions 1\n" + buffers + body + "}\n"));
}

TEST(GroupVerify, ExamplesAreValid) {
  EXPECT_EQ(verify_error(test::gemm_group_program()), "");
  EXPECT_EQ(verify_error(parse_group_program(test::read_data("gemm.gir"))), "");
  EXPECT_EQ(verify_error("copy #0 A[(i * 8), 0] -> S@1[0, 0] 8x8 batch 2 guard src(M, M)\n"
                         "mma #1 f += S[0, 0] * S@1[0, 0] 8x8x8\n"),
            "");
}

TEST(GroupVerify, OpIdsAreUniqueAndBelowNextOpId) {
  EXPECT_EQ(verify_error("fence #3\nfor #4 k = 0 to 2 {\n  fence #3\n}\n"),
            "op #3 (fence): id is used by an earlier op too");
  GroupProgram p = test::gemm_group_program();
  p.next_op_id = 10;
  EXPECT_EQ(verify_error(p), "op #10 (if): id is not in [0, next_op_id = 10)");
}

TEST(GroupVerify, SpacesFitEachOp) {
  EXPECT_EQ(verify_error("copy #0 A[0, 0] -> f[0, 0] 8x8 batch 1\n"),
            "op #0 (copy): destination f may not be in private memory");
  EXPECT_EQ(verify_error("mma #0 f += A[0, 0] * S[0, 0] 8x8x8\n"),
            "op #0 (mma): operand a A may not be in global memory");
  EXPECT_EQ(verify_error("frag.fill #0 S = 1\n"), "op #0 (frag.fill): fragment S is shared, not private");
  EXPECT_EQ(verify_error("frag.store #0 f[0, 0] <- g\n"),
            "op #0 (frag.store): destination f may not be in private memory");
}

TEST(GroupVerify, WindowsFitStaticBuffers) {
  EXPECT_EQ(verify_error("copy #0 A[0, 0] -> S[4, 0] 8x8 batch 1\n"),
            "op #0 (copy): destination window 8x8 at (4, 0) does not fit S 8x8");
  EXPECT_EQ(verify_error("copy #0 A[0, 0] -> S@2[0, 0] 8x8 batch 1\n"),
            "op #0 (copy): destination S version 2 is not below 2");
  EXPECT_EQ(verify_error("mma #0 f += S[0, 0] * S[0, 0] 8x8x16\n"),
            "op #0 (mma): operand a window 8x16 at (0, 0) does not fit S 8x8");
}

TEST(GroupVerify, MmaAndElementwiseShapes) {
  EXPECT_EQ(verify_error("mma #0 g += S[0, 0] * S[0, 0] 8x8x8\n"),
            "op #0 (mma): accumulator g is 8x4, not 8x8");
  EXPECT_EQ(verify_error("ew #0 f = add f, g\n"), "op #0 (ew): operand g is 8x4 but f is 8x8");
  EXPECT_EQ(verify_error("ew #0 f = add f\n"), "op #0 (ew): add takes 2 operands, not 1");
  EXPECT_EQ(verify_error("ew #0 f = mul f, $t\n"), "op #0 (ew): unknown scalar parameter 't'");
}

TEST(GroupVerify, SymbolsAreDefined) {
  EXPECT_EQ(verify_error("copy #0 A[(k * 8), 0] -> S[0, 0] 8x8 batch 1\n"),
            "op #0 (copy): unknown symbol 'k' in a window row (k * 8)");
  EXPECT_EQ(verify_error("for #0 k = 0 to M {\n}\nfor #1 j = 0 to k {\n}\n"),
            "op #1 (for): unknown symbol 'k' in the upper bound k");
  EXPECT_EQ(verify_error("copy #0 A[0, 0] -> S[0, 0] 8x8 batch 1 guard src(N, M)\n"),
            "op #0 (copy): unknown symbol 'N' in a guard bound N");
}

TEST(GroupVerify, FragmentPartsAreMultiplesOfTheAtom) {
  EXPECT_EQ(verify_error("", "  buffer h: private f32[8, 6] row panel 1 versions 1\n"),
            "buffer h: fragment 8x6 over a 2x2 worker grid gives parts that are not multiples of "
            "the atom 2x2");
}

TEST(GroupVerify, BufferDeclarations) {
  EXPECT_EQ(verify_error("", "  buffer h: shared f32[8, 6] colpanels panel 4 versions 1\n"),
            "buffer h: colpanels panel 4 does not divide 6");
  EXPECT_EQ(verify_error("", "  buffer h: private f32[8, 8] row panel 1 versions 2\n"),
            "buffer h: 2 versions; shared buffers have 1 or more, private ones 1");
  GroupProgram p = test::gemm_group_program();
  p.buffers[0].tensor = 7;
  EXPECT_EQ(verify_error(p), "buffer A: global buffer names tensor 7 of 3");
  p = test::gemm_group_program();
  p.body[0].frag = 42;
  EXPECT_EQ(verify_error(p), "op #0 (frag.fill): fragment names buffer id 42 of 7");
}

TEST(GroupVerify, BodiesAndWorkers) {
  GroupProgram p = test::gemm_group_program();
  p.body[3].bodies.pop_back();
  EXPECT_EQ(verify_error(p), "op #10 (if): has 1 bodies, not 2");
  p = test::gemm_group_program();
  p.worker_rows = 4;
  EXPECT_EQ(verify_error(p), "worker grid 4x2 does not fit 4 workers");
}

}  // namespace
}  // namespace tessel
