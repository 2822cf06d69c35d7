// Issue 14, clusters on the sim (group_ir.h, "clusters"; tma_pipeline.h): the
// warp-specialized GEMMs of tests/tma/data/*.ws3c2.gir run in clusters of two
// groups along the tile rows. Each producer copies its own A box and half of the
// B box, multicast to both groups; every consumer releases a stage in both groups.
// They run with 0 races and the exact product, with a row of tiles past the edge
// where the tile count is odd. Each protocol break is reported: no cluster.sync
// after the init (a peer's mbarrier used before it was initialized), none at the
// end (a group may leave while its peer still arrives on its mbarriers), a
// release that reaches only its own group (the peer's producer overwrites a stage
// still read), and a box that is no longer multicast (a deadlock).
#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../sim/race_assertions.h"
#include "../sim/small_int_gemm.h"
#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "passes/tma_pipeline.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel {
namespace {

using test::edit;
using test::has;
using test::names_race;
using test::races_text;
using Gemm = test::SmallIntGemm;

std::string data(const std::string& name) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/tests/tma/data/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kFma = "gemm_fma_16x16x8.ws3c2.gir";        // 16 x 16 tiles, fma atom
const char* kWgmma = "gemm_wgmma_128x128x64.ws3c2.gir";  // 128 x 128 tiles, wgmma atom

TEST(ClusterSim, MulticastGemmsRunWithoutRacesAndExact) {
  struct Case {
    const char* file;
    std::vector<std::array<int64_t, 3>> shapes;
  };
  // Tile rows: 3 (one group past the edge), 2, 1 (a whole rank past it), 9.
  const Case cases[] = {{kFma, {{40, 47, 29}, {32, 16, 64}, {7, 33, 50}, {140, 20, 17}}},
                        {kWgmma, {{300, 136, 200}, {130, 128, 448}, {64, 200, 64}}}};
  for (const Case& c : cases) {
    const std::string text = data(c.file);
    for (const auto& [m, n, k] : c.shapes)
      for (double beta : {0.0, 0.5}) {
        SCOPED_TRACE(std::string(c.file) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                     std::to_string(k) + " beta " + std::to_string(beta));
        Gemm run(m, n, k, beta);
        SimResult r = run.sim(text);
        EXPECT_EQ(r.race_count, 0) << races_text(r).substr(0, 3000);
        EXPECT_EQ(run.error(), 0.0);
      }
  }
}

// Clusters of four, and of two along the tile columns (a 16 x 32 tile: the
// larger A box is then the one shared), from the pass as the compiler runs it.
TEST(ClusterSim, OtherClusterSizesAndDimensionsRunWithoutRaces) {
  for (int cluster : {2, 4}) {
    for (int64_t bn : {16, 32}) {
      Plan p;
      p.target = TargetKind::Sim;
      set_gemm_tile(p, bn == 16 ? 16 : 64, bn, 8);
      p.workers = 4, p.worker_rows = 2, p.worker_cols = 2;
      p.tma = true, p.producers = 1, p.window = 2, p.cluster = cluster;
      CompiledGroup g = compile_to_group(gemm_kernel(DType::F32), p, {});
      ASSERT_EQ(g.program.cluster, cluster);
      // 16 x 16 tiles: B (8 x 16) is shared along the rows; 64 x 32: A (64 x 8).
      EXPECT_EQ(g.program.grid[g.program.cluster_dim].iv, bn == 16 ? "i0" : "j1");
      const std::string text = print_group_program(g.program);
      for (auto [m, n, k] : {std::array<int64_t, 3>{50, 70, 33}, {16, 200, 8}}) {
        SCOPED_TRACE("cluster " + std::to_string(cluster) + " BN " + std::to_string(bn) + " " + std::to_string(m) +
                     "x" + std::to_string(n) + "x" + std::to_string(k));
        Gemm run(m, n, k);
        SimResult r = run.sim(text);
        EXPECT_EQ(r.race_count, 0) << races_text(r).substr(0, 3000);
        EXPECT_EQ(run.error(), 0.0);
      }
    }
  }
}

// No cluster.sync between the init and the roles: a producer multicasts onto, and
// a consumer arrives on, the peer's mbarriers, whose init it has not seen.
TEST(ClusterSim, PeerMbarrierUsedBeforeItsInitIsARace) {
  Gemm run(40, 47, 29);
  SimResult r = run.sim(edit(data(kFma), "  cluster.sync #27\n", ""));
  EXPECT_TRUE(names_race(r, 24, 22, "no cluster.sync between") || names_race(r, 25, 17, "no cluster.sync between"))
      << races_text(r).substr(0, 3000);
}

// No cluster.sync at the end: the last releases arrive on the peer's mbarriers,
// and nothing keeps the peer from leaving first.
TEST(ClusterSim, LeavingBeforeThePeersLastArrivalIsARace) {
  Gemm run(40, 47, 29);
  SimResult r = run.sim(edit(data(kFma), "  cluster.sync #29\n", ""));
  ASSERT_GT(r.race_count, 0);
  bool named = false;
  for (const Race& race : r.races) named = named || (race.first_op == 17 && has(race.message, "may have left"));
  EXPECT_TRUE(named) << races_text(r).substr(0, 3000);
}

// Releases that reach only their own group (and an empty barrier counting only
// its own consumers): a producer refills the peer's stage while the peer's
// consumers may still read it, or before its last copy there landed.
TEST(ClusterSim, ReleaseOfOneGroupOnlyLetsThePeerOverwriteAStage) {
  std::string text = edit(data(kFma), "mbar.init #25 empty count 8", "mbar.init #25 empty count 4");
  text = edit(text, "mbar.arrive #17 empty@(k2 % 3) cluster", "mbar.arrive #17 empty@(k2 % 3)");
  Gemm run(40, 47, 100);
  SimResult r = run.sim(text);
  ASSERT_GT(r.race_count, 0);
  // The refill lands over the peer's reads, or over its copy still in flight.
  EXPECT_TRUE(names_race(r, 6, 22) || names_race(r, 22, 6) || names_race(r, 22, 22, "before waiting"))
      << races_text(r).substr(0, 3000);
}

// A half of B that lands in its own group only: the peer's phase never gets its
// bytes, and nothing else can complete it.
TEST(ClusterSim, ABoxNoLongerMulticastIsADeadlock) {
  Gemm run(40, 47, 29);
  try {
    run.sim(edit(data(kFma), " multicast guard", " guard"));
    FAIL() << "no deadlock";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_TRUE(has(e.what(), "deadlock")) << e.what();
  }
}

TEST(ClusterSim, MalformedClusterProgramsAreRefused) {
  const std::string text = data(kFma);
  auto refused = [](const std::string& t, const std::string& why) {
    try {
      verify_group_program(parse_group_program(t));
      ADD_FAILURE() << "accepted; wanted: " << why;
    } catch (const Error& e) {
      EXPECT_TRUE(has(e.what(), why)) << e.what();
    }
  };
  refused(edit(text, "cluster 2 along i0", "cluster 2 along k"), "not a grid dimension");
  refused(edit(text, "cluster 2 along i0", "cluster 9 along i0"), "cluster 9");
  refused(edit(text, "  cluster 2 along i0\n", ""), "without clusters");
  // A cluster op outside the roles, and a cluster.sync inside a body.
  refused(edit(text, "  fence #26\n", "  mbar.arrive #26 empty@0 cluster\n"), "outside a role");
  refused(edit(text, "      frag.fill #0 f = 0\n", "      frag.fill #0 f = 0\n      cluster.sync #35\n"),
          "only at the top level");
}

TEST(ClusterSim, PlansThatCannotShareAreRefused) {
  Plan p;
  p.target = TargetKind::Sim;
  set_gemm_tile(p, 16, 16, 8);
  p.workers = 4, p.worker_rows = 2, p.worker_cols = 2;
  p.tma = true, p.producers = 0, p.window = 2, p.cluster = 2;
  for (const char* why : {"producers >= 1", "persistent=0", "out of range"}) {
    Plan q = p;
    if (has(why, "persistent")) q.producers = 1, q.persistent = 4;
    if (has(why, "range")) q.producers = 1, q.cluster = 9;
    try {
      compile_to_group(gemm_kernel(DType::F32), q, {});
      ADD_FAILURE() << "accepted; wanted: " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Plan);
      EXPECT_TRUE(has(e.what(), why)) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessel
