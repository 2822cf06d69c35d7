// Issue 14: mbarrier declarations, the mbar.* ops and tma in GroupIR text: they
// print and parse back, parse to their fields, and malformed ones are Parse or
// Verify errors naming the op, never a crash.
#include <gtest/gtest.h>

#include <string>

#include "ir/group_effects.h"
#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "tessel/error.h"

namespace tessel {
namespace {

const char* kHeader =
    "group g(sizes M, K; tensors A: bf16[M, K] strides(K, 1) in; scalars) {\n"
    "  grid i = ceildiv(M, 64)\n  workers 1 grid 1x1 lanes 128\n  atom wgmma 64x64\n"
    "  buffer A: global bf16 tensor A\n  buffer As: shared bf16[64, 64] row panel 1 versions 2\n"
    "  mbarrier full[2]\n  mbarrier empty[2]\n";

const char* kOps =
    "  mbar.init #0 full count 1\n"
    "  mbar.init #1 empty count 4\n"
    "  fence #2\n"
    "  for #3 k = 0 to ceildiv(K, 64) {\n"
    "    mbar.expect_tx #4 full@(k % 2) bytes 8192\n"
    "    tma #5 A[(i * 64), (k * 64)] strides(K, 1) -> As@(k % 2)[0, 0] 64x64 mbar full@(k % 2) guard src(M, K)\n"
    "    mbar.arrive #6 full@(k % 2) leader\n"
    "    mbar.wait #7 full@(k % 2) parity (floordiv(k, 2) % 2)\n"
    "    mbar.arrive #8 empty@(k % 2)\n"
    "    mbar.wait #9 empty parity 1\n"
    "  }\n";

std::string text(const std::string& ops) { return kHeader + ops + "}\n"; }

std::string error_of(const std::string& t, ErrorKind want) {
  try {
    GroupProgram p = parse_group_program(t);
    verify_group_program(p);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), want) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << t;
  return "";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(MbarrierIr, PrintsAndParsesBackByteForByte) {
  GroupProgram p = parse_group_program(text(kOps));
  verify_group_program(p);
  EXPECT_EQ(print_group_program(p), text(kOps));
}

TEST(MbarrierIr, ParsesToItsFields) {
  GroupProgram p = parse_group_program(text(kOps));
  ASSERT_EQ(p.mbarriers.size(), 2u);
  EXPECT_EQ(p.mbarriers[1].name, "empty");
  EXPECT_EQ(p.mbarriers[1].slots, 2);
  EXPECT_EQ(p.body[0].kind, GroupOpKind::MbarInit);
  EXPECT_EQ(p.body[0].mbar_count, 1);
  EXPECT_EQ(p.body[0].mbar_slot, nullptr);
  const auto& loop = p.body[3].bodies.at(0);
  EXPECT_EQ(loop[0].kind, GroupOpKind::MbarExpectTx);
  EXPECT_EQ(loop[0].mbar_count, 8192);
  EXPECT_EQ(expr_to_string(loop[0].mbar_slot), "(k % 2)");
  EXPECT_EQ(loop[1].kind, GroupOpKind::Tma);
  EXPECT_EQ(loop[1].rows, 64);
  EXPECT_EQ(loop[1].mbar, 0);
  EXPECT_EQ(tma_bytes(p, loop[1]), 8192);
  EXPECT_TRUE(loop[2].leader);
  EXPECT_FALSE(loop[4].leader);
  EXPECT_EQ(loop[5].kind, GroupOpKind::MbarWait);
  EXPECT_EQ(expr_to_string(loop[5].parity), "1");
  // tma reads its source and writes its stage; the mbarrier ops touch no buffer.
  std::vector<MemEffect> e = op_effects(p, loop[1]);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].space, Space::Global);
  EXPECT_TRUE(e[1].write);
  EXPECT_EQ(e[1].buffer, p.find_buffer("As"));
  EXPECT_TRUE(op_effects(p, loop[3]).empty());
}

TEST(MbarrierIr, ParseErrors) {
  EXPECT_TRUE(has(error_of(text("  mbar.wait #0 nope parity 0\n"), ErrorKind::Parse), "unknown mbarrier nope"));
  EXPECT_TRUE(has(error_of(text("  mbar.init #0 full\n"), ErrorKind::Parse), "expected 'count'"));
  EXPECT_TRUE(has(error_of(text("  mbar.expect_tx #0 full 8\n"), ErrorKind::Parse), "expected 'bytes'"));
  EXPECT_TRUE(has(error_of(text("  mbar.wait #0 full\n"), ErrorKind::Parse), "expected 'parity'"));
  EXPECT_TRUE(has(error_of(text("  tma #0 A[0, 0] strides(K, 1) -> As[0, 0] 64x64\n"), ErrorKind::Parse),
                  "expected 'mbar'"));
  std::string twice = kHeader;
  twice += "  mbarrier full[1]\n}\n";
  EXPECT_TRUE(has(error_of(twice, ErrorKind::Parse), "mbarrier full is declared twice"));
  std::string named_as_buffer = kHeader;
  named_as_buffer += "  mbarrier As[1]\n}\n";
  EXPECT_TRUE(has(error_of(named_as_buffer, ErrorKind::Parse), "declared twice (or names a buffer)"));
}

TEST(MbarrierIr, VerifierErrorsNameTheOp) {
  auto verify = [](const std::string& ops) { return error_of(text(ops), ErrorKind::Verify); };
  EXPECT_EQ(verify("  mbar.init #0 full count 0\n"),
            "op #0 (mbar.init): arrival count 0 out of range [1, 1048575]");
  EXPECT_EQ(verify("  mbar.arrive #0 full@2\n"), "op #0 (mbar.arrive): slot 2 of full is not below its 2 slots");
  EXPECT_EQ(verify("  mbar.wait #0 full parity 2\n"), "op #0 (mbar.wait): parity 2 is not 0 or 1");
  EXPECT_EQ(verify("  mbar.wait #0 full parity q\n"),
            "op #0 (mbar.wait): unknown symbol 'q' in the parity q");
  EXPECT_EQ(verify("  mbar.expect_tx #0 full bytes 1048576\n"),
            "op #0 (mbar.expect_tx): transaction bytes 1048576 out of range [1, 1048575]");
  EXPECT_EQ(verify("  tma #0 A[0, 0] strides(K, 1) -> A[0, 0] strides(K, 1) 64x64 mbar full\n"),
            "op #0 (tma): destination A may not be in global memory");
  EXPECT_EQ(verify("  tma #0 As[0, 0] -> As@1[0, 0] 64x64 mbar full\n"),
            "op #0 (tma): source As may not be in shared memory");
  EXPECT_EQ(verify("  tma #0 A[0, 0] strides(K, 1) -> As[0, 0] 64x300 mbar full\n"),
            "op #0 (tma): box 64x300: each extent in [1, 256]");
  EXPECT_EQ(verify("  tma #0 A[0, 0] strides(K, 1) -> As[8, 0] 64x64 mbar full\n"),
            "op #0 (tma): destination window 64x64 at (8, 0) does not fit As 64x64");
  EXPECT_EQ(verify("  tma #0 A[0, 0] strides(K, 1) -> As[0, 0] 64x64 mbar full guard dst(M, K)\n"),
            "op #0 (tma): a tma copy writes its whole box: only source guards (the tensor's edge, zero fill)");
  // Fields of one op kind on another (built in memory: the text cannot say it).
  GroupProgram p = parse_group_program(text("  fence #0\n  mbar.init #1 full count 1\n"));
  p.body[0].mbar = 0;
  try {
    verify_group_program(p);
    ADD_FAILURE() << "a fence naming an mbarrier verified";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "op #0 (fence): only mbarrier ops and tma name an mbarrier");
  }
  p = parse_group_program(text("  mbar.init #1 full count 1\n"));
  p.body[0].mbar_slot = expr_const(1);
  try {
    verify_group_program(p);
    ADD_FAILURE() << "an init with a slot verified";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "op #1 (mbar.init): mbar.init initializes every slot of full and takes no slot");
  }
  p = parse_group_program(text("  mbar.init #1 full count 1\n"));
  p.mbarriers[0].slots = 0;
  try {
    verify_group_program(p);
    ADD_FAILURE() << "an mbarrier of 0 slots verified";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "mbarrier full: 0 slots; each mbarrier has 1 to 64");
  }
}

// Every prefix, and every position replaced by a character that often breaks
// parsers: a Parse or Verify error, or a program that reprints the same.
TEST(MbarrierIr, MangledTextNeverCrashes) {
  std::string t = text(kOps);
  auto check = [](const std::string& s) {
    try {
      GroupProgram p = parse_group_program(s);
      verify_group_program(p);
      std::string printed = print_group_program(p);
      EXPECT_EQ(print_group_program(parse_group_program(printed)), printed);
    } catch (const Error&) {
    }
  };
  for (size_t n = 0; n < t.size(); ++n) check(t.substr(0, n));
  for (size_t n = 0; n < t.size(); ++n)
    for (char c : {'#', '(', '@', ' ', '\0', '9', '-', '\n'}) {
      std::string mangled = t;
      mangled[n] = c;
      check(mangled);
    }
}

}  // namespace
}  // namespace tessel
