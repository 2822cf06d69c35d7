#include "passes/plan_barriers.h"

#include <algorithm>
#include <map>

#include "ir/group_effects.h"
#include "tessel/error.h"

namespace tessel {
namespace {

// One access accumulated since the last retained fence. An unknown access (a
// call, async protocol op, loop, branch or region entry) conflicts with all.
struct Access {
  MemEffect effect;
  bool unknown = false;
  bool before_pending = false;  // lies before the most recent undecided fence
};

bool conflict(const Access& a, const Access& b) {
  return a.unknown || b.unknown || effects_conflict(a.effect, b.effect);
}

bool analyzable(GroupOpKind k) {
  switch (k) {
    case GroupOpKind::Copy:
    case GroupOpKind::FragFill:
    case GroupOpKind::FragLoad:
    case GroupOpKind::FragStore:
    case GroupOpKind::Mma:
    case GroupOpKind::Elementwise:
    case GroupOpKind::Reduce: return true;
    default: return false;
  }
}

std::vector<Access> accesses(const GroupProgram& program, const GroupOp& op) {
  std::vector<Access> out;
  if (!analyzable(op.kind)) {
    out.push_back(Access{{}, true, false});
    return out;
  }
  for (const MemEffect& e : op_effects(program, op)) out.push_back(Access{e, false, false});
  return out;
}

bool mentions(const Expr& e, const std::string& symbol) {
  bool found = false;
  expr_symbols(e, [&](const std::string& name) { found = found || name == symbol; });
  return found;
}

// The accesses of a loop body after its last fence or barrier: the previous
// iteration's accesses that reach the top of the body without a fence.
std::vector<Access> tail(const GroupProgram& program, const std::vector<GroupOp>& ops) {
  std::vector<Access> out;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    if (it->kind == GroupOpKind::Fence || it->kind == GroupOpKind::Barrier) break;
    std::vector<Access> a = accesses(program, *it);
    out.insert(out.end(), a.begin(), a.end());
  }
  return out;
}

// Plans one region and the regions nested in it; see the header. `acc` starts as
// the region's entry accesses.
void plan_region(const GroupProgram& program, std::vector<GroupOp>& ops, std::vector<Access> acc,
                 std::vector<int>* removed) {
  int last_fence = -1;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i)
    if (ops[i].kind == GroupOpKind::Fence) last_fence = i;

  std::vector<bool> keep(ops.size(), true);
  int pending = -1;  // the most recent fence, not yet known to be needed
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    GroupOp& op = ops[i];
    if (op.kind == GroupOpKind::Fence) {
      if (pending >= 0) keep[pending] = false;  // this fence cuts whatever that one would
      pending = i;
      for (Access& a : acc) a.before_pending = true;
      if (i == last_fence) {  // kept: loop back edges and the enclosing region need it
        acc.clear();
        pending = -1;
      }
      continue;
    }
    if (op.kind == GroupOpKind::Barrier) {  // synchronizes: nothing crosses it
      if (pending >= 0) keep[pending] = false;
      acc.clear();
      pending = -1;
      continue;
    }
    std::vector<Access> mine = accesses(program, op);
    bool crosses = false;
    for (const Access& a : acc)
      for (const Access& m : mine) crosses = crosses || (a.before_pending && conflict(a, m));
    if (pending >= 0 && crosses) {
      std::erase_if(acc, [](const Access& a) { return a.before_pending; });
      pending = -1;
    }
    // A body starts after what is accumulated here (no retained fence between)
    // and, for a loop, after its own tail from the previous iteration.
    for (auto& body : op.bodies) {
      std::vector<Access> entry = acc;
      if (op.kind == GroupOpKind::For) {
        std::vector<Access> t = tail(program, body);
        entry.insert(entry.end(), t.begin(), t.end());
      }
      for (Access& a : entry) {
        a.before_pending = false;
        // The loop variable has another value in the body than it had for these
        // accesses (the previous iteration, or a shadowed outer loop's variable),
        // so a version that names it says nothing about the slot.
        if (op.kind == GroupOpKind::For && mentions(a.effect.version, op.iv)) a.effect.version = nullptr;
      }
      plan_region(program, body, std::move(entry), removed);
    }
    acc.insert(acc.end(), mine.begin(), mine.end());
  }
  TESSEL_ASSERT(pending < 0, "the last fence of a region is always kept");

  std::vector<GroupOp> out;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (keep[i]) out.push_back(std::move(ops[i]));
    else removed->push_back(ops[i].id);
  }
  ops = std::move(out);
}

// ---- statistics -----------------------------------------------------------

void count_static(const std::vector<GroupOp>& ops, bool in_loop, int* total, int* loop) {
  for (const GroupOp& op : ops) {
    if (op.kind == GroupOpKind::Fence) {
      ++*total;
      if (in_loop) ++*loop;
    }
    for (const auto& body : op.bodies)
      count_static(body, in_loop || op.kind == GroupOpKind::For, total, loop);
  }
}

// A polynomial in trip-count and branch symbols: a sorted list of symbols (a
// monomial) to its coefficient.
using Poly = std::map<std::vector<std::string>, int64_t>;

void add_into(Poly* p, const Poly& q, int64_t scale) {
  for (const auto& [mono, c] : q) (*p)[mono] += c * scale;
}

Poly times_symbol(const Poly& p, const std::string& sym) {
  Poly out;
  for (const auto& [mono, c] : p) {
    std::vector<std::string> m = mono;
    m.insert(std::upper_bound(m.begin(), m.end(), sym), sym);
    out[m] += c;
  }
  return out;
}

std::string cond_to_string(const Cond& c) {
  std::string lhs = c.on_scalar ? c.scalar : expr_to_string(c.lhs);
  std::string rhs = c.on_scalar ? std::to_string(c.value) : expr_to_string(c.rhs);
  return lhs + " " + cmp_op_name(c.op) + " " + rhs;
}

// Loops and branches are numbered in walk order; the pass keeps every for/if, so
// the numbering is the same before and after.
Poly fence_poly(const std::vector<GroupOp>& ops, std::vector<std::string>* legend) {
  Poly p;
  for (const GroupOp& op : ops) {
    if (op.kind == GroupOpKind::Fence) p[{}] += 1;
    if (op.kind == GroupOpKind::For) {
      std::string sym = "L" + std::to_string(legend->size());
      legend->push_back(sym + " = " + expr_to_string(op.hi - op.lo));
      add_into(&p, times_symbol(fence_poly(op.bodies[0], legend), sym), 1);
    }
    if (op.kind == GroupOpKind::If) {
      std::string sym = "C" + std::to_string(legend->size());
      legend->push_back(sym + " = (" + cond_to_string(op.cond) + ")");
      Poly then_p = fence_poly(op.bodies[0], legend);
      Poly else_p = fence_poly(op.bodies[1], legend);
      // C*then + (1 - C)*else
      add_into(&p, times_symbol(then_p, sym), 1);
      add_into(&p, else_p, 1);
      add_into(&p, times_symbol(else_p, sym), -1);
    }
  }
  std::erase_if(p, [](const auto& kv) { return kv.second == 0; });
  return p;
}

std::string poly_to_string(const Poly& p) {
  // Highest degree first, the constant last: "L0*L1 + 3*L0 + 1".
  std::vector<std::pair<std::vector<std::string>, int64_t>> terms(p.begin(), p.end());
  std::stable_sort(terms.begin(), terms.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string s;
  for (const auto& [mono, c] : terms) {
    int64_t mag = c < 0 ? -c : c;
    s += s.empty() ? (c < 0 ? "-" : "") : (c < 0 ? " - " : " + ");
    std::string m;
    for (const std::string& sym : mono) m += (m.empty() ? "" : "*") + sym;
    if (m.empty()) s += std::to_string(mag);
    else s += (mag == 1 ? "" : std::to_string(mag) + "*") + m;
  }
  return s.empty() ? "0" : s;
}

bool cond_holds(const Cond& c, const SymbolLookup& lookup) {
  double lhs, rhs;
  if (c.on_scalar) {
    int64_t v = 0;
    if (!lookup(c.scalar, &v))
      user_error(ErrorKind::InvalidArgument, "unknown scalar '" + c.scalar + "' in branch condition");
    lhs = static_cast<double>(v);
    rhs = c.value;
  } else {
    lhs = static_cast<double>(expr_eval(c.lhs, lookup));
    rhs = static_cast<double>(expr_eval(c.rhs, lookup));
  }
  switch (c.op) {
    case CmpOp::EQ: return lhs == rhs;
    case CmpOp::NE: return lhs != rhs;
    case CmpOp::LT: return lhs < rhs;
    case CmpOp::LE: return lhs <= rhs;
    case CmpOp::GT: return lhs > rhs;
    case CmpOp::GE: return lhs >= rhs;
  }
  return false;
}

int64_t count_walk(const std::vector<GroupOp>& ops, std::map<std::string, int64_t>* ivs,
                   const SymbolLookup& sizes) {
  SymbolLookup lookup = [&](const std::string& name, int64_t* v) {
    auto it = ivs->find(name);
    if (it != ivs->end()) {
      *v = it->second;
      return true;
    }
    return sizes(name, v);
  };
  int64_t n = 0;
  for (const GroupOp& op : ops) {
    if (op.kind == GroupOpKind::Fence) ++n;
    if (op.kind == GroupOpKind::If)
      n += count_walk(op.bodies[cond_holds(op.cond, lookup) ? 0 : 1], ivs, sizes);
    if (op.kind == GroupOpKind::For) {
      int64_t lo = expr_eval(op.lo, lookup), hi = expr_eval(op.hi, lookup);
      for (int64_t i = lo; i < hi; ++i) {
        (*ivs)[op.iv] = i;
        n += count_walk(op.bodies[0], ivs, sizes);
      }
      ivs->erase(op.iv);
    }
  }
  return n;
}

}  // namespace

BarrierStats plan_barriers(GroupProgram& program, const BarrierPlanOptions& options) {
  BarrierStats stats;
  count_static(program.body, false, &stats.static_before, &stats.loop_before);
  stats.dynamic_before = poly_to_string(fence_poly(program.body, &stats.legend));
  if (options.coalesce) {
    plan_region(program, program.body, {}, &stats.removed);  // kernel start: nothing before
  }
  count_static(program.body, false, &stats.static_after, &stats.loop_after);
  std::vector<std::string> legend;
  stats.dynamic_after = poly_to_string(fence_poly(program.body, &legend));
  return stats;
}

int64_t count_fences_executed(const GroupProgram& program, const SymbolLookup& sizes) {
  std::map<std::string, int64_t> ivs;
  return count_walk(program.body, &ivs, sizes);
}

std::string print_barrier_stats(const BarrierStats& s) {
  std::string out;
  out += "fence sites: " + std::to_string(s.static_before) + " -> " +
         std::to_string(s.static_after) + "\n";
  out += "fence sites in loops: " + std::to_string(s.loop_before) + " -> " +
         std::to_string(s.loop_after) + "\n";
  out += "fences executed per group: " + s.dynamic_before + " -> " + s.dynamic_after + "\n";
  for (const std::string& l : s.legend) out += "  where " + l + "\n";
  return out;
}

}  // namespace tessel
