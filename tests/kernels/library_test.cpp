// The kernel library's text files (kernels/*.tir) end to end: parsed, compiled with
// the default plan (and with plans that split more), run on ragged shapes on sim and
// cpu, every written tensor checked against the FP64 evaluator of the same TileIR
// with outputs poisoned with NaN (src/check/checked_run.h); the sim finds no race.
#include <gtest/gtest.h>


#include "check/checked_run.h"
#include "kernel_files.h"
#include "plan/default_plan.h"

namespace tessel {
namespace {

struct Case {
  const char* kernel;
  std::map<std::string, int64_t> sizes;
  std::map<std::string, double> scalars;
};

// Ragged everywhere: no size is a multiple of any tile the plans pick; padded
// leading dimensions where a kernel has them.
const Case kCases[] = {
    {"softmax", {{"M", 37}, {"N", 75}, {"ldx", 80}, {"ldy", 77}}, {}},
    {"layernorm", {{"M", 29}, {"N", 53}, {"ldx", 53}, {"ldy", 60}}, {{"eps", 1e-5}}},
    {"row_sum", {{"M", 41}, {"N", 35}, {"ldx", 35}}, {}},
    {"col_sum", {{"M", 41}, {"N", 35}, {"ldx", 39}}, {}},
    {"add_broadcast", {{"M", 23}, {"N", 45}, {"lda", 45}, {"ldc", 50}}, {}},
    {"gemm", {{"M", 21}, {"N", 19}, {"K", 27}, {"lda", 27}, {"ldb", 30}, {"ldc", 19}}, {{"alpha", 1.5}, {"beta", 0.0}}},
    {"gemm_nt", {{"M", 21}, {"N", 19}, {"K", 27}, {"lda", 27}, {"ldb", 30}, {"ldc", 19}}, {}},
    {"batched_gemm",
     {{"batch", 3}, {"M", 19}, {"N", 23}, {"K", 17}, {"lda", 17}, {"sa", 19 * 17}, {"ldb", 23},
      {"sb", 17 * 23}, {"ldc", 25}, {"sc", 19 * 25}},
     {}},
    {"gemm_bias_relu", {{"M", 21}, {"N", 35}, {"K", 13}, {"lda", 13}, {"ldb", 35}, {"ldc", 35}}, {}},
    {"gemm_bias_gelu", {{"M", 21}, {"N", 35}, {"K", 13}, {"lda", 13}, {"ldb", 35}, {"ldc", 35}}, {}},
    {"attention", {{"B", 2}, {"Hq", 4}, {"Hkv", 2}, {"Sq", 21}, {"Skv", 27}, {"D", 64}}, {{"scale", 0.125}}},
    {"attention_causal", {{"B", 1}, {"Hq", 3}, {"Hkv", 1}, {"Sq", 27}, {"Skv", 21}, {"D", 64}}, {{"scale", 0.125}}},
};

class Library : public ::testing::TestWithParam<Case> {};

void expect_checked(const Kernel& k, const Case& c, uint64_t seed) {
  CheckedRun r = run_checked(k, c.sizes, c.scalars, seed);
  EXPECT_TRUE(r.ok) << c.kernel << " on " << target_name(k.plan().target) << " ("
                    << k.plan().to_string() << "): rel_err " << r.worst << " bound " << r.bound
                    << ", races " << r.launch.races;
  EXPECT_EQ(r.launch.races, 0);
  for (const std::string& m : r.launch.race_messages) ADD_FAILURE() << m;
}

TEST_P(Library, SimDefaultPlan) {
  const Case& c = GetParam();
  TileKernel k = load_kernel_file(c.kernel);
  expect_checked(compile(k, TargetKind::Sim, c.sizes), c, 1);
}

// Eight workers: reductions split over more workers, fragments over a wider grid.
TEST_P(Library, SimEightWorkers) {
  const Case& c = GetParam();
  TileKernel k = load_kernel_file(c.kernel);
  Plan p = default_plan(k, TargetKind::Sim, c.sizes);
  p.workers = 8;
  fit_worker_grid(k, p);
  expect_checked(compile(k, p), c, 2);
}

TEST_P(Library, CpuDefaultPlan) {
  const Case& c = GetParam();
  TileKernel k = load_kernel_file(c.kernel);
  expect_checked(compile(k, TargetKind::Cpu, c.sizes), c, 3);
}

// Several workers in one cpu group: the same partial / combine path as the GPU's.
TEST_P(Library, CpuFourWorkers) {
  const Case& c = GetParam();
  TileKernel k = load_kernel_file(c.kernel);
  Plan p = default_plan(k, TargetKind::Cpu, c.sizes);
  p.workers = 4;
  fit_worker_grid(k, p);
  expect_checked(compile(k, p), c, 4);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Library, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.kernel); });

}  // namespace
}  // namespace tessel
