// The benchmark's statistics on fixed inputs: medians, medians of per-round
// medians, and paired ratios with their [min, max] over rounds, invalid (NaN)
// values skipped.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/stats.h"

namespace tessel::bench {
namespace {

TEST(BenchStats, MedianOddAndEven) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
}

TEST(BenchStats, MedianSkipsInvalidValues) {
  EXPECT_DOUBLE_EQ(median({NAN, 5, 1, INFINITY, 3}), 3);
  EXPECT_TRUE(std::isnan(median({})));
  EXPECT_TRUE(std::isnan(median({NAN, NAN})));
}

TEST(BenchStats, MedianOfPerRoundMedians) {
  // Round medians 2, 20, 5, 4: their median is (4 + 5) / 2, not the median of
  // all twelve samples pooled (which would be 4.5).
  std::vector<std::vector<double>> rounds = {{1, 2, 3}, {20, 30, 10}, {5, 6, 4}, {4, 4, 4}};
  EXPECT_DOUBLE_EQ(median_of_medians(rounds), 4.5);
  // An invalid round (all NaN) is left out: medians 2, 20, 5.
  rounds[3] = {NAN, NAN, NAN};
  EXPECT_DOUBLE_EQ(median_of_medians(rounds), 5);
}

TEST(BenchStats, PairedRatioIsReferenceOverCandidatePerRound) {
  std::vector<double> reference = {10, 12, 9, 11}, candidate = {5, 4, 9, 10};
  PairedRatio p = paired_ratio(reference, candidate);
  ASSERT_EQ(p.per_round.size(), 4u);
  EXPECT_DOUBLE_EQ(p.per_round[0], 2.0);
  EXPECT_DOUBLE_EQ(p.per_round[1], 3.0);
  EXPECT_DOUBLE_EQ(p.per_round[2], 1.0);
  EXPECT_DOUBLE_EQ(p.per_round[3], 1.1);
  EXPECT_EQ(p.valid, 4);
  EXPECT_DOUBLE_EQ(p.median, (1.1 + 2.0) / 2);
  EXPECT_DOUBLE_EQ(p.min, 1.0);
  EXPECT_DOUBLE_EQ(p.max, 3.0);
}

TEST(BenchStats, PairedRatioPairsByRoundNotByMedians) {
  // Pairing matters: the ratio of medians would be 1, every paired ratio is not.
  PairedRatio p = paired_ratio({1, 4}, {2, 2});
  EXPECT_DOUBLE_EQ(p.per_round[0], 0.5);
  EXPECT_DOUBLE_EQ(p.per_round[1], 2.0);
  EXPECT_DOUBLE_EQ(p.min, 0.5);
  EXPECT_DOUBLE_EQ(p.max, 2.0);
}

TEST(BenchStats, PairedRatioDropsRoundsWithAnInvalidSide) {
  PairedRatio p = paired_ratio({10, NAN, 8, 6}, {5, 5, NAN, 3});
  EXPECT_EQ(p.valid, 2);
  EXPECT_TRUE(std::isnan(p.per_round[1]));
  EXPECT_TRUE(std::isnan(p.per_round[2]));
  EXPECT_DOUBLE_EQ(p.median, 2.0);
  EXPECT_DOUBLE_EQ(p.min, 2.0);
  EXPECT_DOUBLE_EQ(p.max, 2.0);
  PairedRatio none = paired_ratio({NAN}, {1});
  EXPECT_EQ(none.valid, 0);
  EXPECT_TRUE(std::isnan(none.median));
}

}  // namespace
}  // namespace tessel::bench
