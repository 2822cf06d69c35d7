// The kernel library written in the DSL (src/ops/library.h): each kernel runs on
// ragged shapes on sim and cpu against the FP64 evaluator (outputs NaN-poisoned,
// no races), and computes what its text twin in kernels/ computes: the evaluator
// gives both the same outputs on the same inputs.
#include <gtest/gtest.h>

#include <functional>

#include "check/checked_run.h"
#include "eval/evaluate.h"
#include "kernel_files.h"
#include "ops/library.h"
#include "plan/default_plan.h"

namespace tessel {
namespace {

struct Case {
  const char* name;
  std::function<TileKernel()> build;
  const char* text_twin;  // "" when there is none
  std::map<std::string, int64_t> sizes;
  std::map<std::string, double> scalars;
};

std::vector<Case> cases() {
  return {
      {"softmax", [] { return softmax_kernel(); }, "softmax", {{"M", 37}, {"N", 75}, {"ldx", 80}, {"ldy", 77}}, {}},
      {"layernorm", [] { return layernorm_kernel(); }, "layernorm",
       {{"M", 29}, {"N", 53}, {"ldx", 53}, {"ldy", 60}}, {{"eps", 1e-5}}},
      {"row_sum", row_sum_kernel, "row_sum", {{"M", 41}, {"N", 35}, {"ldx", 35}}, {}},
      {"col_sum", col_sum_kernel, "col_sum", {{"M", 41}, {"N", 35}, {"ldx", 39}}, {}},
      {"add_broadcast", add_broadcast_kernel, "add_broadcast",
       {{"M", 23}, {"N", 45}, {"lda", 45}, {"ldc", 50}}, {}},
      // B^T: B is stored N x K row-major (ldb = 30), read as K x N with strides (1, 30).
      {"gemm_strided_nt", gemm_strided_kernel, "",
       {{"M", 21}, {"N", 19}, {"K", 27}, {"sam", 27}, {"sak", 1}, {"sbk", 1}, {"sbn", 30}, {"ldc", 19}}, {}},
      // A^T and B^T together.
      {"gemm_strided_tt", gemm_strided_kernel, "",
       {{"M", 21}, {"N", 19}, {"K", 27}, {"sam", 1}, {"sak", 22}, {"sbk", 1}, {"sbn", 27}, {"ldc", 20}}, {}},
      {"batched_gemm", batched_gemm_kernel, "batched_gemm",
       {{"batch", 3}, {"M", 19}, {"N", 23}, {"K", 17}, {"lda", 17}, {"sa", 19 * 17}, {"ldb", 23},
        {"sb", 17 * 23}, {"ldc", 25}, {"sc", 19 * 25}},
       {}},
      // B shared by every batch: batch stride 0 (a read-only broadcast view).
      {"batched_gemm_shared_b", batched_gemm_kernel, "",
       {{"batch", 3}, {"M", 19}, {"N", 23}, {"K", 17}, {"lda", 17}, {"sa", 19 * 17}, {"ldb", 23},
        {"sb", 0}, {"ldc", 25}, {"sc", 19 * 25}},
       {}},
      {"gemm_bias_relu", [] { return gemm_epilogue_kernel(BiasAlong::Rows, Activation::Relu); },
       "gemm_bias_relu", {{"M", 21}, {"N", 35}, {"K", 13}, {"lda", 13}, {"ldb", 35}, {"ldc", 35}}, {}},
      {"gemm_bias_gelu", [] { return gemm_epilogue_kernel(BiasAlong::Rows, Activation::Gelu); },
       "gemm_bias_gelu", {{"M", 21}, {"N", 35}, {"K", 13}, {"lda", 13}, {"ldb", 35}, {"ldc", 35}}, {}},
      {"gemm_colbias_relu", [] { return gemm_epilogue_kernel(BiasAlong::Cols, Activation::Relu); }, "",
       {{"M", 21}, {"N", 35}, {"K", 13}, {"lda", 13}, {"ldb", 35}, {"ldc", 36}}, {}},
      // head_dim 7 < BD = 8 (the twin comparison binds every tile to 8), GQA 2:1.
      {"attention", [] { return attention_kernel(AttentionMask::None); }, "attention",
       {{"B", 2}, {"Hq", 4}, {"Hkv", 2}, {"Sq", 19}, {"Skv", 23}, {"D", 7}}, {}},
      {"attention_causal", [] { return attention_kernel(AttentionMask::Causal); }, "attention_causal",
       {{"B", 2}, {"Hq", 4}, {"Hkv", 2}, {"Sq", 23}, {"Skv", 19}, {"D", 7}}, {}},
  };
}

class DslLibrary : public ::testing::TestWithParam<Case> {};

void expect_checked(const Kernel& k, const Case& c, uint64_t seed) {
  CheckedRun r = run_checked(k, c.sizes, c.scalars, seed);
  EXPECT_TRUE(r.ok) << c.name << " on " << target_name(k.plan().target) << " ("
                    << k.plan().to_string() << "): rel_err " << r.worst << " bound " << r.bound;
  EXPECT_EQ(r.launch.races, 0);
  for (const std::string& m : r.launch.race_messages) ADD_FAILURE() << m;
}

TEST_P(DslLibrary, Sim) {
  const Case& c = GetParam();
  expect_checked(compile(c.build(), TargetKind::Sim, c.sizes), c, 11);
}

TEST_P(DslLibrary, Cpu) {
  const Case& c = GetParam();
  expect_checked(compile(c.build(), TargetKind::Cpu, c.sizes), c, 12);
}

// Every library kernel with its sizes fixed (Plan::sizes: passes/specialize_sizes.h)
// on its own sizes: on the sim (no races) and on the cpu.
TEST_P(DslLibrary, FixedSizes) {
  const Case& c = GetParam();
  for (TargetKind target : {TargetKind::Sim, TargetKind::Cpu}) {
    Plan p = default_plan(c.build(), target, c.sizes);
    for (const auto& [name, value] : c.sizes) p.sizes.push_back({name, value});
    expect_checked(compile(c.build(), p), c, 13);
  }
}

// The DSL kernel and its text twin, evaluated on the same inputs with the same tile
// bindings, write the same outputs.
TEST_P(DslLibrary, SameAsTextTwin) {
  const Case& c = GetParam();
  if (std::string(c.text_twin).empty()) GTEST_SKIP() << c.name << " has no text twin";
  TileKernel dsl = c.build(), text = load_kernel_file(c.text_twin);
  std::map<std::string, int64_t> sizes = c.sizes;
  default_strides(dsl.tensors, sizes);
  auto scalars = random_scalars(dsl.scalars, c.scalars, 5);
  std::map<std::string, std::vector<double>> outputs[2];
  const TileKernel* kernels[2] = {&dsl, &text};
  for (int which = 0; which < 2; ++which) {
    auto tensors = random_tensors(kernels[which]->tensors, sizes, 99);
    EvalArgs ea;
    ea.sizes = sizes;
    ea.scalars = scalars;
    for (const std::string& t : dsl.tile_params) ea.tiles[t] = 8;
    for (auto& [name, h] : tensors) ea.tensors[name] = std::span<double>(h.oracle);
    evaluate(*kernels[which], ea);
    for (auto& [name, h] : tensors) outputs[which][name] = h.oracle;
  }
  ASSERT_EQ(outputs[0].size(), outputs[1].size());
  for (const auto& [name, values] : outputs[0]) {
    ASSERT_TRUE(outputs[1].count(name)) << name;
    EXPECT_LE(relative_error(std::span<const double>(values), std::span<const double>(outputs[1][name])), 1e-12)
        << c.name << ": tensor " << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, DslLibrary, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace tessel
