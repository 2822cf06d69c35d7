// Runs a program before and after plan_barriers on the sim with identical inputs.
#pragma once
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/group_ir.h"
#include "passes/plan_barriers.h"
#include "runtime/tensor_check.h"
#include "target/sim/sim.h"

namespace tessel::test {

struct SimRun {
  SimResult result;
  std::map<std::string, std::vector<float>> tensors;  // contents after the run
};

// Every tensor gets the elements its layout spans (tensor_check): fresh random
// values from `seed`, except tensors with Access::Out, which start as NaN (poison).
inline SimRun run_on_sim(const GroupProgram& p, const std::map<std::string, int64_t>& sizes,
                         uint64_t seed, uint64_t sim_seed = 1) {
  SimRun run;
  LaunchArgs args;
  args.sizes = sizes;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const TensorParam& t : p.tensors) {
    std::vector<float>& data = run.tensors[t.name];
    data.resize(check_tensor(t, sizes).elements);
    for (float& x : data) x = t.access == Access::Out ? std::nanf("") : dist(rng);
  }
  for (auto& [name, data] : run.tensors) args.tensors[name] = data.data();
  SimOptions options;
  options.seed = sim_seed;
  run.result = run_sim(p, args, options);
  return run;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The unplanned and the planned program: both race free, identical outputs.
struct PlannedPair {
  GroupProgram planned;
  BarrierStats stats;
  SimRun before, after;
  bool ok() const {
    if (before.result.race_count != 0 || after.result.race_count != 0) return false;
    for (const auto& [name, data] : before.tensors)
      if (!same_bits(data, after.tensors.at(name))) return false;
    return true;
  }
  std::string why() const {
    std::string s = "races before " + std::to_string(before.result.race_count) + ", after " +
                    std::to_string(after.result.race_count);
    for (const Race& r : after.result.races) s += "\n  " + r.message;
    for (const auto& [name, data] : before.tensors)
      if (!same_bits(data, after.tensors.at(name))) s += "\n  tensor " + name + " differs";
    return s;
  }
};

inline PlannedPair plan_and_run(const GroupProgram& p, const std::map<std::string, int64_t>& sizes,
                                uint64_t seed) {
  PlannedPair pair;
  pair.planned = p;
  pair.stats = plan_barriers(pair.planned);
  pair.before = run_on_sim(p, sizes, seed, seed + 1);
  pair.after = run_on_sim(pair.planned, sizes, seed, seed + 2);
  return pair;
}

}  // namespace tessel::test
