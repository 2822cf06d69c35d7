#include "plan/default_plan.h"

#include <cstdlib>
#include <functional>
#include <set>

#include "tessel/error.h"

namespace tessel {
namespace {

void walk(const Region& region, const std::function<void(const TileOp&)>& visit) {
  for (const TileOp& op : region.ops) {
    visit(op);
    for (const Region& r : op.regions) walk(r, visit);
  }
}

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n && p < (int64_t{1} << 30)) p *= 2;
  return p;
}

bool is_tile_param(const TileKernel& k, const std::string& name) {
  for (const std::string& t : k.tile_params)
    if (t == name) return true;
  return false;
}

// Every tile extent of the kernel (values' shapes) with the plan's tiles bound:
// {rows}, {cols}. Extents that do not fold to a constant are left out.
void tile_extents(const TileKernel& k, const Plan& plan, std::set<int64_t>* rows,
                  std::set<int64_t>* cols) {
  auto bind = [&](const Expr& e) {
    return expr_substitute(e, [&](const std::string& name) -> Expr {
      auto it = plan.tiles.find(name);
      return it == plan.tiles.end() ? nullptr : expr_const(it->second);
    });
  };
  for (const Value& v : k.values) {
    if (v.type.is_scalar()) continue;
    int64_t r = 0, c = 0;
    if (expr_is_const(bind(v.type.shape[0]), &r)) rows->insert(r);
    if (expr_is_const(bind(v.type.shape[1]), &c)) cols->insert(c);
  }
}

}  // namespace

void fit_worker_grid(const TileKernel& kernel, Plan& plan) {
  std::set<int64_t> rows, cols;
  tile_extents(kernel, plan, &rows, &cols);
  auto divides = [](int w, const std::set<int64_t>& extents) {
    for (int64_t e : extents)
      if (e > 1 && e % w) return false;
    return true;
  };
  int best_r = 1, best_c = 1;
  for (int r = 1; r <= plan.workers; ++r) {
    if (!divides(r, rows)) continue;
    for (int c = 1; r * c <= plan.workers; ++c) {
      if (!divides(c, cols)) continue;
      int prod = r * c, best = best_r * best_c;
      bool balanced = std::abs(r - c) < std::abs(best_r - best_c);
      if (prod > best || (prod == best && balanced)) best_r = r, best_c = c;
    }
  }
  plan.worker_rows = best_r;
  plan.worker_cols = best_c;
  plan.workers = best_r * best_c;
}

Plan default_plan(const TileKernel& kernel, TargetKind target,
                  const std::map<std::string, int64_t>& sizes) {
  Plan plan;
  plan.target = target;
  plan.workers = target == TargetKind::Sim ? 4 : target == TargetKind::Cpu ? 1 : 128;
  plan.copy_batch = 4;
  // Which tile parameters an mma reads, and which name column extents.
  std::set<std::string> mma_params, col_params;
  auto note = [&](const Expr& e, std::set<std::string>& into) {
    if (e) expr_symbols(e, [&](const std::string& s) { into.insert(s); });
  };
  walk(kernel.body, [&](const TileOp& op) {
    if (op.kind == TileOpKind::Mma)
      for (int v : op.operands)
        for (const Expr& e : kernel.values.at(v).type.shape) note(e, mma_params);
  });
  for (const Value& v : kernel.values)
    if (!v.type.is_scalar()) note(v.type.shape[1], col_params);
  auto cap = [&](const std::string& t) -> int64_t {
    if (target == TargetKind::Sim) return 16;
    if (target == TargetKind::Cpu || mma_params.count(t)) return 64;
    return col_params.count(t) ? 256 : 8;
  };
  // ceildiv(S, T) in a loop extent: T covers S.
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
      bool known = true;
      expr_symbols(e->lhs, [&](const std::string& s) { known &= sizes.count(s) > 0; });
      if (!known) continue;
      int64_t s = 0;
      try {
        s = expr_eval(e->lhs, lookup);
      } catch (const Error&) {
        continue;
      }
      int64_t& c = covers[e->rhs->name];
      c = std::max(c, s);
    }
  });
  for (const std::string& t : kernel.tile_params) {
    auto it = covers.find(t);
    int64_t want = it == covers.end() ? cap(t) : pow2_at_least(std::max<int64_t>(1, it->second));
    plan.tiles[t] = std::min(want, cap(t));
  }
  fit_worker_grid(kernel, plan);
  return plan;
}

}  // namespace tessel
