// The statistics of the benchmark report, after the seed report's method: a
// measurement's value is the median of its timing batches; an implementation's
// value on a shape is the median of its per-round medians; a comparison is the
// paired ratio per round (same round, same shape), summarized by its median and
// the observed [min, max] over rounds (a range, not a confidence interval).
// Invalid measurements are NaN here and are skipped, never averaged in.
#pragma once
#include <vector>

namespace tessel::bench {

// Median of the finite values (mean of the two middle ones for an even count);
// NaN when there are none.
double median(std::vector<double> values);

// Median over rounds of each round's median; rounds whose median is NaN
// (invalid) are skipped.
double median_of_medians(const std::vector<std::vector<double>>& rounds);

struct PairedRatio {
  std::vector<double> per_round;  // reference / candidate time, NaN where a side is invalid
  double median = 0, min = 0, max = 0;  // over the valid rounds; NaN when none
  int valid = 0;                        // rounds where both sides are valid
};

// Speedup of the candidate over the reference, round by round: reference time
// divided by candidate time (above 1: the candidate is faster). Both vectors
// hold one per-round median time per round, in round order.
PairedRatio paired_ratio(const std::vector<double>& reference_us,
                         const std::vector<double>& candidate_us);

}  // namespace tessel::bench
