// The pipeline pass on a program whose staged tile feeds reductions, not an mma
// (tests/passes/data/softmax_stats.in.gir): the copy of X is staged with W
// versions and issued ahead while the frag.load and the partial/combine
// reductions of the current tile run. Golden text after pipeline and
// plan_barriers (TESSEL_UPDATE_GOLDEN=1 test_pipeline rewrites it; review the
// diff); every window and protocol runs race free on the sim with the same bits
// as the unpipelined program.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "../passes/sim_check.h"
#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "passes/pipeline.h"
#include "passes/plan_barriers.h"

namespace tessel::test {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + path);
  EXPECT_TRUE(in) << "missing " << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

GroupProgram softmax_stats() {
  return parse_group_program(read("/tests/passes/data/softmax_stats.in.gir"));
}

GroupProgram pipelined(int window, bool async) {
  GroupProgram p = softmax_stats();
  PipelineStats stats = pipeline_loops(p, PipelineOptions{window, async});
  EXPECT_EQ(stats.loops_pipelined, 1) << stats.skipped_reason;
  plan_barriers(p);
  verify_group_program(p);
  return p;
}

void expect_golden(const std::string& name, const GroupProgram& p) {
  std::string path = "/tests/pipeline/data/" + name;
  if (std::getenv("TESSEL_UPDATE_GOLDEN"))
    std::ofstream(std::string(TESSEL_SOURCE_DIR) + path) << print_group_program(p);
  EXPECT_EQ(print_group_program(p), read(path));
}

TEST(PipelineSoftmax, GoldenDoubleBufferedSync) {
  GroupProgram p = pipelined(2, false);
  expect_golden("softmax_w2_sync.gir", p);
  EXPECT_EQ(p.buffer(p.find_buffer("Xs")).versions, 2);
  // The scratch of the reductions is not staged: one version each.
  EXPECT_EQ(p.buffer(p.find_buffer("Rm")).versions, 1);
}

TEST(PipelineSoftmax, GoldenThreeStageAsync) { expect_golden("softmax_w3_async.gir", pipelined(3, true)); }

TEST(PipelineSoftmax, EveryWindowAndProtocolMatchesTheUnpipelinedProgram) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{8, 16}, {19, 37}, {5, 100}, {9, 5}}) {
    std::map<std::string, int64_t> sizes = {{"M", m}, {"N", n}};
    SimRun want = run_on_sim(softmax_stats(), sizes, 17);
    ASSERT_EQ(want.result.race_count, 0);
    for (int w = 1; w <= 4; ++w)
      for (bool async : {false, true}) {
        if (w == 1 && !async) continue;  // unchanged
        std::string what = std::to_string(m) + "x" + std::to_string(n) + " W = " + std::to_string(w) +
                           (async ? " async" : " sync");
        SimRun got = run_on_sim(pipelined(w, async), sizes, 17, 3 + w);
        EXPECT_EQ(got.result.race_count, 0)
            << what << (got.result.races.empty() ? "" : ": " + got.result.races[0].message);
        for (const char* out : {"Mx", "L"})
          EXPECT_TRUE(same_bits(got.tensors.at(out), want.tensors.at(out))) << what << " " << out;
      }
  }
}

}  // namespace
}  // namespace tessel::test
