// The pipelined GEMM's GroupIR after barrier planning, against golden text
// (tests/pipeline/data/*.gir), and the fence count the seeds promise: exactly one
// fence per iteration of the K loop for every window >= 2, either protocol.
// When lowering changes on purpose, TESSEL_UPDATE_GOLDEN=1 test_pipeline rewrites
// the golden files; review their diff before committing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ir/group_text.h"
#include "pipeline_util.h"
#include "target/sim/sim.h"

namespace tessel::test {
namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string golden_path(const std::string& name) {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/pipeline/data/" + name;
}

std::string read_golden(const std::string& name) {
  std::ifstream f(golden_path(name));
  EXPECT_TRUE(f.good()) << "missing golden file " << name;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void expect_golden(const std::string& name, const GroupProgram& p) {
  if (std::getenv("TESSEL_UPDATE_GOLDEN")) std::ofstream(golden_path(name)) << print_group_program(p);
  std::vector<std::string> want = lines(read_golden(name)), got = lines(print_group_program(p));
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    std::string w = i < want.size() ? want[i] : "<end>", g = i < got.size() ? got[i] : "<end>";
    ASSERT_EQ(w, g) << name << " line " << i + 1 << "; whole program:\n" << print_group_program(p);
  }
}

const GroupOp& k_loop(const GroupProgram& p) {
  for (const GroupOp& op : p.body)
    if (op.kind == GroupOpKind::For) return op;
  throw std::runtime_error("no loop");
}

int count(const std::vector<GroupOp>& ops, GroupOpKind kind) {
  int n = 0;
  for (const GroupOp& op : ops) n += op.kind == kind;
  return n;
}

// The seeds' double-buffered GEMM: As and Bs with two versions, the prologue
// loads tile 0 into version 0 before the loop, and the loop body is
// prefetch(k + 1) -> version (k + 1) % 2, mma on version k % 2, one fence.
TEST(PipelineGolden, DoubleBufferedSync) {
  GroupProgram p = compile_plan(sim_plan(2, false)).program;
  expect_golden("gemm_w2_sync.gir", p);
  const GroupOp& loop = k_loop(p);
  EXPECT_EQ(count(loop.bodies[0], GroupOpKind::Copy), 2);
  EXPECT_EQ(count(loop.bodies[0], GroupOpKind::Fence), 1);
  int prologue_copies = 0;
  for (const GroupOp& op : p.body) {
    if (&op == &loop) break;
    prologue_copies += op.kind == GroupOpKind::Copy;
  }
  EXPECT_EQ(prologue_copies, 2);
}

// Three stages of async copies: two groups committed in the prologue, each
// iteration waits for the oldest (pending 1), fences once, issues k + 2.
TEST(PipelineGolden, ThreeStageAsync) {
  expect_golden("gemm_w3_async.gir", compile_plan(sim_plan(3, true)).program);
}

// The golden text is a program in its own right: parsed back, it runs on the sim
// race free with the same bits as the compiled program.
TEST(PipelineGolden, GoldenProgramsRunRaceFree) {
  for (const char* name : {"gemm_w2_sync.gir", "gemm_w3_async.gir"}) {
    GroupProgram p = parse_group_program(read_golden(name));
    const int64_t m = 37, n = 21, k = 29;
    GemmInputs in({m, n, k, 1.0f, 0.0f});
    std::vector<float> c = in.c;
    LaunchArgs args;
    args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
    args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
    args.tensors = {{"A", const_cast<float*>(in.a.data())}, {"B", const_cast<float*>(in.b.data())},
                    {"C", c.data()}};
    SimResult r = run_sim(p, args);
    EXPECT_EQ(r.race_count, 0) << name;
    GemmRun ref = run_gemm(in, sim_plan(1, false));
    EXPECT_TRUE(same_bits(c, ref.c)) << name;
  }
}

// One fence per iteration for W >= 2, both protocols, on the sim's small tile,
// the seed's 256-worker tile and the cpu's default plan.
TEST(PipelineGolden, OneFencePerIterationForEveryWindow) {
  std::vector<Plan> plans = {sim_plan(1, false), sim_plan(1, false, 64, 64, 32, 256),
                             default_gemm_plan(TargetKind::Cpu, 1024, 1024, 1024)};
  plans[1].worker_rows = plans[1].worker_cols = 16;
  for (const Plan& base : plans)
    for (int w = 1; w <= 4; ++w)
      for (bool async : {false, true}) {
        Plan plan = with_window(base, w, async);
        CompiledGroup g = compile_plan(plan);
        int fences = count(k_loop(g.program).bodies[0], GroupOpKind::Fence);
        EXPECT_EQ(g.pipeline.loops_pipelined, w == 1 && !async ? 0 : 1) << describe(plan);
        EXPECT_EQ(g.barriers.loop_after, fences) << describe(plan);
        // W = 1: the copy and the mma share the one version, so two fences stay.
        EXPECT_EQ(fences, w == 1 ? 2 : 1) << describe(plan);
        // Async: nothing is left in flight after the loop (the last prefetches
        // reach past K): the op after it waits for every group.
        if (async) {
          const std::vector<GroupOp>& top = g.program.body;
          size_t i = &k_loop(g.program) - top.data();
          ASSERT_LT(i + 1, top.size());
          EXPECT_EQ(top[i + 1].kind, GroupOpKind::AsyncWait) << describe(plan);
          EXPECT_EQ(top[i + 1].pending, 0) << describe(plan);
        }
      }
}

}  // namespace
}  // namespace tessel::test
