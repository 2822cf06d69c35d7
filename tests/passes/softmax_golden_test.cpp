// Golden GroupIR of a softmax-shaped program (reductions across the worker grid
// in a loop): plan_barriers keeps the fences that order a staging copy before its
// load and each partial before its combine, and drops the ones after the loads
// and the combines, which no dependence needs. Both programs run on the sim race
// checker and match an FP64 computation of the row statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "passes/plan_barriers.h"
#include "sim_check.h"

namespace tessel::test {
namespace {

std::string path(const std::string& name) {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/passes/data/" + name;
}

std::string read(const std::string& name) {
  std::ifstream in(path(name));
  EXPECT_TRUE(in) << "missing golden file " << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Row max and sum of exp(x - max) of X (M x N), against FP64: the max exactly, the
// sum within a bound for float exponentials and additions; every row stored.
void expect_row_statistics(const SimRun& run, int64_t m, int64_t n) {
  const std::vector<float>& x = run.tensors.at("X");
  for (int64_t r = 0; r < m; ++r) {
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < n; ++c) max = std::max(max, double(x[r * n + c]));
    for (int64_t c = 0; c < n; ++c) sum += std::exp(double(x[r * n + c]) - max);
    EXPECT_EQ(run.tensors.at("Mx")[r], max) << "row " << r;
    EXPECT_NEAR(run.tensors.at("L")[r], sum, 4 * (n + 4) * std::numeric_limits<float>::epsilon() * sum)
        << "row " << r;
  }
}

TEST(SoftmaxGolden, PlanBarriersKeepsTheFencesReductionsNeed) {
  GroupProgram in = parse_group_program(read("softmax_stats.in.gir"));
  verify_group_program(in);
  GroupProgram out = in;
  BarrierStats stats = plan_barriers(out);
  if (std::getenv("TESSEL_UPDATE_GOLDEN")) std::ofstream(path("softmax_stats.out.gir")) << print_group_program(out);
  EXPECT_EQ(print_group_program(out), read("softmax_stats.out.gir"));
  // Kept: 4 (copy -> load of Xs), 8 and 15 (partial -> combine), 17 (the last of
  // the body, kept by rule for the back edge). Dropped: 6 (after the load) and 10
  // (after a combine): what they ordered, 8 and 15 order as well.
  EXPECT_EQ(stats.removed, (std::vector<int>{6, 10}));
  EXPECT_EQ(stats.dynamic_before, "6*L0");
  EXPECT_EQ(stats.dynamic_after, "4*L0");
  verify_group_program(out);
  for (auto [m, n] : {std::pair<int64_t, int64_t>{8, 16}, {21, 37}, {3, 70}}) {
    std::map<std::string, int64_t> sizes = {{"M", m}, {"N", n}};
    PlannedPair pair = plan_and_run(in, sizes, m * 100 + n);
    EXPECT_TRUE(pair.ok()) << pair.why();
    expect_row_statistics(pair.after, m, n);
  }
}

// Each kept fence but the last is needed: without it the sim reports a race. (The
// last fence of a loop body is kept by rule, for the back edge; here the other
// three already separate every dependence across it.)
TEST(SoftmaxGolden, EveryKeptFenceGuardsADependence) {
  GroupProgram out = parse_group_program(read("softmax_stats.out.gir"));
  for (int fence : {4, 8, 15}) {
    GroupProgram p = out;
    std::erase_if(p.body[2].bodies[0], [&](const GroupOp& op) { return op.id == fence; });
    SimRun run = run_on_sim(p, {{"M", 16}, {"N", 40}}, 5);
    EXPECT_GT(run.result.race_count, 0) << "fence #" << fence;
  }
}

}  // namespace
}  // namespace tessel::test
