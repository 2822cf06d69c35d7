// The benchmark's report files: results.json (everything, raw samples included,
// plus the summary the plot reads) and results.md (the tables a reader wants,
// after the seed report's).
#pragma once
#include <string>

#include "bench/results.h"

namespace tessel::bench {

std::string results_json(const BenchResults& results);
// `plot` is the PNG's file name in the same directory, or "" with `plot_note`
// saying why there is none.
std::string results_markdown(const BenchResults& results, const std::string& plot,
                             const std::string& plot_note);

}  // namespace tessel::bench
