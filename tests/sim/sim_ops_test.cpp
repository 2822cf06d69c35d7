// Single ops on the sim: each elementwise op element by element over every worker's
// part, native barriers as interval boundaries, opaque calls refused.
#include <gtest/gtest.h>

#include <cmath>

#include "gemm_programs.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel::test {
namespace {

// One group, 2 x 2 workers, 4 x 6 fragments: x = X, y = Y, y = op(x, y | s), Z = y.
GroupProgram ew_program(EwOp ew, EwOperand second) {
  GroupProgram p;
  p.name = "ew";
  p.size_params = {"R", "C"};
  p.tensors = {{"X", DType::F32, "R", "C", "C", Access::In},
               {"Y", DType::F32, "R", "C", "C", Access::In},
               {"Z", DType::F32, "R", "C", "C", Access::Out}};
  p.scalars = {{"s", DType::F32}};
  p.workers = 4;
  p.worker_rows = p.worker_cols = 2;
  for (int t = 0; t < 3; ++t) p.buffers.push_back({t, p.tensors[t].name, Space::Global, DType::F32, 0, 0, t});
  p.buffers.push_back({3, "x", Space::Private, DType::F32, 4, 6, -1});
  p.buffers.push_back({4, "y", Space::Private, DType::F32, 4, 6, -1});
  auto at = [](int buffer) { return BufferRef{buffer, nullptr, expr_const(0), expr_const(0)}; };
  auto op = [&](GroupOpKind kind, int frag) {
    GroupOp o;
    o.kind = kind;
    o.id = p.new_op_id();
    o.frag = frag;
    return o;
  };
  GroupOp lx = op(GroupOpKind::FragLoad, 3), ly = op(GroupOpKind::FragLoad, 4);
  lx.src = at(0);
  ly.src = at(1);
  GroupOp e = op(GroupOpKind::Elementwise, 4);
  e.ew = ew;
  e.operands = {{EwOperand::Kind::Frag, 3, "", 0}};
  if (ew != EwOp::Exp && ew != EwOp::Neg && ew != EwOp::Copy) e.operands.push_back(second);
  GroupOp st = op(GroupOpKind::FragStore, 4);
  st.dst = at(2);
  p.body = {lx, ly, e, st};
  return p;
}

struct EwCase {
  EwOp op;
  float (*expect)(float x, float y);
};

class SimElementwise : public testing::TestWithParam<EwCase> {};

TEST_P(SimElementwise, AppliesToEveryElementOfEveryPart) {
  const EwCase& c = GetParam();
  std::vector<float> x(24), y(24), z(24, std::nanf(""));
  for (int i = 0; i < 24; ++i) {
    x[i] = 0.25f * float(i - 11) + 0.1f;  // never zero
    y[i] = 1.5f - 0.125f * float(i);
  }
  LaunchArgs args;
  args.sizes = {{"R", 4}, {"C", 6}};
  args.scalars = {{"s", 0.5}};
  args.tensors = {{"X", x.data()}, {"Y", y.data()}, {"Z", z.data()}};
  EwOperand frag_y{EwOperand::Kind::Frag, 4, "", 0};
  EwOperand scalar{EwOperand::Kind::Scalar, -1, "s", 0};
  EwOperand constant{EwOperand::Kind::Const, -1, "", -2.0};
  for (const EwOperand& second : {frag_y, scalar, constant}) {
    std::fill(z.begin(), z.end(), std::nanf(""));
    EXPECT_EQ(run_sim(ew_program(c.op, second), args).race_count, 0);
    for (int i = 0; i < 24; ++i) {
      float other = second.kind == EwOperand::Kind::Frag ? y[i]
                    : second.kind == EwOperand::Kind::Scalar ? 0.5f : -2.0f;
      EXPECT_EQ(z[i], c.expect(x[i], other)) << ew_op_name(c.op) << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ops, SimElementwise,
    testing::Values(EwCase{EwOp::Add, [](float x, float y) { return x + y; }},
                    EwCase{EwOp::Sub, [](float x, float y) { return x - y; }},
                    EwCase{EwOp::Mul, [](float x, float y) { return x * y; }},
                    EwCase{EwOp::Max, [](float x, float y) { return x < y ? y : x; }},
                    EwCase{EwOp::Exp, [](float x, float) { return std::exp(x); }},
                    EwCase{EwOp::Neg, [](float x, float) { return -x; }},
                    EwCase{EwOp::Copy, [](float x, float) { return x; }}),
    [](const auto& info) { return std::string(ew_op_name(info.param.op)); });

TEST(SimOps, NativeBarrierEndsTheIntervalLikeAFence) {
  GemmProgram g = make_gemm({});
  find_op(g.program, g.fence_after_mma).kind = GroupOpKind::Barrier;
  find_op(g.program, g.fence_after_b).kind = GroupOpKind::Barrier;
  GemmData data(13, 29, 11, 1.0, 0.0, 3);
  std::vector<float> before = data.c;
  EXPECT_EQ(run_sim(g.program, data.args()).race_count, 0);
  EXPECT_LE(data.error_ratio(before), 1.0);
}

TEST(SimOps, OpaqueCallIsUnsupported) {
  GemmProgram g = make_gemm({});
  GroupOp& call = find_op(g.program, g.fence_after_a);
  call.kind = GroupOpKind::Call;
  call.callee = "mystery";
  GemmData data(8, 8, 8, 1.0, 0.0, 3);
  try {
    run_sim(g.program, data.args());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("'mystery'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessel::test
