#include "bench/results.h"

#include <cmath>

namespace tessel::bench {

std::vector<double> round_medians(const BenchResults& r, const Shape& shape,
                                  const std::string& impl, double Measurement::*time) {
  std::vector<double> out(size_t(r.config.rounds), NAN);
  for (const Measurement& m : r.runs)
    if (m.shape == shape && m.impl == impl && m.valid && m.round < r.config.rounds)
      out[size_t(m.round)] = m.*time;
  return out;
}

PairedRatio candidate_ratio(const BenchResults& r, const Shape& shape, const std::string& peer,
                            double Measurement::*time) {
  return paired_ratio(round_medians(r, shape, peer, time),
                      round_medians(r, shape, r.config.impls.front(), time));
}

}  // namespace tessel::bench
