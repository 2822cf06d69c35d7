#include "bench/stats.h"

#include <algorithm>
#include <cmath>

#include "tessel/error.h"

namespace tessel::bench {

double median(std::vector<double> values) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  size_t h = values.size() / 2;
  return values.size() % 2 ? values[h] : 0.5 * (values[h - 1] + values[h]);
}

double median_of_medians(const std::vector<std::vector<double>>& rounds) {
  std::vector<double> medians;
  for (const std::vector<double>& r : rounds) medians.push_back(median(r));
  return median(medians);
}

PairedRatio paired_ratio(const std::vector<double>& reference_us,
                         const std::vector<double>& candidate_us) {
  TESSEL_ASSERT(reference_us.size() == candidate_us.size(),
                "paired_ratio: both sides need one value per round");
  PairedRatio r;
  std::vector<double> valid;
  for (size_t i = 0; i < reference_us.size(); ++i) {
    double ref = reference_us[i], cand = candidate_us[i];
    bool ok = std::isfinite(ref) && std::isfinite(cand) && ref > 0 && cand > 0;
    r.per_round.push_back(ok ? ref / cand : NAN);
    if (ok) valid.push_back(ref / cand);
  }
  r.valid = int(valid.size());
  r.median = median(valid);
  r.min = valid.empty() ? NAN : *std::min_element(valid.begin(), valid.end());
  r.max = valid.empty() ? NAN : *std::max_element(valid.begin(), valid.end());
  return r;
}

}  // namespace tessel::bench
