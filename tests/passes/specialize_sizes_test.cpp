// specialize_sizes (src/passes/specialize_sizes.h): the sizes a plan fixes become
// constants in every expression, a grid dimension of one point has coordinate 0,
// and an `if` on constants becomes its branch. The lowered GEMM, specialized, runs
// on the sim race checker against the FP64 oracle with C poisoned.
#include <gtest/gtest.h>

#include <set>

#include "build.h"
#include "gemm_sim.h"
#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ops/gemm_kernel.h"
#include "passes/specialize_sizes.h"

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

}  // namespace
}  // namespace tessel
