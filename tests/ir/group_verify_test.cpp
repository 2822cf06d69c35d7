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

// The golden GEMM (global windows with strides, as lowered).
GroupProgram gemm() { return parse_group_program(test::read_data("gemm.gir")); }

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
  EXPECT_EQ(verify_error(gemm()), "");
  EXPECT_EQ(verify_error(parse_group_program(test::read_data("ops.gir"))), "");
  EXPECT_EQ(verify_error("copy #0 A[(i * 8), 0] strides(M, 1) -> S@1[0, 0] 8x8 batch 2 guard src(M, M)\n"
                         "mma #1 f += S[0, 0] * S@1[0, 0] 8x8x8\n"),
            "");
}

TEST(GroupVerify, OpIdsAreUniqueAndBelowNextOpId) {
  EXPECT_EQ(verify_error("fence #3\nfor #4 k = 0 to 2 {\n  fence #3\n}\n"),
            "op #3 (fence): id is used by an earlier op too");
  GroupProgram p = gemm();
  p.next_op_id = 10;
  EXPECT_EQ(verify_error(p), "op #10 (if): id is not in [0, next_op_id = 10)");
}

TEST(GroupVerify, SpacesFitEachOp) {
  EXPECT_EQ(verify_error("copy #0 A[0, 0] strides(M, 1) -> f[0, 0] 8x8 batch 1\n"),
            "op #0 (copy): destination f may not be in private memory");
  // A fragment may be operand a (registers) only as each worker's own rows, whole.
  EXPECT_EQ(verify_error("mma #0 f += g[0, 0] * S[0, 0] 8x8x8\n"),
            "op #0 (mma): operand a window 8x8 at (0, 0) does not fit g 8x4");
  const std::string h = "  buffer h: private f32[8, 8] row panel 1 versions 1\n";
  EXPECT_EQ(verify_error("mma #0 f += h[0, 0] * S[0, 0] 8x8x8\n", h),
            "op #0 (mma): operand a h 8x8 is a fragment: it must be the whole m x k = 8x8 operand, held by each "
            "worker for its own rows of the accumulator f (a worker grid of one column)");
  EXPECT_EQ(verify_error("mma #0 f += f[0, 0] * S[0, 0] 8x8x8\n"),
            "op #0 (mma): operand a f 8x8 is a fragment: it must be the whole m x k = 8x8 operand, held by each "
            "worker for its own rows of the accumulator f (a worker grid of one column)");
  EXPECT_EQ(verify_error("mma #0 f += S[0, 0] * g[0, 0] 8x8x8\n"),
            "op #0 (mma): operand b g may not be in private memory");
  // A tensor read in place (Plan::direct) needs the valid part that bounds the reads.
  EXPECT_EQ(verify_error("mma #0 f += A[0, 0] strides(M, 1) * S[0, 0] 8x8x8\n"),
            "op #0 (mma): operand a A is global: the mma needs valid(m, n, k) with m and k bounded");
  EXPECT_EQ(verify_error("frag.fill #0 S = 1\n"), "op #0 (frag.fill): fragment S is shared, not private");
  EXPECT_EQ(verify_error("frag.store #0 f[0, 0] <- g\n"),
            "op #0 (frag.store): destination f may not be in private memory");
}

TEST(GroupVerify, WindowsFitStaticBuffers) {
  EXPECT_EQ(verify_error("copy #0 A[0, 0] strides(M, 1) -> S[4, 0] 8x8 batch 1\n"),
            "op #0 (copy): destination window 8x8 at (4, 0) does not fit S 8x8");
  EXPECT_EQ(verify_error("copy #0 A[0, 0] strides(M, 1) -> S@2[0, 0] 8x8 batch 1\n"),
            "op #0 (copy): destination S version 2 is not below 2");
  EXPECT_EQ(verify_error("mma #0 f += S[0, 0] * S[0, 0] 8x8x16\n"),
            "op #0 (mma): operand a window 8x16 at (0, 0) does not fit S 8x8");
}

TEST(GroupVerify, MmaAndElementwiseShapes) {
  EXPECT_EQ(verify_error("mma #0 g += S[0, 0] * S[0, 0] 8x8x8\n"),
            "op #0 (mma): accumulator g is 8x4, not 8x8");
  EXPECT_EQ(verify_error("ew #0 f = add f, g\n"),
            "op #0 (ew): operand g is 8x4 and does not broadcast to f 8x8 (each extent must match "
            "or be 1)");
  EXPECT_EQ(verify_error("ew #0 f = add f\n"), "op #0 (ew): add takes 2 operands, not 1");
  EXPECT_EQ(verify_error("ew #0 f = mul f, $t\n"), "op #0 (ew): unknown scalar parameter 't'");
}

TEST(GroupVerify, SymbolsAreDefined) {
  EXPECT_EQ(verify_error("copy #0 A[(k * 8), 0] strides(M, 1) -> S[0, 0] 8x8 batch 1\n"),
            "op #0 (copy): unknown symbol 'k' in a window row (k * 8)");
  EXPECT_EQ(verify_error("for #0 k = 0 to M {\n}\nfor #1 j = 0 to k {\n}\n"),
            "op #1 (for): unknown symbol 'k' in the upper bound k");
  EXPECT_EQ(verify_error("copy #0 A[0, 0] strides(M, 1) -> S[0, 0] 8x8 batch 1 guard src(N, M)\n"),
            "op #0 (copy): unknown symbol 'N' in a guard bound N");
}

TEST(GroupVerify, FragmentsDivideOverTheWorkerGridAndAccumulatorsFitTheAtom) {
  EXPECT_EQ(verify_error("", "  buffer h: private f32[8, 5] row panel 1 versions 1\n"),
            "buffer h: fragment 8x5 does not divide over the 2x2 worker grid");
  // Extent 1 is replicated, not split; only an accumulator's part must fit the atom.
  EXPECT_EQ(verify_error("", "  buffer h: private f32[1, 6] row panel 1 versions 1\n"
                             "  buffer r: private f32[8, 1] row panel 1 versions 1\n"),
            "");
  // The fma atom takes any part (the cpu's edge kernels run the rest); the warp
  // atoms (mma.sync, wgmma) need whole blocks.
  EXPECT_EQ(verify_error("mma #0 h += S[0, 0] * S[0, 0] 8x6x8\n",
                         "  buffer h: private f32[8, 6] row panel 1 versions 1\n"),
            "");
}

TEST(GroupVerify, GlobalWindowsAndOnlyTheyCarryStrides) {
  EXPECT_EQ(verify_error("frag.load #0 f <- A[0, 0]\n"),
            "op #0 (frag.load): source A is global and needs strides(row, col)");
  EXPECT_EQ(verify_error("frag.load #0 f <- A[0, 0] strides(M, _)\n"),
            "op #0 (frag.load): source A is global and needs strides(row, col)");
  EXPECT_EQ(verify_error("frag.load #0 f <- S[0, 0] strides(8, 1)\n"),
            "op #0 (frag.load): source S is shared: strides and offsets belong to global windows "
            "only");
  EXPECT_EQ(verify_error("frag.store #0 S[0, 0] offset(M) <- f\n"),
            "op #0 (frag.store): destination S is shared: strides and offsets belong to global "
            "windows only");
  EXPECT_EQ(verify_error("frag.load #0 f <- A[0, 0] strides(M, 1) offset((q * M))\n"),
            "op #0 (frag.load): unknown symbol 'q' in an offset (q * M)");
  EXPECT_EQ(verify_error("frag.load #0 f <- A[0, 0] strides(lda, 1)\n"),
            "op #0 (frag.load): unknown symbol 'lda' in a row stride lda");
}

TEST(GroupVerify, TransposeAndPadding) {
  // g is 8x4: transposed, it reads a 4x8 window.
  EXPECT_EQ(verify_error("frag.load #0 g <- S[4, 0] transpose\n"), "");
  EXPECT_EQ(verify_error("frag.load #0 g <- S[0, 6] transpose\n"),
            "op #0 (frag.load): source window 4x8 at (0, 6) does not fit S 8x8");
  GroupProgram p = gemm();
  p.body[0].transpose = true;
  EXPECT_EQ(verify_error(p), "op #0 (frag.fill): only frag.load reads transposed");
  p = gemm();
  p.body[2].constant = 1;
  EXPECT_EQ(verify_error(p), "op #9 (ew): only frag.fill, copy and frag.load take a constant (padding)");
}

TEST(GroupVerify, ElementwiseArityBroadcastAndFields) {
  const std::string vectors = "  buffer r: private f32[8, 1] row panel 1 versions 1\n"
                              "  buffer c: private f32[1, 8] row panel 1 versions 1\n";
  EXPECT_EQ(verify_error("ew #0 f = add f, r\new #1 f = select f, c, 2\new #2 r = cmp.lt r, 1\n"
                         "ew #3 f = index axis 0\new #4 f = sub f, #((i * 8))\n",
                         vectors),
            "");
  EXPECT_EQ(verify_error("ew #0 r = add r, f\n", vectors),
            "op #0 (ew): operand f is 8x8 and does not broadcast to r 8x1 (each extent must match "
            "or be 1)");
  EXPECT_EQ(verify_error("ew #0 f = select f, f\n"), "op #0 (ew): select takes 3 operands, not 2");
  EXPECT_EQ(verify_error("ew #0 f = index axis 0 f\n"), "op #0 (ew): index takes 0 operands, not 1");
  EXPECT_EQ(verify_error("ew #0 f = index axis 2\n"), "op #0 (ew): index axis 2: 0 (row) or 1 (column)");
  EXPECT_EQ(verify_error("ew #0 f = cast.bf16 f, f\n"), "op #0 (ew): cast takes 1 operands, not 2");
  EXPECT_EQ(verify_error("ew #0 f = add f, #(k)\n"),
            "op #0 (ew): unknown symbol 'k' in an index operand k");
}

TEST(GroupVerify, ReduceShapesAndScratch) {
  // f is 8x8 over a 2x2 grid: two workers along each axis.
  const std::string buffers = "  buffer r: private f32[8, 1] row panel 1 versions 1\n"
                              "  buffer c: private f32[1, 8] row panel 1 versions 1\n"
                              "  buffer R: shared f32[8, 2] row panel 1 versions 1\n"
                              "  buffer C: shared f32[2, 8] row panel 1 versions 1\n";
  EXPECT_EQ(verify_error("reduce.sum #0 R[0, 0] <- f axis 1 partial\nfence #1\n"
                         "reduce.sum #2 r <- R[0, 0] axis 1 combine 8x2\n"
                         "reduce.max #3 C[0, 0] <- f axis 0 partial 2x8\nfence #4\n"
                         "reduce.max #5 c <- C[0, 0] axis 0 combine 2x8\n"
                         "reduce.min #6 r = f axis 1\nreduce.min #7 c = f axis 0\n",
                         buffers),
            "");
  EXPECT_EQ(verify_error("reduce.sum #0 c = f axis 1\n", buffers),
            "op #0 (reduce): destination c is 1x8, not 8x1 (source 8x8 reduced along axis 1)");
  EXPECT_EQ(verify_error("reduce.sum #0 r = f axis 2\n", buffers),
            "op #0 (reduce): axis 2: 0 (rows) or 1 (columns)");
  EXPECT_EQ(verify_error("reduce.sum #0 r = $s axis 1\n", buffers),
            "op #0 (reduce): local reduce takes one operand, a fragment");
  EXPECT_EQ(verify_error("reduce.sum #0 C[0, 0] <- f axis 1 partial\n", buffers),
            "op #0 (reduce): scratch window 8x2 at (0, 0) does not fit C 2x8");
  EXPECT_EQ(verify_error("reduce.sum #0 R[0, 0] <- f axis 1 partial 8x4\n", buffers),
            "op #0 (reduce): scratch window is 8x4 but f 8x8 over 2 worker columns needs 8x2");
  EXPECT_EQ(verify_error("reduce.sum #0 A[0, 0] strides(M, 1) <- f axis 1 partial\n", buffers),
            "op #0 (reduce): scratch A may not be in global memory");
  EXPECT_EQ(verify_error("reduce.sum #0 R[0, 0] <- r axis 1 partial\n", buffers),
            "op #0 (reduce): source r has extent 1 along axis 1, replicated over the 2 workers "
            "along it: a partial would count it 2 times (use a local reduce)");
  EXPECT_EQ(verify_error("reduce.sum #0 r <- R[0, 0] axis 1 combine 8x1\n", buffers),
            "op #0 (reduce): scratch window is 8x1 but r 8x1 over 2 worker columns needs 8x2");
  EXPECT_EQ(verify_error("reduce.sum #0 f <- R[0, 0] axis 1 combine 8x2\n", buffers),
            "op #0 (reduce): destination f is 8x8, not 8x1 (scratch 8x2 reduced along axis 1)");
  EXPECT_EQ(verify_error("reduce.sum #0 c <- C[0, 0] axis 0 combine 2x8\n", buffers), "");
}

TEST(GroupVerify, GridHasAtMostThreeDimensions) {
  GroupProgram p = gemm();
  p.grid.push_back({"b", expr_sym("M")});
  p.grid.push_back({"d", expr_sym("M")});
  EXPECT_EQ(verify_error(p), "grid has 4 dimensions; at most 3");
}

TEST(GroupVerify, BufferDeclarations) {
  EXPECT_EQ(verify_error("", "  buffer h: shared f32[8, 6] colpanels panel 4 versions 1\n"),
            "buffer h: colpanels panel 4 does not divide 6");
  EXPECT_EQ(verify_error("", "  buffer h: private f32[8, 8] row panel 1 versions 2\n"),
            "buffer h: 2 versions; shared buffers have 1 or more, private ones 1");
  GroupProgram p = gemm();
  p.buffers[0].tensor = 7;
  EXPECT_EQ(verify_error(p), "buffer A: global buffer names tensor 7 of 3");
  p = gemm();
  p.body[0].frag = 42;
  EXPECT_EQ(verify_error(p), "op #0 (frag.fill): fragment names buffer id 42 of 7");
}

TEST(GroupVerify, BodiesAndWorkers) {
  GroupProgram p = gemm();
  p.body[3].bodies.pop_back();
  EXPECT_EQ(verify_error(p), "op #10 (if): has 1 bodies, not 2");
  p = gemm();
  p.worker_rows = 4;
  EXPECT_EQ(verify_error(p), "worker grid 4x2 does not fit 4 workers");
}

}  // namespace
}  // namespace tessel
