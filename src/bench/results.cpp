#include "bench/results.h"

#include <cmath>

namespace tessel::bench {

std::vector<double> round_medians(const BenchResults& r, const Shape& shape,
                                  const std::string& impl) {
  std::vector<double> out(size_t(r.config.rounds), NAN);
  for (const Measurement& m : r.runs)
    if (m.shape == shape && m.impl == impl && m.valid && m.round < r.config.rounds)
      out[size_t(m.round)] = m.median_us;
  return out;
}

std::vector<double> device_round_medians(const BenchResults& r, const Shape& shape,
                                         const std::string& impl) {
  std::vector<double> out(size_t(r.config.rounds), NAN);
  for (const Measurement& m : r.runs)
    if (m.shape == shape && m.impl == impl && m.valid && m.round < r.config.rounds)
      out[size_t(m.round)] = m.device_median_us;
  return out;
}

PairedRatio candidate_ratio(const BenchResults& r, const Shape& shape, const std::string& peer) {
  return paired_ratio(round_medians(r, shape, peer),
                      round_medians(r, shape, r.config.impls.front()));
}

}  // namespace tessel::bench
