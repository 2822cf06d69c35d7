#include "passes/pipeline.h"

#include <set>

#include "ir/group_effects.h"
#include "tessel/error.h"

namespace tessel {
namespace {

bool is_staging_copy(const GroupProgram& p, const GroupOp& op) {
  return op.kind == GroupOpKind::Copy && p.buffer(op.src.buffer).space == Space::Global &&
         p.buffer(op.dst.buffer).space == Space::Shared;
}

// A loop body split into its staging copies (every copy from global into shared,
// whatever reads the staged buffer: an mma, a frag.load, a copy's consumers) and
// the rest, the consumers, in their order. Fences at the top of the body, before
// any consumer, only order the copies and are dropped (the pass makes its own).
struct Split {
  std::vector<GroupOp> copies, consumers;
};

// A consumer may be an if: its branches are consumers too, and their ops count as
// its own (memory effects, staged versions).
template <class Op, class F>
void each_nested(Op& op, const F& f) {
  f(op);
  if (op.kind == GroupOpKind::If)
    for (auto& body : op.bodies)
      for (Op& o : body) each_nested(o, f);
}

std::vector<MemEffect> nested_effects(const GroupProgram& p, const GroupOp& op) {
  std::vector<MemEffect> out;
  each_nested(op, [&](const GroupOp& o) {
    for (const MemEffect& e : op_effects(p, o)) out.push_back(e);
  });
  return out;
}

// The first op (op itself, or one in an if's branches) that is not a plain
// consumer: a copy, a loop, a wait or a call; nullptr when there is none.
const GroupOp* not_plain(const GroupOp& op) {
  if (op.kind == GroupOpKind::If) {
    for (const auto& body : op.bodies)
      for (const GroupOp& o : body)
        if (const GroupOp* bad = not_plain(o)) return bad;
    return nullptr;
  }
  bool plain = !(op.kind == GroupOpKind::Copy || op.kind == GroupOpKind::For ||
                 op.kind == GroupOpKind::AsyncWait || op.kind == GroupOpKind::AsyncCommit ||
                 op.kind == GroupOpKind::MmaWait || op.async || op.kind == GroupOpKind::Call);
  return plain ? nullptr : &op;
}

bool writes_global(const GroupProgram& p, const GroupOp& op) {
  for (const MemEffect& e : nested_effects(p, op))
    if (e.write && e.space == Space::Global) return true;
  return false;
}

// A staging copy after some consumers moves to the top of the body (the pass issues
// it iterations ahead anyway). That keeps the program's meaning when nothing before
// it touches its buffer (else that op would see another iteration's data) or writes
// global memory (which the copy reads).
bool split_body(const GroupProgram& p, const std::vector<GroupOp>& body, Split* split,
                std::string* why) {
  std::set<int> touched;  // shared buffers that ops before the current one access
  bool global_written = false;
  size_t top = 0;  // copies and fences before the first consumer
  while (top < body.size() && (is_staging_copy(p, body[top]) || body[top].kind == GroupOpKind::Fence))
    ++top;
  for (size_t j = 0; j < body.size(); ++j) {
    const GroupOp& op = body[j];
    if (is_staging_copy(p, op)) {
      if (touched.count(op.dst.buffer) || global_written)
        return *why = "staging copy #" + std::to_string(op.id) + " follows an op that " +
                      (global_written ? "writes global memory" : "accesses its buffer") +
                      ": it cannot be issued ahead",
               false;
      split->copies.push_back(op);
      continue;
    }
    if (j < top) continue;  // a fence among the leading copies
    if (const GroupOp* bad = not_plain(op))
      return *why = "op #" + std::to_string(bad->id) + " in the body is not a plain consumer", false;
    for (const MemEffect& e : nested_effects(p, op)) touched.insert(e.buffer);
    global_written = global_written || writes_global(p, op);
    split->consumers.push_back(op);
  }
  if (split->copies.empty()) return *why = "no staging copies in the body", false;
  // A copy issued iterations ahead reads its tensor before the stores of the
  // iterations in between: a body that stores a tensor it stages (feedback through
  // global memory) keeps its order.
  std::set<int> sources;
  for (const GroupOp& c : split->copies) sources.insert(c.src.buffer);
  for (const GroupOp& op : split->consumers)
    for (const MemEffect& e : nested_effects(p, op))
      if (e.write && e.space == Space::Global && sources.count(e.buffer))
        return *why = "op #" + std::to_string(op.id) + " writes " + p.buffer(e.buffer).name +
                      ", which a staging copy reads: a copy issued ahead would read it first",
               false;
  std::set<int> staged;
  for (const GroupOp& c : split->copies) staged.insert(c.dst.buffer);
  for (const GroupOp& op : split->consumers)
    for (const MemEffect& e : nested_effects(p, op))
      if (e.write && staged.count(e.buffer))
        return *why = "op #" + std::to_string(op.id) + " writes the staged buffer " +
                      p.buffer(e.buffer).name,
               false;
  return true;
}

class Pipeliner {
 public:
  Pipeliner(GroupProgram& p, const PipelineOptions& o) : p_(p), o_(o) {}

  void run(std::vector<GroupOp>& ops, PipelineStats& stats) {
    std::vector<GroupOp> out;
    for (GroupOp& op : ops) {
      for (auto& body : op.bodies) run(body, stats);
      if (op.kind != GroupOpKind::For || !op.pipelined ||
          (o_.window == 1 && !o_.async)) {
        out.push_back(std::move(op));
        continue;
      }
      Split split;
      std::string why;
      if (!split_body(p_, op.bodies[0], &split, &why)) {
        ++stats.loops_skipped;
        stats.skipped_reason = why;
        out.push_back(std::move(op));
        continue;
      }
      transform(op, std::move(split), out);
      ++stats.loops_pipelined;
    }
    ops = std::move(out);
  }

 private:

  // The copy for iteration `iteration` (an expression in the loop variable) into
  // version `version`: a fresh op with its own id. Every expression of the copy
  // is shifted, bounds included (a prologue copy must not name the loop variable).
  // A copy for an iteration that may lie past the end of the loop gets an empty
  // destination window there (its rows bounded by 0), so it moves nothing: no
  // wasted copy, and no read beyond what the loop itself reads.
  GroupOp shifted_copy(const GroupOp& copy, const GroupOp& loop, const Expr& iteration,
                       const Expr& version, bool may_pass_end) {
    GroupOp g = copy;
    g.id = p_.new_op_id();
    auto subst = [&](const Expr& e) {
      if (!e) return e;
      return expr_substitute(e, [&](const std::string& s) { return s == loop.iv ? iteration : nullptr; });
    };
    for (Expr* e : {&g.src.row, &g.src.col, &g.dst.row, &g.dst.col, &g.src_row_bound,
                    &g.src_col_bound, &g.dst_row_bound, &g.dst_col_bound})
      *e = subst(*e);
    if (may_pass_end) {
      // live = 1 while iteration < hi, else 0; the bound is the window's end or 0.
      Expr live = expr_min(expr_const(1), expr_max(expr_const(0), loop.hi - iteration));
      Expr end = live * (g.dst.row + expr_const(g.rows));
      g.dst_row_bound = g.dst_row_bound ? expr_min(g.dst_row_bound, end) : end;
    }
    g.dst.version = version;
    g.async = o_.async;
    return g;
  }

  void transform(GroupOp& loop, Split split, std::vector<GroupOp>& out) {
    const int w = o_.window;
    std::vector<GroupOp>& body = loop.bodies[0];
    std::vector<GroupOp> copies = std::move(split.copies), consumers = std::move(split.consumers);
    std::set<int> staged;
    for (const GroupOp& c : copies) {
      staged.insert(c.dst.buffer);
      p_.buffers[c.dst.buffer].versions = w;
    }
    Expr k = expr_sym(loop.iv);
    Expr step = k - loop.lo;  // 0-based iteration
    auto slot = [&](int64_t ahead) { return expr_mod(step + expr_const(ahead), expr_const(w)); };

    // Consumers read this iteration's version.
    for (GroupOp& c : consumers)
      each_nested(c, [&](GroupOp& o) {
        for (BufferRef* r : {&o.a, &o.b, &o.src})
          if (r->buffer >= 0 && staged.count(r->buffer)) r->version = slot(0);
      });

    // Asynchronous consumers (async copies, W >= 2): the mmas become async and
    // `lag` of them (1 from W = 3 on) stay in flight across the fence. The copies
    // then run `lead` = W - 1 - lag tiles ahead, so that the version they refill
    // was read `lag` + 1 iterations ago, by an mma the mma.wait before the fence
    // has completed in every worker.
    const bool async_mma = o_.async_consumers && o_.async && w >= 2;
    const int lag = async_mma && w >= 3 ? 1 : 0, lead = w - 1 - lag;
    if (async_mma)
      for (GroupOp& c : consumers)
        if (c.kind == GroupOpKind::Mma) c.async = true;

    // Prologue: iterations lo .. lo + lead - 1 into versions 0 .. lead - 1.
    for (int s = 0; s < lead; ++s) {
      for (const GroupOp& c : copies)
        out.push_back(shifted_copy(c, loop, loop.lo + expr_const(s), expr_const(s), true));
      if (o_.async) out.push_back(p_.new_op(GroupOpKind::AsyncCommit));
    }
    if (!o_.async && w > 1) out.push_back(p_.new_op(GroupOpKind::Fence));

    std::vector<GroupOp> next;
    Expr ahead = k + expr_const(lead);
    if (!o_.async) {
      for (const GroupOp& c : copies) {
        next.push_back(shifted_copy(c, loop, ahead, slot(w - 1), true));
        next.push_back(p_.new_op(GroupOpKind::Fence));
      }
      for (GroupOp& c : consumers) next.push_back(std::move(c));
    } else {
      // With W = 1 the copy for k is issued and waited for in the same iteration.
      if (w == 1) {
        for (const GroupOp& c : copies) next.push_back(shifted_copy(c, loop, k, slot(0), false));
        next.push_back(p_.new_op(GroupOpKind::AsyncCommit));
      }
      GroupOp wait = p_.new_op(GroupOpKind::AsyncWait);
      wait.pending = w >= 2 ? lead - 1 : 0;
      next.push_back(wait);
      if (async_mma) {
        GroupOp mma_wait = p_.new_op(GroupOpKind::MmaWait);
        mma_wait.pending = lag;
        next.push_back(mma_wait);
      }
      next.push_back(p_.new_op(GroupOpKind::Fence));
      // The fence after the wait also orders this iteration's copies after the
      // previous iteration's consumers, so a trailing fence would be redundant.
      while (w >= 2 && !consumers.empty() && consumers.back().kind == GroupOpKind::Fence)
        consumers.pop_back();
      // Asynchronous consumers first: the copies issue while they run.
      if (async_mma)
        for (GroupOp& c : consumers) next.push_back(std::move(c));
      if (w >= 2) {
        for (const GroupOp& c : copies) next.push_back(shifted_copy(c, loop, ahead, slot(lead), true));
        next.push_back(p_.new_op(GroupOpKind::AsyncCommit));
      }
      if (!async_mma)
        for (GroupOp& c : consumers) next.push_back(std::move(c));
      // W = 1: the next iteration's copy overwrites what the consumers read.
      if (w == 1 && next.back().kind != GroupOpKind::Fence) next.push_back(p_.new_op(GroupOpKind::Fence));
    }
    body = std::move(next);
    out.push_back(std::move(loop));
    if (async_mma) {
      GroupOp drain = p_.new_op(GroupOpKind::MmaWait);
      drain.pending = 0;
      out.push_back(drain);
    }
    if (o_.async) {
      GroupOp drain = p_.new_op(GroupOpKind::AsyncWait);
      drain.pending = 0;
      out.push_back(drain);
    }
  }

  GroupProgram& p_;
  const PipelineOptions& o_;
};

}  // namespace

PipelineStats pipeline_loops(GroupProgram& program, const PipelineOptions& options) {
  TESSEL_ASSERT(options.window >= 1, "pipeline window must be positive");
  PipelineStats stats;
  Pipeliner(program, options).run(program.body, stats);
  return stats;
}

}  // namespace tessel
