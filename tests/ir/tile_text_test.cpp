#include "ir/tile_text.h"

#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>
#include <filesystem>
#include <functional>
#include <set>

#include "ir/tile_verify.h"
#include "ir_examples.h"
#include "tessel/error.h"

// Ops are built with designated initializers that leave the other fields default.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tessel {
namespace {

std::string test_double(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

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

const char* kSmall =
    "kernel k(sizes M; tiles BM; tensors A: f32[M, M] strides(M, 1) inout; scalars) {\n";

void collect_kinds(const Region& r, std::set<TileOpKind>* kinds) {
  for (const TileOp& op : r.ops) {
    kinds->insert(op.kind);
    for (const Region& sub : op.regions) collect_kinds(sub, kinds);
  }
}

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
  for (const char* name : {"gemm.tir", "forms.tir", "ops.tir"}) {
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

// ops.tir holds every op kind and every optional field in its printed form.
TEST(TileText, OpsGoldenUsesEveryOpKind) {
  TileKernel k = parse_tile_kernel(test::read_data("ops.tir"));
  std::set<TileOpKind> kinds;
  collect_kinds(k.body, &kinds);
  for (int kind = 0; kind <= static_cast<int>(TileOpKind::Ticket); ++kind)
    EXPECT_TRUE(kinds.count(static_cast<TileOpKind>(kind)))
        << tile_op_name(static_cast<TileOpKind>(kind)) << " is missing from ops.tir";
  EXPECT_NO_THROW(verify_tile_kernel(k));
  // Structural round trip: the reprinted text parses to the same kernel, field by field.
  test::expect_same_kernel(k, parse_tile_kernel(print_tile_kernel(k)));
}

TEST(TileText, NewFieldsParse) {
  TileKernel k = parse_tile_kernel(test::read_data("ops.tir"));
  const TileKernel& kc = k;
  std::vector<const TileOp*> ops;
  std::function<void(const Region&)> walk = [&](const Region& r) {
    for (const TileOp& op : r.ops) {
      ops.push_back(&op);
      for (const Region& sub : op.regions) walk(sub);
    }
  };
  walk(kc.body);
  auto first = [&](TileOpKind kind, std::function<bool(const TileOp&)> also = nullptr) {
    for (const TileOp* op : ops)
      if (op->kind == kind && (!also || also(*op))) return op;
    ADD_FAILURE() << "no " << tile_op_name(kind);
    return ops[0];
  };
  ASSERT_EQ(k.tensors.size(), 6u);
  EXPECT_EQ(k.tensors[5].dtype, DType::U32);
  EXPECT_EQ(k.tensors[0].rank(), 3);
  EXPECT_EQ(expr_to_string(k.tensors[0].strides[0]), "sb");
  EXPECT_EQ(k.tensors[1].rank(), 1);
  EXPECT_EQ(k.tensors[2].dtype, DType::F64);
  EXPECT_EQ(expr_to_string(k.tensors[2].strides[1]), "M");
  EXPECT_EQ(k.body.ops[0].loops.size(), 3u);
  const TileOp* padded = first(TileOpKind::Load, [](const TileOp& o) { return o.constant != 0; });
  EXPECT_EQ(padded->constant, -std::numeric_limits<double>::infinity());
  EXPECT_EQ((first(TileOpKind::Load, [](const TileOp& o) { return o.dims[0] == 2; })->dims),
            (std::array<int, 2>{2, 1}));
  EXPECT_EQ((first(TileOpKind::Load, [](const TileOp& o) { return o.coords.size() == 1; })->dims),
            (std::array<int, 2>{-1, 0}));
  EXPECT_EQ(first(TileOpKind::Reduce)->reduce, ReduceOp::Max);
  EXPECT_EQ(first(TileOpKind::Reduce)->axis, 1);
  EXPECT_EQ(first(TileOpKind::Cmp)->cmp, CmpOp::LT);
  EXPECT_EQ(expr_to_string(first(TileOpKind::Const, [](const TileOp& o) {
                             return o.index_value != nullptr;
                           })->index_value),
            "(N - (j * BN))");
  EXPECT_EQ(first(TileOpKind::Index)->axis, 1);
  EXPECT_EQ(kc.values[first(TileOpKind::Cast)->results[0]].type.dtype, DType::BF16);
  const TileOp* ticket = first(TileOpKind::Ticket);
  EXPECT_EQ(ticket->param, "T");
  EXPECT_EQ(expr_to_string(ticket->coords.at(0)), "b");
  EXPECT_EQ(ticket->loops.at(0).iv, "t");
  EXPECT_EQ(expr_to_string(ticket->loops[0].extent), "(ceildiv(M, BM) * ceildiv(N, BN))");
}

// The rank-2 `ld X` form of before strides reads as strides(X, 1) and prints as such.
TEST(TileText, OldLeadingDimensionFormParses) {
  TileKernel k = parse_tile_kernel(
      "kernel k(sizes M, N, ld; tiles; tensors A: bf16[M, N] ld ld in; scalars) {\n}\n");
  ASSERT_EQ(k.tensors[0].strides.size(), 2u);
  EXPECT_EQ(expr_to_string(k.tensors[0].strides[0]), "ld");
  EXPECT_EQ(expr_to_string(k.tensors[0].strides[1]), "1");
  EXPECT_EQ(print_tile_kernel(k),
            "kernel k(sizes M, N, ld; tiles; tensors A: bf16[M, N] strides(ld, 1) in; scalars) {\n}\n");
  EXPECT_NE(parse_error("kernel k(sizes M; tiles; tensors A: f32[M, M, M] ld M in; scalars) {\n}\n")
                .find("'ld' is for rank-2 tensors; this one has rank 3"),
            std::string::npos);
}

TEST(TileText, ExtentsAndStridesAreExpressions) {
  std::string text =
      "kernel k(sizes M, N; tiles; tensors A: f64[(M * 2), N, 1] strides((N * 2), 1, 0) in; "
      "scalars) {\n}\n";
  EXPECT_EQ(print_tile_kernel(parse_tile_kernel(text)), text);
}

// `//` comments run to the end of the line anywhere a blank may stand.
TEST(TileText, CommentsAreSkipped) {
  std::string text = test::read_data("ops.tir");
  std::string commented = "// a leading comment\n//\n";
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    commented += text.substr(start, end - start) + " // note: %x = load A[0] {\n// a full line\n";
    start = end + 1;
  }
  EXPECT_EQ(print_tile_kernel(parse_tile_kernel(commented)), text);
  // Inside a header and an operand list too.
  std::string inside =
      "kernel k(sizes M, // the rows\n N; tiles; tensors A: f32[M, // extent\n N] "
      "strides(N, 1) inout; scalars) {\n  %a = const 1 : f32\n  %b = add %a, // lhs\n %a : f32\n}\n";
  EXPECT_EQ(print_tile_kernel(parse_tile_kernel(inside)),
            "kernel k(sizes M, N; tiles; tensors A: f32[M, N] strides(N, 1) inout; scalars) {\n"
            "  %a = const 1 : f32\n  %b = add %a, %a : f32\n}\n");
}

TEST(TileText, PaddingKeepsItsBits) {
  for (double pad : {-0.0, 0.5, -std::numeric_limits<double>::infinity(), 1e-300}) {
    std::string text = std::string(kSmall) + "  %x = load A[0, 0] pad " + test_double(pad) +
                       " : f32[BM, BM]\n}\n";
    TileKernel k = parse_tile_kernel(text);
    EXPECT_EQ(std::bit_cast<uint64_t>(k.body.ops[0].constant), std::bit_cast<uint64_t>(pad));
    EXPECT_EQ(print_tile_kernel(k), text);
  }
  // A zero padding prints nothing.
  std::string text = std::string(kSmall) + "  %x = load A[0, 0] pad 0 : f32[BM, BM]\n}\n";
  EXPECT_EQ(print_tile_kernel(parse_tile_kernel(text)),
            std::string(kSmall) + "  %x = load A[0, 0] : f32[BM, BM]\n}\n");
}

TEST(TileText, DefaultDimsPrintNothing) {
  std::string text = std::string(kSmall) + "  %x = load A[0, 0] dims(0, 1) : f32[BM, BM]\n}\n";
  EXPECT_EQ(print_tile_kernel(parse_tile_kernel(text)),
            std::string(kSmall) + "  %x = load A[0, 0] : f32[BM, BM]\n}\n");
}

// The kernels/ library: every file parses, verifies, and reprints stably.
TEST(TileText, LibraryKernelsParseAndVerify) {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TESSEL_SOURCE_DIR) + "/kernels")) {
    if (entry.path().extension() != ".tir") continue;
    ++count;
    std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    TileKernel k = parse_tile_kernel(text.str());
    EXPECT_EQ(k.name + ".tir", name);
    EXPECT_NO_THROW(verify_tile_kernel(k));
    std::string printed = print_tile_kernel(k);
    EXPECT_EQ(print_tile_kernel(parse_tile_kernel(printed)), printed);
  }
  EXPECT_GE(count, 9);  // the library of issue 12
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

TEST(TileTextErrors, FlavouredOps) {
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = const 1 : f32\n  %y = reduce %x axis 1 : f32\n}\n")
                .find("line 3, column 8: unknown reduction 'reduce'"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = const 1 : f32\n  %y = reduce.avg %x axis 1 : f32\n}\n")
                .find("unknown reduction 'reduce.avg'"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = const 1 : f32\n  %y = cmp.lq %x, %x : f32\n}\n")
                .find("unknown comparison 'cmp.lq'"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = const 1 : f32\n  %y = add.x %x, %x : f32\n}\n")
                .find("unknown operation 'add.x'"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = const 1 : f32\n  %y = reduce.sum %x : f32\n}\n")
                .find("expected 'axis'"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kSmall) + "  %y = index axis 99999 : f32[BM, BM]\n}\n")
                .find("an axis 99999 is out of range"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = load A[0, 0] dims(0) : f32[BM, BM]\n}\n")
                .find("expected ','"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kSmall) + "  %x = load A[0, 0] pad : f32[BM, BM]\n}\n")
                .find("expected a padding value"),
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
  for (const std::string& text :
       {print_tile_kernel(test::gemm_tile_kernel()), test::read_data("ops.tir")}) {
    for (size_t n = 0; n < text.size(); ++n) parse_error(text.substr(0, n));
    for (size_t n = 0; n < text.size(); ++n) {
      for (char c : {'%', '(', '}', ' ', '\0', 'x', '-', '/'}) {
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
}

}  // namespace
}  // namespace tessel
