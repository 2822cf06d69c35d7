#include "passes/plan_barriers.h"

#include <algorithm>
#include <functional>
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

bool mentions(const Expr& e, const std::string& symbol) {
  bool found = false;
  expr_symbols(e, [&](const std::string& name) { found = found || name == symbol; });
  return found;
}

// How the planner sees loops, branches, async waits and global memory
// (BarrierPlanOptions::precise).
struct Mode {
  bool precise = false;
  // Precise mode: what an async.wait (mma.wait) completes, for any copies (mmas)
  // in flight: the effects of every async copy (mma) of the program, any version.
  std::vector<MemEffect> copy_landing, mma_reads;
};

void collect_async(const GroupProgram& program, const std::vector<GroupOp>& ops, Mode* mode) {
  for (const GroupOp& op : ops) {
    if (op.async && (op.kind == GroupOpKind::Copy || op.kind == GroupOpKind::Mma))
      for (MemEffect e : op_effects(program, op)) {
        e.version = nullptr;
        (op.kind == GroupOpKind::Copy ? mode->copy_landing : mode->mma_reads).push_back(e);
      }
    for (const auto& body : op.bodies) collect_async(program, body, mode);
  }
}

// Distinct tensors never share an element that either writes: every launch refuses
// such arguments (runtime/tensor_check.h, check_tensor_overlap). So in precise mode
// two global accesses conflict only on one tensor.
bool conflict(const Mode& mode, const Access& a, const Access& b) {
  if (mode.precise && !a.unknown && !b.unknown && a.effect.space == Space::Global &&
      b.effect.space == Space::Global && a.effect.buffer != b.effect.buffer)
    return false;
  return conflict(a, b);
}

bool is_compound(GroupOpKind k) { return k == GroupOpKind::For || k == GroupOpKind::If; }

// A version that names `iv` says nothing about the slot outside one iteration.
void forget_versions_of(std::vector<Access>& accesses, const std::string& iv) {
  for (Access& a : accesses)
    if (a.effect.version && mentions(a.effect.version, iv)) a.effect.version = nullptr;
}

// A branch whose bodies only compute in registers (frag.fill, ew, and branches of
// those): no memory effect, fence or barrier anywhere in it.
bool registers_only(const GroupProgram& program, const GroupOp& op) {
  for (const auto& body : op.bodies)
    for (const GroupOp& inner : body) {
      bool plain = inner.kind == GroupOpKind::If ? registers_only(program, inner)
                                                 : analyzable(inner.kind) && op_effects(program, inner).empty();
      if (!plain) return false;
    }
  return true;
}

// An op's accesses. Precise mode: a loop or branch has those of every op in its
// bodies (versions that name the loop variable forgotten); otherwise it is unknown,
// unless it is a branch that computes in registers only (it has none).
std::vector<Access> accesses(const GroupProgram& program, const GroupOp& op, const Mode& mode = {}) {
  std::vector<Access> out;
  if (op.kind == GroupOpKind::If && registers_only(program, op)) return out;
  if (mode.precise && is_compound(op.kind)) {
    for (const auto& body : op.bodies)
      for (const GroupOp& inner : body) {
        std::vector<Access> a = accesses(program, inner, mode);
        out.insert(out.end(), a.begin(), a.end());
      }
    if (op.kind == GroupOpKind::For) forget_versions_of(out, op.iv);
    return out;
  }
  // Precise mode: a commit touches no memory; a wait is where the copies (mmas)
  // it completes end their writes and reads, so accesses on either side of it by
  // other workers are ordered by a fence after it.
  if (mode.precise && op.kind == GroupOpKind::AsyncCommit) return out;
  if (mode.precise && (op.kind == GroupOpKind::AsyncWait || op.kind == GroupOpKind::MmaWait)) {
    for (const MemEffect& e : op.kind == GroupOpKind::AsyncWait ? mode.copy_landing : mode.mma_reads)
      out.push_back(Access{e, false, false});
    return out;
  }
  if (!analyzable(op.kind)) {
    out.push_back(Access{{}, true, false});
    return out;
  }
  for (const MemEffect& e : op_effects(program, op)) out.push_back(Access{e, false, false});
  return out;
}

// Native barriers: never removed, and nothing crosses them.
bool is_barrier(GroupOpKind k) { return k == GroupOpKind::Barrier || k == GroupOpKind::ClusterSync; }
bool is_sync(GroupOpKind k) { return k == GroupOpKind::Fence || is_barrier(k); }

// A planned op list seen from outside: the accesses that may run before its first
// fence or barrier (head) and after its last (tail); all of them when it has none.
struct Summary {
  std::vector<Access> head, tail;
};

Summary summarize(const GroupProgram& program, const std::vector<GroupOp>& ops, const Mode& mode) {
  Summary s;
  size_t first = ops.size(), last = ops.size();
  for (size_t i = 0; i < ops.size(); ++i)
    if (is_sync(ops[i].kind)) {
      if (first == ops.size()) first = i;
      last = i;
    }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (is_sync(ops[i].kind)) continue;
    std::vector<Access> a = accesses(program, ops[i], mode);
    if (i < first) s.head.insert(s.head.end(), a.begin(), a.end());
    if (last == ops.size() || i > last) s.tail.insert(s.tail.end(), a.begin(), a.end());
  }
  return s;
}

// The accesses of a loop body after its last fence or barrier: the previous
// iteration's accesses that reach the top of the body without a fence.
std::vector<Access> tail(const GroupProgram& program, const std::vector<GroupOp>& ops,
                         const Mode& mode = {}) {
  std::vector<Access> out;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    if (is_sync(it->kind)) break;
    std::vector<Access> a = accesses(program, *it, mode);
    out.insert(out.end(), a.begin(), a.end());
  }
  return out;
}

// Where a region sits, for the decision on its last fence.
enum class RegionKind { Program, LoopBody, Branch };

struct RegionContext {
  RegionKind kind = RegionKind::Program;
  std::string iv;  // LoopBody: the loop variable
  // LoopBody: the enclosing region's accesses after the loop up to its next fence
  // or barrier (`exit`), and whether there is one (or the program ends there).
  bool exit_bounded = false;
  std::vector<Access> exit;
  // LoopBody: what its async.wait pending 0 lands on the next trip, with versions as
  // of this trip (copies_in_flight_at_exit); empty when it has no such wait.
  std::vector<Access> landing;
};

// A loop body that waits for every copy in flight (async.wait pending 0) before it
// issues any has, when it ends, only its own last iteration's copies in flight:
// their effects, with versions as of that iteration. Empty when it has no such wait.
std::vector<Access> copies_in_flight_at_exit(const GroupProgram& program, const GroupOp& loop) {
  std::vector<Access> out;
  bool waited = false;
  for (const GroupOp& op : loop.bodies[0]) {
    bool nested_async = false;
    for (const auto& body : op.bodies)
      for (const GroupOp& inner : body) nested_async |= inner.async || inner.kind == GroupOpKind::AsyncWait;
    if (nested_async) return {};
    if (op.kind == GroupOpKind::AsyncWait && op.pending == 0) waited = true;
    if (op.kind == GroupOpKind::Copy && op.async) {
      if (!waited) return {};
      for (const MemEffect& e : op_effects(program, op)) out.push_back(Access{e, false, false});
    }
  }
  return waited ? out : std::vector<Access>{};
}

// The enclosing region's accesses after the loop at ops[i], up to its next fence or
// barrier (the loop's exit in RegionContext). An async.wait right behind a loop
// that qualifies above lands that loop's last copies.
void exit_of(const GroupProgram& program, const std::vector<GroupOp>& ops, size_t i,
             bool program_body, const Mode& mode, RegionContext* ctx) {
  std::vector<Access> landing;
  bool specific = ops[i].kind == GroupOpKind::For;
  if (specific) landing = copies_in_flight_at_exit(program, ops[i]);
  for (size_t j = i + 1; j < ops.size(); ++j) {
    if (is_sync(ops[j].kind)) {
      ctx->exit_bounded = true;
      return;
    }
    std::vector<Access> a = ops[j].kind == GroupOpKind::AsyncWait && !landing.empty()
                                ? landing
                                : accesses(program, ops[j], mode);
    ctx->exit.insert(ctx->exit.end(), a.begin(), a.end());
  }
  ctx->exit_bounded = program_body;
}

using Crossing = std::function<bool(const std::vector<Access>&)>;
void plan_compound(const GroupProgram& program, std::vector<GroupOp>& ops, int i,
                   std::vector<Access>& acc, int pending, std::vector<int>* removed,
                   const Mode& mode, const RegionContext& ctx, const Crossing& crossing,
                   const std::function<void()>& cut_pending);

// Plans one region and the regions nested in it; see the header. `acc` starts as
// the region's entry accesses.
void plan_region(const GroupProgram& program, std::vector<GroupOp>& ops, std::vector<Access> acc,
                 std::vector<int>* removed, const Mode& mode, const RegionContext& ctx) {
  int last_fence = -1;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i)
    if (ops[i].kind == GroupOpKind::Fence) last_fence = i;
  // Precise mode decides a loop body's or the program's last fence at the end, by
  // its dependences; branches keep theirs by rule.
  bool last_by_rule = !mode.precise || ctx.kind == RegionKind::Branch;

  std::vector<bool> keep(ops.size(), true);
  int pending = -1;  // the most recent fence, not yet known to be needed
  Crossing crossing = [&](const std::vector<Access>& mine) {
    for (const Access& a : acc)
      for (const Access& m : mine)
        if (a.before_pending && conflict(mode, a, m)) return true;
    return false;
  };
  std::function<void()> cut_pending = [&] {
    std::erase_if(acc, [](const Access& a) { return a.before_pending; });
    pending = -1;
  };
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    GroupOp& op = ops[i];
    if (op.kind == GroupOpKind::Fence) {
      if (pending >= 0) keep[pending] = false;  // this fence cuts whatever that one would
      pending = i;
      for (Access& a : acc) a.before_pending = true;
      if (i == last_fence && last_by_rule) {  // kept: loop back edges and the enclosing region need it
        acc.clear();
        pending = -1;
      }
      continue;
    }
    if (is_barrier(op.kind)) {  // synchronizes: nothing crosses it
      if (pending >= 0) keep[pending] = false;
      acc.clear();
      pending = -1;
      continue;
    }
    if (mode.precise && is_compound(op.kind)) {
      plan_compound(program, ops, i, acc, pending, removed, mode, ctx, crossing, cut_pending);
      continue;
    }
    std::vector<Access> mine = accesses(program, op, mode);
    if (pending >= 0 && crossing(mine)) cut_pending();
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
      RegionContext inner;
      inner.kind = op.kind == GroupOpKind::For ? RegionKind::LoopBody : RegionKind::Branch;
      plan_region(program, body, std::move(entry), removed, mode, inner);
    }
    acc.insert(acc.end(), mine.begin(), mine.end());
  }
  if (pending >= 0) {
    TESSEL_ASSERT(mode.precise, "the last fence of a region is always kept");
    bool needed = true;
    if (ctx.kind == RegionKind::Program) {
      needed = false;  // nothing runs after the group's last op
    } else if (ctx.kind == RegionKind::LoopBody && ctx.exit_bounded) {
      // Without it, everything after the last retained fence reaches the next
      // iteration's ops up to its first retained fence (the whole body when none
      // stays), and after the last iteration the enclosing region's accesses up to
      // its next fence (which then cuts what needs it: it sees the loop's tail).
      // The next trip's async.wait (pending 0) lands this trip's copies: their
      // versions are comparable with this trip's; anything else is compared with
      // the loop variable's versions forgotten.
      std::vector<Access> head, landed;
      for (int j = 0; j < static_cast<int>(ops.size()); ++j) {
        if (is_barrier(ops[j].kind)) break;
        if (ops[j].kind == GroupOpKind::Fence) {
          if (j != pending && keep[j]) break;
          continue;
        }
        if (ops[j].kind == GroupOpKind::AsyncWait && ops[j].pending == 0 && !ctx.landing.empty()) {
          landed.insert(landed.end(), ctx.landing.begin(), ctx.landing.end());
          continue;
        }
        std::vector<Access> a = accesses(program, ops[j], mode);
        head.insert(head.end(), a.begin(), a.end());
      }
      needed = false;
      for (const Access& a : acc) {  // this trip, the last one: versions as they are
        for (const Access& e : ctx.exit) needed = needed || conflict(mode, a, e);
        for (const Access& l : landed) needed = needed || conflict(mode, a, l);
      }
      std::vector<Access> back = acc;
      forget_versions_of(back, ctx.iv);
      forget_versions_of(head, ctx.iv);
      for (const Access& a : back)
        for (const Access& h : head) needed = needed || conflict(mode, a, h);
    }
    if (!needed) keep[pending] = false;
  }

  std::vector<GroupOp> out;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (keep[i]) out.push_back(std::move(ops[i]));
    else removed->push_back(ops[i].id);
  }
  ops = std::move(out);
}

// Precise mode, a loop or branch at ops[i]: its bodies are planned first, then the
// enclosing region sees it through their summaries. Accesses before it meet only
// what runs before the bodies' first fences (the head); accesses after it meet
// what runs after their last (the tail). The accesses before it stay accumulated:
// a loop may run no iteration and a branch may hold no fence.
void plan_compound(const GroupProgram& program, std::vector<GroupOp>& ops, int i,
                   std::vector<Access>& acc, int pending, std::vector<int>* removed,
                   const Mode& mode, const RegionContext& ctx, const Crossing& crossing,
                   const std::function<void()>& cut_pending) {
  const GroupOp original = ops[i];
  bool is_loop = original.kind == GroupOpKind::For;
  RegionContext inner;
  inner.kind = is_loop ? RegionKind::LoopBody : RegionKind::Branch;
  inner.iv = is_loop ? original.iv : "";
  if (is_loop) {
    exit_of(program, ops, static_cast<size_t>(i), ctx.kind == RegionKind::Program, mode, &inner);
    inner.landing = copies_in_flight_at_exit(program, original);
  }
  // Plans the bodies from the original ops with `outer` accumulated before them.
  auto plan_bodies = [&](const std::vector<Access>& outer, GroupOp& into, std::vector<int>* gone,
                         Summary* summary) {
    into = original;
    for (auto& body : into.bodies) {
      std::vector<Access> entry = outer;
      if (is_loop) {
        std::vector<Access> t = tail(program, body, mode);
        entry.insert(entry.end(), t.begin(), t.end());
      }
      for (Access& a : entry) a.before_pending = false;
      if (is_loop) forget_versions_of(entry, original.iv);
      plan_region(program, body, std::move(entry), gone, mode, inner);
      Summary s = summarize(program, body, mode);
      summary->head.insert(summary->head.end(), s.head.begin(), s.head.end());
      summary->tail.insert(summary->tail.end(), s.tail.begin(), s.tail.end());
    }
    if (is_loop) {
      forget_versions_of(summary->head, original.iv);
      forget_versions_of(summary->tail, original.iv);
    }
  };
  // First as if the pending fence stays: the bodies then start after it.
  std::vector<Access> after_pending;
  for (const Access& a : acc)
    if (!a.before_pending) after_pending.push_back(a);
  GroupOp planned;
  std::vector<int> gone;
  Summary summary;
  plan_bodies(pending >= 0 ? after_pending : acc, planned, &gone, &summary);
  if (pending >= 0 && crossing(summary.head)) {
    cut_pending();
  } else if (pending >= 0) {
    // The pending fence may go: the accesses before it reach the bodies too.
    gone.clear();
    summary = Summary{};
    plan_bodies(acc, planned, &gone, &summary);
  }
  ops[i] = std::move(planned);
  removed->insert(removed->end(), gone.begin(), gone.end());
  acc.insert(acc.end(), summary.tail.begin(), summary.tail.end());
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
  return cmp_holds(c.op, lhs, rhs);
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
    Mode mode;
    mode.precise = options.precise;
    if (mode.precise) collect_async(program, program.body, &mode);
    plan_region(program, program.body, {}, &stats.removed, mode, RegionContext{});  // kernel start: nothing before
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
