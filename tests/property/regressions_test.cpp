// Every finding of the property test and the differential fuzzer, reduced to a small
// kernel (its text inline) and the plan that broke it. Each runs like the property
// test: sim and cpu against the FP64 evaluator, outputs NaN-poisoned, 0 races, and
// every compile step's output re-verified and re-simulated (differential.h).
#include <gtest/gtest.h>

#include "differential.h"

namespace tessel {
namespace {

using difftest::PlanChoice;
using difftest::Verdict;

struct Case {
  std::string text;
  std::map<std::string, int64_t> sizes, tiles;
  std::map<std::string, double> scalars = {};
  int worker_rows = 1, worker_cols = 1;
  int window = 1;
  bool async = false;
  int copy_batch = 4;
  int64_t atom_m = 1, atom_n = 1;
  int threads = 1;
  uint64_t sim_seed = 1;
};

RandomKernel as_random_kernel(const Case& c) {
  RandomKernel rk;
  rk.seed = 1;
  rk.kernel = parse_tile_kernel(c.text);
  rk.sizes = c.sizes;
  rk.tiles = c.tiles;
  rk.scalars = c.scalars;
  int64_t depth = 1;
  for (const auto& [n, v] : c.sizes) depth = std::max(depth, v);
  rk.tolerance = error_bound(DType::F32, DType::F32, depth);
  return rk;
}

PlanChoice plan_of(const Case& c) {
  PlanChoice p;
  p.plan.tiles = c.tiles;
  p.plan.worker_rows = c.worker_rows;
  p.plan.worker_cols = c.worker_cols;
  p.plan.workers = c.worker_rows * c.worker_cols;
  p.plan.window = c.window;
  p.plan.async_copy = c.async;
  p.plan.copy_batch = c.copy_batch;
  p.plan.atom_m = c.atom_m;
  p.plan.atom_n = c.atom_n;
  p.threads = c.threads;
  p.sim_seed = c.sim_seed;
  return p;
}

// Runs the case everywhere; every verdict must be ok. Returns the loops the pipeline
// pass transformed.
int expect_correct(const Case& c) {
  set_cpu_scratch_poison(true);
  RandomKernel rk = as_random_kernel(c);
  PlanChoice choice = plan_of(c);
  difftest::Reference ref = difftest::reference(rk);
  std::string problem;
  difftest::Stages stages = difftest::compile_stages(rk, choice.plan, &problem);
  EXPECT_EQ(problem, "") << difftest::describe(rk, choice, {});
  if (!problem.empty()) return 0;
  std::vector<Verdict> v;
  for (size_t i = 0; i < stages.names.size(); ++i)
    v.push_back(difftest::simulate_stage(rk, ref, stages.programs[i], stages.names[i], choice.sim_seed));
  v.push_back(difftest::run_target(rk, ref, choice, TargetKind::Sim));
  v.push_back(difftest::run_target(rk, ref, choice, TargetKind::Cpu));
  bool ok = true;
  for (const Verdict& x : v) ok &= x.ok;
  EXPECT_TRUE(ok) << difftest::describe(rk, choice, v);
  return stages.loops_pipelined;
}

const char* kGemm = R"(
kernel gemm(sizes M, N, K; tiles BM, BN, BK;
            tensors A: f32[M, K] strides(K, 1) in, B: f32[K, N] strides(N, 1) in,
                    C: f32[M, N] strides(N, 1) out; scalars) {
  parallel i = ceildiv(M, BM), j = ceildiv(N, BN) {
    %zero = const 0 : f32[BM, BN]
    %acc = serial k = ceildiv(K, BK) iter(%c: f32[BM, BN] = %zero) : f32[BM, BN] {
      %a = load A[(i * BM), (k * BK)] : f32[BM, BK]
      %b = load B[(k * BK), (j * BN)] : f32[BK, BN]
      %d = mma %a, %b, %c : f32[BM, BN]
      yield %d
    }
    store %acc to C[(i * BM), (j * BN)]
  }
}
)";

// Property seed 120: an accumulator one column wide (BN = 1) on a 1x2 worker grid
// is replicated, so each worker's part is 8x1; the lowering took the part as
// 1 / 2 = 0 columns, accepted the atom 1x4, and laid B out in 4-wide column panels
// of a 1-wide buffer, which the GroupIR verifier then refused. The lowering now takes
// the part as the fragment really has it, and B's buffer in whole panels; the fma
// atom need not divide the part (the cpu runs the rest with edge kernels), so the
// atom 1x4 runs, as does the one that fits.
TEST(Regression, AtomOnAReplicatedAccumulatorColumnRuns) {
  Case c{kGemm, {{"M", 15}, {"N", 2}, {"K", 14}}, {{"BM", 8}, {"BN", 1}, {"BK", 8}}};
  c.worker_cols = 2;
  c.atom_n = 4;
  expect_correct(c);
  c.atom_n = 1;
  c.atom_m = 4;
  expect_correct(c);
}

// Generator feedback (the 1-D grid's column loop reading the tile its previous trip
// stored), first seen as seed 292 and 40 others in 5000: a `pipeline` loop whose
// body stores a tensor it also loads. The lowering staged the load, and the
// pipeline pass issued its copy iterations ahead, before the stores it must see:
// wrong values with sync copies, races on the sim with async ones (an async copy
// reading F while a frag.store writes it). Now the lowering keeps such a load a plain
// fragment load in program order, and the other loads of the loop are still
// pipelined.
const char* kFeedback = R"(
kernel feedback(sizes M, N; tiles BM, BN;
                tensors X: f32[M, N] strides(N, 1) in, F: f32[M, N] strides(N, 1) inout; scalars) {
  parallel i = ceildiv(M, BM) {
    pipeline j = ceildiv(N, BN) iter() {
      %p = load F[(i * BM), (max((j - 1), 0) * BN)] : f32[BM, BN]
      %x = load X[(i * BM), (j * BN)] : f32[BM, BN]
      %y = add %p, %x : f32[BM, BN]
      %z = tanh %y : f32[BM, BN]
      store %z to F[(i * BM), (j * BN)]
      yield
    }
  }
}
)";

TEST(Regression, PipelinedLoopStoringATensorItLoads) {
  for (int window : {2, 3})
    for (bool async : {false, true}) {
      SCOPED_TRACE("window " + std::to_string(window) + (async ? " async" : " sync"));
      Case c{kFeedback, {{"M", 7}, {"N", 29}}, {{"BM", 4}, {"BN", 8}}};
      c.worker_rows = 2;
      c.worker_cols = 2;
      c.window = window;
      c.async = async;
      EXPECT_EQ(expect_correct(c), 1) << "the loop is pipelined (X's copies issued ahead)";
    }
}

// The same hazard where the lowering must stage the load (an mma reads it): the
// pipeline pass itself leaves the loop alone. Without that check, window 2 computes
// with F's tile read before the previous trip's store.
const char* kFeedbackMma = R"(
kernel feedback_mma(sizes M, N, K; tiles BM, BN, BK;
                    tensors F: f32[M, K] strides(K, 1) inout, B: f32[K, N] strides(N, 1) in,
                            C: f32[M, N] strides(N, 1) out; scalars) {
  parallel i = ceildiv(M, BM) {
    %zero = const 0 : f32[BM, BN]
    %acc = pipeline k = ceildiv(K, BK) iter(%c: f32[BM, BN] = %zero) : f32[BM, BN] {
      %a = load F[(i * BM), (max((k - 1), 0) * BK)] : f32[BM, BK]
      %b = load B[(k * BK), 0] : f32[BK, BN]
      %d = mma %a, %b, %c : f32[BM, BN]
      %t = tanh %a : f32[BM, BK]
      store %t to F[(i * BM), (k * BK)]
      yield %d
    }
    store %acc to C[(i * BM), 0]
  }
}
)";

TEST(Regression, PipelinedMmaOperandStoredByTheLoop) {
  for (int window : {2, 3})
    for (bool async : {false, true}) {
      SCOPED_TRACE("window " + std::to_string(window) + (async ? " async" : " sync"));
      Case c{kFeedbackMma, {{"M", 9}, {"N", 6}, {"K", 19}}, {{"BM", 4}, {"BN", 8}, {"BK", 4}}};
      c.worker_rows = 2;
      c.worker_cols = 2;
      c.window = window;
      c.async = async;
      EXPECT_EQ(expect_correct(c), 0) << "the loop is left as it is";
    }
}

// Pool mma (the generator's mma of a pool value with a [C, C] tile, no K loop),
// first seen as seed 3657 and 9 others in 20000: a `pad 2` a tile. The lowering gave
// every mma the valid extents of its staging copies (m_valid, n_valid), skipping
// the accumulator's rows and columns outside the tensors as "never stored"; but
// with non-zero padding those rows and columns are data, and a reduction reads them.
// Now m_valid and n_valid come only from zero-padded operands (where they add
// nothing), as k_valid always did.
const char* kPaddedMma = R"(
kernel padded_mma(sizes M, N; tiles BM, BN;
                  tensors X: f32[M, N] strides(N, 1) in, W: f32[N, N] strides(N, 1) in,
                          S: f32[N] strides(1) out, R: f32[M] strides(1) out; scalars) {
  parallel i = ceildiv(M, BM) {
    %x = load X[(i * BM), 0] pad 2 : f32[BM, BN]
    %w = load W[0, 0] pad 1 : f32[BN, BN]
    %zero = const 0 : f32[BM, BN]
    %y = mma %x, %w, %zero : f32[BM, BN]
    %s = reduce.sum %y axis 0 : f32[1, BN]
    store %s to S[0]
    %r = reduce.sum %y axis 1 : f32[BM, 1]
    store %r to R[(i * BM)] dims(0, -1)
  }
}
)";

TEST(Regression, MmaWithNonZeroPaddingComputesTheWholeTile) {
  for (int workers : {1, 2}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    Case c{kPaddedMma, {{"M", 5}, {"N", 6}}, {{"BM", 8}, {"BN", 8}}};
    c.worker_cols = workers;
    expect_correct(c);
  }
  // Zero padding keeps the valid extents (a ragged GEMM tile costs its data only).
  Case c{kGemm, {{"M", 5}, {"N", 6}, {"K", 7}}, {{"BM", 8}, {"BN", 8}, {"BK", 8}}};
  RandomKernel rk = as_random_kernel(c);
  GroupProgram p = lower_to_group(rk.kernel, plan_of(c).plan);
  int mmas = 0;
  std::function<void(const std::vector<GroupOp>&)> visit = [&](const std::vector<GroupOp>& ops) {
    for (const GroupOp& op : ops) {
      if (op.kind == GroupOpKind::Mma) {
        ++mmas;
        EXPECT_TRUE(op.m_valid && op.n_valid && op.k_valid) << print_group_program(p);
      }
      for (const auto& body : op.bodies) visit(body);
    }
  };
  visit(p.body);
  EXPECT_EQ(mmas, 1);
  expect_correct(c);
}

// Found by the libFuzzer build of the differential fuzzer (ASan): lower_reduce held
// a reference to its source fragment's Buffer across new_frag, which may grow (and
// move) the program's buffer list; a cross-worker reduction then read the freed
// Buffer for the size of its scratch. Three tensors and one fragment put the
// result fragment exactly at a reallocation (libstdc++ doubles capacity). A
// heap-use-after-free in the ASan build; the numbers are checked too.
const char* kReduceAfterRealloc = R"(
kernel row_sums_bias(sizes M, N; tiles BM, BN;
                     tensors X: f32[M, N] strides(N, 1) in, b: f32[M] strides(1) in,
                             R: f32[M] strides(1) out; scalars) {
  parallel i = ceildiv(M, BM) {
    %x = load X[(i * BM), 0] : f32[BM, BN]
    %r = reduce.sum %x axis 1 : f32[BM, 1]
    %b = load b[(i * BM)] dims(0, -1) : f32[BM, 1]
    %y = add %r, %b : f32[BM, 1]
    store %y to R[(i * BM)] dims(0, -1)
  }
}
)";

TEST(Regression, CrossWorkerReduceAfterTheBufferListGrows) {
  Case c{kReduceAfterRealloc, {{"M", 13}, {"N", 7}}, {{"BM", 4}, {"BN", 8}}};
  c.worker_rows = 2;
  c.worker_cols = 4;
  expect_correct(c);
}

}  // namespace
}  // namespace tessel
