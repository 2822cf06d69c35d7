// specialize_sizes (src/passes/specialize_sizes.h): the sizes a plan fixes become
// constants in every expression, a grid dimension of one point has coordinate 0,
// and an `if` on constants becomes its branch. The lowered GEMM, specialized, runs
// on the sim race checker against the FP64 oracle with C poisoned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "../expect_error.h"
#include "build.h"
#include "gemm_sim.h"
#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_reference.h"
#include "passes/specialize_sizes.h"
#include "target/cpu/cpu_jit.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel {
namespace {

// Every symbol an expression of the program's body or grid names.
std::set<std::string> symbols(const GroupProgram& p) {
  std::set<std::string> names;
  std::vector<GroupOp> body = p.body;
  substitute_symbols(body, [&](const std::string& s) -> Expr {
    names.insert(s);
    return nullptr;
  });
  for (const LoopDim& d : p.grid) expr_symbols(d.extent, [&](const std::string& s) { names.insert(s); });
  return names;
}

// One group (16 x 16 tiles cover 13 x 16): M, N, K and both coordinates are gone;
// the k loop (K = 20 in 8s: a ragged last step) and the strides stay. Three groups
// along the rows (M = 40): that coordinate stays, the column one is 0.
TEST(SpecializeSizes, GemmBoundsAndOnePointCoordinatesBecomeConstants) {
  struct Case {
    int64_t m, n, k;
    bool row_coordinate_gone;
  };
  for (const Case& c : {Case{13, 16, 20, true}, Case{40, 16, 20, false}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    Plan plan = sim_plan(16, 16, 8, 4, 2, 2, 4);
    const GroupProgram general = compile_to_group(gemm_kernel(DType::F32), plan, CompileOptions{}).program;
    plan.sizes = {{"M", c.m}, {"N", c.n}, {"K", c.k}};
    const GroupProgram fixed = compile_to_group(gemm_kernel(DType::F32), plan, CompileOptions{}).program;
    ASSERT_EQ(general.grid.size(), 2u);
    const std::string row = general.grid[0].iv, col = general.grid[1].iv;
    std::string k_loop;
    for (const GroupOp& op : general.body)
      if (op.kind == GroupOpKind::For && k_loop.empty()) k_loop = op.iv;
    std::set<std::string> gone = {"M", "N", "K", col}, kept = {k_loop, "lda", "ldb", "ldc"};
    (c.row_coordinate_gone ? gone : kept).insert(row);
    const std::set<std::string> before = symbols(general), after = symbols(fixed);
    for (const std::string& s : gone) {
      EXPECT_TRUE(before.count(s)) << s;
      EXPECT_FALSE(after.count(s)) << s << " in\n" << print_group_program(fixed);
    }
    for (const std::string& s : kept) EXPECT_TRUE(after.count(s)) << s;
    EXPECT_EQ(fixed.size_params, general.size_params);  // a launch still passes them
    check_on_sim(fixed, c.m, c.n, c.k);
  }
}

// An `if` on sizes becomes the branch the values take (exactly, past 2^53 too); an
// `if` on a scalar, or on a size left free, stays.
TEST(SpecializeSizes, ConditionsOnConstantsBecomeTheirBranch) {
  test::Builder b(1, 1, 1);
  b.p.size_params = {"K", "L"};
  auto branch = [&](Expr lhs, CmpOp op, Expr rhs) {
    GroupOp o = b.p.new_op(GroupOpKind::If);
    o.cond.lhs = lhs, o.cond.op = op, o.cond.rhs = rhs;
    o.bodies = {{b.p.new_op(GroupOpKind::Fence)}, {b.p.new_op(GroupOpKind::Barrier)}};
    return o;
  };
  b.p.body.push_back(branch(test::s("K") - test::c(1), CmpOp::LT, test::c(4)));
  b.p.body.push_back(branch(test::s("K"), CmpOp::GT, test::c(int64_t{1} << 53)));
  b.p.body.push_back(branch(test::s("L"), CmpOp::EQ, test::c(0)));
  GroupOp on_scalar = b.p.new_op(GroupOpKind::If);
  on_scalar.cond.on_scalar = true, on_scalar.cond.scalar = "beta";
  on_scalar.bodies = {{b.p.new_op(GroupOpKind::Fence)}, {}};
  b.p.body.push_back(on_scalar);
  auto kinds = [](const std::vector<GroupOp>& ops) {
    std::string s;
    for (const GroupOp& o : ops) s += std::string(s.empty() ? "" : " ") + group_op_name(o.kind);
    return s;
  };
  GroupProgram three = b.p;
  SpecializeStats stats = specialize_sizes(three, {{"K", 3}});
  EXPECT_EQ(stats.sizes, 1);
  EXPECT_EQ(stats.folded, 2);
  EXPECT_EQ(kinds(three.body), "fence barrier if if");
  GroupProgram big = b.p;
  // 2^53 + 1 > 2^53 (as doubles, both are 2^53); a name the program lacks is ignored.
  specialize_sizes(big, {{"K", (int64_t{1} << 53) + 1}, {"Q", 1}});
  EXPECT_EQ(kinds(big.body), "barrier fence if if");
}

using test::expect_error;

// A gemm launch of m x n x k (row-major, no padding) on fresh random inputs.
struct GemmLaunch {
  std::vector<float> a, b, c;
  LaunchArgs args;
  GemmLaunch(int64_t m, int64_t n, int64_t k) : a(m * k), b(k * n), c(m * n, NAN) {
    std::mt19937_64 rng(m * 131 + n * 7 + k);
    fill_random(a, rng);
    fill_random(b, rng);
    args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
    args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
    args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
  }
};

// The program remembers the sizes it was specialized for (in the text form too), and
// the sim and the cpu target refuse a launch with other values: the folded bounds
// would cover only part of the output (or read past it). A second specialization
// may repeat a value, not change it.
TEST(SpecializeSizes, LaunchesMustGiveTheSizesTheProgramWasSpecializedFor) {
  Plan plan = sim_plan(16, 16, 8, 4, 2, 2, 4);
  plan.sizes = {{"K", 20}, {"M", 13}};
  GroupProgram fixed = compile_to_group(gemm_kernel(DType::F32), plan, CompileOptions{}).program;
  using Sizes = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(fixed.fixed_sizes, (Sizes{{"M", 13}, {"K", 20}}));  // size_params' order
  const std::string text = print_group_program(fixed);
  EXPECT_NE(text.find("(sizes M = 13, N, K = 20, lda, ldb, ldc;"), std::string::npos) << text;
  const GroupProgram parsed = parse_group_program(text);
  EXPECT_EQ(parsed.fixed_sizes, fixed.fixed_sizes);
  EXPECT_EQ(print_group_program(parsed), text);

  check_on_sim(parsed, 13, 24, 20);  // N is free
  GemmLaunch taller(26, 24, 20), deeper(13, 24, 40);
  expect_error(ErrorKind::InvalidArgument, "compiled for M = 13 (its plan fixes the size), the launch gives 26",
               [&] { run_sim(parsed, taller.args); });
  expect_error(ErrorKind::InvalidArgument, "compiled for K = 20", [&] { run_sim(parsed, deeper.args); });

  Plan cpu = default_gemm_plan(TargetKind::Cpu, 13, 24, 20, GemmPrecision::F32);
  cpu.sizes = {{"M", 13}, {"N", 24}, {"K", 20}};
  auto kernel = compile_cpu(compile_to_group(gemm_kernel(DType::F32), cpu, CompileOptions{}).program);
  GemmLaunch exact(13, 24, 20);
  kernel->run(exact.args, 1);
  std::vector<double> want = gemm_oracle(13, 24, 20, 1.0, exact.a.data(), 20, exact.b.data(), 24, 0.0, nullptr, 24);
  EXPECT_LE(gemm_relative_error(13, 24, exact.c.data(), 24, want), gemm_error_bound(20));
  expect_error(ErrorKind::InvalidArgument, "compiled for M = 13", [&] { kernel->run(taller.args, 1); });
  expect_error(ErrorKind::InvalidArgument, "compiled for K = 20", [&] { kernel->bind(deeper.args); });
  EXPECT_TRUE(std::all_of(taller.c.begin(), taller.c.end(), [](float x) { return std::isnan(x); }));

  GroupProgram again = fixed;
  EXPECT_EQ(specialize_sizes(again, {{"M", 13}, {"N", 24}}).sizes, 2);
  EXPECT_EQ(again.fixed_sizes, (Sizes{{"M", 13}, {"N", 24}, {"K", 20}}));
  expect_error(ErrorKind::InvalidArgument, "size M of gemm is already fixed at 13, not 14",
               [&] { specialize_sizes(again, {{"M", 14}}); });
}

// The text form's fixed sizes: an integer after `=`, each a size parameter in order,
// none negative (the verifier, for programs built in code).
TEST(SpecializeSizes, MalformedFixedSizesAreRefused) {
  const std::string text = print_group_program(
      compile_to_group(gemm_kernel(DType::F32), sim_plan(16, 16, 8, 4, 2, 2, 4), CompileOptions{}).program);
  const std::string head = "(sizes M, N, K,";
  ASSERT_NE(text.find(head), std::string::npos);
  auto with = [&](const std::string& sizes) {
    std::string t = text;
    return t.replace(t.find(head), head.size(), "(sizes " + sizes + ",");
  };
  expect_error(ErrorKind::Parse, "fixed size", [&] { parse_group_program(with("M = x, N, K")); });
  GroupProgram p = parse_group_program(with("M = 4, N, K"));
  verify_group_program(p);
  p.fixed_sizes = {{"K", 4}, {"M", 4}};
  expect_error(ErrorKind::Verify, "fixed size M is not a size parameter, or is out of the parameters' order",
               [&] { verify_group_program(p); });
  p.fixed_sizes = {{"Q", 4}};
  expect_error(ErrorKind::Verify, "fixed size Q", [&] { verify_group_program(p); });
  p.fixed_sizes = {{"N", -1}};
  expect_error(ErrorKind::Verify, "fixed size N = -1 is negative", [&] { verify_group_program(p); });
}

}  // namespace
}  // namespace tessel
