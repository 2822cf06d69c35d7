// specialize_sizes (src/passes/specialize_sizes.h): the sizes a plan fixes become
// constants in every expression, a grid dimension of one point has coordinate 0,
// and an `if` on constants becomes its branch. The lowered GEMM, specialized, runs
// on the sim race checker against the FP64 oracle with C poisoned.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "build.h"
#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_reference.h"
#include "passes/specialize_sizes.h"
#include "target/sim/sim.h"

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

Plan sim_plan(int64_t bm, int64_t bn, int64_t bk) {
  Plan p;
  p.target = TargetKind::Sim;
  p.tiles = {{"BM", bm}, {"BN", bn}, {"BK", bk}};
  p.workers = 4, p.worker_rows = 2, p.worker_cols = 2;
  return p;
}

// The program on sim for M x N x K (alpha 1.5, beta 0, C poisoned): no races, and
// the whole of C within the oracle's bound.
void expect_gemm_on_sim(const GroupProgram& p, int64_t m, int64_t n, int64_t k) {
  std::mt19937_64 rng(m * 131 + n * 7 + k);
  std::vector<float> a(m * k), b(k * n), c(m * n, NAN);
  fill_random(a, rng);
  fill_random(b, rng);
  LaunchArgs args;
  args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
  args.scalars = {{"alpha", 1.5}, {"beta", 0.0}};
  args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
  std::vector<double> want = gemm_oracle(m, n, k, 1.5, a.data(), k, b.data(), n, 0.0, c.data(), n);
  SimResult r = run_sim(p, args);
  EXPECT_EQ(r.race_count, 0) << (r.races.empty() ? "" : r.races[0].message);
  EXPECT_LE(gemm_relative_error(m, n, c.data(), n, want), gemm_error_bound(k));
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
    Plan plan = sim_plan(16, 16, 8);
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
    expect_gemm_on_sim(fixed, c.m, c.n, c.k);
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
