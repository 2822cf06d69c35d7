#include "passes/specialize_sizes.h"

#include <algorithm>
#include <map>
#include <string>

#include "tessel/error.h"

namespace tessel {
namespace {

// A condition on two constants becomes the branch it takes. (Loops stay, even
// of one iteration: the cpu emitter recognizes the accumulator it can keep in the
// output by the loop around its mmas.)
void fold_control(std::vector<GroupOp>& ops, SpecializeStats& stats) {
  std::vector<GroupOp> out;
  for (GroupOp& op : ops) {
    for (auto& body : op.bodies) fold_control(body, stats);
    int64_t lo = 0, hi = 0;
    if (op.kind == GroupOpKind::If && !op.cond.on_scalar && expr_is_const(op.cond.lhs, &lo) &&
        expr_is_const(op.cond.rhs, &hi)) {
      ++stats.folded;
      // By the sign of lo - hi: exact for any 64-bit values.
      const size_t taken = cmp_holds(op.cond.op, lo < hi ? -1 : lo > hi ? 1 : 0, 0) ? 0 : 1;
      if (taken < op.bodies.size())
        for (GroupOp& inner : op.bodies[taken]) out.push_back(std::move(inner));
      continue;
    }
    out.push_back(std::move(op));
  }
  ops = std::move(out);
}

}  // namespace

SpecializeStats specialize_sizes(GroupProgram& p, const std::vector<std::pair<std::string, int64_t>>& values) {
  SpecializeStats stats;
  std::map<std::string, Expr> bound;
  std::map<std::string, int64_t> fixed(p.fixed_sizes.begin(), p.fixed_sizes.end());
  for (const auto& [name, value] : values)
    if (std::count(p.size_params.begin(), p.size_params.end(), name)) {
      if (auto it = fixed.find(name); it != fixed.end() && it->second != value)
        user_error(ErrorKind::InvalidArgument, "size " + name + " of " + p.name + " is already fixed at " +
                                                   std::to_string(it->second) + ", not " + std::to_string(value));
      bound[name] = expr_const(value);
      fixed[name] = value;
      ++stats.sizes;
    }
  if (bound.empty()) return stats;
  // In size_params' order: a launch must give these values (check_fixed_sizes).
  p.fixed_sizes.clear();
  for (const std::string& name : p.size_params)
    if (auto it = fixed.find(name); it != fixed.end()) p.fixed_sizes.push_back(*it);
  auto lookup = [&](const std::string& s) -> Expr {
    auto it = bound.find(s);
    return it == bound.end() ? nullptr : it->second;
  };
  for (LoopDim& d : p.grid) d.extent = expr_substitute(d.extent, lookup);
  // A coordinate whose dimension has one point is 0 (the grid's extents name sizes
  // only, so they are final here).
  std::map<std::string, Expr> coordinate;
  for (const LoopDim& d : p.grid)
    if (int64_t extent = 0; expr_is_const(d.extent, &extent) && extent == 1) coordinate[d.iv] = expr_const(0);
  stats.coordinates = static_cast<int>(coordinate.size());
  bound.insert(coordinate.begin(), coordinate.end());
  substitute_symbols(p.body, lookup);
  fold_control(p.body, stats);
  return stats;
}

}  // namespace tessel
