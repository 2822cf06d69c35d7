// The planner (docs/planner.md): candidates are legal and correct, the cost model
// fits and ranks, the tuning cache keeps its directory's rules, dispatch follows
// the cache then the model, and the CLI refuses bad input with status 2.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

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
#include "plan/tuning_cache.h"
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

TEST(PlanCostModel, KendallTau) {
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {40, 30, 20, 10}), -1.0);
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
  EXPECT_EQ(cli("plans " + softmax + " --size M=4,N=9 --frobnicate"), 2);
  EXPECT_EQ(cli("tune " + softmax + " --heldout 1 --out /tmp --fixed-plans /nonexistent"), 2);
  EXPECT_EQ(cli("plans " + softmax + " --size M=5,N=9 --top 3 --no-tuning-cache"), 0);
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
