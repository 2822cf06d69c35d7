#include "bench/schedule.h"

#include <algorithm>

namespace tessel::bench {

std::vector<int> shape_order(int shapes, int round) {
  std::vector<int> order;
  for (int i = 0; i < shapes; ++i) order.push_back((i + round) % shapes);
  return order;
}

std::vector<std::string> impl_order(const std::vector<std::string>& impls, int round) {
  std::vector<std::string> order = impls;
  if (order.empty()) return order;
  std::rotate(order.begin(), order.begin() + (round / 2) % int(order.size()), order.end());
  if (round % 2) std::reverse(order.begin(), order.end());
  return order;
}

std::vector<ScheduledRun> make_schedule(int rounds, int shapes,
                                        const std::vector<std::string>& impls) {
  std::vector<ScheduledRun> runs;
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::string> order = impl_order(impls, r);
    for (int s : shape_order(shapes, r))
      for (int p = 0; p < int(order.size()); ++p) runs.push_back({r, s, order[p], p});
  }
  return runs;
}

}  // namespace tessel::bench
