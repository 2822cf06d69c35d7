#include "plan/candidates.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <set>
#include <utility>

#include "compiler/phases.h"
#include "ir/tile_text.h"
#include "plan/default_plan.h"
#include "runtime/kernel_cache.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_emit.h"
#endif
#include "tessel/error.h"

namespace tessel {
namespace {

void walk(const Region& region, const std::function<void(const TileOp&)>& visit) {
  for (const TileOp& op : region.ops) {
    visit(op);
    for (const Region& r : op.regions) walk(r, visit);
  }
}

bool is_tile_param(const TileKernel& k, const std::string& name) {
  return std::find(k.tile_params.begin(), k.tile_params.end(), name) != k.tile_params.end();
}

// Why a plan was refused, short enough to count: the error kind and its first words.
std::string reason(const Error& e) {
  std::string m = e.what();
  size_t cut = 0;
  for (int words = 0; cut < m.size() && words < 6; ++cut)
    if (m[cut] == ' ') ++words;
  return std::string(error_kind_name(e.kind())) + ": " + m.substr(0, cut);
}

// The worker parts of every mma accumulator under `plan` ({0, 0} when an extent does
// not fold): a cpu register block must divide each.
std::vector<std::pair<int64_t, int64_t>> mma_parts(const TileKernel& kernel, const Plan& plan) {
  std::vector<std::pair<int64_t, int64_t>> parts;
  auto bind = [&](const Expr& e) {
    return expr_substitute(e, [&](const std::string& name) -> Expr {
      auto it = plan.tiles.find(name);
      return it == plan.tiles.end() ? nullptr : expr_const(it->second);
    });
  };
  walk(kernel.body, [&](const TileOp& op) {
    if (op.kind != TileOpKind::Mma) return;
    const TileType& t = kernel.values.at(op.results[0]).type;
    int64_t r = 0, c = 0;
    if (!expr_is_const(bind(t.shape[0]), &r) || !expr_is_const(bind(t.shape[1]), &c)) {
      parts.push_back({0, 0});
      return;
    }
    parts.push_back({r > 1 ? r / plan.worker_rows : r, c > 1 ? c / plan.worker_cols : c});
  });
  return parts;
}

struct Memo {
  std::shared_ptr<const LegalCandidate> legal;
  std::string why;
};

}  // namespace

std::map<std::string, int64_t> walked_tile_params(const TileKernel& kernel,
                                                  const std::map<std::string, int64_t>& sizes) {
  std::map<std::string, int64_t> covers;
  auto lookup = [&](const std::string& name, int64_t* v) {
    auto it = sizes.find(name);
    if (it == sizes.end()) return false;
    *v = it->second;
    return true;
  };
  walk(kernel.body, [&](const TileOp& op) {
    for (const LoopDim& d : op.loops) {
      const Expr& e = d.extent;
      if (!e || e->kind != ExprKind::CeilDiv || !e->rhs || e->rhs->kind != ExprKind::Sym) continue;
      if (!is_tile_param(kernel, e->rhs->name)) continue;
      int64_t s = 0;
      try {
        s = expr_eval(e->lhs, lookup);
      } catch (const Error&) {
        s = 0;
      }
      int64_t& c = covers[e->rhs->name];
      c = std::max(c, s);
    }
  });
  return covers;
}

std::shared_ptr<const LegalCandidate> realize_candidate(const TileKernel& kernel, const Plan& plan,
                                                        std::string* why) {
  static std::mutex mutex;
  static std::map<std::pair<uint64_t, Plan>, Memo> memo;
  auto key = std::make_pair(fnv1a64(print_tile_kernel(kernel)), plan);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = memo.find(key);
    if (it != memo.end()) {
      if (why) *why = it->second.why;
      return it->second.legal;
    }
  }
  Memo m;
  try {
    validate_plan(plan);
    auto c = std::make_shared<LegalCandidate>();
    c->plan = plan;
    for (const TileKernel& phase : split_phases(kernel))
      c->phases.push_back(compile_to_group(phase, plan, CompileOptions{}).program);
#ifdef TESSEL_WITH_CUDA
    // What the cuda emitter refuses (an atom's operand types, k steps of the atom)
    // is illegal too: of 8408 bf16 candidates of a matrix product at M = N = K =
    // 1000, 7588 were.
    if (plan.target == TargetKind::Cuda)
      for (const GroupProgram& phase : c->phases) emit_cuda(phase);
#endif
    m.legal = c;
  } catch (const Error& e) {
    m.why = reason(e);
  }
  if (why) *why = m.why;
  std::lock_guard<std::mutex> lock(mutex);
  memo[key] = m;
  return m.legal;
}

CandidateSet enumerate_candidates(const TileKernel& kernel, TargetKind target,
                                  const std::map<std::string, int64_t>& sizes,
                                  const CandidateBounds& bounds) {
  const Plan base = default_plan(kernel, target, sizes);
  const std::map<std::string, int64_t> walked = walked_tile_params(kernel, sizes);
  bool has_mma = false, has_pipeline = false;
  walk(kernel.body, [&](const TileOp& op) {
    has_mma |= op.kind == TileOpKind::Mma;
    has_pipeline |= op.kind == TileOpKind::Pipeline;
  });

  // Values per walked tile parameter: those below the size it covers, and the
  // smallest one at or above it.
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> values;
  std::vector<int64_t> sorted = bounds.tile_values;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (const auto& [name, cover] : walked) {
    // Up to the power of two >= the size: a smaller value that covers it may not
    // divide into any register block, and one more class costs little.
    int64_t enough = 1;
    while (enough < cover) enough *= 2;
    std::vector<int64_t> v;
    for (int64_t t : sorted)
      if (t >= 1 && (cover <= 0 || t < cover || t <= enough)) v.push_back(t);
    if (v.empty()) v.push_back(base.tiles.at(name));
    names.push_back(name);
    values.push_back(v);
  }

  // (atom kind, atom_m, atom_n, worker counts)
  struct AtomChoice {
    AtomKind kind;
    int64_t m, n;
    std::vector<int> workers;
  };
  std::vector<int> workers = bounds.workers;
  if (workers.empty())
    workers = target == TargetKind::Sim ? std::vector<int>{1, 4}
              : target == TargetKind::Cpu ? std::vector<int>{1}
                                          : std::vector<int>{64, 128, 256};
  std::vector<AtomChoice> atoms = {{AtomKind::Fma, 1, 1, workers}};
  if (has_mma && target == TargetKind::Cpu)
    for (auto [m, n] : bounds.cpu_atoms) atoms.push_back({AtomKind::Fma, m, n, workers});
  if (has_mma && target == TargetKind::Cuda) {
    atoms.push_back({AtomKind::MmaSync, 16, 8, {4, 8}});
    atoms.push_back({AtomKind::Wgmma, 64, 64, {1, 2}});
  }
  std::vector<int> windows = has_pipeline ? bounds.windows : std::vector<int>{1};
  std::vector<bool> asyncs = bounds.async_copy;
  if (target == TargetKind::Cuda && has_pipeline &&
      std::find(asyncs.begin(), asyncs.end(), true) == asyncs.end())
    asyncs.push_back(true);

  CandidateSet out;
  std::set<Plan> seen;
  std::vector<size_t> at(names.size(), 0);
  for (bool done = false; !done && out.tried < bounds.max_candidates;) {
    Plan tiled = base;
    for (size_t i = 0; i < names.size(); ++i) tiled.tiles[names[i]] = values[i][at[i]];
    for (const AtomChoice& atom : atoms)
      for (int w : atom.workers)
        for (int window : windows)
          for (bool async : asyncs)
            for (int batch : bounds.copy_batches) {
              Plan p = tiled;
              p.atom = atom.kind;
              p.atom_m = atom.m;
              p.atom_n = atom.n;
              p.workers = w;
              p.window = window;
              p.async_copy = async;
              p.copy_batch = batch;
              fit_worker_grid(kernel, p);
              if (p.atom_m != atom.m || p.atom_n != atom.n) continue;  // another atom's candidate
              if (atom.kind == AtomKind::Fma && (atom.m > 1 || atom.n > 1)) {
                bool fits = true;
                for (auto [r, c] : mma_parts(kernel, p))
                  fits &= r > 0 && c > 0 && r % atom.m == 0 && c % atom.n == 0;
                if (!fits) continue;
              }
              if (!seen.insert(p).second) continue;
              ++out.tried;
              std::string why;
              auto legal = realize_candidate(kernel, p, &why);
              if (legal)
                out.legal.push_back(legal);
              else
                ++out.rejected[why];
            }
    // Next combination of tile values (odometer).
    size_t i = 0;
    for (; i < at.size(); ++i) {
      if (++at[i] < values[i].size()) break;
      at[i] = 0;
    }
    done = i == at.size();
  }
  return out;
}

}  // namespace tessel
