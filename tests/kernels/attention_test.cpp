// Fused attention (src/ops/attention.cpp, kernels/attention*.tir): causal and not,
// head_dim 64 and 128, ragged sequence lengths (Sq and Skv apart, neither a
// multiple of any tile), grouped-query attention, on sim (0 races) and cpu, every
// output against the FP64 evaluator with NaN-poisoned outputs and fresh inputs.
// Then the structure: causal blocks right of the diagonal are never visited, and
// every fence precise barrier planning keeps is needed (the sim sees a race
// without it). Last, bf16 and f16 inputs: the GroupIR of the cuda plans (the
// mma.sync atom, warps along the rows) on the sim, and the DSL against the text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "../cuda/attention_cases.h"
#include "../property/differential.h"
#include "check/checked_run.h"
#include "compiler/compile.h"
#include "eval/evaluate.h"
#include "ir/group_text.h"
#include "kernel_files.h"
#include "ops/library.h"
#include "passes/plan_barriers.h"
#include "plan/default_plan.h"
#include "runtime/tensor_check.h"
#include "target/sim/sim.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

struct Shape {
  const char* name;
  int64_t b, hq, hkv, sq, skv, d;
};

std::map<std::string, int64_t> sizes_of(const Shape& s) {
  return {{"B", s.b}, {"Hq", s.hq}, {"Hkv", s.hkv}, {"Sq", s.sq}, {"Skv", s.skv}, {"D", s.d}};
}

// Ragged everywhere; GQA groups of 1, 2 and 3 query heads per K/V head; more keys
// than queries and fewer; one query row; fewer keys than one block.
const Shape kShapes[] = {
    {"gqa2_d64", 2, 4, 2, 37, 45, 64},
    {"gqa3_d64_short_kv", 1, 3, 1, 45, 21, 64},
    {"mha_d128", 1, 2, 2, 29, 35, 128},
    {"gqa2_d128_one_query", 2, 2, 1, 1, 23, 128},
    {"mha_d64_tiny_kv", 1, 2, 2, 19, 5, 64},
};

struct Case {
  std::string name;
  AttentionMask mask;
  Shape shape;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  std::vector<Case> out;
  for (AttentionMask m : {AttentionMask::None, AttentionMask::Causal})
    for (const Shape& s : kShapes)
      out.push_back({std::string(m == AttentionMask::Causal ? "causal_" : "full_") + s.name, m, s});
  return out;
}

void expect_checked(const Kernel& k, const Case& c, uint64_t seed) {
  CheckedRun r = run_checked(k, sizes_of(c.shape), {}, seed);
  EXPECT_TRUE(r.ok) << c.name << " on " << target_name(k.plan().target) << " ("
                    << k.plan().to_string() << "): rel_err " << r.worst << " bound " << r.bound;
  EXPECT_EQ(r.launch.races, 0);
  for (const std::string& m : r.launch.race_messages) ADD_FAILURE() << m;
}

Plan plan_for(const Case& c, TargetKind target, const std::function<void(Plan&)>& change = {}) {
  TileKernel k = attention_kernel(c.mask);
  Plan p = default_plan(k, target, sizes_of(c.shape));
  if (change) change(p);
  fit_worker_grid(k, p);
  return p;
}

class Attention : public ::testing::TestWithParam<Case> {};

TEST_P(Attention, SimDefaultPlan) {
  const Case& c = GetParam();
  expect_checked(compile(attention_kernel(c.mask), TargetKind::Sim, sizes_of(c.shape)), c, 21);
}

// Eight workers in a 2 x 4 grid, 8 keys a step: reductions over four workers,
// blocks that do not line up with the query blocks (BM != BN) on the diagonal.
TEST_P(Attention, SimEightWorkersNarrowKeyBlocks) {
  const Case& c = GetParam();
  Plan p = plan_for(c, TargetKind::Sim, [](Plan& p) {
    p.workers = 8;
    p.tiles["BN"] = 8;
  });
  expect_checked(compile(attention_kernel(c.mask), p), c, 22);
}

// The K/V loop double-buffered, with asynchronous copies.
TEST_P(Attention, SimPipelinedAsync) {
  const Case& c = GetParam();
  Plan p = plan_for(c, TargetKind::Sim, [](Plan& p) {
    p.window = 2;
    p.async_copy = true;
    p.tiles["BM"] = 8;
  });
  expect_checked(compile(attention_kernel(c.mask), p), c, 23);
}

TEST_P(Attention, CpuDefaultPlan) {
  const Case& c = GetParam();
  expect_checked(compile(attention_kernel(c.mask), TargetKind::Cpu, sizes_of(c.shape)), c, 24);
}

// Small tiles on the cpu: several query and key blocks, ragged at both ends.
TEST_P(Attention, CpuSmallTilesFourWorkers) {
  const Case& c = GetParam();
  Plan p = plan_for(c, TargetKind::Cpu, [](Plan& p) {
    p.workers = 4;
    p.tiles["BM"] = 16;
    p.tiles["BN"] = 8;
    p.window = 2;
  });
  expect_checked(compile(attention_kernel(c.mask), p), c, 25);
}

// The micro-kernel atom over several query and key blocks (the default plan's
// tiles cover these short sequences in one block each).
TEST_P(Attention, CpuMicroKernelSeveralBlocks) {
  const Case& c = GetParam();
  Plan p = plan_for(c, TargetKind::Cpu, [](Plan& p) {
    p.tiles["BM"] = 16;
    p.tiles["BN"] = 32;
    p.atom_m = 16;
    p.atom_n = 32;
  });
  EXPECT_EQ(p.atom_m * p.atom_n, 16 * 32) << p.to_string();
  expect_checked(compile(attention_kernel(c.mask), p), c, 28);
}

// The text files compile to kernels that pass the same checks.
TEST_P(Attention, TextFileOnSimAndCpu) {
  const Case& c = GetParam();
  TileKernel k = load_kernel_file(c.mask == AttentionMask::Causal ? "attention_causal" : "attention");
  expect_checked(compile(k, TargetKind::Sim, sizes_of(c.shape)), c, 26);
  expect_checked(compile(k, TargetKind::Cpu, sizes_of(c.shape)), c, 27);
}

// ---- the kernel's math against a direct FP64 attention ---------------------------

// The checks above compare the compiled kernel with the FP64 evaluator of its own
// TileIR: they judge the compiler. This judges the kernel: its TileIR, evaluated in
// FP64 with several tilings, against attention written out directly (a full
// softmax per row, no blocking): GQA head mapping, scale, causal alignment, edges.
std::vector<double> direct_attention(const Shape& s, bool causal, double scale,
                                     const std::vector<double>& q, const std::vector<double>& k,
                                     const std::vector<double>& v) {
  std::vector<double> o(static_cast<size_t>(s.b * s.hq * s.sq * s.d));
  for (int64_t b = 0; b < s.b; ++b)
    for (int64_t h = 0; h < s.hq; ++h) {
      int64_t g = h / (s.hq / s.hkv);
      const double* qh = &q[static_cast<size_t>((b * s.hq + h) * s.sq * s.d)];
      const double* kh = &k[static_cast<size_t>((b * s.hkv + g) * s.skv * s.d)];
      const double* vh = &v[static_cast<size_t>((b * s.hkv + g) * s.skv * s.d)];
      double* oh = &o[static_cast<size_t>((b * s.hq + h) * s.sq * s.d)];
      for (int64_t r = 0; r < s.sq; ++r) {
        std::vector<double> p(static_cast<size_t>(s.skv), 0.0);
        double mx = -INFINITY, sum = 0;
        int64_t seen = causal ? std::min(s.skv, r + 1) : s.skv;  // top-left aligned
        for (int64_t c = 0; c < seen; ++c) {
          double dot = 0;
          for (int64_t d = 0; d < s.d; ++d) dot += qh[r * s.d + d] * kh[c * s.d + d];
          p[c] = dot * scale;
          mx = std::max(mx, p[c]);
        }
        for (int64_t c = 0; c < seen; ++c) sum += (p[c] = std::exp(p[c] - mx));
        for (int64_t d = 0; d < s.d; ++d) {
          double acc = 0;
          for (int64_t c = 0; c < seen; ++c) acc += p[c] * vh[c * s.d + d];
          oh[r * s.d + d] = acc / sum;
        }
      }
    }
  return o;
}

TEST_P(Attention, KernelComputesAttention) {
  const Case& c = GetParam();
  bool causal = c.mask == AttentionMask::Causal;
  const double scale = 0.3;
  for (const TileKernel& k : {attention_kernel(c.mask),
                              load_kernel_file(causal ? "attention_causal" : "attention")}) {
    std::map<std::string, int64_t> sizes = sizes_of(c.shape);
    default_strides(k.tensors, sizes);
    struct Tiling { int64_t bm, bn; };
    for (Tiling t : {Tiling{16, 16}, Tiling{8, 16}, Tiling{16, 4}, Tiling{64, 64}}) {
      auto tensors = random_tensors(k.tensors, sizes, 31 + t.bm + t.bn);
      EvalArgs ea;
      ea.sizes = sizes;
      ea.scalars["scale"] = scale;
      ea.tiles = {{"BM", t.bm}, {"BN", t.bn}, {"BD", c.shape.d <= 64 ? 64 : 128}};
      for (auto& [name, h] : tensors) ea.tensors[name] = std::span<double>(h.oracle);
      evaluate(k, ea);
      std::vector<double> want = direct_attention(c.shape, causal, scale, tensors["Q"].oracle,
                                                  tensors["K"].oracle, tensors["V"].oracle);
      EXPECT_LE(relative_error(std::span<const double>(tensors["O"].oracle), std::span<const double>(want)), 1e-12)
          << k.name << " BM=" << t.bm << " BN=" << t.bn;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, Attention, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// ---- structure ---------------------------------------------------------------

std::map<std::string, int64_t> launch_sizes(const TileKernel& k, const Shape& s) {
  std::map<std::string, int64_t> sizes = sizes_of(s);
  default_strides(k.tensors, sizes);
  return sizes;
}

const GroupOp* find_loop(const std::vector<GroupOp>& ops) {
  for (const GroupOp& op : ops)
    if (op.kind == GroupOpKind::For) return &op;
  return nullptr;
}

// Causal: the K/V loop's extent depends on the query block i, so a group visits
// only the blocks left of (and on) the diagonal; the fences it executes grow with i.
TEST(AttentionStructure, CausalSkipsBlocksRightOfTheDiagonal) {
  const Shape s{"", 1, 1, 1, 64, 64, 64};
  TileKernel k = attention_kernel(AttentionMask::Causal);
  Plan p = default_plan(k, TargetKind::Sim, sizes_of(s));  // BM = BN = 16
  ASSERT_EQ(p.tile("BM"), 16);
  ASSERT_EQ(p.tile("BN"), 16);
  Kernel kernel = compile(k, p);
  const GroupOp* loop = find_loop(kernel.program().body);
  ASSERT_NE(loop, nullptr);
  const GroupProgram& g = kernel.program();
  ASSERT_EQ(g.grid.size(), 3u);  // batch, head, query block
  const std::string qblock = g.grid[2].iv;
  bool names_qblock = false;
  expr_symbols(loop->hi, [&](const std::string& n) { names_qblock |= n == qblock; });
  EXPECT_TRUE(names_qblock) << expr_to_string(loop->hi);
  std::map<std::string, int64_t> sizes = launch_sizes(k, s);
  sizes[g.grid[0].iv] = 0;
  sizes[g.grid[1].iv] = 0;
  int64_t fences[4];
  for (int64_t i = 0; i < 4; ++i) {
    sizes[qblock] = i;
    fences[i] = count_fences_executed(kernel.program(), [&](const std::string& n, int64_t* v) {
      auto it = sizes.find(n);
      if (it == sizes.end()) return false;
      *v = it->second;
      return true;
    });
  }
  // Query block i visits i + 1 key blocks: the fences per group grow by a constant.
  int64_t per_block = fences[1] - fences[0];
  EXPECT_GT(per_block, 0);
  for (int64_t i = 1; i < 4; ++i) EXPECT_EQ(fences[i] - fences[i - 1], per_block) << i;
  // The non-causal kernel visits all four blocks for every query block.
  Kernel full = compile(attention_kernel(AttentionMask::None), p);
  sizes[full.program().grid[0].iv] = 0;
  sizes[full.program().grid[1].iv] = 0;
  sizes[full.program().grid[2].iv] = 0;
  int64_t full_fences = count_fences_executed(full.program(), [&](const std::string& n, int64_t* v) {
    auto it = sizes.find(n);
    if (it == sizes.end()) return false;
    *v = it->second;
    return true;
  });
  EXPECT_EQ(full_fences, fences[3]);
}

// Removes the n-th fence (in program order, nested bodies included); false when
// there are fewer.
bool erase_fence(std::vector<GroupOp>& ops, int& n) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == GroupOpKind::Fence && n-- == 0) {
      ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    }
    for (auto& body : ops[i].bodies)
      if (erase_fence(body, n)) return true;
  }
  return false;
}

struct SimOutcome {
  int64_t races = 0;
  std::vector<float> out;  // O after the run
};

SimOutcome run_on_sim(const GroupProgram& p, const std::map<std::string, int64_t>& sizes,
                      uint64_t seed) {
  std::map<std::string, std::vector<float>> data;
  LaunchArgs args;
  args.sizes = sizes;
  args.scalars["scale"] = 0.125;
  uint64_t x = 88172645463325252ull;
  for (const TensorParam& t : p.tensors) {
    std::vector<float>& d = data[t.name];
    d.resize(check_tensor(t, sizes).elements);
    for (float& v : d) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      v = t.access == Access::Out ? NAN : static_cast<float>(x % 2001) / 1000.0f - 1.0f;
    }
    args.tensors[t.name] = d.data();
  }
  SimOptions o;
  o.seed = seed;
  SimOutcome r;
  r.races = run_sim(p, args, o).race_count;
  r.out = data["O"];
  return r;
}

std::vector<int> fence_ids(const std::vector<GroupOp>& ops) {
  std::vector<int> ids;
  for (const GroupOp& op : ops) {
    if (op.kind == GroupOpKind::Fence) ids.push_back(op.id);
    for (const auto& body : op.bodies)
      for (int id : fence_ids(body)) ids.push_back(id);
  }
  return ids;
}

// The ids of the fences whose removal, one at a time, leaves the sim without a race.
std::vector<int> fences_not_needed(const GroupProgram& p, const std::map<std::string, int64_t>& sizes) {
  std::vector<int> ids = fence_ids(p.body), idle;
  for (size_t f = 0; f < ids.size(); ++f) {
    GroupProgram mutant = p;
    int n = static_cast<int>(f);
    EXPECT_TRUE(erase_fence(mutant.body, n));
    if (run_on_sim(mutant, sizes, 2 + f).races == 0) idle.push_back(ids[f]);
  }
  return idle;
}

struct MutationCase {
  const char* name;
  AttentionMask mask;
  int workers, window;
  bool async;
};

void PrintTo(const MutationCase& m, std::ostream* os) { *os << m.name; }

class AttentionFences : public ::testing::TestWithParam<MutationCase> {};

// Ragged lengths and GQA, so that edges and shared K/V heads are in play.
const Shape kMutationShape{"", 1, 2, 1, 21, 27, 64};

CompiledGroup compile_for_mutation(const MutationCase& m, bool precise) {
  TileKernel k = attention_kernel(m.mask);
  Plan p = default_plan(k, TargetKind::Sim, sizes_of(kMutationShape));
  p.workers = m.workers;
  p.window = m.window;
  p.async_copy = m.async;
  p.tiles["BM"] = 8;
  p.tiles["BN"] = 8;
  fit_worker_grid(k, p);
  CompileOptions o;
  o.precise_barriers = precise;
  return compile_to_group(k, p, o);
}

// Precise barrier planning (passes/plan_barriers.h): 0 races as compiled, the same
// output as the default planning, and a race for every single fence removed.
TEST_P(AttentionFences, EveryFencePreciseBarrierPlanningKeepsIsNeeded) {
  const MutationCase& m = GetParam();
  CompiledGroup precise = compile_for_mutation(m, true), plain = compile_for_mutation(m, false);
  std::map<std::string, int64_t> sizes = launch_sizes(attention_kernel(m.mask), kMutationShape);
  SimOutcome a = run_on_sim(precise.program, sizes, 1), b = run_on_sim(plain.program, sizes, 1);
  ASSERT_EQ(a.races, 0);
  ASSERT_EQ(b.races, 0);
  ASSERT_EQ(a.out.size(), b.out.size());
  for (size_t e = 0; e < a.out.size(); ++e)
    ASSERT_TRUE(a.out[e] == b.out[e] || (std::isnan(a.out[e]) && std::isnan(b.out[e]))) << e;
  ASSERT_GT(precise.barriers.static_after, 0);
  EXPECT_LT(precise.barriers.static_after, plain.barriers.static_after);
  for (int id : fences_not_needed(precise.program, sizes))
    ADD_FAILURE() << m.name << ": fence #" << id << " is kept but not needed\n"
                  << print_group_program(precise.program);
}

// The default planning keeps a few more by rule (a loop body's and the program's
// last fence, the fence before a loop): exactly those the precise planning drops.
TEST_P(AttentionFences, DefaultPlanningKeepsOnlyWhatPrecisePlanningDropsBeyondNeed) {
  const MutationCase& m = GetParam();
  CompiledGroup precise = compile_for_mutation(m, true), plain = compile_for_mutation(m, false);
  std::map<std::string, int64_t> sizes = launch_sizes(attention_kernel(m.mask), kMutationShape);
  std::vector<int> kept = fence_ids(precise.program.body);
  for (int id : fences_not_needed(plain.program, sizes))
    EXPECT_EQ(std::count(kept.begin(), kept.end(), id), 0) << m.name << ": fence #" << id;
}

INSTANTIATE_TEST_SUITE_P(Kernels, AttentionFences,
                         ::testing::Values(MutationCase{"full_4w", AttentionMask::None, 4, 1, false},
                                           MutationCase{"causal_4w", AttentionMask::Causal, 4, 1, false},
                                           MutationCase{"full_8w_window2", AttentionMask::None, 8, 2, false},
                                           MutationCase{"causal_4w_async", AttentionMask::Causal, 4, 2, true}),
                         [](const ::testing::TestParamInfo<MutationCase>& i) { return std::string(i.param.name); });

// ---- precise barrier planning beyond attention ----------------------------------

// Precise planning removes fences only where the default planning kept them by
// rule: on random well-typed kernels (eval/random_kernel.h) with random plans
// (windows, async copies, worker grids, atoms), every phase planned precisely runs
// on the sim with 0 races and writes what the default planning's program writes.
void precise_on_random_kernels(uint64_t first, uint64_t count) {
  int fewer = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    RandomKernelOptions ro;
    ro.narrow_tensors = false;
    RandomKernel rk = random_kernel(seed, ro);
    difftest::PlanChoice choice = difftest::random_plan(rk, seed);
    std::map<std::string, std::vector<float>> data[2];
    for (int precise = 0; precise < 2; ++precise) {
      LaunchArgs args;
      args.sizes = rk.sizes;
      args.scalars = rk.scalars;
      std::mt19937_64 rng(seed);
      for (const TensorParam& t : rk.kernel.tensors) {
        std::vector<float>& d = data[precise][t.name];
        d.resize(std::max<int64_t>(1, check_tensor(t, rk.sizes).elements));
        for (float& v : d)
          v = t.access == Access::Out ? NAN : static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
        args.tensors[t.name] = d.data();
      }
      for (const TileKernel& phase : split_phases(rk.kernel)) {
        CompileOptions o;
        o.precise_barriers = precise;
        CompiledGroup g = compile_to_group(phase, choice.plan, o);
        if (precise) {
          CompileOptions plain;
          fewer += g.barriers.static_after < compile_to_group(phase, choice.plan, plain).barriers.static_after;
        }
        SimOptions so;
        so.seed = choice.sim_seed;
        SimResult r = run_sim(g.program, args, so);
        EXPECT_EQ(r.race_count, 0) << "seed " << seed << (precise ? " precise" : " default") << " ("
                                   << choice.plan.to_string() << ")\n"
                                   << (r.races.empty() ? "" : r.races[0].message) << "\n"
                                   << print_group_program(g.program);
      }
    }
    for (const auto& [name, d] : data[0]) {
      const std::vector<float>& e = data[1][name];
      ASSERT_EQ(d.size(), e.size());
      for (size_t i = 0; i < d.size(); ++i)
        ASSERT_TRUE(d[i] == e[i] || (std::isnan(d[i]) && std::isnan(e[i])))
            << "seed " << seed << ": tensor " << name << " element " << i;
    }
  }
  // The refinement bites: most kernels lose at least one fence.
  EXPECT_GT(fewer, 0);
}

TEST(PreciseBarrierPlanning, RandomKernelsSeeds0To249) { precise_on_random_kernels(0, 250); }
TEST(PreciseBarrierPlanning, RandomKernelsSeeds250To499) { precise_on_random_kernels(250, 250); }
TEST(PreciseBarrierPlanning, RandomKernelsSeeds500To749) { precise_on_random_kernels(500, 250); }
TEST(PreciseBarrierPlanning, RandomKernelsSeeds750To999) { precise_on_random_kernels(750, 250); }

// ---- 16-bit inputs: the cuda plans' GroupIR on the sim ----------------------------

class AttentionSixteenBit : public ::testing::TestWithParam<test::AttentionCase> {};

// The program the cuda target emits for the default plan (mma.sync, warps along the
// rows), for a 2-warp, window-3 variant, for 128 rows over 8 warps and over 4 (the
// default where the query rows cover two tiles: two 16-row mma tiles a warp), run on the
// sim: 0 races, and O within the dtype's bound of the FP64 evaluator
// (tests/cuda/attention_cases.h).
TEST_P(AttentionSixteenBit, CudaPlanProgramOnSim) {
  const test::AttentionCase& c = GetParam();
  TileKernel k = attention_kernel(c.mask, c.dtype);
  std::map<std::string, int64_t> sizes = test::attention_sizes(c.shape);
  Plan def = default_plan(k, TargetKind::Cuda, sizes);
  ASSERT_EQ(def.atom, AtomKind::MmaSync) << def.to_string();
  ASSERT_EQ(def.worker_cols, 1) << def.to_string();
  Plan narrow = def;
  narrow.tiles["BN"] = 32;
  narrow.workers = 2;
  narrow.window = 3;
  fit_worker_grid(k, narrow);
  Plan eight = def;
  eight.tiles["BM"] = 128;
  eight.workers = 8;
  fit_worker_grid(k, eight);
  ASSERT_EQ(eight.worker_rows, 8) << eight.to_string();
  Plan two_tiles = def;
  two_tiles.tiles["BM"] = 128;
  two_tiles.workers = 4;
  fit_worker_grid(k, two_tiles);
  ASSERT_EQ(two_tiles.worker_rows, 4) << two_tiles.to_string();
  for (const Plan& plan : {def, narrow, eight, two_tiles}) {
    CompiledGroup g = compile_to_group(k, plan, CompileOptions{});
    ASSERT_EQ(g.program.lanes, 32);
    int64_t races = 0;
    test::AttentionCheck r = test::check_attention(
        k, plan.tiles, sizes, 41, [&](const auto& sz, const auto& scalars, auto& tensors) {
          LaunchArgs a;
          a.sizes = sz;
          a.scalars = scalars;
          for (auto& [name, h] : tensors) a.tensors[name] = h.data.data();
          SimResult s = run_sim(g.program, a);
          races = s.race_count;
          for (const Race& x : s.races) ADD_FAILURE() << x.message;
        });
    EXPECT_EQ(races, 0) << plan.to_string();
    EXPECT_TRUE(r.ok()) << c.name << " (" << plan.to_string() << "): rel_err " << r.rel_err << " bound " << r.bound
                        << ", non-finite " << r.nan_or_inf;
  }
}

// The text files of the 16-bit kernels are the DSL's kernels: the same O on the
// same inputs (evaluated in FP64 at the default cuda plan's tiles).
TEST(AttentionSixteenBitText, TextFilesAreTheDslKernels) {
  const test::AttentionShape shape = test::attention_shapes()[0];
  for (DType t : {DType::BF16, DType::F16})
    for (AttentionMask m : {AttentionMask::None, AttentionMask::Causal}) {
      TileKernel dsl = attention_kernel(m, t);
      SCOPED_TRACE(dsl.name);
      TileKernel text = load_kernel_file(dsl.name);
      EXPECT_EQ(text.tensors.at(0).dtype, t);
      std::map<std::string, int64_t> sizes = test::attention_sizes(shape);
      Plan plan = default_plan(dsl, TargetKind::Cuda, sizes);
      auto o_of = [&](const TileKernel& k) {
        std::map<std::string, int64_t> sz = sizes;
        default_strides(k.tensors, sz);
        auto tensors = random_tensors(k.tensors, sz, 43);
        EvalArgs ea;
        ea.sizes = sz;
        ea.tiles = plan.tiles;
        ea.scalars = {{"scale", 0.125}};
        for (auto& [name, h] : tensors) {
          if (name != "O")
            for (double& x : h.oracle) x = round_to_dtype(x, t);
          ea.tensors[name] = std::span<double>(h.oracle);
        }
        evaluate(k, ea);
        return tensors.at("O").oracle;
      };
      std::vector<double> a = o_of(dsl), b = o_of(text);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << i;
      for (double x : a) ASSERT_TRUE(std::isfinite(x));
    }
}

// The sim judges this program too: without the fence after the k loop's async.wait
// (the staged K^T and V tiles every warp reads), it reports races. The plan's only
// other fence is the loop body's last (precise planning keeps it because the next
// step's async.wait completes copies of any version); the probabilities go to the
// second mma in registers, so no fence orders them.
TEST(AttentionSixteenBitFences, DroppingTheStagingFenceIsARace) {
  TileKernel k = attention_kernel(AttentionMask::None, DType::BF16);
  std::map<std::string, int64_t> sizes = {{"B", 1}, {"Hq", 2}, {"Hkv", 1}, {"Sq", 77}, {"Skv", 150}, {"D", 64}};
  Plan plan = default_plan(k, TargetKind::Cuda, sizes);
  GroupProgram p = compile_to_group(k, plan, CompileOptions{}).program;
  auto races = [&](const GroupProgram& prog) {
    std::map<std::string, int64_t> sz = sizes;
    default_strides(k.tensors, sz);
    auto tensors = random_tensors(k.tensors, sz, 3);
    LaunchArgs a;
    a.sizes = sz;
    a.scalars = {{"scale", 0.125}};
    for (auto& [name, h] : tensors) a.tensors[name] = h.data.data();
    return run_sim(prog, a).race_count;
  };
  EXPECT_EQ(races(p), 0);
  GroupOp* loop = nullptr;
  for (GroupOp& op : p.body)
    if (op.kind == GroupOpKind::For) loop = &op;
  ASSERT_NE(loop, nullptr);
  std::vector<GroupOp>& body = loop->bodies[0];
  auto wait = std::find_if(body.begin(), body.end(), [](const GroupOp& op) { return op.kind == GroupOpKind::AsyncWait; });
  ASSERT_TRUE(wait != body.end() && wait + 1 != body.end() && (wait + 1)->kind == GroupOpKind::Fence)
      << print_group_program(p);
  body.erase(wait + 1);
  EXPECT_GT(races(p), 0);
}

INSTANTIATE_TEST_SUITE_P(Kernels, AttentionSixteenBit, ::testing::ValuesIn(test::attention_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace tessel
