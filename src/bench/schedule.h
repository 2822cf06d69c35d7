// The order in which the benchmark runs its measurements. Every round measures
// every shape with every implementation. Rounds rotate the shape order (round r
// starts at shape r), so no shape always runs first or right after another; and
// they counterbalance the implementation order: rounds come in pairs, the second
// of a pair runs the first's order reversed, and each pair rotates the order by
// one. For two implementations this is ABBA (AB, BA, BA, AB, ...); for three, six
// rounds visit all six orders. Drift (thermal, frequency, caches, other load) then
// falls on every implementation alike instead of on whichever runs last.
#pragma once
#include <string>
#include <vector>

namespace tessel::bench {

// Shape indices in round `round`'s order.
std::vector<int> shape_order(int shapes, int round);

// Implementations in round `round`'s order.
std::vector<std::string> impl_order(const std::vector<std::string>& impls, int round);

struct ScheduledRun {
  int round = 0;
  int shape = 0;     // index into the shape list
  std::string impl;
  int position = 0;  // place of this implementation within its (round, shape)
};

// All runs of the benchmark, in the order they execute.
std::vector<ScheduledRun> make_schedule(int rounds, int shapes, const std::vector<std::string>& impls);

}  // namespace tessel::bench
