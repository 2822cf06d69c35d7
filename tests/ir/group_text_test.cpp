#include "ir/group_text.h"

#include <gtest/gtest.h>

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

TEST(GroupText, GemmRoundTripsStructurally) {
  GroupProgram p = test::gemm_group_program();
  std::string text = print_group_program(p);
  GroupProgram parsed = parse_group_program(text);
  test::expect_same_program(p, parsed);
  EXPECT_EQ(print_group_program(parsed), text);
}

TEST(GroupText, GemmPrintsTheGoldenText) {
  EXPECT_EQ(print_group_program(test::gemm_group_program()), test::read_data("gemm.gir"));
}

TEST(GroupText, GoldenFilesReprintByteForByte) {
  for (const char* name : {"gemm.gir", "forms.gir"}) {
    std::string text = test::read_data(name);
    EXPECT_EQ(print_group_program(parse_group_program(text)), text) << name;
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
