#include "passes/persistent_tiles.h"

#include <algorithm>
#include <functional>
#include <map>

#include "tessel/error.h"

namespace tessel {
namespace {

bool name_taken(const GroupProgram& p, const std::string& name) {
  return std::count(p.size_params.begin(), p.size_params.end(), name) || p.find_buffer(name) >= 0 ||
         p.find_mbarrier(name) >= 0;
}

std::string fresh(const GroupProgram& p, const std::string& base) {
  std::string name = base;
  for (int n = 1; name_taken(p, name); ++n) name = base + std::to_string(n);
  return name;
}

}  // namespace

PersistentStats persistent_tiles(GroupProgram& p, const PersistentOptions& o) {
  PersistentStats stats;
  if (o.groups <= 0 || p.grid.empty()) return stats;
  TESSEL_ASSERT(o.band >= 1, "persistent tiles: band must be positive");
  const std::string g_name = fresh(p, "tile_group"), s_name = fresh(p, "tile_step");
  Expr tiles = expr_const(1);
  for (const LoopDim& d : p.grid) tiles = tiles * d.extent;
  const Expr groups = expr_min(tiles, expr_const(o.groups));
  const Expr t = expr_sym(g_name) + expr_sym(s_name) * groups;

  // Decode t: the last two dimensions in bands, the ones before them slowest.
  std::map<std::string, Expr> coordinate;
  const size_t r = p.grid.size();
  if (r == 1) {
    coordinate[p.grid[0].iv] = t;
  } else {
    const Expr rows = p.grid[r - 2].extent, cols = p.grid[r - 1].extent, band = expr_const(o.band);
    const Expr rem = expr_mod(t, rows * cols), per_band = band * cols;
    const Expr first = floor_div(rem, per_band) * band;
    const Expr rows_in = expr_min(rows - first, band);
    const Expr within = expr_mod(rem, per_band);
    coordinate[p.grid[r - 2].iv] = first + expr_mod(within, rows_in);
    coordinate[p.grid[r - 1].iv] = floor_div(within, rows_in);
    Expr outer = floor_div(t, rows * cols);
    for (size_t d = r - 2; d-- > 0;) {
      coordinate[p.grid[d].iv] = expr_mod(outer, p.grid[d].extent);
      outer = floor_div(outer, p.grid[d].extent);
    }
  }
  substitute_symbols(p.body, [&](const std::string& s) -> Expr {
    auto it = coordinate.find(s);
    return it == coordinate.end() ? nullptr : it->second;
  });

  GroupOp loop;
  loop.kind = GroupOpKind::For;
  loop.id = p.new_op_id();
  loop.iv = s_name;
  loop.lo = expr_const(0);
  loop.hi = ceil_div(tiles - expr_sym(g_name), groups);
  loop.pipelined = true;  // each iteration owns another tile
  loop.bodies = {std::move(p.body)};
  GroupOp fence;
  fence.kind = GroupOpKind::Fence;
  fence.id = p.new_op_id();
  loop.bodies[0].push_back(fence);
  p.body = {std::move(loop)};
  p.grid = {LoopDim{g_name, groups}};
  stats.applied = true;
  return stats;
}

}  // namespace tessel
