// The property test of the general-kernel issue: random well-typed kernels
// (eval/random_kernel.h), each with a random plan (differential.h: workers fit to its
// tiles, window 1-3, sync or async copies, copy batch, atom, cpu threads, sim worker
// order), run on sim and on cpu, every output tensor compared in full with the FP64
// evaluator (outputs NaN-poisoned, cpu scratch NaN-poisoned), and 0 races on sim.
//
// kShards x kPerShard seeds, one gtest case per shard so that ctest -j spreads them.
// TESSEL_PROPERTY_FIRST_SEED moves the window of seeds (default 0);
// TESSEL_PROPERTY_PER_SHARD runs the first N seeds of each shard instead (the
// sanitized tree in scripts/test.sh runs a sample: a sanitized compile of each
// kernel costs seconds). A failing seed
// prints its kernel text, its plan, the first races and the commands that rerun it;
// `tessel_difffuzz --seeds S:S+1` reruns it exactly (fuzz/fuzz_differential.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "differential.h"

namespace tessel {
namespace {

constexpr int kShards = 8;
constexpr int kPerShard = 125;

uint64_t first_seed() {
  const char* s = std::getenv("TESSEL_PROPERTY_FIRST_SEED");
  return s && *s ? std::strtoull(s, nullptr, 10) : 0;
}

int per_shard() {
  const char* s = std::getenv("TESSEL_PROPERTY_PER_SHARD");
  if (!s || !*s) return kPerShard;
  const int n = std::atoi(s);
  if (n < 1 || n > kPerShard) {
    ADD_FAILURE() << "TESSEL_PROPERTY_PER_SHARD=" << s << ": not in 1.." << kPerShard;
    return kPerShard;
  }
  return n;
}

RandomKernel kernel_for(uint64_t seed) {
  RandomKernelOptions o;
  o.narrow_tensors = false;  // sim and cpu read f32 tensors
  return random_kernel(seed, o);
}

void run_shard(int shard) {
  set_cpu_scratch_poison(true);
  auto start = std::chrono::steady_clock::now();
  int failed = 0;
  const int kernels = per_shard();
  for (int i = 0; i < kernels; ++i) {
    uint64_t seed = first_seed() + static_cast<uint64_t>(shard * kPerShard + i);
    RandomKernel rk = kernel_for(seed);
    difftest::PlanChoice choice = difftest::random_plan(rk, seed);
    difftest::Reference ref = difftest::reference(rk);
    std::vector<difftest::Verdict> v = {difftest::run_target(rk, ref, choice, TargetKind::Sim),
                                        difftest::run_target(rk, ref, choice, TargetKind::Cpu)};
    if (!v[0].ok || !v[1].ok) {
      ++failed;
      ADD_FAILURE() << difftest::describe(rk, choice, v);
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("shard %d: %d kernels (seeds %llu..), %d failed, %.1f s\n", shard, kernels,
              static_cast<unsigned long long>(first_seed() + shard * kPerShard), failed, s);
}

TEST(Property, Shard0) { run_shard(0); }
TEST(Property, Shard1) { run_shard(1); }
TEST(Property, Shard2) { run_shard(2); }
TEST(Property, Shard3) { run_shard(3); }
TEST(Property, Shard4) { run_shard(4); }
TEST(Property, Shard5) { run_shard(5); }
TEST(Property, Shard6) { run_shard(6); }
TEST(Property, Shard7) { run_shard(7); }
static_assert(kShards == 8, "one TEST per shard");

// The plans of the seeds above reach every choice they promise, and the pipeline
// pass really transforms some loops with each protocol (a property test whose plans
// all came out 1 worker, window 1, would pass while testing little).
TEST(Property, PlansCoverTheSchedule) {
  std::set<int> workers, windows, batches, threads;
  std::set<std::pair<int, int>> grids;
  int atoms = 0, pipelined_sync = 0, pipelined_async = 0, skipped = 0, phases = 0;
  for (int i = 0; i < kShards * kPerShard; ++i) {
    uint64_t seed = first_seed() + static_cast<uint64_t>(i);
    RandomKernel rk = kernel_for(seed);
    difftest::PlanChoice c = difftest::random_plan(rk, seed);
    workers.insert(c.plan.workers);
    grids.insert({c.plan.worker_rows, c.plan.worker_cols});
    windows.insert(c.plan.window);
    batches.insert(c.plan.copy_batch);
    threads.insert(c.threads);
    atoms += c.plan.atom_m * c.plan.atom_n > 1;
    phases += split_phases(rk.kernel).size() > 1;
    if (c.plan.window < 2) continue;
    for (const TileKernel& phase : split_phases(rk.kernel)) {
      GroupProgram p = lower_to_group(phase, c.plan);
      PipelineOptions po;
      po.window = c.plan.window;
      po.async = c.plan.async_copy;
      PipelineStats ps = pipeline_loops(p, po);
      (c.plan.async_copy ? pipelined_async : pipelined_sync) += ps.loops_pipelined;
      skipped += ps.loops_skipped;
    }
  }
  for (int w : {1, 2, 3, 4, 6, 8}) EXPECT_TRUE(workers.count(w)) << "no plan with " << w << " workers";
  EXPECT_GE(grids.size(), 6u) << "worker grids";
  EXPECT_EQ(windows, (std::set<int>{1, 2, 3}));
  EXPECT_EQ(batches, (std::set<int>{1, 2, 3, 4, 8}));
  EXPECT_EQ(threads, (std::set<int>{1, 2}));
  EXPECT_GE(atoms, 20) << "plans with an atom larger than 1x1";
  EXPECT_GE(phases, 20) << "kernels with two phases";
  EXPECT_GE(pipelined_sync, 50) << "loops pipelined with sync copies";
  EXPECT_GE(pipelined_async, 50) << "loops pipelined with async copies";
  std::printf("workers %zu values, grids %zu, atoms > 1x1: %d, two-phase kernels: %d, loops pipelined "
              "sync %d async %d, skipped %d\n",
              workers.size(), grids.size(), atoms, phases, pipelined_sync, pipelined_async, skipped);
}

}  // namespace
}  // namespace tessel
