#include "plan/shape_draws.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

namespace tessel {

std::vector<std::string> drawn_sizes(const TileKernel& kernel) {
  std::set<std::string> in_shapes, in_strides;
  for (const TensorParam& t : kernel.tensors) {
    for (const Expr& e : t.shape) expr_symbols(e, [&](const std::string& s) { in_shapes.insert(s); });
    for (const Expr& e : t.strides) expr_symbols(e, [&](const std::string& s) { in_strides.insert(s); });
  }
  std::vector<std::string> out;
  for (const std::string& s : kernel.size_params)
    if (in_shapes.count(s) || !in_strides.count(s)) out.push_back(s);
  return out;
}

// With product spread the sizes' product is log-uniform (in [lo^k, (hi + 1)^k] for k
// sizes), and the sizes of a drawn product are uniform in log among those inside
// [lo, hi]: independent sizes make the product's log a sum of k uniforms, peaked in
// the middle, so large and small totals (a row kernel's 1M elements) come up rarely
// (1 draw in 10 above 500K of [16, 2048]^2).
std::vector<std::map<std::string, int64_t>> draw_shapes(const TileKernel& kernel, int n, const ShapeDistribution& d) {
  std::mt19937_64 rng(d.seed);
  const double a = std::log(double(d.lo)), b = std::log(double(d.hi) + 1);
  std::uniform_real_distribution<double> u(a, b), percent(0, 100);
  std::uniform_real_distribution<double> small(std::log(double(d.small_lo)), std::log(double(d.small_hi) + 1));
  const std::vector<std::string> names = drawn_sizes(kernel);
  const double k = static_cast<double>(names.size());
  std::uniform_real_distribution<double> total(k * a, k * b);
  std::vector<std::map<std::string, int64_t>> out;
  for (int i = 0; i < n; ++i) {
    std::vector<double> logs;
    if (d.product && !names.empty()) {
      // The first k - 1 sizes drawn in range, the last the product's rest, again until
      // the rest is in range too (uniform over that slice of the box).
      const double t = total(rng);
      for (int tries = 0; tries < 10000; ++tries) {
        logs.clear();
        double sum = 0;
        for (size_t j = 0; j + 1 < names.size(); ++j) sum += logs.emplace_back(u(rng));
        logs.push_back(t - sum);
        if (logs.back() >= a && logs.back() <= b) break;
      }
    } else {
      for (size_t j = 0; j < names.size(); ++j) logs.push_back(u(rng));
    }
    const bool round = d.align > 1 && (d.align_share >= 100 || percent(rng) < static_cast<double>(d.align_share));
    // Only a distribution with small draws takes these numbers from the generator, so
    // that one without them draws what it drew before.
    size_t narrow = names.size();
    if (d.small_share > 0 && !names.empty() && percent(rng) < static_cast<double>(d.small_share)) {
      narrow = std::uniform_int_distribution<size_t>(0, names.size() - 1)(rng);
      logs[narrow] = small(rng);
    }
    std::map<std::string, int64_t> s;
    for (size_t j = 0; j < names.size(); ++j) {
      const int64_t lo = j == narrow ? d.small_lo : d.lo, hi = j == narrow ? d.small_hi : d.hi;
      const int64_t v = std::clamp<int64_t>(static_cast<int64_t>(std::exp(logs[j])), lo, hi);
      s[names[j]] = round ? (v + d.align - 1) / d.align * d.align : v;
    }
    out.push_back(s);
  }
  return out;
}

std::string describe(const ShapeDistribution& d) {
  const std::string range = "[" + std::to_string(d.lo) + ", " + std::to_string(d.hi) + "]";
  std::string s = d.product ? "the product of the sizes log-uniform (each size in " + range +
                                  ", uniform in log among those of the drawn product)"
                            : "each size log-uniform integer in " + range;
  if (d.small_share > 0)
    s += ", in " + std::to_string(d.small_share) + "% of the draws one size (chosen at random) log-uniform in [" +
         std::to_string(d.small_lo) + ", " + std::to_string(d.small_hi) + "] instead";
  if (d.align > 1 && d.align_share > 0)
    s += (d.align_share >= 100 ? ", rounded up to a multiple of " + std::to_string(d.align)
                               : ", in " + std::to_string(d.align_share) + "% of the draws rounded up to a multiple of " +
                                     std::to_string(d.align) + ", ragged in the others");
  else
    s += ", ragged";
  return s + ", seed " + std::to_string(d.seed);
}

}  // namespace tessel
