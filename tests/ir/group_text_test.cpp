#include "ir/group_text.h"
#include "ir/group_verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "ir_examples.h"
#include "tessel/error.h"

namespace tessel {
namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_group_program(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse) << e.what();
    return e.what();
  }
  return "";
}

const char* kHeader =
    "group g(sizes M; tensors A: f32[M, M] ld M inout; scalars s: f32) {\n"
    "  grid i = M\n  workers 1 grid 1x1 lanes 1\n  atom fma 1x1\n"
    "  buffer A: global f32 tensor A\n  buffer S: shared f32[8, 8] row panel 1 versions 1\n"
    "  buffer f: private f32[8, 8] row panel 1 versions 1\n";

// The example as the lowering makes it: global windows carry their tensor's strides.
GroupProgram strided(GroupProgram p) {
  auto fill = [&](BufferRef& r) {
    if (r.buffer < 0 || p.buffers[r.buffer].space != Space::Global) return;
    const TensorParam& t = p.tensors[p.buffers[r.buffer].tensor];
    r.row_stride = t.strides[0];
    r.col_stride = t.strides[1];
  };
  std::function<void(std::vector<GroupOp>&)> walk = [&](std::vector<GroupOp>& ops) {
    for (GroupOp& op : ops) {
      for (BufferRef* r : {&op.src, &op.dst, &op.a, &op.b}) fill(*r);
      for (auto& body : op.bodies) walk(body);
    }
  };
  walk(p.body);
  return p;
}

const GroupOp& op_with_id(const std::vector<GroupOp>& ops, int id) {
  for (const GroupOp& op : ops)
    if (op.id == id) return op;
  ADD_FAILURE() << "no op #" << id;
  return ops.at(0);
}

TEST(GroupText, GemmRoundTripsStructurally) {
  GroupProgram p = test::gemm_group_program();
  std::string text = print_group_program(p);
  GroupProgram parsed = parse_group_program(text);
  test::expect_same_program(p, parsed);
  EXPECT_EQ(print_group_program(parsed), text);
}

TEST(GroupText, GemmPrintsTheGoldenText) {
  EXPECT_EQ(print_group_program(strided(test::gemm_group_program())), test::read_data("gemm.gir"));
}

TEST(GroupText, GoldenFilesReprintByteForByte) {
  for (const char* name : {"gemm.gir", "forms.gir", "ops.gir"}) {
    std::string text = test::read_data(name);
    EXPECT_EQ(print_group_program(parse_group_program(text)), text) << name;
  }
}

// The fuzzer's seeds are valid text in the current form: each parses, verifies
// and reprints byte for byte.
TEST(GroupText, FuzzSeedsParseVerifyAndReprint) {
  int seen = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TESSEL_SOURCE_DIR) + "/fuzz/seeds/group")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    SCOPED_TRACE(entry.path().filename().string());
    GroupProgram p = parse_group_program(text.str());
    verify_group_program(p);
    EXPECT_EQ(print_group_program(p), text.str());
    ++seen;
  }
  EXPECT_GE(seen, 9);
}

// ops.gir holds every form of the general ops; the fields they parse to.
TEST(GroupText, GeneralOpsParseToTheirFields) {
  GroupProgram p = parse_group_program(test::read_data("ops.gir"));
  ASSERT_EQ(p.grid.size(), 3u);
  ASSERT_EQ(p.tensors.size(), 3u);
  EXPECT_EQ(p.tensors[0].rank(), 3);
  EXPECT_EQ(p.tensors[2].rank(), 1);
  const auto& body = p.body;
  const GroupOp& copy = op_with_id(body, 0);
  EXPECT_EQ(expr_to_string(copy.src.offset), "(b * sb)");
  EXPECT_EQ(expr_to_string(copy.src.row_stride), "ldx");
  EXPECT_EQ(expr_to_string(copy.src.col_stride), "1");
  EXPECT_EQ(copy.constant, -INFINITY);
  EXPECT_FALSE(copy.dst.row_stride || copy.dst.col_stride || copy.dst.offset);
  const GroupOp& transposed = op_with_id(body, 3);
  EXPECT_TRUE(transposed.transpose);
  EXPECT_TRUE(std::signbit(transposed.constant));  // pad -0 survives
  EXPECT_FALSE(op_with_id(body, 2).transpose);
  EXPECT_EQ(expr_to_string(op_with_id(body, 4).src.row_stride), "0");
  const GroupOp& partial = op_with_id(body, 5);
  EXPECT_EQ(partial.kind, GroupOpKind::Reduce);
  EXPECT_EQ(partial.reduce, ReduceOp::Max);
  EXPECT_EQ(partial.reduce_mode, ReduceMode::Partial);
  EXPECT_EQ(partial.axis, 1);
  EXPECT_EQ(partial.dst.buffer, p.find_buffer("Rs"));
  EXPECT_EQ(partial.operands.at(0).frag, p.find_buffer("x"));
  EXPECT_EQ(partial.rows, 0);  // derived from the source and the worker grid
  EXPECT_EQ(op_with_id(body, 33).rows, 16);
  EXPECT_EQ(op_with_id(body, 33).cols, 2);
  const GroupOp& combine = op_with_id(body, 7);
  EXPECT_EQ(combine.reduce_mode, ReduceMode::Combine);
  EXPECT_EQ(combine.src.buffer, p.find_buffer("Rs"));
  EXPECT_EQ(combine.frag, p.find_buffer("m"));
  EXPECT_EQ(combine.rows, 16);
  EXPECT_EQ(combine.cols, 2);
  const GroupOp& local = op_with_id(body, 8);
  EXPECT_EQ(local.reduce_mode, ReduceMode::Local);
  EXPECT_EQ(local.reduce, ReduceOp::Sum);
  EXPECT_EQ(local.axis, 0);
  EXPECT_EQ(op_with_id(body, 31).reduce, ReduceOp::Min);
  EXPECT_EQ(op_with_id(body, 23).ew, EwOp::Cmp);
  EXPECT_EQ(op_with_id(body, 23).cmp, CmpOp::LT);
  EXPECT_EQ(op_with_id(body, 24).cmp, CmpOp::GE);
  EXPECT_EQ(op_with_id(body, 25).ew, EwOp::Select);
  EXPECT_EQ(op_with_id(body, 25).operands.size(), 3u);
  EXPECT_EQ(op_with_id(body, 26).dtype, DType::BF16);
  EXPECT_EQ(op_with_id(body, 27).dtype, DType::F16);
  EXPECT_EQ(op_with_id(body, 28).ew, EwOp::Index);
  EXPECT_EQ(op_with_id(body, 28).axis, 1);
  EXPECT_TRUE(op_with_id(body, 28).operands.empty());
  const EwOperand& index = op_with_id(body, 29).operands.at(1);
  EXPECT_EQ(index.kind, EwOperand::Kind::Index);
  EXPECT_EQ(expr_to_string(index.index), "(j * 8)");
  int n = 0;
  for (EwOp e : {EwOp::Sub, EwOp::Div, EwOp::Min, EwOp::Max, EwOp::Exp, EwOp::Exp2, EwOp::Log,
                 EwOp::Abs, EwOp::Sqrt, EwOp::Rsqrt, EwOp::Recip, EwOp::Tanh, EwOp::Neg, EwOp::Copy})
    EXPECT_EQ(op_with_id(body, 9 + n++).ew, e) << ew_op_name(e);
}

TEST(GroupText, EveryEwOpAndModePrintsAndParsesBack) {
  for (int e = 0; e <= static_cast<int>(EwOp::Copy); ++e) {
    GroupProgram p = parse_group_program(kHeader + std::string("  fence #0\n}\n"));
    GroupOp op;
    op.kind = GroupOpKind::Elementwise;
    op.id = 1;
    op.frag = p.find_buffer("f");
    op.ew = static_cast<EwOp>(e);
    op.cmp = CmpOp::NE;
    op.dtype = DType::F64;
    op.axis = 0;
    for (int i = 0; i < ew_arity(op.ew); ++i) op.operands.push_back({EwOperand::Kind::Frag, op.frag});
    p.body.push_back(op);
    p.next_op_id = 2;
    std::string text = print_group_program(p);
    GroupProgram back = parse_group_program(text);
    const GroupOp& b = back.body.at(1);
    EXPECT_EQ(b.ew, op.ew) << text;
    EXPECT_EQ(b.operands.size(), op.operands.size()) << text;
    if (op.ew == EwOp::Cmp) EXPECT_EQ(b.cmp, CmpOp::NE) << text;
    if (op.ew == EwOp::Cast) EXPECT_EQ(b.dtype, DType::F64) << text;
    EXPECT_EQ(print_group_program(back), text);
  }
}

TEST(GroupText, NextOpIdIsPrintedOnlyWhenItIsNotImplied) {
  GroupProgram p = test::gemm_group_program();
  EXPECT_EQ(print_group_program(p).find("next_op_id"), std::string::npos);
  p.next_op_id = 40;  // ops were removed from the end
  std::string text = print_group_program(p);
  EXPECT_NE(text.find("  next_op_id 40\n"), std::string::npos);
  EXPECT_EQ(parse_group_program(text).next_op_id, 40);
  EXPECT_EQ(parse_group_program(kHeader + std::string("  fence #7\n}\n")).next_op_id, 8);
}

TEST(GroupTextErrors, UnknownBuffer) {
  EXPECT_NE(parse_error(kHeader + std::string("  frag.fill #0 g = 1\n}\n"))
                .find("line 8, column 16: unknown buffer g"),
            std::string::npos);
}

TEST(GroupTextErrors, UnknownOperationAndMissingId) {
  EXPECT_NE(parse_error(kHeader + std::string("  sync #0\n}\n"))
                .find("line 8, column 3: unknown operation 'sync'"),
            std::string::npos);
  EXPECT_NE(parse_error(kHeader + std::string("  fence 3\n}\n")).find("expected '#'"),
            std::string::npos);
}

TEST(GroupTextErrors, BadBufferDeclarations) {
  std::string h = "group g(sizes; tensors; scalars) {\n  grid\n  workers 1 grid 1x1 lanes 1\n"
                  "  atom fma 1x1\n";
  EXPECT_NE(parse_error(h + "  buffer X: global f32 tensor Q\n}\n").find("unknown tensor Q"),
            std::string::npos);
  EXPECT_NE(parse_error(h + "  buffer X: attic f32[1, 1] row panel 1 versions 1\n}\n")
                .find("unknown memory space 'attic'"),
            std::string::npos);
  EXPECT_NE(parse_error(h + "  buffer X: shared f32[1, 1] row panel 1 versions 1\n"
                            "  buffer X: shared f32[1, 1] row panel 1 versions 1\n}\n")
                .find("buffer X is declared twice"),
            std::string::npos);
  EXPECT_NE(parse_error(h + "  buffer X: shared f32[1, 1] row panel 1 versions 99999999999\n}\n")
                .find("does not fit in 32 bits"),
            std::string::npos);
}

TEST(GroupTextErrors, BadGuardAndEwOperation) {
  EXPECT_NE(parse_error(kHeader + std::string("  copy #0 A[0, 0] -> S[0, 0] 8x8 batch 1 guard up(M, M)\n}\n"))
                .find("expected 'src' or 'dst'"),
            std::string::npos);
  EXPECT_NE(parse_error(kHeader + std::string("  ew #0 f = pow f, 2\n}\n"))
                .find("unknown elementwise operation 'pow'"),
            std::string::npos);
}

TEST(GroupTextErrors, GeneralOpForms) {
  auto error = [](const std::string& line) { return parse_error(kHeader + line + "\n}\n"); };
  EXPECT_NE(error("  ew #0 f = cmp f, f").find("'cmp' needs a suffix: cmp.eq|ne|lt|le|gt|ge"),
            std::string::npos);
  EXPECT_NE(error("  ew #0 f = cmp.less f, f").find("unknown suffix 'less' in 'cmp.less'"),
            std::string::npos);
  EXPECT_NE(error("  ew #0 f = cast.f8 f").find("unknown suffix 'f8'"), std::string::npos);
  EXPECT_NE(error("  ew #0 f = exp.f32 f").find("'exp' takes no suffix"), std::string::npos);
  EXPECT_NE(error("  ew #0 f = index 1").find("expected 'axis'"), std::string::npos);
  EXPECT_NE(error("  ew #0 f = add f, #(k").find("expected ')'"), std::string::npos);
  EXPECT_NE(error("  reduce #0 f = f axis 1").find("unknown operation 'reduce'"), std::string::npos);
  EXPECT_NE(error("  reduce.prod #0 f = f axis 1").find("unknown operation 'reduce.prod'"),
            std::string::npos);
  EXPECT_NE(error("  reduce.sum #0 f <- S[0, 0] axis 1 combine").find("expected a row count"),
            std::string::npos);
  EXPECT_NE(error("  reduce.sum #0 S[0, 0] <- f axis 1").find("expected 'partial'"),
            std::string::npos);
  EXPECT_NE(error("  frag.load #0 f <- A[0, 0] strides(M)").find("expected ','"), std::string::npos);
  EXPECT_NE(error("  frag.load #0 f <- A[0, 0] offset 3").find("expected '('"), std::string::npos);
  EXPECT_NE(error("  copy #0 A[0, 0] strides(M, 1) -> S[0, 0] 8x8 batch 1 pad x")
                .find("expected a padding value"),
            std::string::npos);
}

TEST(GroupTextErrors, DeepNestingIsRejectedNotOverflowed) {
  std::string nest;
  for (int i = 0; i < 10000; ++i) nest += "for #0 k = 0 to 1 {\n";
  EXPECT_NE(parse_error(kHeader + nest).find("nested more than"), std::string::npos);
  EXPECT_NE(parse_error(kHeader + std::string("  for #0 k = 0 to ") + std::string(5000, '(') + "\n}\n")
                .find("nested more than"),
            std::string::npos);
}

TEST(GroupTextErrors, MangledTextNeverCrashes) {
  std::string text = print_group_program(test::gemm_group_program());
  for (size_t n = 0; n < text.size(); ++n) parse_error(text.substr(0, n));
  for (size_t n = 0; n < text.size(); ++n) {
    for (char c : {'#', '(', '}', ' ', '\0', 'x', '-', '_', '\n'}) {
      std::string mangled = text;
      mangled[n] = c;
      if (parse_error(mangled).empty()) {
        std::string printed = print_group_program(parse_group_program(mangled));
        EXPECT_EQ(print_group_program(parse_group_program(printed)), printed);
      }
    }
  }
}

}  // namespace
}  // namespace tessel
