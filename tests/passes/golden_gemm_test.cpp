// Golden GroupIR: the lowered GEMM in, plan_barriers, GroupIR out, compared line
// by line with files under data/. Each program also runs on the sim race checker
// against the FP64 oracle. To regenerate after a deliberate change:
//   TESSEL_UPDATE_GOLDEN=1 build/test_passes --gtest_filter='Golden*'
// and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_reference.h"
#include "passes/plan_barriers.h"
#include "gemm_sim.h"
#include "sim_check.h"

namespace tessel {
namespace {

std::string data_path(const std::string& name) {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/passes/data/" + name;
}

std::string read_data(const std::string& name) {
  std::ifstream in(data_path(name));
  EXPECT_TRUE(in) << "missing golden file " << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);) out.push_back(line);
  return out;
}

void expect_same_lines(const std::string& want, const std::string& got, const std::string& what) {
  std::vector<std::string> w = lines(want), g = lines(got);
  for (size_t i = 0; i < std::max(w.size(), g.size()); ++i) {
    std::string wl = i < w.size() ? w[i] : "<end>", gl = i < g.size() ? g[i] : "<end>";
    ASSERT_EQ(wl, gl) << what << ", line " << i + 1;
  }
}

struct Golden {
  const char* name;
  Plan plan;
  int64_t m, n, k;  // a shape to run on sim
  int static_before, static_after, loop_before, loop_after;
  const char* dynamic_before;
  const char* dynamic_after;
};

void check_golden(const Golden& g) {
  SCOPED_TRACE(g.name);
  // When the lowering changes on purpose, TESSEL_UPDATE_GOLDEN=1 test_passes rewrites
  // both files from it; review the diff before committing.
  if (std::getenv("TESSEL_UPDATE_GOLDEN")) {
    CompileOptions off;
    off.coalesce_barriers = false;
    GroupProgram lowered = compile_to_group(gemm_kernel(), g.plan, off).program;
    std::ofstream(data_path(std::string(g.name) + ".in.gir")) << print_group_program(lowered);
    plan_barriers(lowered);
    std::ofstream(data_path(std::string(g.name) + ".out.gir")) << print_group_program(lowered);
  }
  std::string in = read_data(std::string(g.name) + ".in.gir");
  std::string out = read_data(std::string(g.name) + ".out.gir");
  // The lowering still produces the input...
  CompileOptions off;
  off.coalesce_barriers = false;
  expect_same_lines(in, print_group_program(compile_to_group(gemm_kernel(), g.plan, off).program),
                    "lowered GEMM vs " + std::string(g.name) + ".in.gir");
  // ...and the pass turns the parsed input into the output.
  GroupProgram p = parse_group_program(in);
  BarrierStats s = plan_barriers(p);
  expect_same_lines(out, print_group_program(p), "planned vs " + std::string(g.name) + ".out.gir");
  EXPECT_EQ(s.static_before, g.static_before);
  EXPECT_EQ(s.static_after, g.static_after);
  EXPECT_EQ(s.loop_before, g.loop_before);
  EXPECT_EQ(s.loop_after, g.loop_after);
  EXPECT_EQ(s.dynamic_before, g.dynamic_before);
  EXPECT_EQ(s.dynamic_after, g.dynamic_after);
  check_on_sim(parse_group_program(in), g.m, g.n, g.k);
  check_on_sim(p, g.m, g.n, g.k);
}

// The seed report's configuration: 64x64x32, 256 workers, window 1, copy batch 4.
// copy A; fence; copy B; fence; mma; fence  ->  copy A; copy B; fence; mma; fence.
TEST(GoldenGemm, Aligned64x64x32With256Workers) {
  check_golden({"gemm_64x64x32_w256", sim_plan(64, 64, 32, 256, 16, 16, 4), 128, 128, 128, 4, 3,
                3, 2, "3*L0 + 1", "2*L0 + 1"});
}

// Ragged edges are guards in the same program (bounds are launch sizes); 7
// workers over a 2x2 fragment grid: three only copy. Run on a ragged shape.
TEST(GoldenGemm, RaggedOutputWithSevenWorkers) {
  check_golden({"gemm_ragged_16x16x8_w7", sim_plan(16, 16, 8, 7, 2, 2, 3), 37, 45, 29, 4, 3, 3,
                2, "3*L0 + 1", "2*L0 + 1"});
}

}  // namespace
}  // namespace tessel
