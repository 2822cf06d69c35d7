// The planner (docs/planner.md): candidates are legal and correct (on cuda also the
// tma, producer and persistent axes, and fragments within the register file), the
// cost model fits and ranks, measuring checks every kernel against the FP64 oracle
// (and on cuda without a GPU says so), the tuning cache keeps its directory's rules,
// dispatch follows the cache then the model, and the CLI refuses bad input with
// status 2.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <fstream>
#include <random>
#include <sstream>

#include "check/checked_run.h"
#include "ir/tile_text.h"
#include "ops/gemm_kernel.h"
#include "ops/library.h"
#include "plan/candidates.h"
#include "plan/cost_model.h"
#include "plan/dispatch.h"
#include "plan/measure.h"
#include "plan/shape_draws.h"
#include "plan/tuning_cache.h"
#include "target/sim/sim.h"
#include "../sim/small_int_gemm.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_driver.h"
#endif
#include "tessel/tessel.h"

namespace tessel {
namespace {

TileKernel kernel_file(const std::string& name) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/kernels/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return parse_tile_kernel(s.str());
}

std::string temp_dir(mode_t mode) {
  char tmpl[] = "/tmp/tessel-plan-test-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  ::chmod(dir.c_str(), mode);
  return dir;
}

// Small bounds so the sim runs every candidate of a ragged shape quickly.
CandidateBounds sim_bounds() {
  CandidateBounds b;
  b.tile_values = {4, 8, 16};
  b.workers = {1, 4};
  return b;
}

// Every legal candidate passed the verifier (compile_to_group), runs on the sim with
// no race, and matches the FP64 evaluator on NaN-poisoned outputs.
void expect_candidates_correct(const TileKernel& k, const std::map<std::string, int64_t>& sizes, size_t at_least) {
  CandidateSet set = enumerate_candidates(k, TargetKind::Sim, sizes, sim_bounds());
  ASSERT_GE(set.legal.size(), at_least) << k.name;
  for (const auto& c : set.legal) {
    SCOPED_TRACE(k.name + ": " + c->plan.to_string());
    CheckedRun r = run_checked(compile(k, c->plan), sizes, {}, 7);
    EXPECT_EQ(r.launch.races, 0);
    EXPECT_TRUE(r.ok) << "rel_err " << r.worst << " bound " << r.bound;
  }
}

TEST(PlanCandidates, GemmCandidatesAreCorrectOnTheSim) {
  expect_candidates_correct(gemm_kernel(), {{"M", 19}, {"N", 13}, {"K", 11}, {"lda", 11}, {"ldb", 13}, {"ldc", 13}},
                            20);
}

TEST(PlanCandidates, TransposedGemmCandidatesAreCorrectOnTheSim) {
  expect_candidates_correct(kernel_file("gemm_nt.tir"),
                            {{"M", 9}, {"N", 17}, {"K", 10}, {"lda", 10}, {"ldb", 10}, {"ldc", 17}}, 20);
}

TEST(PlanCandidates, SoftmaxCandidatesAreCorrectOnTheSim) {
  expect_candidates_correct(softmax_kernel(), {{"M", 7}, {"N", 21}, {"ldx", 21}, {"ldy", 21}}, 8);
}

TEST(PlanCandidates, CpuGemmCandidatesSpanTheAxesAndAreLegal) {
  std::map<std::string, int64_t> sizes = {{"M", 100}, {"N", 70}, {"K", 40}};
  CandidateSet set = enumerate_candidates(gemm_kernel(), TargetKind::Cpu, sizes);
  ASSERT_GT(set.legal.size(), 50u);
  std::set<int64_t> bm, atoms, windows;
  for (const auto& c : set.legal) {
    bm.insert(c->plan.tiles.at("BM"));
    atoms.insert(c->plan.atom_m * 1000 + c->plan.atom_n);
    windows.insert(c->plan.window);
    EXPECT_LE(c->plan.tiles.at("BK"), 64);  // 64 covers K = 40: larger values only pad
  }
  EXPECT_GT(bm.size(), 4u);
  EXPECT_GT(atoms.size(), 2u);
  EXPECT_EQ(windows.size(), 2u);
  // A candidate is a compiled, runnable plan: one of them on the cpu target, checked.
  CheckedRun r = run_checked(compile(gemm_kernel(), set.legal[set.legal.size() / 2]->plan), sizes, {}, 3);
  EXPECT_TRUE(r.ok) << r.worst;
}

// Legality comes from the lowering and the target's limits: plans whose buffers the
// target cannot hold are rejected with the reason, and none of them is offered.
TEST(PlanCandidates, TargetLimitsRejectPlansWithAReason) {
  CandidateBounds b;
  b.tile_values = {16, 4096};
  b.workers = {1};
  CandidateSet sim = enumerate_candidates(softmax_kernel(), TargetKind::Sim, {{"M", 5000}, {"N", 5000}}, b);
  EXPECT_FALSE(sim.legal.empty());
  ASSERT_FALSE(sim.rejected.empty());
  EXPECT_EQ(sim.rejected.begin()->first.rfind("plan error: ", 0), 0u) << sim.rejected.begin()->first;
  for (const auto& c : sim.legal)
    EXPECT_LT(c->plan.tiles.at("BR") * c->plan.tiles.at("BC"), 4096 * 4096) << c->plan.to_string();

  // cuda (lowered only: no GPU needed): every offered plan fits 227 KiB of shared memory.
  CandidateBounds cb;
  cb.tile_values = {64, 256};
  CandidateSet cuda = enumerate_candidates(gemm_kernel(DType::BF16), TargetKind::Cuda,
                                           {{"M", 1000}, {"N", 1000}, {"K", 1000}}, cb);
  EXPECT_FALSE(cuda.legal.empty());
  EXPECT_FALSE(cuda.rejected.empty());
  std::set<AtomKind> atoms;
  for (const auto& c : cuda.legal) {
    atoms.insert(c->plan.atom);
    int64_t shared = 0;
    for (const GroupProgram& p : c->phases)
      for (const Buffer& buf : p.buffers)
        if (buf.space == Space::Shared) shared += buf.rows * buf.cols * buf.versions * dtype_bytes(buf.dtype);
    EXPECT_LE(shared, 227 * 1024) << c->plan.to_string();
  }
  EXPECT_TRUE(atoms.count(AtomKind::MmaSync) && atoms.count(AtomKind::Wgmma));
#ifdef TESSEL_WITH_CUDA
  EXPECT_FALSE(atoms.count(AtomKind::Fma));  // the emitter takes f32 operands only on the fma atom
#endif
}

TEST(PlanCostModel, FitRecoversASyntheticMachineAndRanksByIt) {
  // A made-up machine: times from known coefficients on real programs' features.
  Calibration truth = fallback_calibration(TargetKind::Cpu, 2);
  truth.coef[feature_index("flops_384")] *= 3;
  truth.coef[feature_index("bytes_in")] /= 2;
  std::vector<Sample> samples;
  std::mt19937_64 rng(5);
  MachineShape machine = machine_shape(TargetKind::Cpu, 2);
  for (int64_t m : {17, 64, 200})
    for (int64_t n : {33, 128})
      for (int64_t k : {20, 300}) {
        std::map<std::string, int64_t> sizes = {{"M", m}, {"N", n}, {"K", k}};
        CandidateSet set = enumerate_candidates(gemm_kernel(), TargetKind::Cpu, sizes);
        for (int i = 0; i < 6; ++i) {
          const auto& c = set.legal[rng() % set.legal.size()];
          Features f = program_features(*c, sizes, machine);
          samples.push_back({f, predict_us(truth, f)});
        }
      }
  Calibration fit = fit_calibration(samples, TargetKind::Cpu, 2);
  EXPECT_LT(fit.fit_median_rel_err, 1e-3);
  // On a shape it did not see, the fitted model orders candidates as the truth does.
  std::map<std::string, int64_t> sizes = {{"M", 150}, {"N", 90}, {"K", 77}};
  Ranking by_fit = rank_candidates(gemm_kernel(), TargetKind::Cpu, sizes, fit, 2);
  std::vector<double> predicted, actual;
  for (const RankedCandidate& c : by_fit.ranked) {
    predicted.push_back(c.predicted_us);
    actual.push_back(predict_us(truth, c.features));
  }
  EXPECT_GT(kendall_tau(predicted, actual), 0.99);
}

// The fit is robust (Huber's weights): a few runs far off any linear model (here
// every tenth run measured at twice the truth) do not pull the coefficients that
// predict the others (the 90th percentile error on the clean runs: 0.015; 0.07 by
// least squares).
TEST(PlanCostModel, FitIsRobustToAFewRunsFarOffTheModel) {
  Calibration truth = fallback_calibration(TargetKind::Cpu, 2);
  MachineShape machine = machine_shape(TargetKind::Cpu, 2);
  std::mt19937 rng(11);
  std::vector<Sample> samples;
  std::vector<bool> off;
  for (int64_t m : {20, 100, 300})
    for (int64_t k : {20, 300}) {
      std::map<std::string, int64_t> sizes = {{"M", m}, {"N", 64}, {"K", k}};
      CandidateSet set = enumerate_candidates(gemm_kernel(), TargetKind::Cpu, sizes);
      for (int i = 0; i < 10; ++i) {
        Features f = program_features(*set.legal[rng() % set.legal.size()], sizes, machine);
        off.push_back(samples.size() % 10 == 3);
        samples.push_back({f, predict_us(truth, f) * (off.back() ? 2.0 : 1.0)});
      }
    }
  Calibration fit = fit_calibration(samples, TargetKind::Cpu, 2);
  std::vector<double> err;
  for (size_t i = 0; i < samples.size(); ++i)
    if (!off[i]) err.push_back(std::abs(predict_us(fit, samples[i].features) / samples[i].us - 1));
  std::sort(err.begin(), err.end());
  EXPECT_LT(err[err.size() * 9 / 10], 0.03) << "90th percentile error on the clean runs (least squares: 0.07)";
}

TEST(PlanCostModel, FeaturesGrowWithTheShape) {
  auto c = enumerate_candidates(gemm_kernel(), TargetKind::Cpu, {{"M", 64}, {"N", 64}, {"K", 64}}).legal.at(0);
  MachineShape machine = machine_shape(TargetKind::Cpu, 1);
  Features small = program_features(*c, {{"M", 64}, {"N", 64}, {"K", 64}}, machine);
  Features large = program_features(*c, {{"M", 128}, {"N", 64}, {"K", 64}}, machine);
  double flops_small = 0, flops_large = 0;
  for (const char* name : {"flops_1", "flops_64", "flops_256", "flops_384", "flops_big"}) {
    flops_small += small[feature_index(name)];
    flops_large += large[feature_index(name)];
  }
  EXPECT_GE(flops_small, 2.0 * 64 * 64 * 64);  // whole tiles count: at least the real work
  EXPECT_NEAR(flops_large / flops_small, 2.0, 1e-9);
}

// The cpu's mma skips what a ragged tile holds no data in (mv, nv, kv): its flops
// are the real work, 2MNK, whatever the tiles; and its accumulator traffic
// (mma_acc) is M x N once per k tile. Every legal candidate of a ragged shape.
TEST(PlanCostModel, CpuMmaCountsTheValidPartOfRaggedTiles) {
  std::map<std::string, int64_t> sizes = {{"M", 70}, {"N", 45}, {"K", 37}};
  CandidateSet set = enumerate_candidates(gemm_kernel(), TargetKind::Cpu, sizes);
  ASSERT_GT(set.legal.size(), 50u);
  MachineShape machine = machine_shape(TargetKind::Cpu, 1);
  int checked = 0;
  for (size_t i = 0; i < set.legal.size(); i += 37) {
    const LegalCandidate& c = *set.legal[i];
    SCOPED_TRACE(c.plan.to_string());
    Features f = program_features(c, sizes, machine);
    double flops = 0;
    for (const char* name : {"flops_1", "flops_64", "flops_256", "flops_384", "flops_big"})
      flops += f[feature_index(name)];
    EXPECT_NEAR(flops, 2.0 * 70 * 45 * 37, 1e-6);
    const int64_t bk = c.plan.tiles.at("BK");
    EXPECT_NEAR(f[feature_index("mma_acc")], 70.0 * 45 * ((37 + bk - 1) / bk), 1e-6);
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

// The first legal softmax candidate with row tile BR x BC and window 1 (nullptr: none).
const LegalCandidate* row_tile(const CandidateSet& set, int64_t br, int64_t bc) {
  for (const auto& c : set.legal)
    if (c->plan.tiles.at("BR") == br && c->plan.tiles.at("BC") == bc && c->plan.window == 1) return c.get();
  return nullptr;
}

// ew_rows counts the rows of elementwise work: a row kernel walking its rows in
// 8-column tiles runs 8 times the rows of one in 64-column tiles, on about the
// same elements.
TEST(PlanCostModel, ElementwiseRowsGrowAsTilesNarrow) {
  std::map<std::string, int64_t> sizes = {{"M", 64}, {"N", 256}};
  CandidateSet set = enumerate_candidates(kernel_file("softmax.tir"), TargetKind::Cpu, sizes);
  MachineShape machine = machine_shape(TargetKind::Cpu, 1);
  const LegalCandidate *narrow = row_tile(set, 16, 8), *wide = row_tile(set, 16, 64);
  ASSERT_TRUE(narrow && wide);
  Features n = program_features(*narrow, sizes, machine), w = program_features(*wide, sizes, machine);
  const int rows = feature_index("ew_rows"), ew = feature_index("ew_elems"), odd = feature_index("ew_elems_odd");
  // At least the ten elementwise ops (max, sub, exp, sub, exp, mul, add; sub, exp,
  // div) and two reductions on BR = 16 rows per column tile: 4 row blocks x 32 tiles.
  EXPECT_GE(n[rows], 4.0 * 32 * 12 * 16);
  EXPECT_GT(n[rows], 6.0 * w[rows]);
  EXPECT_LT(n[rows], 8.5 * w[rows]);
  EXPECT_NEAR((n[ew] + n[odd]) / (w[ew] + w[odd]), 1.0, 0.5);
}

// ew_elems_odd, on the cpu, counts elementwise work on fragments whose rows end in a
// part of a vector: 24-column tiles on 16 lanes, not 48-column ones (whose [BR, 1]
// row values, one element a row, still are). Without lanes (cuda, sim) the rule is
// extents that are not both powers of two, so 48 columns count.
TEST(PlanCostModel, RowsEndingInPartOfAVectorCountAsOdd) {
  std::map<std::string, int64_t> sizes = {{"M", 64}, {"N", 240}};
  CandidateSet set = enumerate_candidates(kernel_file("softmax.tir"), TargetKind::Cpu, sizes);
  const LegalCandidate *bc24 = row_tile(set, 16, 24), *bc48 = row_tile(set, 16, 48);
  ASSERT_TRUE(bc24 && bc48);
  const int ew = feature_index("ew_elems"), odd = feature_index("ew_elems_odd");
  MachineShape lanes16;
  lanes16.cpu_lanes = 16;
  Features a = program_features(*bc24, sizes, lanes16), b = program_features(*bc48, sizes, lanes16);
  EXPECT_EQ(a[ew], 0.0);
  EXPECT_GT(b[ew], 4 * b[odd]);
  EXPECT_GT(b[odd], 0.0);  // the [BR, 1] row values
  MachineShape no_lanes;
  Features c = program_features(*bc48, sizes, no_lanes);
  EXPECT_GT(c[odd], 4 * c[ew]);
}

// ew_elems_l2 counts elementwise work on fragments that do not fit the L1 data
// cache five times: a 16 x 256 f32 tile (16 KiB) on a 48 KiB L1, not an 8 x 256 one
// (8 KiB); nothing where the machine has no L1 size (cuda, sim).
TEST(PlanCostModel, ElementwiseWorkOnTilesBeyondL1IsCounted) {
  std::map<std::string, int64_t> sizes = {{"M", 128}, {"N", 512}};
  CandidateSet set = enumerate_candidates(kernel_file("softmax.tir"), TargetKind::Cpu, sizes);
  const LegalCandidate *big = row_tile(set, 16, 256), *small = row_tile(set, 8, 256);
  ASSERT_TRUE(big && small);
  MachineShape machine;
  machine.l1_bytes = 48 * 1024;
  const int l2 = feature_index("ew_elems_l2"), ew = feature_index("ew_elems");
  Features b = program_features(*big, sizes, machine), s = program_features(*small, sizes, machine);
  // Most elementwise elements are on the 16 x 256 tiles (the [BR, 1] row values are not).
  EXPECT_GT(b[l2], 0.8 * b[ew]);
  EXPECT_LE(b[l2], b[ew]);
  EXPECT_EQ(s[l2], 0.0);
  machine.l1_bytes = 0;
  EXPECT_EQ(program_features(*big, sizes, machine)[l2], 0.0);
}

TEST(PlanCostModel, KendallTau) {
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {40, 30, 20, 10}), -1.0);
}

// Shape draws (plan/shape_draws.h): without small draws a seed draws what it drew
// before (the fourth H200 run's held-out shapes, seed 3); with --small-share P, P
// percent of the draws have one size, chosen at random, in the small range and the
// others in the range.
TEST(PlanDraws, SmallShareDrawsOneNarrowSize) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/tests/plan/gemm_bf16.tir");
  std::stringstream text;
  text << in.rdbuf();
  TileKernel k = parse_tile_kernel(text.str());
  ShapeDistribution d;
  d.seed = 3;
  auto shapes = draw_shapes(k, 2, d);
  using Sizes = std::map<std::string, int64_t>;
  EXPECT_EQ(shapes[0], (Sizes{{"M", 111}, {"N", 31}, {"K", 123}}));  // docs/results/planner-2026-12-02-cuda-run4
  EXPECT_EQ(shapes[1], (Sizes{{"M", 53}, {"N", 111}, {"K", 56}}));

  d.lo = 32;
  d.small_share = 30;
  d.small_lo = 8;
  d.small_hi = 16;
  const int n = 3000;
  int narrow = 0;
  std::map<std::string, int> which;
  for (const Sizes& s : draw_shapes(k, n, d)) {
    ASSERT_EQ(s.size(), 3u);
    int small = 0;
    for (const auto& [name, v] : s) {
      if (v <= 16) {
        EXPECT_GE(v, 8) << name;
        ++small;
        ++which[name];
      } else {
        EXPECT_GE(v, 32) << name;
        EXPECT_LE(v, 512) << name;
      }
    }
    EXPECT_LE(small, 1);
    narrow += small;
  }
  EXPECT_NEAR(double(narrow) / n, 0.30, 0.03);
  for (const char* name : {"M", "N", "K"}) EXPECT_GT(which[name], n / 20) << name;  // any size may be the narrow one
  EXPECT_NE(describe(d).find("in 30% of the draws one size (chosen at random) log-uniform in [8, 16]"),
            std::string::npos)
      << describe(d);
}

TEST(PlanCostModel, CalibrationFileRoundTripsAndBadFilesAreTypedErrors) {
  Calibration c = fallback_calibration(TargetKind::Cpu, 2);
  c.samples = 9;
  Calibration back = parse_calibration(print_calibration(c), "x");
  EXPECT_EQ(back.coef, c.coef);
  EXPECT_EQ(back.samples, 9);
  auto expect_bad = [](const std::string& text) {
    try {
      parse_calibration(text, "cal.txt");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("cal.txt"), std::string::npos);
    }
  };
  expect_bad("garbage\n");
  expect_bad("tessel-calibration 1\ntarget cpu\n");  // no coefficients
  std::string negative = print_calibration(c);
  negative.replace(negative.find("coef launch "), 13, "coef launch -");
  expect_bad(negative);
  // A file written before a feature existed (here live_sm, the newest: every file in
  // docs/results up to the fifth H200 run) is refused, naming the coefficient it lacks.
  std::string old = print_calibration(c);
  old.erase(old.find("coef live_sm "));
  try {
    parse_calibration(old, "old.txt");
    ADD_FAILURE() << "accepted a file without live_sm";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("no coefficient for live_sm"), std::string::npos) << e.what();
  }
}

TEST(PlanTuningCache, RefusesAGroupWritableDirectory) {
  std::string dir = temp_dir(0770);
  try {
    TuningCache cache(dir);
    ADD_FAILURE() << "used " << dir;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("group or others"), std::string::npos) << e.what();
  }
  ::rmdir(dir.c_str());
}

TEST(PlanTuningCache, RecordsWinnersAndDispatchPrefersThem) {
  std::string dir = temp_dir(0700);
  TuningCache cache(dir);
  TileKernel k = gemm_kernel();
  std::map<std::string, int64_t> sizes = {{"M", 100}, {"N", 70}, {"K", 40}};
  Calibration cal = fallback_calibration(TargetKind::Cpu, 2);
  PlanChoice model = choose_plan(k, TargetKind::Cpu, sizes, cal, 2, &cache);
  EXPECT_NE(model.source.find("cost model"), std::string::npos);
  EXPECT_NE(realize_candidate(k, model.plan, nullptr), nullptr);

  TunedShape e;
  e.kernel_hash = kernel_hash(k);
  e.target = TargetKind::Cpu;
  e.threads = 2;
  e.sizes = sizes;
  e.best_us = 12.5;
  e.plan = default_plan(k, TargetKind::Cpu, sizes);
  cache.record(e);
  struct stat st;
  ASSERT_EQ(::stat(cache.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);  // nobody else may read or write it

  PlanChoice exact = choose_plan(k, TargetKind::Cpu, sizes, cal, 2, &cache);
  EXPECT_EQ(exact.plan, e.plan);
  EXPECT_NE(exact.source.find("this shape"), std::string::npos);
  // Same class (each size rounds up to the same power of two): the nearest winner.
  PlanChoice near = choose_plan(k, TargetKind::Cpu, {{"M", 90}, {"N", 80}, {"K", 50}}, cal, 2, &cache);
  EXPECT_EQ(near.plan, e.plan);
  EXPECT_NE(near.source.find("nearest"), std::string::npos);
  // Another class, or another thread count: the model.
  EXPECT_NE(choose_plan(k, TargetKind::Cpu, {{"M", 300}, {"N", 70}, {"K", 40}}, cal, 2, &cache).source.find("cost model"),
            std::string::npos);
  EXPECT_NE(choose_plan(k, TargetKind::Cpu, sizes, cal, 1, &cache).source.find("cost model"), std::string::npos);
  EXPECT_EQ(plan_from_line(plan_to_line(e.plan), TargetKind::Cpu), e.plan);
  Plan cuda = e.plan;
  cuda.target = TargetKind::Cuda;
  cuda.persistent = 132;
  cuda.tile_band = 4;
  EXPECT_EQ(plan_from_line(plan_to_line(cuda), TargetKind::Cuda), cuda);
  Plan direct = e.plan;
  direct.direct = true;
  EXPECT_EQ(plan_from_line(plan_to_line(direct), TargetKind::Cpu), direct);
  std::remove(cache.path().c_str());
  ::rmdir(dir.c_str());
}

// `tessel run` and `tessel explain` on a TileIR file, with no plan options: the
// tuning cache's winner, else the calibrated model, else the default plan; plan
// options on the command line override all three. Each run is checked.
std::string cli_output(const std::string& dir, const std::string& args) {
  std::string cmd = "TESSEL_CACHE_DIR=" + dir + " " + std::string(TESSEL_CLI) + " " + args + " 2>&1";
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  ::pclose(f);
  return out;
}

TEST(PlanDispatch, CommandsWithoutPlanOptionsFollowTheCacheThenTheCalibration) {
  std::string dir = temp_dir(0700);
  TileKernel k = kernel_file("softmax.tir");
  const std::map<std::string, int64_t> sizes = {{"M", 100}, {"N", 70}};
  const std::string run = "run " + std::string(TESSEL_SOURCE_DIR) + "/kernels/softmax.tir --size M=100 --size N=70 " +
                          "--target cpu --threads 2 --check --json";
  std::string out = cli_output(dir, run);
  EXPECT_NE(out.find("\"plan_source\": \"default plan (no tuning"), std::string::npos) << out;
  EXPECT_NE(out.find("\"plan\": \"" + default_plan(k, TargetKind::Cpu, sizes).to_string() + "\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"ok\": true"), std::string::npos) << out;

  // A measured winner that is not the default plan.
  CandidateSet set = enumerate_candidates(k, TargetKind::Cpu, sizes);
  ASSERT_GE(set.legal.size(), 2u);
  Plan winner = set.legal[0]->plan == default_plan(k, TargetKind::Cpu, sizes) ? set.legal[1]->plan : set.legal[0]->plan;
  {
    TuningCache cache(dir);
    cache.record(TunedShape{kernel_hash(k), TargetKind::Cpu, 2, sizes, 3.0, winner});
  }
  out = cli_output(dir, run);
  EXPECT_NE(out.find("\"plan_source\": \"tuning cache (this shape"), std::string::npos) << out;
  EXPECT_NE(out.find("\"plan\": \"" + winner.to_string() + "\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"ok\": true"), std::string::npos) << out;
  EXPECT_NE(cli_output(dir, "explain " + std::string(TESSEL_SOURCE_DIR) +
                                "/kernels/softmax.tir --size M=100 --size N=70 --target cpu --threads 2")
                .find("// plan from: tuning cache"),
            std::string::npos);

  // Another shape class, with a calibration for the cpu at 2 threads: the model.
  Calibration cal = fallback_calibration(TargetKind::Cpu, 2);
  cal.samples = 5;
  {
    std::ofstream f(dir + "/calibration-cpu-t2.txt");
    f << print_calibration(cal);
  }
  ::chmod((dir + "/calibration-cpu-t2.txt").c_str(), 0600);
  out = cli_output(dir, "run " + std::string(TESSEL_SOURCE_DIR) + "/kernels/softmax.tir --size M=33 --size N=500 " +
                            "--target cpu --threads 2 --check --json");
  EXPECT_NE(out.find("\"plan_source\": \"cost model (calibrated, 5 runs)"), std::string::npos) << out;
  EXPECT_NE(out.find("\"ok\": true"), std::string::npos) << out;
  // A calibration the model cannot use (one coefficient missing, as in a file
  // written before a feature was added): the default plan, the source saying why;
  // asked for by --calibration, an error.
  std::string text = print_calibration(cal), dropped;
  {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("coef ew_rows ", 0) != 0) dropped += line + "\n";
  }
  ASSERT_NE(dropped.size(), text.size());
  {
    std::ofstream f(dir + "/calibration-cpu-t2.txt");
    f << dropped;
  }
  out = cli_output(dir, "run " + std::string(TESSEL_SOURCE_DIR) + "/kernels/softmax.tir --size M=33 --size N=500 " +
                            "--target cpu --threads 2 --check --json");
  EXPECT_NE(out.find("\"plan_source\": \"default plan (the cache directory's calibration was not used"),
            std::string::npos) << out;
  EXPECT_NE(out.find("ew_rows"), std::string::npos) << out;
  EXPECT_NE(out.find("\"ok\": true"), std::string::npos) << out;
  EXPECT_THROW(load_calibration(dir + "/calibration-cpu-t2.txt", TargetKind::Cpu, 2), Error);
  // Plan options: the default plan under them, whatever the cache holds.
  out = cli_output(dir, run + " --window 2");
  EXPECT_NE(out.find("\"plan_source\": \"default plan with the command line"), std::string::npos) << out;
  std::remove((dir + "/calibration-cpu-t2.txt").c_str());
  std::remove((dir + "/tuning-v1.txt").c_str());
  std::filesystem::remove_all(dir);
}

int cli(const std::string& args) {
  std::string cmd = std::string(TESSEL_CLI) + " " + args + " >/dev/null 2>&1";
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// --- the cuda target without a GPU (candidates are lowered and emitted; one test
// compiles a kernel with NVRTC). tests/gpu/planner_gpu_test.cpp measures on a GPU. ---

#ifdef TESSEL_WITH_CUDA
TileKernel plan_test_file(const std::string& name) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/tests/plan/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return parse_tile_kernel(s.str());
}

// The Hopper plan fields are candidate axes on cuda: tma copies with and without a
// producer worker (wgmma candidates only), and a persistent grid where the shape has
// more tiles than multiprocessors; a tma candidate is legal only where the shape's
// rows suit tensor maps (16-byte multiples).
TEST(PlanOnCuda, HopperFieldsAreCandidateAxes) {
  TileKernel k = plan_test_file("gemm_bf16.tir");
  CandidateBounds b;
  b.tile_values = {16, 64, 128};
  CandidateSet set = enumerate_candidates(k, TargetKind::Cuda, {{"M", 300}, {"N", 200}, {"K", 152}}, b);
  int tma[2] = {0, 0}, persistent = 0;
  for (const auto& c : set.legal) {
    const Plan& p = c->plan;
    if (p.tma) {
      EXPECT_EQ(p.atom, AtomKind::Wgmma) << p.to_string();
      ++tma[p.producers > 0];
    }
    if (p.persistent > 0) {
      ++persistent;
      EXPECT_EQ(p.persistent, static_cast<int>(machine_shape(TargetKind::Cuda, 1).slots));
    }
    EXPECT_FALSE(p.async_copy && p.window == 1) << "one stage has nothing to overlap: " << p.to_string();
  }
  EXPECT_GT(tma[0], 0);
  EXPECT_GT(tma[1], 0);
  EXPECT_GT(persistent, 0);  // 16x16 tiles of 300x200: 247 groups > 132
  // A ragged K (150 bf16 = 300 bytes a row of A): no tma candidate, and the reason.
  CandidateSet ragged = enumerate_candidates(k, TargetKind::Cuda, {{"M", 300}, {"N", 200}, {"K", 150}}, b);
  for (const auto& c : ragged.legal) EXPECT_FALSE(c->plan.tma) << c->plan.to_string();
  size_t refused = 0;
  for (const auto& [why, n] : ragged.rejected)
    if (why.find("16-byte multiples") != std::string::npos) refused += n;
  EXPECT_GT(refused, 0u);
  // The same at K = 152 with a leading dimension of A that is not a multiple of 8.
  CandidateSet strided =
      enumerate_candidates(k, TargetKind::Cuda, {{"M", 300}, {"N", 200}, {"K", 152}, {"lda", 153}}, b);
  for (const auto& c : strided.legal) EXPECT_FALSE(c->plan.tma) << c->plan.to_string();
}

// A fragment that needs more than the 255 registers a cuda thread has is refused
// before NVRTC sees it (NVRTC took minutes on such candidates), with the reason.
TEST(PlanOnCuda, FragmentsBeyondTheRegisterFileAreRefused) {
  CandidateSet set = enumerate_candidates(softmax_kernel(), TargetKind::Cuda, {{"M", 1283}, {"N", 990}});
  size_t refused = 0;
  for (const auto& [why, n] : set.rejected)
    if (why.find("registers per thread") != std::string::npos) refused += n;
  EXPECT_GT(refused, 0u);
  ASSERT_FALSE(set.legal.empty());
  for (const auto& c : set.legal) {
    const Plan& p = c->plan;
    // Softmax's row block: BR x BC over the worker grid, one value a register (f32).
    int64_t rows = (p.tiles.at("BR") + p.worker_rows - 1) / p.worker_rows;
    int64_t cols = (p.tiles.at("BC") + p.worker_cols - 1) / p.worker_cols;
    EXPECT_LE(rows * cols, 255) << p.to_string();
  }
}

// A bf16 GEMM candidate's program on the sim race checker: 0 races, and C exact on
// small integers (NaN-poisoned first).
void expect_gemm_exact_on_sim(const LegalCandidate& cand, int64_t m, int64_t n, int64_t kk) {
  SCOPED_TRACE(cand.plan.to_string());
  ASSERT_EQ(cand.phases.size(), 1u);
  test::SmallIntGemm g(m, n, kk);
  g.args.sizes["lda"] = kk, g.args.sizes["ldb"] = n, g.args.sizes["ldc"] = n;
  SimResult r = run_sim(cand.phases[0], g.args, SimOptions{});
  EXPECT_EQ(r.race_count, 0);
  EXPECT_EQ(g.error(), 0.0);
}

// Programs of tma, producer and persistent cuda candidates (bf16 wgmma GroupIR) run on
// the sim race checker: 0 races, and C exact on small integers (NaN-poisoned first).
TEST(PlanOnCuda, TmaProducerAndPersistentCandidatesRunRaceFreeOnTheSim) {
  TileKernel k = plan_test_file("gemm_bf16.tir");
  const int64_t m = 130, n = 72, kk = 136;  // ragged M; N and K suit tensor maps
  CandidateBounds b;
  b.tile_values = {64, 128};
  b.persistent_groups = 2;  // a persistent grid at a shape the sim runs quickly
  CandidateSet set = enumerate_candidates(k, TargetKind::Cuda, {{"M", m}, {"N", n}, {"K", kk}}, b);
  // The smallest-tiled candidate of each kind.
  std::map<std::string, std::shared_ptr<const LegalCandidate>> pick;
  for (const auto& c : set.legal) {
    const Plan& p = c->plan;
    std::string kind = std::string(p.tma ? "tma" : "copies") + (p.producers ? "+producer" : "") +
                       (p.persistent ? "+persistent" : "");
    if (kind == "copies") continue;
    auto area = [](const Plan& q) { return q.tiles.at("BM") * q.tiles.at("BN") * q.tiles.at("BK") * q.window; };
    if (!pick.count(kind) || area(p) < area(pick[kind]->plan)) pick[kind] = c;
  }
  for (const char* kind : {"tma", "tma+producer", "copies+persistent", "tma+producer+persistent"})
    EXPECT_TRUE(pick.count(kind)) << "no " << kind << " candidate";
  for (const auto& [kind, cand] : pick) {
    SCOPED_TRACE(kind);
    expect_gemm_exact_on_sim(*cand, m, n, kk);
  }
}

// The three-warpgroup wgmma tiles of the default plans (192x192, 192x128: one
// 64-row consumer warpgroup per 64 rows) are candidates too, and their programs run
// race-free and exact on the sim.
TEST(PlanOnCuda, ThreeWarpgroupWgmmaTilesAreCandidates) {
  TileKernel k = plan_test_file("gemm_bf16.tir");
  CandidateBounds b;
  b.tile_values = {64, 128, 192};
  b.windows = {2};
  b.tma_windows = {2};
  b.tma_producers = {1};
  b.copy_batches = {4};
  b.persistent = false;
  CandidateSet set = enumerate_candidates(k, TargetKind::Cuda, {{"M", 600}, {"N", 400}, {"K", 256}}, b);
  std::map<std::string, std::shared_ptr<const LegalCandidate>> pick;  // by BMxBN
  for (const auto& c : set.legal) {
    const Plan& p = c->plan;
    if (p.atom != AtomKind::Wgmma || p.workers != 3 || !p.tma) continue;
    const std::string tile = std::to_string(p.tiles.at("BM")) + "x" + std::to_string(p.tiles.at("BN"));
    if (!pick.count(tile) || p.tiles.at("BK") < pick[tile]->plan.tiles.at("BK")) pick[tile] = c;
  }
  ASSERT_TRUE(pick.count("192x192") && pick.count("192x128")) << pick.size() << " three-warpgroup tiles";
  for (const char* tile : {"192x192", "192x128"}) {
    SCOPED_TRACE(tile);
    expect_gemm_exact_on_sim(*pick[tile], 200, 136, 72);  // ragged M and N, two k steps
  }
}

// On cuda a tile up to 32 wide is a candidate even past its extent (the fourth H200
// run: at N = 16 the fixed 32x32 plans ran 1.4x faster than every BN 16 candidate),
// wider ones only up to the power of two >= the extent; such candidates are legal
// and run race-free and exact on the sim.
TEST(PlanOnCuda, TilesUpTo32WideAreCandidatesPastTheirExtent) {
  TileKernel k = plan_test_file("gemm_bf16.tir");
  auto widest = [&](const std::map<std::string, int64_t>& sizes, const char* tile) {
    int64_t most = 0;
    for (const auto& c : enumerate_candidates(k, TargetKind::Cuda, sizes).legal)
      most = std::max(most, c->plan.tiles.at(tile));
    return most;
  };
  EXPECT_EQ(widest({{"M", 491}, {"N", 16}, {"K", 347}}, "BN"), 32);  // the fourth run's shape
  EXPECT_EQ(widest({{"M", 491}, {"N", 100}, {"K", 347}}, "BN"), 128);
  // M = 20, N = 12, K = 24: tiles of 32 pad every extent. The smallest such candidate
  // of each copy protocol, checked on the sim (mma.sync: wgmma needs 64-wide tiles).
  const int64_t m = 20, n = 12, kk = 24;
  CandidateSet set = enumerate_candidates(k, TargetKind::Cuda, {{"M", m}, {"N", n}, {"K", kk}});
  std::map<std::string, std::shared_ptr<const LegalCandidate>> pick;
  for (const auto& c : set.legal) {
    const Plan& p = c->plan;
    if (p.tiles.at("BM") != 32 || p.tiles.at("BN") != 32) continue;
    const std::string kind = std::string(p.async_copy ? "async" : "sync") + " window " + std::to_string(p.window);
    if (!pick.count(kind) || p.tiles.at("BK") < pick[kind]->plan.tiles.at("BK")) pick[kind] = c;
  }
  EXPECT_TRUE(pick.count("sync window 1") && pick.count("async window 2")) << pick.size();
  for (const auto& [kind, cand] : pick) {
    SCOPED_TRACE(kind);
    expect_gemm_exact_on_sim(*cand, m, n, kk);
  }
}

// measure.cpp's cuda path times device-resident tensors; without a GPU it says so (a
// Runtime error), and the CLI exits with status 2 before compiling anything.
TEST(PlanOnCuda, MeasuringNeedsAGpuAndSaysSo) {
  std::string why;
  if (cuda_gpu_available(&why)) GTEST_SKIP() << "a GPU is here: tests/gpu/planner_gpu_test.cpp measures on it";
  TileKernel k = softmax_kernel();
  Kernel compiled = compile(k, default_plan(k, TargetKind::Cuda, {{"M", 8}, {"N", 40}}));
  try {
    measure_paired({compiled}, {{"M", 8}, {"N", 40}}, MeasureOptions{});
    ADD_FAILURE() << "measured on cuda without a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("needs a GPU"), std::string::npos) << e.what();
  }
  const std::string gemm = std::string(TESSEL_SOURCE_DIR) + "/tests/plan/gemm_bf16.tir";
  EXPECT_EQ(cli("tune " + gemm + " --target cuda --shapes M=64,N=64,K=64 --no-tuning-cache"), 2);
}

// Groups resident on a multiprocessor at once (cuda occupancy) are bounded by its
// threads, shared memory and (the proxy's) registers, and the waves count them: a
// row kernel of 642 groups of 256 threads with small fragments runs in fewer waves
// than one group per multiprocessor would take (5), and one whose fragments hold 4x
// the registers fits fewer groups.
TEST(PlanOnCuda, ResidentGroupsBoundTheWaves) {
  std::map<std::string, int64_t> sizes = {{"M", 1283}, {"N", 990}};
  CandidateSet set = enumerate_candidates(softmax_kernel(), TargetKind::Cuda, sizes);
  const LegalCandidate *two = nullptr, *eight = nullptr;
  for (const auto& c : set.legal) {
    const Plan& p = c->plan;
    if (p.persistent || p.workers != 256 || p.tiles.at("BC") != 1024) continue;
    if (p.tiles.at("BR") == 2) two = c.get();
    if (p.tiles.at("BR") == 8) eight = c.get();
  }
  ASSERT_TRUE(two && eight);
  const int64_t r2 = resident_groups(two->phases[0]), r8 = resident_groups(eight->phases[0]);
  EXPECT_GE(r2, 4);
  EXPECT_LE(r2, 8);  // 2048 threads
  EXPECT_LT(r8, r2);
  MachineShape machine = machine_shape(TargetKind::Cuda, 1);
  EXPECT_LT(program_features(*two, sizes, machine)[feature_index("waves")], 5.0);
  // Every bf16 GEMM candidate: what its resident groups take fits a multiprocessor.
  TileKernel k = plan_test_file("gemm_bf16.tir");
  CandidateSet gemm = enumerate_candidates(k, TargetKind::Cuda, {{"M", 300}, {"N", 200}, {"K", 152}});
  ASSERT_GT(gemm.legal.size(), 100u);
  int shared_bound = 0;
  for (const auto& c : gemm.legal) {
    const GroupProgram& p = c->phases[0];
    int64_t shared = 0;
    for (const Buffer& b : p.buffers)
      if (b.space == Space::Shared) shared += b.rows * b.cols * dtype_bytes(b.dtype) * std::max(1, b.versions);
    const int64_t n = resident_groups(p);
    ASSERT_GE(n, 1);
    // ptxas gave warp-level mma kernels 70-128 registers at 256 threads (0.55-1.0 of
    // the launch bounds' 128): the proxy takes 3/4 of the cap, not the fragments' ~40.
    if (p.atom == AtomKind::MmaSync && p.workers * p.lanes == 256) EXPECT_GE(registers_per_thread(p), 96);
    if (shared > 0 && n > 1) {
      EXPECT_LE(n * (shared + 1024), 228 * 1024) << c->plan.to_string();
    }
    EXPECT_LE(n * p.workers * p.lanes, std::max<int64_t>(2048, p.workers * p.lanes)) << c->plan.to_string();
    shared_bound += (n + 1) * (shared + 1024) > 228 * 1024;
  }
  EXPECT_GT(shared_bound, 0);  // some candidates are bounded by their shared memory
}

// A wave lasts as long as its slowest group: on a persistent grid of 132 groups
// walking 161 row tiles, the first 29 groups take two tiles, and the features count
// those (twice the elementwise work of one tile, the tile loop's two iterations),
// not the middle group's one.
TEST(PlanOnCuda, AWaveLastsAsLongAsItsSlowestGroup) {
  std::map<std::string, int64_t> sizes = {{"M", 1283}, {"N", 990}};
  CandidateSet set = enumerate_candidates(softmax_kernel(), TargetKind::Cuda, sizes);
  const LegalCandidate *walking = nullptr, *one = nullptr;
  for (const auto& c : set.legal) {
    const Plan& p = c->plan;
    if (p.workers != 256 || p.tiles.at("BC") != 1024 || p.tiles.at("BR") != 8) continue;
    (p.persistent ? walking : one) = c.get();
  }
  ASSERT_TRUE(walking && one);
  ASSERT_EQ(walking->plan.persistent, 132);
  MachineShape machine = machine_shape(TargetKind::Cuda, 1);
  Features w = program_features(*walking, sizes, machine), o = program_features(*one, sizes, machine);
  const int ew = feature_index("ew_elems"), iters = feature_index("loop_iters");
  EXPECT_EQ(o[feature_index("waves")], 1.0);  // 161 groups all resident
  EXPECT_NEAR(w[ew], 2 * o[ew], 1e-9);
  EXPECT_NEAR(w[iters], 2 * o[iters] + 2, 1e-9);
}

// gl_access counts a copy's global instructions as the emitter issues them: a bf16
// matrix whose rows start on 16 bytes (K = 128) moves 8 elements a load, one of odd
// row length (K = 127) one; the bytes are the same (whole tiles).
TEST(PlanOnCuda, GlobalAccessesFollowTheRowsAlignment) {
  TileKernel k = plan_test_file("gemm_bf16.tir");
  std::map<std::string, int64_t> aligned = {{"M", 64}, {"N", 64}, {"K", 128}}, odd = {{"M", 64}, {"N", 64}, {"K", 127}};
  CandidateSet set = enumerate_candidates(k, TargetKind::Cuda, aligned);
  MachineShape machine = machine_shape(TargetKind::Cuda, 1);
  const int access = feature_index("gl_access"), bytes = feature_index("bytes_in");
  int checked = 0;
  for (const auto& c : set.legal) {
    const Plan& p = c->plan;
    if (p.window != 1 || p.atom != AtomKind::MmaSync || p.tiles.at("BK") != 64) continue;
    SCOPED_TRACE(p.to_string());
    Features a = program_features(*c, aligned, machine), o = program_features(*c, odd, machine);
    EXPECT_EQ(a[bytes], o[bytes]);
    // A's copies (BM x BK elements, 2 k tiles) take 8x the instructions; B's (N = 64)
    // and C's store the same. Per worker (a warp), one wave, once for each turn the
    // warps take on the multiprocessor's 4 schedulers (issue_turns: 2 at 8 warps).
    const double turns = std::max(1.0, p.workers / 4.0);
    const double a_elems = double(p.tiles.at("BM")) * 64 * 2 / p.workers * turns;
    EXPECT_NEAR(o[access] - a[access], a_elems * 7 / 8, 1e-9);
    ++checked;
  }
  EXPECT_GT(checked, 3);
}

// gl_trips: a thread's rolled trips of copies moved element by element. At K = 115,
// N = 20 (bf16 rows off 16 bytes and, for A, off 4) a synchronous copy takes a
// thread's share in batches of 8 elements: a share of one batch counts 0, one of more
// its batches, per copy, per thread (not per worker), times the waves. An async copy
// of rows on 4 bytes (K = 114, N = 20) moves 4-byte pieces and counts none for them;
// rows on 16 bytes (K = 128, N = 64) none at all.
TEST(PlanOnCuda, RolledElementCopiesCountTheirTrips) {
  TileKernel k = plan_test_file("gemm_bf16.tir");
  MachineShape machine = machine_shape(TargetKind::Cuda, 1);
  const int trips = feature_index("gl_trips"), waves = feature_index("waves");
  ASSERT_GE(trips, 0);
  auto batches = [](int64_t elems, int64_t threads) {
    const int64_t b = ((elems + threads - 1) / threads + 7) / 8;
    return b > 1 ? double(b) : 0.0;
  };
  std::map<std::string, int64_t> odd = {{"M", 81}, {"N", 20}, {"K", 115}}, even = {{"M", 81}, {"N", 20}, {"K", 114}},
                                  aligned = {{"M", 81}, {"N", 64}, {"K", 128}};
  int checked = 0, rolled = 0;
  for (const auto* sizes : {&odd, &even, &aligned}) {
    CandidateSet set = enumerate_candidates(k, TargetKind::Cuda, *sizes);
    for (const auto& c : set.legal) {
      const Plan& p = c->plan;
      if (p.persistent || p.tma || p.atom != AtomKind::MmaSync) continue;
      SCOPED_TRACE(p.to_string() + " K=" + std::to_string(sizes->at("K")));
      const int64_t bm = p.tiles.at("BM"), bn = p.tiles.at("BN"), bk = p.tiles.at("BK");
      const int64_t threads = int64_t{c->phases[0].workers} * c->phases[0].lanes;
      const int64_t kk = sizes->at("K"), steps = (kk + bk - 1) / bk;
      const bool a_elements = kk % 8 != 0 && !(p.async_copy && kk % 2 == 0);
      const bool b_elements = sizes->at("N") % 8 != 0 && !(p.async_copy && sizes->at("N") % 2 == 0);
      const double per_step = (a_elements ? batches(bm * bk, threads) : 0) + (b_elements ? batches(bk * bn, threads) : 0);
      Features f = program_features(*c, *sizes, machine);
      // A window of W copies tile 0 .. W - 2 ahead of the loop and the tile W - 1 ahead
      // in every iteration: steps + W - 1 copies (those past the end whole, as counted).
      EXPECT_NEAR(f[trips], f[waves] * double(steps + p.window - 1) * per_step, 1e-9);
      if (sizes == &aligned) EXPECT_EQ(f[trips], 0);
      ++checked;
      if (f[trips] > 0) ++rolled;
    }
  }
  EXPECT_GT(checked, 30);
  EXPECT_GT(rolled, 5);
  // The second H200 run's case: at K = 115 a 32x32 tile of 8 warps, sync, takes 2
  // batches of A and of B at BK 128 (4 trips), one of each at BK 64 (none).
  CandidateSet set = enumerate_candidates(k, TargetKind::Cuda, odd);
  int pair = 0;
  for (const auto& c : set.legal) {
    const Plan& p = c->plan;
    if (p.persistent || p.atom != AtomKind::MmaSync || p.async_copy || p.window != 1 || p.workers != 8 ||
        p.tiles.at("BM") != 32 || p.tiles.at("BN") != 32)
      continue;
    const int64_t bk = p.tiles.at("BK");
    if (bk != 64 && bk != 128) continue;
    EXPECT_EQ(program_features(*c, odd, machine)[trips], bk == 128 ? 4.0 : 0.0) << p.to_string();
    ++pair;
  }
  EXPECT_GE(pair, 2);
}

// chain_elems: the elements a thread copies from global memory, its share of every
// copy (BM x BK of A and BK x BN of B a k step, over the block's threads), times the
// copies a block issues (k steps + window - 1) and the waves; tma copies count none.
TEST(PlanOnCuda, CopyChainCountsEachThreadsShareOfEveryCopy) {
  TileKernel k = plan_test_file("gemm_bf16.tir");
  MachineShape machine = machine_shape(TargetKind::Cuda, 1);
  const int chain = feature_index("chain_elems"), waves = feature_index("waves");
  ASSERT_GE(chain, 0);
  std::map<std::string, int64_t> sizes = {{"M", 64}, {"N", 64}, {"K", 128}};
  int checked = 0, tma = 0, hand = 0;
  for (const auto& c : enumerate_candidates(k, TargetKind::Cuda, sizes).legal) {
    const Plan& p = c->plan;
    if (p.persistent) continue;  // its first groups walk more tiles
    SCOPED_TRACE(p.to_string());
    Features f = program_features(*c, sizes, machine);
    if (p.tma) {
      EXPECT_EQ(f[chain], 0);
      ++tma;
      continue;
    }
    const int64_t bm = p.tiles.at("BM"), bn = p.tiles.at("BN"), bk = p.tiles.at("BK");
    const double threads = double(c->phases[0].workers) * c->phases[0].lanes;
    const double steps = double((128 + bk - 1) / bk);
    EXPECT_NEAR(f[chain], f[waves] * (steps + p.window - 1) * double(bm * bk + bk * bn) / threads, 1e-9);
    ++checked;
    // By hand: 32x32x64, 8 warps, one stage: (32 x 64 + 64 x 32) / 256 = 16 elements a
    // k step, 2 k steps, 4 blocks in one wave.
    if (p.atom == AtomKind::MmaSync && p.workers == 8 && p.window == 1 && bm == 32 && bn == 32 && bk == 64) {
      EXPECT_EQ(f[chain], 32.0);
      ++hand;
    }
  }
  EXPECT_GT(checked, 30);
  EXPECT_GT(tma, 0);
  EXPECT_GE(hand, 1);
}

// bytes_sm: every group's global bytes over the multiprocessors, not per worker: a
// row kernel reads its input twice and writes it once (whole tiles).
TEST(PlanOnCuda, BytesPerMultiprocessorCountEveryGroup) {
  std::map<std::string, int64_t> sizes = {{"M", 1000}, {"N", 1000}};
  TileKernel k = softmax_kernel();
  CandidateSet set = enumerate_candidates(k, TargetKind::Cuda, sizes);
  MachineShape machine = machine_shape(TargetKind::Cuda, 1);
  int checked = 0;
  for (size_t i = 0; i < set.legal.size(); i += 7) {
    const Plan& p = set.legal[i]->plan;
    if (p.persistent) continue;  // its loop over tiles counts a ragged last round whole
    const int64_t br = p.tiles.at("BR"), bc = p.tiles.at("BC");
    const double padded = double((1000 + br - 1) / br * br) * double((1000 + bc - 1) / bc * bc);
    const double f = program_features(*set.legal[i], sizes, machine)[feature_index("bytes_sm")];
    EXPECT_NEAR(f, 3 * 4 * padded / machine.slots, 1e-6 * f) << p.to_string();
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

// live_sm: the elements a thread holds of a fragment beyond 8, per op on the fragment,
// times every group's threads, over the multiprocessors in units of 2048 threads. At
// 264 rows of 2048 a row kernel's thread holds BC / 128 of a row tile: 16 elements at
// BC 2048 (8 beyond), 8 at BC 1024 (none).
TEST(PlanOnCuda, LiveElementsCountAThreadsPartBeyondEight) {
  std::map<std::string, int64_t> sizes = {{"M", 264}, {"N", 2048}};
  CandidateSet set = enumerate_candidates(softmax_kernel(), TargetKind::Cuda, sizes);
  MachineShape machine = machine_shape(TargetKind::Cuda, 1);
  const int live = feature_index("live_sm");
  ASSERT_GE(live, 0);
  const LegalCandidate *wide = nullptr, *narrow = nullptr, *half = nullptr;
  int zero = 0;
  for (const auto& c : set.legal) {
    const Plan& p = c->plan;
    if (p.persistent || p.tiles.at("BR") != 1) continue;
    const int64_t part = p.tiles.at("BC") / c->phases[0].worker_cols;
    if (part <= 8) {
      EXPECT_EQ(program_features(*c, sizes, machine)[live], 0) << p.to_string();
      ++zero;
    }
    if (p.workers == 128 && p.tiles.at("BC") == 2048) wide = c.get();
    if (p.workers == 128 && p.tiles.at("BC") == 1024) narrow = c.get();
    if (p.workers == 64 && p.tiles.at("BC") == 1024) half = c.get();
  }
  EXPECT_GT(zero, 5);
  ASSERT_TRUE(wide && narrow && half);
  // One pass of BC 2048: 10 ops on the row tile's fragments (the loads, the
  // reductions, the elementwise ops and the store), 8 elements beyond a thread's 8
  // each, 264 groups of 128 threads: an eighth of a full multiprocessor's threads on
  // each of 132, so 10 x 8 / 8 = 10.
  const double ops = 10, full = 264.0 * 128 / (machine.slots * 2048.0);
  EXPECT_NEAR(program_features(*wide, sizes, machine)[live], ops * 8 * full, 1e-9);
  if (machine.slots == 132) EXPECT_NEAR(program_features(*wide, sizes, machine)[live], 10.0, 1e-9);  // the H200's
  EXPECT_EQ(program_features(*narrow, sizes, machine)[live], 0);
  // BC 1024 over 64 threads: 16 elements a thread again, in two passes of half the threads.
  EXPECT_NEAR(program_features(*half, sizes, machine)[live], ops * 8 * full, 1e-9);
}

// sync_sm: every group's barrier waits times its threads, over the multiprocessors,
// in units of 2048 threads; not per worker and not times the waves (the groups of all
// waves count). At 717 rows of 1426: one thread a column in 6 column blocks (12
// barriers a row) against 128 threads a row in 3 (6 barriers).
TEST(PlanOnCuda, BarrierWaitsPerMultiprocessorCountEveryThread) {
  std::map<std::string, int64_t> sizes = {{"M", 717}, {"N", 1426}};
  CandidateSet set = enumerate_candidates(softmax_kernel(), TargetKind::Cuda, sizes);
  MachineShape machine = machine_shape(TargetKind::Cuda, 1);
  const int sync = feature_index("sync_sm"), fences = feature_index("fences"), waves = feature_index("waves");
  ASSERT_GE(sync, 0);
  int checked = 0;
  const LegalCandidate *wide = nullptr, *narrow = nullptr;
  for (const auto& c : set.legal) {
    const Plan& p = c->plan;
    if (p.persistent) continue;  // its first groups walk one more tile than the average
    Features f = program_features(*c, sizes, machine);
    const double groups = double((717 + p.tiles.at("BR") - 1) / p.tiles.at("BR"));
    const double threads = double(c->phases[0].workers) * c->phases[0].lanes;
    EXPECT_NEAR(f[sync], f[fences] / f[waves] * groups * threads / (machine.slots * 2048.0), 1e-9 * (1 + f[sync]))
        << p.to_string();
    ++checked;
    if (p.tiles.at("BR") == 1 && p.tiles.at("BC") == 256 && p.workers == 256) wide = c.get();
    if (p.tiles.at("BR") == 1 && p.tiles.at("BC") == 512 && p.workers == 128) narrow = c.get();
  }
  EXPECT_GT(checked, 10);
  ASSERT_TRUE(wide && narrow);
  Features w = program_features(*wide, sizes, machine), n = program_features(*narrow, sizes, machine);
  EXPECT_EQ(w[fences], 2 * n[fences]);
  EXPECT_NEAR(w[sync], 4 * n[sync], 1e-9);  // twice the barriers, twice the threads
  EXPECT_NEAR(w[sync], 12 * 717 * 256 / (machine.slots * 2048.0), 1e-9);
  // A warp-level mma atom's worker is a warp: its 32 threads wait at each barrier.
  std::map<std::string, int64_t> mnk = {{"M", 105}, {"N", 26}, {"K", 192}};
  CandidateSet mma = enumerate_candidates(plan_test_file("gemm_bf16.tir"), TargetKind::Cuda, mnk);
  int warps = 0;
  for (const auto& c : mma.legal) {
    const Plan& p = c->plan;
    if (p.persistent || p.atom != AtomKind::MmaSync) continue;
    Features f = program_features(*c, mnk, machine);
    const double groups = double((105 + p.tiles.at("BM") - 1) / p.tiles.at("BM")) *
                          double((26 + p.tiles.at("BN") - 1) / p.tiles.at("BN"));
    EXPECT_NEAR(f[sync], f[fences] / f[waves] * groups * p.workers * 32 / (machine.slots * 2048.0),
                1e-9 * (1 + f[sync]))
        << p.to_string();
    ++warps;
  }
  EXPECT_GT(warps, 10);
}

#endif

// Each measured kernel is checked against the FP64 oracle once: a kernel whose result
// differs (here: another kernel of the same signature, computing 2 A B) is not timed
// and says why; the right one is timed.
TEST(PlanMeasure, EachKernelIsCheckedAgainstTheOracleOnce) {
  TileKernel good = kernel_file("gemm_nt.tir");
  std::string text = print_tile_kernel(good);
  size_t at = text.find("store ");
  ASSERT_NE(at, std::string::npos);
  size_t value = text.find('%', at), end = text.find(' ', value);
  std::string acc = text.substr(value, end - value);
  text.insert(at, "%twice = add " + acc + ", " + acc + " : f32[BM, BN]\n    ");
  text.replace(text.find(acc, text.find("store ")), acc.size(), "%twice");
  TileKernel bad = parse_tile_kernel(text);
  std::map<std::string, int64_t> sizes = {{"M", 20}, {"N", 12}, {"K", 9}};
  Plan plan = default_plan(good, TargetKind::Cpu, sizes);
  MeasureOptions o;
  o.threads = 1, o.rounds = 2, o.trials = 2, o.min_run_us = 50;
  std::vector<Measured> m = measure_paired({compile(good, plan), compile(bad, plan)}, sizes, o);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_TRUE(m[0].checked && m[0].ok) << m[0].rel_err;
  EXPECT_TRUE(std::isfinite(m[0].us) && m[0].us > 0);
  EXPECT_TRUE(m[1].checked);
  EXPECT_FALSE(m[1].ok);
  EXPECT_GT(m[1].rel_err, m[1].bound);
  EXPECT_TRUE(std::isnan(m[1].us));
}

TEST(PlanCli, BadInputExitsWithStatus2) {
  const std::string softmax = std::string(TESSEL_SOURCE_DIR) + "/kernels/softmax.tir";
  EXPECT_EQ(cli("plans"), 2);
  EXPECT_EQ(cli("plans /nonexistent.tir --size M=4"), 2);
  EXPECT_EQ(cli("plans " + softmax + " --size M=x"), 2);
  EXPECT_EQ(cli("plans " + softmax + " --size M=4,N=9 --top 0"), 2);
  EXPECT_EQ(cli("plans " + softmax + " --size M=4,N=9 --calibration /nonexistent"), 2);
  EXPECT_EQ(cli("tune " + softmax), 2);                       // nothing to do
  EXPECT_EQ(cli("tune " + softmax + " --shapes M=4,N"), 2);  // malformed shape
  EXPECT_EQ(cli("tune " + softmax + " --calibrate --draws 2"), 2);  // no --out
  EXPECT_EQ(cli("tune " + softmax + " --range 9:3 --heldout 2 --out /tmp"), 2);
  EXPECT_EQ(cli("tune " + softmax + " --small-share 101 --heldout 2 --out /tmp"), 2);
  EXPECT_EQ(cli("tune " + softmax + " --small-range 9:3 --heldout 2 --out /tmp"), 2);
  EXPECT_EQ(cli("plans " + softmax + " --size M=4,N=9 --frobnicate"), 2);
  EXPECT_EQ(cli("tune " + softmax + " --heldout 1 --out /tmp --fixed-plans /nonexistent"), 2);
  EXPECT_EQ(cli("plans " + softmax + " --size M=5,N=9 --top 3 --no-tuning-cache"), 0);
}

// `tune --refit SAMPLES.json` fits a calibration again from saved runs and
// `tune --evaluate HELDOUT.json` scores one on saved held-out runs, offline; files
// that are not such runs are refused with status 2.
TEST(PlanCli, RefitAndEvaluateFromSavedRuns) {
  const std::string softmax = std::string(TESSEL_SOURCE_DIR) + "/kernels/softmax.tir";
  const std::string dir = temp_dir(0700);
  TileKernel k = kernel_file("softmax.tir");
  Calibration truth = fallback_calibration(TargetKind::Cpu, 1);
  MachineShape machine = machine_shape(TargetKind::Cpu, 1);
  std::ostringstream samples, heldout;
  samples << "{\"kernel\": \"softmax\", \"command\": \"test\", \"samples\": [";
  heldout << "{\"kernel\": \"softmax\", \"shapes\": [";
  int n = 0, shape = 0;
  for (int64_t m : {30, 200})
    for (int64_t cols : {50, 700}) {
      std::map<std::string, int64_t> sizes = {{"M", m}, {"N", cols}};
      CandidateSet set = enumerate_candidates(k, TargetKind::Cpu, sizes);
      heldout << (shape++ ? ", " : "") << "{\"sizes\": \"M=" << m << ",N=" << cols << "\", \"candidates\": [";
      for (size_t i = 0; i < 5; ++i) {
        const LegalCandidate& c = *set.legal[i * 13 % set.legal.size()];
        double us = predict_us(truth, program_features(c, sizes, machine));
        std::string one = "{\"sizes\": \"M=" + std::to_string(m) + ",N=" + std::to_string(cols) + "\", \"plan\": \"" +
                          plan_to_line(c.plan) + "\", \"us\": " + std::to_string(us) + ", \"measured_us\": " +
                          std::to_string(us) + ", \"pick\": " + (i == 0 ? "true" : "false") + "}";
        samples << (n++ ? ", " : "") << one;
        heldout << (i ? ", " : "") << one;
      }
      heldout << "]}";
    }
  samples << "]}";
  heldout << "]}";
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const std::string good = write("samples.json", samples.str()), held = write("heldout.json", heldout.str());
  const std::string base = "tune " + softmax + " --target cpu --threads 1 ";
  ASSERT_EQ(cli(base + "--refit " + good + " --out " + dir + "/cal.txt"), 0);
  std::ifstream in(dir + "/cal.txt");
  std::stringstream text;
  text << in.rdbuf();
  Calibration fit = parse_calibration(text.str(), "cal.txt");
  EXPECT_EQ(fit.samples, 20);
  EXPECT_LT(fit.fit_median_rel_err, 1e-3);  // the times are the truth's predictions
  // Several calibrations' runs pooled: every run of each file counts.
  ASSERT_EQ(cli(base + "--refit " + good + "," + good + " --out " + dir + "/pooled.txt"), 0);
  std::ifstream pooled_in(dir + "/pooled.txt");
  std::stringstream pooled;
  pooled << pooled_in.rdbuf();
  EXPECT_EQ(parse_calibration(pooled.str(), "pooled.txt").samples, 40);
  EXPECT_EQ(cli(base + "--evaluate " + held + " --calibration " + dir + "/cal.txt --out " + dir + "/eval.json"), 0);
  std::ifstream eval(dir + "/eval.json");
  std::stringstream etext;
  etext << eval.rdbuf();
  EXPECT_NE(etext.str().find("\"regret_pick\": {\"median\": 1,"), std::string::npos) << etext.str();
  // Refused: not JSON, a run without its time, another kernel's runs, no --out.
  std::string no_time = samples.str();
  no_time.replace(no_time.find("\"us\": "), 6, "\"uz\": ");
  std::string other = samples.str();
  other.replace(other.find("\"softmax\""), 9, "\"other\"");
  for (const std::string& bad : {std::string("{\"kernel\": "), no_time, other})
    EXPECT_EQ(cli(base + "--refit " + write("bad.json", bad) + " --out " + dir + "/bad.txt"), 2) << bad;
  EXPECT_EQ(cli(base + "--refit " + good), 2);
  EXPECT_EQ(cli(base + "--refit " + good + ", --out " + dir + "/bad.txt"), 2);  // an empty name
  EXPECT_EQ(cli(base + "--refit " + good + "," + dir + "/missing.json --out " + dir + "/bad.txt"), 2);
  EXPECT_EQ(cli(base + "--evaluate " + write("bad.json", "[1, 2]") + " --calibration " + dir + "/cal.txt"), 2);
  std::system(("rm -rf " + dir).c_str());
}

// scripts/planner_table.py (which plan wins where, from a held-out run with fixed
// plans): per regime and in all, the totals of the picks, the defaults and each fixed
// plan, the lowest in bold; a fixed plan that is also a shape's candidate is measured
// once; a run without fixed plans, or a file that is not such a run, exits with 1.
TEST(PlanCli, WhichPlanWinsWhereTable) {
  const std::string dir = temp_dir(0700);
  std::ostringstream run;
  run << "{\"kernel\": \"k\", \"suite_total_us\": {\"fixed\": [{\"plan\": \"tiles=A:1 workers=1\"}, "
         "{\"plan\": \"tiles=A:2 workers=1\"}]}, \"shapes\": [";
  for (int i = 0; i < 3; ++i) {
    const int n = 10 * (i + 1);  // work 10, 20, 30: one shape a regime
    // pick 1 + i, default 5, fixed A:1 2 (the pick itself on the first shape), fixed A:2 3
    run << (i ? ", " : "") << "{\"sizes\": \"N=" << n << "\", \"candidates\": ["
        << "{\"plan\": \"" << (i == 0 ? "tiles=A:1 workers=1" : "p") << "\", \"measured_us\": " << (i == 0 ? 2 : 1 + i)
        << ", \"pick\": true}, {\"plan\": \"d\", \"measured_us\": 5, \"default\": true}"
        << (i == 0 ? "" : ", {\"plan\": \"tiles=A:1 workers=1\", \"measured_us\": 2, \"fixed\": true}")
        << ", {\"plan\": \"tiles=A:2 workers=1\", \"measured_us\": 3, \"fixed\": true}]}";
  }
  run << "]}";
  std::ofstream(dir + "/heldout.json") << run.str();
  std::ofstream(dir + "/none.json") << "{\"kernel\": \"k\", \"suite_total_us\": {\"fixed\": []}, \"shapes\": []}";
  const std::string script = "python3 " + std::string(TESSEL_SOURCE_DIR) + "/scripts/planner_table.py ";
  auto status = [](const std::string& cmd) {
    int s = std::system((cmd + " >/dev/null 2>&1").c_str());
    return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  };
  ASSERT_EQ(std::system((script + dir + "/heldout.json > " + dir + "/table.md").c_str()), 0);
  std::ifstream in(dir + "/table.md");
  std::stringstream table;
  table << in.rdbuf();
  // picks 2 + 2 + 3 = 7, default 15, A:1 6, A:2 9; the lowest (A:1, 6) in bold.
  EXPECT_NE(table.str().find("| all | 7.0 | 15.0 | **6.0** | 9.0 | 6.0 |"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("| 1 shapes, work 10 to 10 | **2.0** | 5.0 | **2.0** | 3.0 | 2.0 |"), std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("| shapes won (fastest of these columns) | 2 | 0 | 1 | 0 | |"), std::string::npos)
      << table.str();
  EXPECT_EQ(status(script + dir + "/none.json"), 1);
  EXPECT_EQ(status(script + dir + "/missing.json"), 1);
  std::filesystem::remove_all(dir);
}

// The calibration's samples and the held-out JSON carry each measured run's features
// as the measuring build counts them (sim target: quick), so that offline checks use
// what the model saw; the calibration's draw options are stated in its JSON.
TEST(PlanCli, SavedRunsCarryTheirFeatures) {
  const std::string softmax = std::string(TESSEL_SOURCE_DIR) + "/kernels/softmax.tir";
  const std::string dir = temp_dir(0700);
  const std::string base = "tune " + softmax + " --target sim --threads 1 --rounds 1 --min-run-us 1 --no-tuning-cache ";
  ASSERT_EQ(cli(base + "--calibrate --draws 3 --per-shape 1 --range 4:9 --small-share 50 --small-range 2:3 --out " +
                dir + "/cal.txt"),
            0);
  ASSERT_EQ(cli(base + "--heldout 2 --range 4:9 --seed 2 --top 1 --extra 1 --calibration " + dir + "/cal.txt --out " +
                dir),
            0);
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return nlohmann::json::parse(s.str());
  };
  TileKernel k = kernel_file("softmax.tir");
  MachineShape machine = machine_shape(TargetKind::Sim, 1);
  auto sizes_of = [](const std::string& text) {
    std::map<std::string, int64_t> out;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
      out[item.substr(0, item.find('='))] = std::stoll(item.substr(item.find('=') + 1));
    return out;
  };
  int checked = 0;
  auto expect_features = [&](const nlohmann::json& run, const std::string& sizes) {
    SCOPED_TRACE(sizes + " " + run.dump().substr(0, 200));
    ASSERT_TRUE(run.contains("features"));
    std::string why;
    auto c = realize_candidate(k, plan_from_line(run["plan"].get<std::string>(), TargetKind::Sim), &why);
    ASSERT_TRUE(c) << why;
    Features f = program_features(*c, sizes_of(sizes), machine);
    for (int i = 0; i < kNumFeatures; ++i)
      EXPECT_NEAR(run["features"][kFeatureNames[i]].get<double>(), f[i], 1e-6 * (1 + std::fabs(f[i])))
          << kFeatureNames[i];
    ++checked;
  };
  nlohmann::json samples = read(dir + "/cal.txt.samples.json");
  EXPECT_NE(samples["distribution"].get<std::string>().find("in 50% of the draws one size"), std::string::npos);
  for (const auto& run : samples["samples"]) expect_features(run, run["sizes"].get<std::string>());
  nlohmann::json heldout = read(dir + "/heldout-softmax.json");
  for (const auto& shape : heldout["shapes"])
    for (const auto& run : shape["candidates"]) expect_features(run, shape["sizes"].get<std::string>());
  EXPECT_GE(checked, 8);
  std::system(("rm -rf " + dir).c_str());
}

// Every `build/tessel ...` line of a sh block in docs/planner.md runs and exits 0
// (the tuning cache in a fresh private directory).
TEST(PlanDocs, EveryCommandInPlannerMdRuns) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/docs/planner.md");
  std::string line, dir = temp_dir(0700);
  bool in_sh = false;
  int ran = 0;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      in_sh = line == "```sh";
      continue;
    }
    if (!in_sh || line.rfind("build/tessel ", 0) != 0) continue;
    std::string cmd = "cd " + std::string(TESSEL_SOURCE_DIR) + " && TESSEL_CACHE_DIR=" + dir + " " +
                      std::string(TESSEL_CLI) + line.substr(std::string("build/tessel").size()) + " >/dev/null 2>&1";
    int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << line;
    ++ran;
  }
  EXPECT_GE(ran, 3);
  std::remove((dir + "/tuning-v1.txt").c_str());
  std::system(("rm -rf " + dir).c_str());  // the kernel cache's entries from the tune run
}

}  // namespace
}  // namespace tessel
