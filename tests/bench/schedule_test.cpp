// The benchmark's order: rotated shapes, counterbalanced implementations (ABBA
// for two; all six orders over six rounds for three), and shape lists.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "bench/schedule.h"
#include "bench/shape.h"
#include "tessel/error.h"

namespace tessel::bench {
namespace {

using Order = std::vector<std::string>;

TEST(BenchSchedule, ShapeOrderRotatesByRound) {
  EXPECT_EQ(shape_order(3, 0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(shape_order(3, 1), (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(shape_order(3, 2), (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(shape_order(3, 3), (std::vector<int>{0, 1, 2}));
}

TEST(BenchSchedule, TwoImplementationsRunAbba) {
  Order ab = {"tessel", "openblas"}, ba = {"openblas", "tessel"};
  EXPECT_EQ(impl_order(ab, 0), ab);
  EXPECT_EQ(impl_order(ab, 1), ba);
  EXPECT_EQ(impl_order(ab, 2), ba);
  EXPECT_EQ(impl_order(ab, 3), ab);
}

TEST(BenchSchedule, ThreeImplementationsVisitEveryOrderInSixRounds) {
  Order impls = {"a", "b", "c"};
  std::set<Order> seen;
  for (int r = 0; r < 6; ++r) seen.insert(impl_order(impls, r));
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(impl_order(impls, 1), (Order{"c", "b", "a"}));  // the second of a pair is reversed
}

TEST(BenchSchedule, EveryPositionIsBalancedOverPairsOfRounds) {
  // Over rounds 0..3 with two implementations, each runs first twice and second twice.
  std::map<std::string, int> first;
  for (const ScheduledRun& run : make_schedule(4, 1, {"x", "y"}))
    if (run.position == 0) ++first[run.impl];
  EXPECT_EQ(first["x"], 2);
  EXPECT_EQ(first["y"], 2);
}

TEST(BenchSchedule, ScheduleCoversEveryRoundShapeAndImplementationOnce) {
  std::vector<ScheduledRun> runs = make_schedule(2, 3, {"t", "o"});
  ASSERT_EQ(runs.size(), 12u);
  std::set<std::tuple<int, int, std::string>> seen;
  for (const ScheduledRun& r : runs) seen.insert({r.round, r.shape, r.impl});
  EXPECT_EQ(seen.size(), 12u);
  // Round 1 starts with shape 1, implementations reversed.
  EXPECT_EQ(runs[6].round, 1);
  EXPECT_EQ(runs[6].shape, 1);
  EXPECT_EQ(runs[6].impl, "o");
  EXPECT_EQ(runs[7].impl, "t");
}

TEST(BenchShapes, ParsesListsAndNames) {
  EXPECT_EQ(parse_shape("127x193x61"), (Shape{127, 193, 61}));
  EXPECT_EQ(parse_shape_list("seed").size(), 8u);
  std::vector<Shape> l = parse_shape_list("8x8x8,seed,32x32x32,large");
  EXPECT_EQ(l.size(), 11u);  // 32^3 is in seed already
  EXPECT_EQ(l.front(), (Shape{8, 8, 8}));
  EXPECT_EQ(l.back(), (Shape{4096, 4096, 4096}));
}

TEST(BenchShapes, BadShapesAreUserErrors) {
  for (const char* s : {"", "8x8", "8x8x8x8", "8xx8", "0x8x8", "-1x8x8", "8x8x", "axbxc",
                        "8x8x8 ", "100000x8x8", "65536x65536x1"}) {
    try {
      parse_shape(s);
      ADD_FAILURE() << "'" << s << "' parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << s;
      EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_shape_list(","), Error);
}

}  // namespace
}  // namespace tessel::bench
