#include "bench/plan_spec.h"

#include <sstream>
#include <vector>

#include "bench/shape.h"
#include "tessel/error.h"

namespace tessel::bench {
namespace {

[[noreturn]] void bad(const std::string& message) { user_error(ErrorKind::InvalidArgument, "--plan: " + message); }

int to_int(const std::string& key, const std::string& v) {
  try {
    size_t used = 0;
    long long n = std::stoll(v, &used);
    if (used == v.size() && n >= 0 && n <= 1 << 20) return static_cast<int>(n);
  } catch (const std::exception&) {
  }
  bad(key + "=" + v + ": not a count");
}

}  // namespace

void apply_plan_spec(const std::string& spec, Plan& plan) {
  // A plan of thread copies has no producers (they issue tma copies), unless the
  // spec asks for them: then validate_plan says why that cannot be.
  if (spec.find("copy=") != std::string::npos && spec.find("copy=tma") == std::string::npos &&
      spec.find("producers=") == std::string::npos)
    plan.producers = 0;
  std::stringstream ss(spec);
  for (std::string part; std::getline(ss, part, ',');) {
    size_t eq = part.find('=');
    if (eq == std::string::npos) bad("'" + part + "' is not KEY=VALUE");
    std::string key = part.substr(0, eq), v = part.substr(eq + 1);
    if (key == "tile") {
      Shape t = parse_shape(v);  // written like a shape
      plan.tiles["BM"] = t.m, plan.tiles["BN"] = t.n, plan.tiles["BK"] = t.k;
    } else if (key == "workers") {
      plan.workers = plan.worker_rows = to_int(key, v);
      plan.worker_cols = 1;
    } else if (key == "grid") {  // the worker grid, ROWSxCOLS (after workers=)
      size_t x = v.find('x');
      if (x == std::string::npos) bad("grid=" + v + ": ROWSxCOLS");
      plan.worker_rows = to_int(key, v.substr(0, x));
      plan.worker_cols = to_int(key, v.substr(x + 1));
      if (plan.worker_rows == 0 || plan.worker_cols == 0) bad("grid=" + v + ": an empty worker grid");
      plan.workers = plan.worker_rows * plan.worker_cols;
    } else if (key == "frag") {
      plan.frag_buffers = to_int(key, v);
    } else if (key == "batch") {
      plan.copy_batch = to_int(key, v);
    } else if (key == "window") {
      plan.window = to_int(key, v);
    } else if (key == "persistent") {
      plan.persistent = to_int(key, v);
    } else if (key == "band") {
      plan.tile_band = to_int(key, v);
    } else if (key == "producers") {
      plan.producers = to_int(key, v);
    } else if (key == "cluster") {
      plan.cluster = to_int(key, v);
    } else if (key == "copy") {
      if (v != "sync" && v != "async" && v != "tma") bad("copy=" + v + ": sync, async or tma");
      plan.async_copy = v == "async";
      plan.tma = v == "tma";
    } else if (key == "atom") {
      if (v == "wgmma") plan.atom = AtomKind::Wgmma, plan.atom_m = plan.atom_n = 64;
      else if (v == "mma.sync") plan.atom = AtomKind::MmaSync, plan.atom_m = 16, plan.atom_n = 8;
      else if (v == "fma") plan.atom = AtomKind::Fma;
      else bad("atom=" + v + ": fma, mma.sync or wgmma");
    } else {
      bad("unknown key '" + key +
          "' (tile, workers, grid, frag, batch, window, copy, producers, cluster, persistent, band, atom)");
    }
  }
}

}  // namespace tessel::bench
