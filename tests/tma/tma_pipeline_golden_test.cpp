// The tma-pipeline pass as text: the lowered GEMM of a plan (tests/tma/data/*.in.gir,
// checked against what the lowering produces today) through
// `tessel opt --pass tma=W|tma-ws=W|tma-ws=W,C` against golden GroupIR, which parses back,
// verifies and runs on the sim with 0 races. TESSEL_UPDATE_GOLDEN=1 test_tma
// rewrites the data files; review their diff before committing.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_precision.h"
#include "passes/tma_pipeline.h"
#include "target/sim/sim.h"

namespace tessel {
namespace {

std::string data_path(const std::string& name) { return std::string(TESSEL_SOURCE_DIR) + "/tests/tma/data/" + name; }

std::string read_data(const std::string& name) {
  std::ifstream f(data_path(name));
  EXPECT_TRUE(f.good()) << "missing data file " << name;
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void expect_text(const std::string& name, const std::string& got) {
  if (std::getenv("TESSEL_UPDATE_GOLDEN")) std::ofstream(data_path(name)) << got;
  std::istringstream want_in(read_data(name)), got_in(got);
  std::string w, g;
  for (int line = 1;; ++line) {
    bool more_w = static_cast<bool>(std::getline(want_in, w)), more_g = static_cast<bool>(std::getline(got_in, g));
    if (!more_w && !more_g) break;
    ASSERT_EQ(more_w ? w : "<end>", more_g ? g : "<end>") << name << " line " << line << "; whole text:\n" << got;
  }
}

struct Case {
  const char* input;
  Plan (*plan)();
  DType ab;
};

Plan fma_plan() {
  Plan p;
  p.target = TargetKind::Sim;
  set_gemm_tile(p, 16, 16, 8);
  p.workers = 4, p.worker_rows = 2, p.worker_cols = 2;
  return p;
}

Plan wgmma_plan() {
  Plan p = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16, "sm_90");
  set_gemm_tile(p, 128, 128, 64);
  p.workers = 2, p.worker_rows = 2, p.worker_cols = 1;
  p.window = 1, p.async_copy = false, p.tma = false, p.producers = 0;  // the pass is applied by hand
  return p;
}

const Case kCases[] = {{"gemm_fma_16x16x8.in.gir", fma_plan, DType::F32},
                       {"gemm_wgmma_128x128x64.in.gir", wgmma_plan, DType::BF16}};

TEST(TmaPipelineGolden, InputsAreTheLoweringsOutput) {
  for (const Case& c : kCases) {
    CompileOptions o;
    o.keep_stages = true;
    CompiledGroup g = compile_to_group(gemm_kernel(c.ab), c.plan(), o);
    ASSERT_EQ(g.stages.at(1).name, "lower");
    expect_text(c.input, g.stages.at(1).ir);
  }
}

// What `tessel opt FILE --pass P` prints.
std::string opt(const std::string& input, const std::string& pass) {
  std::string cmd = std::string(TESSEL_CLI) + " opt " + data_path(input) + " --pass " + pass + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe.get())) out.append(buf.data(), n);
  return out;
}

TEST(TmaPipelineGolden, OptPrintsTheGoldenProgramsWhichRunRaceFree) {
  struct Out {
    const char* input;
    const char* pass;
    const char* golden;
  };
  const Out outs[] = {{"gemm_fma_16x16x8.in.gir", "tma=2", "gemm_fma_16x16x8.tma2.gir"},
                      {"gemm_fma_16x16x8.in.gir", "tma-ws=3", "gemm_fma_16x16x8.ws3.gir"},
                      {"gemm_wgmma_128x128x64.in.gir", "tma=3", "gemm_wgmma_128x128x64.tma3.gir"},
                      {"gemm_wgmma_128x128x64.in.gir", "tma-ws=3", "gemm_wgmma_128x128x64.ws3.gir"},
                      {"gemm_fma_16x16x8.in.gir", "tma-ws=3,2", "gemm_fma_16x16x8.ws3c2.gir"},
                      {"gemm_wgmma_128x128x64.in.gir", "tma-ws=3,2", "gemm_wgmma_128x128x64.ws3c2.gir"}};
  for (const Out& o : outs) {
    SCOPED_TRACE(o.golden);
    std::string text = opt(o.input, o.pass);
    expect_text(o.golden, text);
    GroupProgram p = parse_group_program(text);
    verify_group_program(p);
    EXPECT_EQ(print_group_program(p), text);
    for (auto [m, n, k] : {std::array<int64_t, 3>{33, 47, 29}, {130, 136, 448}}) {
      std::vector<float> a(m * k, 1.0f), b(k * n, 2.0f), c(m * n, NAN);
      LaunchArgs args;
      args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
      args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
      args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
      SimResult r = run_sim(p, args);
      EXPECT_EQ(r.race_count, 0) << m << "x" << n << "x" << k << (r.races.empty() ? "" : "\n" + r.races[0].message);
      int64_t wrong = 0;
      for (float x : c) wrong += x != 2.0f * k;
      EXPECT_EQ(wrong, 0) << m << "x" << n << "x" << k;
    }
  }
  EXPECT_NE(opt("gemm_fma_16x16x8.in.gir", "tma=0").find("the window takes 1 to 8"), std::string::npos);
}

}  // namespace
}  // namespace tessel
