// The sim runs hand-built GEMM group programs correctly: complete output against an
// FP64 oracle, ragged shapes, every layout, batch and worker grid, async and
// double-buffered programs, and zero races on all of them.
#include <gtest/gtest.h>

#include <cstring>

#include "gemm_programs.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel::test {
namespace {

struct Case {
  const char* name;
  int64_t m, n, k;
  double alpha, beta;
  GemmConfig cfg;
  bool pipelined = false;
};

GemmConfig config(int batch) {
  GemmConfig c;
  c.batch = batch;
  return c;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  std::vector<Case> all = {
      {"square", 16, 16, 8, 1.0, 0.0, config(1)},
      {"ragged_batch1", 13, 29, 7, 1.0, 0.0, config(1)},
      {"ragged_batch3", 13, 29, 7, 1.5, 0.0, config(3)},
      {"ragged_batch4_beta", 13, 29, 7, 0.75, -0.5, config(4)},
      {"tiny", 1, 1, 1, 2.0, 1.0, config(1)},
      {"k_smaller_than_bk", 9, 9, 3, 1.0, 0.25, config(2)},
  };
  Case c{"a_rowpanels_b_rowmajor", 17, 11, 9, 1.0, 0.5, config(3)};
  c.cfg.a_layout = Layout::RowPanels;
  c.cfg.a_panel = 4;
  c.cfg.b_layout = Layout::RowMajor;
  c.cfg.b_panel = 1;
  all.push_back(c);
  c = {"b_colpanels2", 10, 20, 12, 1.0, 0.0, config(5)};
  c.cfg.b_panel = 2;
  all.push_back(c);
  c = {"surplus_workers", 13, 29, 7, 1.0, 2.0, config(1)};
  c.cfg.extra_workers = 3;
  all.push_back(c);
  c = {"workers_4x1_tall_tiles", 37, 14, 19, 1.0, 0.0, config(2)};
  c.cfg.worker_rows = 4;
  c.cfg.worker_cols = 1;
  c.cfg.bm = 16;
  c.cfg.bk = 8;
  all.push_back(c);
  c = {"async", 13, 29, 7, 1.0, 0.5, config(3)};
  c.cfg.async = true;
  all.push_back(c);
  c = {"pipelined", 13, 29, 15, 1.0, 0.0, config(1)};
  c.pipelined = true;
  all.push_back(c);
  c = {"pipelined_beta", 24, 16, 32, -1.0, 0.5, config(4)};
  c.pipelined = true;
  all.push_back(c);
  return all;
}

class SimGemm : public testing::TestWithParam<Case> {};

TEST_P(SimGemm, MatchesOracleWithoutRaces) {
  const Case& tc = GetParam();
  GemmProgram g = tc.pipelined ? make_pipelined_gemm(tc.cfg) : make_gemm(tc.cfg);
  GemmData data(tc.m, tc.n, tc.k, tc.alpha, tc.beta, 42);
  std::vector<float> before = data.c;
  SimResult r = run_sim(g.program, data.args());
  EXPECT_EQ(r.race_count, 0) << (r.races.empty() ? "" : r.races[0].message);
  EXPECT_LE(data.error_ratio(before), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SimGemm, testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

std::vector<float> run_c(const GroupProgram& p, uint64_t seed = 1) {
  GemmData data(21, 18, 23, 1.0, 0.0, 7);
  SimOptions options;
  options.seed = seed;
  SimResult r = run_sim(p, data.args(), options);
  EXPECT_EQ(r.race_count, 0);
  return data.c;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

TEST(SimGemm, PipelinedAgreesBitForBitWithSingleBuffered) {
  GemmConfig cfg = config(3);
  EXPECT_TRUE(same_bits(run_c(make_gemm(cfg).program), run_c(make_pipelined_gemm(cfg).program)));
}

TEST(SimGemm, RaceFreeResultDoesNotDependOnWorkerOrder) {
  GroupProgram p = make_gemm(config(2)).program;
  std::vector<float> first = run_c(p, 1);
  for (uint64_t seed = 2; seed < 6; ++seed) EXPECT_TRUE(same_bits(first, run_c(p, seed)));
}

TEST(SimGemm, EmptyGridRunsNoGroup) {
  GroupProgram p = make_gemm(config(1)).program;
  GemmData data(0, 5, 5, 1.0, 0.0, 1);
  LaunchArgs args = data.args();
  float unused = 0;  // an empty tensor still needs a pointer
  args.tensors["A"] = args.tensors["C"] = &unused;
  EXPECT_EQ(run_sim(p, args).race_count, 0);
}

TEST(SimGemm, VersionOutOfRangeIsAnError) {
  GemmProgram g = make_pipelined_gemm(config(1));
  // 2 for M = 8, known only at run time (the verifier refuses a constant 2).
  find_op(g.program, g.mma).a.version = expr_sym("M") + expr_const(-6);
  GemmData data(8, 8, 8, 1.0, 0.0, 1);
  try {
    run_sim(g.program, data.args());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("version 2 of As"), std::string::npos) << e.what();
  }
}

TEST(SimGemm, UnguardedRaggedCopyIsAnErrorNotACrash) {
  GemmProgram g = make_gemm(config(1));
  find_op(g.program, g.copy_a).src_row_bound = nullptr;
  GemmData data(13, 8, 8, 1.0, 0.0, 1);
  try {
    run_sim(g.program, data.args());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("reads A[13, "), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessel::test
