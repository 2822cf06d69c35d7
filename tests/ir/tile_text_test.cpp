#include "ir/tile_text.h"

#include <gtest/gtest.h>

#include <bit>

#include "ir_examples.h"
#include "tessel/error.h"

// Ops are built with designated initializers that leave the other fields default.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tessel {
namespace {

// Parses `text` and returns the Parse error's message ("" if it parsed).
std::string parse_error(const std::string& text) {
  try {
    parse_tile_kernel(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse) << e.what();
    return e.what();
  }
  return "";
}

const char* kSmall = "kernel k(sizes M; tiles BM; tensors A: f32[M, M] ld M inout; scalars) {\n";

TEST(TileText, GemmRoundTripsStructurally) {
  TileKernel k = test::gemm_tile_kernel();
  std::string text = print_tile_kernel(k);
  TileKernel parsed = parse_tile_kernel(text);
  test::expect_same_kernel(k, parsed);
  EXPECT_EQ(print_tile_kernel(parsed), text);
}

TEST(TileText, GemmPrintsTheGoldenText) {
  EXPECT_EQ(print_tile_kernel(test::gemm_tile_kernel()), test::read_data("gemm.tir"));
}

TEST(TileText, GoldenFilesReprintByteForByte) {
  for (const char* name : {"gemm.tir", "forms.tir"}) {
    std::string text = test::read_data(name);
    EXPECT_EQ(print_tile_kernel(parse_tile_kernel(text)), text) << name;
  }
}

TEST(TileText, DoublesRoundTripExactly) {
  for (double v : {0.1, -0.0, 1e300, 5e-324, 1.0 / 3, -2.5}) {
    TileKernel k;
    k.name = "k";
    k.values.push_back(Value{0, TileType{}, "x"});
    k.body.ops.push_back(TileOp{.kind = TileOpKind::Const, .results = {0}, .constant = v});
    TileKernel parsed = parse_tile_kernel(print_tile_kernel(k));
    EXPECT_EQ(std::bit_cast<uint64_t>(parsed.body.ops[0].constant), std::bit_cast<uint64_t>(v));
  }
}

TEST(TileText, ExpressionsKeepTheirExactTree) {
  // Not folded on the way in: (2 + 3) stays an addition.
  std::string text = std::string(kSmall) +
                     "  %x = load A[(2 + 3), max(floordiv(M, 2), (min(M, -4) % 3))] : f32[BM, 1]\n}\n";
  EXPECT_EQ(print_tile_kernel(parse_tile_kernel(text)), text);
}

TEST(TileText, SourceLocationsKeepPathsWithColons) {
  std::string text = std::string(kSmall) + "  barrier  @C:/src/my.cpp:7\n}\n";
  TileKernel k = parse_tile_kernel(text);
  EXPECT_EQ(k.body.ops[0].loc.file, "C:/src/my.cpp");
  EXPECT_EQ(k.body.ops[0].loc.line, 7u);
}

TEST(TileTextErrors, UnknownValueIsAParseError) {
  EXPECT_NE(parse_error(std::string(kSmall) + "  store %nope to A[0, 0]\n}\n")
                .find("line 2, column 9: unknown value %nope"),
            std::string::npos);
}

TEST(TileTextErrors, ValueDefinedTwice) {
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = const 1 : f32\n  %x = const 2 : f32\n}\n")
                .find("value %x is defined twice"),
            std::string::npos);
}

TEST(TileTextErrors, UnknownOperation) {
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = frobnicate : f32\n}\n")
                .find("line 2, column 8: unknown operation 'frobnicate'"),
            std::string::npos);
}

TEST(TileTextErrors, MissingTypes) {
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = const 1\n}\n").find("expected ':'"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x, %y = const 1 : f32\n}\n")
                .find("2 results but 1 types"),
            std::string::npos);
}

TEST(TileTextErrors, BadExpressions) {
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = load A[(M / 2), 0] : f32[1, 1]\n}\n")
                .find("expected '+', '-', '*' or '%'"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kSmall) +
                        "  %x = load A[99999999999999999999, 0] : f32[1, 1]\n}\n")
                .find("does not fit in 64 bits"),
            std::string::npos);
}

TEST(TileTextErrors, BadConstantAndLocation) {
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = const 1.5q : f32\n}\n")
                .find("expected a constant, found '1.5q'"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kSmall) + "  barrier @nowhere\n}\n")
                .find("malformed source location 'nowhere'"),
            std::string::npos);
}

TEST(TileTextErrors, TrailingTextAndEndOfInput) {
  EXPECT_NE(parse_error(std::string(kSmall) + "}\n}\n").find("expected end of input"),
            std::string::npos);
  EXPECT_NE(parse_error(kSmall).find("expected '}', found end of input"), std::string::npos);
  EXPECT_NE(parse_error("").find("line 1, column 1: expected 'kernel'"), std::string::npos);
}

TEST(TileTextErrors, DeepNestingIsRejectedNotOverflowed) {
  std::string deep(100000, '(');
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = load A[" + deep + "\n}\n")
                .find("nested more than"),
            std::string::npos);
  std::string nest;
  for (int i = 0; i < 10000; ++i) nest += "parallel i = 1 {\n";
  EXPECT_NE(parse_error(std::string(kSmall) + nest).find("nested more than"), std::string::npos);
}

// Every prefix and a byte flipped at every position of a valid text either parses or
// fails with a Parse error: never a crash, hang or other exception.
TEST(TileTextErrors, MangledTextNeverCrashes) {
  std::string text = print_tile_kernel(test::gemm_tile_kernel());
  for (size_t n = 0; n < text.size(); ++n) parse_error(text.substr(0, n));
  for (size_t n = 0; n < text.size(); ++n) {
    for (char c : {'%', '(', '}', ' ', '\0', 'x', '-'}) {
      std::string mangled = text;
      mangled[n] = c;
      std::string message = parse_error(mangled);
      if (message.empty()) {
        std::string printed = print_tile_kernel(parse_tile_kernel(mangled));
        EXPECT_EQ(print_tile_kernel(parse_tile_kernel(printed)), printed);
      }
    }
  }
}

}  // namespace
}  // namespace tessel
