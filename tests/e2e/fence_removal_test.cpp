// The race detector under test on the real lowered GEMM: every fence the barrier
// planner keeps inside the K loop is needed, so removing any one of them by hand
// must make sim report a race that names both operations.
#include <gtest/gtest.h>

#include <random>

#include "compiler/compile.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_reference.h"
#include "target/sim/sim.h"

namespace tessel {
namespace {

SimResult run_gemm_program(const GroupProgram& p, int64_t m, int64_t n, int64_t k) {
  std::mt19937_64 rng(11);
  std::vector<float> a(m * k), b(k * n), c(m * n, NAN);
  fill_random(a, rng);
  fill_random(b, rng);
  LaunchArgs args;
  args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
  args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
  args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
  return run_sim(p, args);
}

const GroupOp* find_op(const std::vector<GroupOp>& ops, int id) {
  for (const GroupOp& op : ops) {
    if (op.id == id) return &op;
    for (const auto& body : op.bodies)
      if (const GroupOp* found = find_op(body, id)) return found;
  }
  return nullptr;
}

TEST(FenceRemoval, EveryKeptLoopFenceIsNeededAndTheRaceNamesBothOps) {
  Plan plan;
  plan.target = TargetKind::Sim;
  plan.tiles = {{"BM", 16}, {"BN", 16}, {"BK", 8}};
  plan.workers = 16, plan.worker_rows = 4, plan.worker_cols = 4;
  plan.copy_batch = 4;
  GroupProgram p = compile_to_group(gemm_kernel(), plan, CompileOptions{}).program;
  ASSERT_EQ(run_gemm_program(p, 32, 32, 32).race_count, 0);

  GroupOp* loop = nullptr;
  for (GroupOp& op : p.body)
    if (op.kind == GroupOpKind::For) loop = &op;
  ASSERT_NE(loop, nullptr);
  std::vector<GroupOp>& body = loop->bodies[0];
  int fences = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i].kind != GroupOpKind::Fence) continue;
    ++fences;
    GroupProgram broken = p;
    GroupOp* broken_loop = nullptr;
    for (GroupOp& op : broken.body)
      if (op.kind == GroupOpKind::For) broken_loop = &op;
    broken_loop->bodies[0].erase(broken_loop->bodies[0].begin() + i);
    SimResult r = run_gemm_program(broken, 32, 32, 32);
    EXPECT_GT(r.race_count, 0) << "removing fence #" << body[i].id << " went unnoticed";
    ASSERT_FALSE(r.races.empty());
    const Race& race = r.races[0];
    const GroupOp* first = find_op(broken.body, race.first_op);
    const GroupOp* second = find_op(broken.body, race.second_op);
    ASSERT_TRUE(first && second) << race.message;
    for (const GroupOp* op : {first, second}) {
      std::string named = std::string(group_op_name(op->kind)) + " #" + std::to_string(op->id);
      EXPECT_NE(race.message.find(named), std::string::npos)
          << "the message should name " << named << ": " << race.message;
    }
  }
  EXPECT_EQ(fences, 2) << "barrier planning keeps one fence after the copies, one after the mma";
}

}  // namespace
}  // namespace tessel
