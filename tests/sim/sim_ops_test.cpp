// Single ops on the sim: every elementwise op element by element over every
// worker's part, with broadcast operands ([R, 1], [1, C], scalars, constants,
// index values); native barriers as interval boundaries; opaque calls refused.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "gemm_programs.h"
#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "target/sim/float_round.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel::test {
namespace {

constexpr int R = 4, C = 6;

// One group, 2 x 2 workers: x = X, y = Y (4 x 6), r = V as a column (4 x 1), c = W
// as a row (1 x 6); then `ops` (which end by writing z); Z = z.
GroupProgram ew_program(const std::string& ops) {
  std::string text =
      "group ew(sizes R, C; tensors X: f32[R, C] strides(C, 1) in, Y: f32[R, C] strides(C, 1) in, "
      "V: f32[R] strides(1) in, W: f32[C] strides(1) in, Z: f32[R, C] strides(C, 1) out; "
      "scalars s: f32) {\n"
      "  grid g = 1\n  workers 4 grid 2x2 lanes 1\n  atom fma 1x1\n"
      "  buffer X: global f32 tensor X\n  buffer Y: global f32 tensor Y\n"
      "  buffer V: global f32 tensor V\n  buffer W: global f32 tensor W\n"
      "  buffer Z: global f32 tensor Z\n"
      "  buffer x: private f32[4, 6] row panel 1 versions 1\n"
      "  buffer y: private f32[4, 6] row panel 1 versions 1\n"
      "  buffer r: private f32[4, 1] row panel 1 versions 1\n"
      "  buffer c: private f32[1, 6] row panel 1 versions 1\n"
      "  buffer t: private f32[4, 6] row panel 1 versions 1\n"
      "  buffer z: private f32[4, 6] row panel 1 versions 1\n"
      "  frag.load #0 x <- X[0, 0] strides(C, 1)\n  frag.load #1 y <- Y[0, 0] strides(C, 1)\n"
      "  frag.load #2 r <- V[0, 0] strides(1, 0)\n  frag.load #3 c <- W[0, 0] strides(0, 1)\n" +
      ops + "  frag.store #99 Z[0, 0] strides(C, 1) <- z\n}\n";
  GroupProgram p = parse_group_program(text);
  verify_group_program(p);
  return p;
}

// The inputs of one element (i, j), for the expected values.
struct In {
  float x, y, r, c;
  int i, j;
};

struct EwCase {
  std::string name, ops;
  std::function<float(const In&)> expect;
};

void PrintTo(const EwCase& c, std::ostream* os) { *os << c.name; }

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

class SimElementwise : public testing::TestWithParam<EwCase> {};

TEST_P(SimElementwise, AppliesToEveryElementOfEveryPart) {
  const EwCase& c = GetParam();
  std::vector<float> x(R * C), y(R * C), v(R), w(C), z(R * C, std::nanf(""));
  for (int i = 0; i < R * C; ++i) {
    x[i] = 0.25f * float(i - 11) + 0.1f;  // never zero, both signs
    y[i] = 1.5f - 0.125f * float(i) + 0.01f;
  }
  for (int i = 0; i < R; ++i) v[i] = 0.7f - 0.3f * float(i);
  for (int j = 0; j < C; ++j) w[j] = -1.1f + 0.45f * float(j);
  LaunchArgs args;
  args.sizes = {{"R", R}, {"C", C}};
  args.scalars = {{"s", 0.5}};
  args.tensors = {{"X", x.data()}, {"Y", y.data()}, {"V", v.data()}, {"W", w.data()}, {"Z", z.data()}};
  EXPECT_EQ(run_sim(ew_program(c.ops), args).race_count, 0);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      In in{x[i * C + j], y[i * C + j], v[i], w[j], i, j};
      float want = c.expect(in), got = z[i * C + j];
      EXPECT_TRUE(same(got, want)) << c.name << " at (" << i << ", " << j << "): " << got
                                   << " != " << want;
    }
}

float nan_max(float a, float b) { return std::isnan(a) || a > b ? a : b; }
float nan_min(float a, float b) { return std::isnan(a) || a < b ? a : b; }

std::vector<EwCase> cases() {
  std::vector<EwCase> out;
  struct Binary {
    const char* name;
    float (*f)(float, float);
  };
  const Binary binary[] = {
      {"add", [](float a, float b) { return a + b; }},
      {"sub", [](float a, float b) { return a - b; }},
      {"mul", [](float a, float b) { return a * b; }},
      {"div", [](float a, float b) { return a / b; }},
      {"max", nan_max},
      {"min", nan_min},
      {"cmp.eq", [](float a, float b) { return a == b ? 1.0f : 0.0f; }},
      {"cmp.ne", [](float a, float b) { return a != b ? 1.0f : 0.0f; }},
      {"cmp.lt", [](float a, float b) { return a < b ? 1.0f : 0.0f; }},
      {"cmp.le", [](float a, float b) { return a <= b ? 1.0f : 0.0f; }},
      {"cmp.gt", [](float a, float b) { return a > b ? 1.0f : 0.0f; }},
      {"cmp.ge", [](float a, float b) { return a >= b ? 1.0f : 0.0f; }},
  };
  // Second operands: a fragment, both broadcast vectors, a scalar, a constant and
  // an index value (R + 1 = 5).
  struct Second {
    const char* text;
    float (*value)(const In&);
  };
  const Second seconds[] = {{"y", [](const In& in) { return in.y; }},
                            {"r", [](const In& in) { return in.r; }},
                            {"c", [](const In& in) { return in.c; }},
                            {"$s", [](const In&) { return 0.5f; }},
                            {"-2", [](const In&) { return -2.0f; }},
                            {"#((R + 1))", [](const In&) { return 5.0f; }}};
  for (const Binary& b : binary)
    for (const Second& s : seconds)
      out.push_back({std::string(b.name) + " x, " + s.text,
                     std::string("  ew #4 z = ") + b.name + " x, " + s.text + "\n",
                     [f = b.f, v = s.value](const In& in) { return f(in.x, v(in)); }});
  // Both operands broadcast: [R, 1] with [1, C] fills the [R, C] destination.
  out.push_back({"sub r, c", "  ew #4 z = sub r, c\n", [](const In& in) { return in.r - in.c; }});
  out.push_back({"the comparison equal", "  ew #4 z = copy x\n  ew #5 z = cmp.eq z, x\n",
                 [](const In&) { return 1.0f; }});
  struct Unary {
    const char* name;
    float (*f)(float);
  };
  const Unary unary[] = {
      {"exp", [](float a) { return std::exp(a); }},
      {"exp2", [](float a) { return std::exp2(a); }},
      {"log", [](float a) { return std::log(a); }},
      {"neg", [](float a) { return -a; }},
      {"abs", [](float a) { return std::fabs(a); }},
      {"sqrt", [](float a) { return std::sqrt(a); }},
      {"rsqrt", [](float a) { return 1.0f / std::sqrt(a); }},
      {"recip", [](float a) { return 1.0f / a; }},
      {"tanh", [](float a) { return std::tanh(a); }},
      {"copy", [](float a) { return a; }},
      {"cast.bf16", [](float a) { return round_to_bf16(a); }},
      {"cast.f16", [](float a) { return round_to_f16(a); }},
      {"cast.f32", [](float a) { return a; }},
  };
  for (const Unary& u : unary) {
    // log, sqrt and rsqrt of |x| + 0.1, so that every element is in their domain.
    out.push_back({std::string(u.name) + " |x|", std::string("  ew #4 t = abs x\n  ew #5 t = add t, 0.1\n") +
                                                     "  ew #6 z = " + u.name + " t\n",
                   [f = u.f](const In& in) { return f(std::fabs(in.x) + 0.1f); }});
    out.push_back({std::string(u.name) + " r", std::string("  ew #4 z = ") + u.name + " r\n",
                   [f = u.f](const In& in) { return f(in.r); }});
    out.push_back({std::string(u.name) + " c", std::string("  ew #4 z = ") + u.name + " c\n",
                   [f = u.f](const In& in) { return f(in.c); }});
  }
  // Select on a comparison, with broadcast branches.
  out.push_back({"select", "  ew #4 t = cmp.lt x, y\n  ew #5 z = select t, r, c\n",
                 [](const In& in) { return in.x < in.y ? in.r : in.c; }});
  out.push_back({"select const", "  ew #4 t = cmp.gt x, 0\n  ew #5 z = select t, x, -1\n",
                 [](const In& in) { return in.x > 0 ? in.x : -1.0f; }});
  // Index: the element's row or column in the logical tile, whichever worker holds it.
  out.push_back({"index axis 0", "  ew #4 z = index axis 0\n", [](const In& in) { return float(in.i); }});
  out.push_back({"index axis 1", "  ew #4 z = index axis 1\n", [](const In& in) { return float(in.j); }});
  return out;
}

std::string case_name(const testing::TestParamInfo<EwCase>& info) {
  std::string s;
  for (char ch : info.param.name) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return s + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Ops, SimElementwise, testing::ValuesIn(cases()), case_name);

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
