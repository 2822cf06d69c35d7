#include "plan/candidates.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <set>
#include <utility>

#include "check/checked_run.h"
#include "compiler/phases.h"
#include "ir/group_ir.h"
#include "ir/tile_text.h"
#include "plan/default_plan.h"
#include "plan/machine.h"
#include "runtime/kernel_cache.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_emit.h"
#include "target/cuda/cuda_kernel.h"
#endif
#include "tessel/error.h"

namespace tessel {
namespace {

using Sizes = std::map<std::string, int64_t>;

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

// The most groups a parallel nest of `kernel` launches under `plan`'s tiles.
double grid_groups(const TileKernel& kernel, const Sizes& sizes, const Plan& plan) {
  auto lookup = [&](const std::string& name, int64_t* v) {
    if (auto it = sizes.find(name); it != sizes.end()) {
      *v = it->second;
      return true;
    }
    if (auto it = plan.tiles.find(name); it != plan.tiles.end()) {
      *v = it->second;
      return true;
    }
    return false;
  };
  double most = 0;
  walk(kernel.body, [&](const TileOp& op) {
    if (op.kind != TileOpKind::Parallel) return;
    double groups = 1;
    for (const LoopDim& d : op.loops) {
      try {
        groups *= static_cast<double>(std::max<int64_t>(1, expr_eval(d.extent, lookup)));
      } catch (const Error&) {
      }
    }
    most = std::max(most, groups);
  });
  return most;
}

// Parallel slots of the target's device: the cuda multiprocessors (plan/machine.h).
int machine_slots(TargetKind target) {
  (void)target;
  return static_cast<int>(cuda_multiprocessors());
}

// A cuda thread has at most 255 registers: a fragment whose part per lane holds more
// values cannot stay in registers, so ptxas would spill it (cuda_candidate_spills
// refuses the plan after compiling). Refused before compiling: NVRTC took minutes
// on such candidates (a row block of 8 x 2048 over 64 threads). Only the
// certain case; fewer values may spill too, which ptxas decides.
void check_fragment_registers(const GroupProgram& p) {
  constexpr int64_t kRegisters = 255;
  for (const Buffer& b : p.buffers) {
    if (b.space != Space::Private) continue;
    int64_t rows = b.rows > 1 ? (b.rows + p.worker_rows - 1) / p.worker_rows : b.rows;
    int64_t cols = b.cols > 1 ? (b.cols + p.worker_cols - 1) / p.worker_cols : b.cols;
    int64_t words = (rows * cols * dtype_bytes(b.dtype) + 3) / 4;
    int64_t per_lane = (words + p.lanes - 1) / std::max(1, p.lanes);
    if (per_lane > kRegisters)
      user_error(ErrorKind::Plan, "fragment " + b.name + ": " + std::to_string(per_lane) + " registers per thread (" +
                                      std::to_string(b.rows) + "x" + std::to_string(b.cols) + " over " +
                                      std::to_string(p.worker_rows) + "x" + std::to_string(p.worker_cols) +
                                      " workers of " + std::to_string(p.lanes) + " lanes), more than the " +
                                      std::to_string(kRegisters) + " a cuda thread has");
  }
}

struct Memo {
  std::shared_ptr<const LegalCandidate> legal;
  std::string why;
};

}  // namespace

std::map<std::string, int64_t> walked_tile_params(const TileKernel& kernel,
                                                  const std::map<std::string, int64_t>& sizes) {
  std::map<std::string, int64_t> covers;
  const SymbolLookup lookup = lookup_in(sizes);
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

namespace {

// realize_candidate with the kernel's text hashed once by the caller (enumerating
// tries tens of thousands of plans of one kernel).
std::shared_ptr<const LegalCandidate> realize(const TileKernel& kernel, uint64_t kernel_text_hash, const Plan& plan,
                                              std::string* why) {
  static std::mutex mutex;
  static std::map<std::pair<uint64_t, Plan>, Memo> memo;
  auto key = std::make_pair(kernel_text_hash, plan);
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
    if (plan.target == TargetKind::Cuda)
      for (const GroupProgram& phase : c->phases) check_fragment_registers(phase);
#ifdef TESSEL_WITH_CUDA
    // What the cuda emitter refuses (an atom's operand types, k steps of the atom)
    // is illegal too: of 8408 bf16 candidates of a matrix product at M = N = K =
    // 1000, 7588 were.
    if (plan.target == TargetKind::Cuda)
      for (const GroupProgram& phase : c->phases)
        for (const CudaTensorMap& map : emit_cuda(phase).tensor_maps)
          c->tma_rows.push_back({map.row_stride, map.rows, dtype_bytes(map.dtype)});
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

}  // namespace

std::shared_ptr<const LegalCandidate> realize_candidate(const TileKernel& kernel, const Plan& plan,
                                                        std::string* why) {
  return realize(kernel, fnv1a64(print_tile_kernel(kernel)), plan, why);
}

bool tma_rows_fit(const LegalCandidate& candidate, const std::map<std::string, int64_t>& sizes) {
  const SymbolLookup lookup = lookup_in(sizes);
  for (const LegalCandidate::TmaRows& t : candidate.tma_rows) {
    try {
      // One row needs no stride (cuda_kernel.cpp encodes it padded).
      if (expr_eval(t.rows, lookup) > 1 && expr_eval(t.row_stride, lookup) * t.element_bytes % 16 != 0) return false;
    } catch (const Error&) {
      return false;  // a size the stride names is not bound
    }
  }
  return true;
}

CandidateSet enumerate_candidates(const TileKernel& kernel, TargetKind target,
                                  const std::map<std::string, int64_t>& sizes,
                                  const CandidateBounds& bounds) {
  const Plan base = default_plan(kernel, target, sizes);
  const uint64_t text_hash = fnv1a64(print_tile_kernel(kernel));
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
  if (sorted.empty())
    // cuda: 192 for the three-warpgroup wgmma tiles (192x192, 192x128) the default
    // plans take.
    sorted = target == TargetKind::Cuda ? std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 512, 1024, 2048}
                                        : std::vector<int64_t>{8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (const auto& [name, cover] : walked) {
    // Up to the power of two >= the size: a smaller value that covers it may not
    // divide into any register block, and one more class costs little. On cuda at
    // least up to cuda_padded_tile: a padded tile spreads a narrow extent's copies
    // over more threads.
    int64_t enough = 1;
    while (enough < cover) enough *= 2;
    if (target == TargetKind::Cuda) enough = std::max(enough, bounds.cuda_padded_tile);
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
    atoms.push_back({AtomKind::Wgmma, 64, 64, {1, 2, 3}});
  }
  // Copy protocols: (window, async, tma, producers).
  struct CopyChoice {
    int window;
    bool async, tma;
    int producers;
  };
  std::vector<int> windows = has_pipeline ? bounds.windows : std::vector<int>{1};
  std::vector<bool> asyncs = bounds.async_copy;
  if (target == TargetKind::Cuda && has_pipeline &&
      std::find(asyncs.begin(), asyncs.end(), true) == asyncs.end())
    asyncs.push_back(true);
  std::vector<CopyChoice> copies;
  for (int window : windows)
    for (bool async : asyncs)
      // One stage has nothing to overlap: async copies would only add their waits.
      if (!(target == TargetKind::Cuda && async && window == 1)) copies.push_back({window, async, false, 0});
  std::vector<CopyChoice> tma_copies;  // the wgmma atom's only (validate_plan)
  if (target == TargetKind::Cuda && has_pipeline)
    for (int window : bounds.tma_windows)
      for (int producers : bounds.tma_producers) tma_copies.push_back({window, false, true, producers});
  // A persistent grid where the shape has more tiles than groups (with fewer, it only
  // adds a loop).
  const int persistent_groups =
      bounds.persistent_groups > 0 ? bounds.persistent_groups : machine_slots(target);
  const Sizes full_sizes = [&] {
    Sizes s = sizes;
    default_strides(kernel.tensors, s);
    return s;
  }();

  CandidateSet out;
  std::set<Plan> seen;
  std::vector<int> atom_legal(atoms.size()), atom_unsupported(atoms.size()), atom_other(atoms.size());
  std::vector<bool> atom_refused(atoms.size());
  bool probed = false;
  std::vector<size_t> at(names.size(), 0);
  for (bool done = false; !done && out.tried < bounds.max_candidates;) {
    Plan tiled = base;
    for (size_t i = 0; i < names.size(); ++i) tiled.tiles[names[i]] = values[i][at[i]];
    std::vector<int> persistents = {0};
    if (target == TargetKind::Cuda && bounds.persistent && grid_groups(kernel, sizes, tiled) > persistent_groups)
      persistents.push_back(persistent_groups);
    for (size_t a = 0; a < atoms.size(); ++a) {
      const AtomChoice& atom = atoms[a];
      if (atom_refused[a]) continue;
      std::vector<CopyChoice> atom_copies = copies;
      if (atom.kind == AtomKind::Wgmma) atom_copies.insert(atom_copies.end(), tma_copies.begin(), tma_copies.end());
      for (int w : atom.workers)
        for (const CopyChoice& copy : atom_copies)
          for (int persistent : persistents)
            for (int batch : bounds.copy_batches) {
              Plan p = tiled;
              p.atom = atom.kind;
              p.atom_m = atom.m;
              p.atom_n = atom.n;
              p.workers = w;
              p.window = copy.window;
              p.async_copy = copy.async;
              p.tma = copy.tma;
              p.producers = copy.producers;
              p.persistent = persistent;
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
              auto legal = realize(kernel, text_hash, p, &why);
              if (legal && !tma_rows_fit(*legal, full_sizes)) {
                legal = nullptr;
                why = "tma: a tensor map's rows are not 16-byte multiples at this shape";
              }
              if (legal)
                out.legal.push_back(legal);
              else
                ++out.rejected[why];
              // The atom's fate at the first tiling (below).
              (legal ? atom_legal : why.rfind("unsupported", 0) == 0 ? atom_unsupported : atom_other)[a]++;
            }
    }
    // An atom that the target refused as unsupported at every candidate of the first
    // tiling, and for nothing else (the cuda fma atom on bf16 operands), is refused
    // at every tiling: it is not tried again.
    if (!probed) {
      probed = true;
      for (size_t a = 0; a < atoms.size(); ++a)
        if (atom_legal[a] == 0 && atom_other[a] == 0 && atom_unsupported[a] > 0) atom_refused[a] = true;
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
