#include "passes/tma_pipeline.h"

#include <algorithm>
#include <set>

#include "ir/group_effects.h"
#include "ir/group_verify.h"
#include "tessel/error.h"

namespace tessel {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

bool is_staging_copy(const GroupProgram& p, const GroupOp& op) {
  return op.kind == GroupOpKind::Copy && p.buffer(op.src.buffer).space == Space::Global &&
         p.buffer(op.dst.buffer).space == Space::Shared;
}

// Effects of an op and of everything nested in it.
void deep_effects(const GroupProgram& p, const GroupOp& op, std::vector<MemEffect>* out) {
  for (const MemEffect& e : op_effects(p, op)) out->push_back(e);
  for (const auto& body : op.bodies)
    for (const GroupOp& inner : body) deep_effects(p, inner, out);
}

// An op (or one nested in it) the pass cannot carry into the mbarrier protocol.
const GroupOp* foreign_op(const GroupOp& op) {
  switch (op.kind) {
    case GroupOpKind::AsyncCommit: case GroupOpKind::AsyncWait: case GroupOpKind::MmaWait:
    case GroupOpKind::Call: case GroupOpKind::MbarInit: case GroupOpKind::MbarArrive:
    case GroupOpKind::MbarExpectTx: case GroupOpKind::MbarWait: case GroupOpKind::Tma:
    case GroupOpKind::Roles:
      return &op;
    default: break;
  }
  if (op.async || (op.kind == GroupOpKind::For && op.pipelined)) return &op;
  for (const auto& body : op.bodies)
    for (const GroupOp& inner : body)
      if (const GroupOp* f = foreign_op(inner)) return f;
  return nullptr;
}

// A pipeline loop's body: its staging copies and the rest (consumers, fences among
// them kept in place), as the `pipeline` pass splits it (passes/pipeline.h).
struct Split {
  std::vector<GroupOp> copies, consumers;
  bool body_writes = false;  // some consumer writes shared or global memory
};

bool split_body(const GroupProgram& p, const std::vector<GroupOp>& body, Split* split, std::string* why) {
  auto no = [&](const std::string& reason) { return *why = reason, false; };
  std::set<int> touched;
  bool global_written = false;
  for (const GroupOp& op : body) {
    if (is_staging_copy(p, op)) {
      const std::string c = "staging copy #" + num(op.id);
      if (touched.count(op.dst.buffer) || global_written)
        return no(c + " follows an op that " + (global_written ? "writes global memory" : "accesses its buffer") +
                  ": it cannot be issued ahead");
      if (op.async) return no(c + " is already asynchronous");
      if (op.constant != 0) return no(c + " pads with " + std::to_string(op.constant) + "; the copy engine fills 0");
      if (op.dst_row_bound || op.dst_col_bound) return no(c + " has a destination guard; a tma box lands whole");
      if (p.buffer(op.dst.buffer).versions != 1) return no(c + " fills a buffer that already has versions");
      split->copies.push_back(op);
      continue;
    }
    if (op.kind == GroupOpKind::Fence) {
      if (!split->consumers.empty()) split->consumers.push_back(op);  // leading fences only ordered copies
      continue;
    }
    if (const GroupOp* f = foreign_op(op))
      return no("op #" + num(f->id) + " (" + group_op_name(f->kind) + ") in the body is not a plain consumer");
    std::vector<MemEffect> effects;
    deep_effects(p, op, &effects);
    for (const MemEffect& e : effects) {
      touched.insert(e.buffer);
      if (e.write) split->body_writes = true;
      if (e.write && e.space == Space::Global) global_written = true;
    }
    split->consumers.push_back(op);
  }
  if (split->copies.empty()) return no("no staging copies in the body");
  std::set<int> sources, staged;
  for (const GroupOp& c : split->copies) sources.insert(c.src.buffer), staged.insert(c.dst.buffer);
  for (const GroupOp& op : split->consumers) {
    std::vector<MemEffect> effects;
    deep_effects(p, op, &effects);
    for (const MemEffect& e : effects) {
      if (e.write && e.space == Space::Global && sources.count(e.buffer))
        return no("op #" + num(op.id) + " writes " + p.buffer(e.buffer).name +
                  ", which a staging copy reads: a copy issued ahead would read it first");
      if (e.write && staged.count(e.buffer))
        return no("op #" + num(op.id) + " writes the staged buffer " + p.buffer(e.buffer).name);
    }
  }
  return true;
}

bool holds_pipeline_loop(const std::vector<GroupOp>& ops) {
  for (const GroupOp& op : ops) {
    if (op.kind == GroupOpKind::For && op.pipelined) return true;
    for (const auto& body : op.bodies)
      if (holds_pipeline_loop(body)) return true;
  }
  return false;
}

// A loop enclosing the pipeline loop: its induction variable and bounds.
struct Enclosing {
  std::string iv;
  Expr lo, hi;
};

bool uses_any(const Expr& e, const std::vector<Enclosing>& loops) {
  bool used = false;
  expr_symbols(e, [&](const std::string& s) {
    for (const Enclosing& l : loops) used = used || l.iv == s;
  });
  return used;
}

// Sets the version of every reference to a staged buffer, nested ops included.
void read_version(std::vector<GroupOp>& ops, const std::set<int>& staged, const Expr& version) {
  for (GroupOp& op : ops) {
    for (BufferRef* r : {&op.a, &op.b, &op.src, &op.dst})
      if (r->buffer >= 0 && staged.count(r->buffer)) r->version = version;
    for (auto& body : op.bodies) read_version(body, staged, version);
  }
}

class TmaPipeliner {
 public:
  TmaPipeliner(GroupProgram& p, const TmaPipelineOptions& o) : p_(p), o_(o) {}

  void run(std::vector<GroupOp>& ops, std::vector<Enclosing>& enclosing, bool in_branch,
           TmaPipelineStats& stats) {
    std::vector<GroupOp> out;
    for (size_t i = 0; i < ops.size(); ++i) {
      GroupOp& op = ops[i];
      // A pipelined loop around another (a persistent tile loop) only encloses it.
      if (op.kind == GroupOpKind::For && op.pipelined && !holds_pipeline_loop(op.bodies[0])) {
        Split split;
        std::string why;
        if (in_branch) {
          why = "loop #" + num(op.id) + " is inside a branch (its stages would not count every execution)";
        } else if (o_.producers > 0 && stats.loops_converted > 0) {
          why = "loop #" + num(op.id) + ": a producer role serves one pipeline loop";
        } else if (!op.stage_base && uses_any(op.hi - op.lo, enclosing)) {
          why = "loop #" + num(op.id) + ": its trip count depends on an enclosing loop";
        } else {
          for (size_t e = 1; e < enclosing.size() && why.empty() && !op.stage_base; ++e)
            if (uses_any(enclosing[e].hi - enclosing[e].lo, enclosing))
              why = "loop #" + num(op.id) + ": an enclosing loop's trip count depends on another";
        }
        if (why.empty() && split_body(p_, op.bodies[0], &split, &why)) {
          convert(op, std::move(split), enclosing, out);
          ++stats.loops_converted;
          // The op after the loop: a fence orders the last stages' reads before it.
          if (drop_fences_ && o_.producers == 0 && (i + 1 == ops.size() || ops[i + 1].kind != GroupOpKind::Fence))
            out.push_back(p_.new_op(GroupOpKind::Fence));
          continue;
        }
        ++stats.loops_skipped;
        stats.skipped_reason = why;
        out.push_back(std::move(op));
        continue;
      }
      if (op.kind == GroupOpKind::For) enclosing.push_back({op.iv, op.lo, op.hi});
      for (auto& body : op.bodies) run(body, enclosing, in_branch || op.kind == GroupOpKind::If, stats);
      if (op.kind == GroupOpKind::For) enclosing.pop_back();
      out.push_back(std::move(op));
    }
    ops = std::move(out);
  }

  // The producer role's body (producers only): the enclosing loops around the loop
  // that produces every stage.
  std::vector<GroupOp> producer_body;
  bool drop_fences_ = false;  // of the last converted loop
  int empty_mbarrier() const { return empty_; }

 private:

  int add_mbarrier(const std::string& base, int slots) {
    std::string name = base;
    for (int n = 1; p_.find_mbarrier(name) >= 0 || p_.find_buffer(name) >= 0; ++n) name = base + num(n);
    MBarrier b;
    b.id = static_cast<int>(p_.mbarriers.size());
    b.name = name;
    b.slots = slots;
    p_.mbarriers.push_back(b);
    return b.id;
  }

  Expr slot(const Expr& j) const { return expr_mod(j, expr_const(o_.window)); }
  Expr use(const Expr& j) const { return floor_div(j, expr_const(o_.window)); }  // j-th stage's use of its slot

  GroupOp mbar_op(GroupOpKind kind, int mbar, const Expr& slot_expr) {
    GroupOp g = p_.new_op(kind);
    g.mbar = mbar;
    g.mbar_slot = slot_expr;
    return g;
  }

  GroupOp wait(int mbar, const Expr& j, int64_t parity_shift) {
    GroupOp g = mbar_op(GroupOpKind::MbarWait, mbar, slot(j));
    g.parity = parity_shift % 2 ? expr_mod(use(j) + expr_const(1), expr_const(2)) : expr_mod(use(j), expr_const(2));
    return g;
  }

  // Stage j + rounds * W (iteration `iteration` of the loop) into slot j % W: wait
  // for the slot's release, announce its bytes, copy, arrive. (Written from j, so
  // that slot and parity stay small expressions.)
  std::vector<GroupOp> produce(const GroupOp& loop, const std::vector<GroupOp>& copies, const Expr& iteration,
                               const Expr& j, int rounds) {
    std::vector<GroupOp> out;
    out.push_back(wait(empty_, j, rounds + 1));
    GroupOp expect = mbar_op(GroupOpKind::MbarExpectTx, full_, slot(j));
    out.push_back(expect);
    int64_t bytes = 0;
    auto subst = [&](const Expr& e) {
      if (!e) return e;
      return expr_substitute(e, [&](const std::string& s) { return s == loop.iv ? iteration : nullptr; });
    };
    for (const GroupOp& c : copies) {
      // Column panels take whole boxes: a window ending inside a panel (a tile n
      // that is no multiple of it) moves the panel's further columns too, unused.
      const Buffer& d = p_.buffer(c.dst.buffer);
      const int64_t cols = d.layout == Layout::ColPanels ? (c.cols + d.panel - 1) / d.panel * d.panel : c.cols;
      for (int64_t r0 = 0; r0 < c.rows; r0 += kMaxTmaBox)
        for (int64_t c0 = 0; c0 < cols; c0 += kMaxTmaBox) {
          GroupOp t = mbar_op(GroupOpKind::Tma, full_, slot(j));
          t.src = c.src;
          t.dst = c.dst;
          for (Expr* e : {&t.src.row, &t.src.col, &t.src.offset, &t.dst.row, &t.dst.col})
            *e = subst(*e);
          t.src.row = t.src.row + expr_const(r0);
          t.src.col = t.src.col + expr_const(c0);
          t.dst.row = t.dst.row + expr_const(r0);
          t.dst.col = t.dst.col + expr_const(c0);
          t.dst.version = slot(j);
          t.src_row_bound = subst(c.src_row_bound);
          t.src_col_bound = subst(c.src_col_bound);
          t.rows = std::min<int64_t>(kMaxTmaBox, c.rows - r0);
          t.cols = std::min<int64_t>(kMaxTmaBox, cols - c0);
          bytes += tma_bytes(p_, t);
          out.push_back(t);
        }
    }
    if (bytes > kMaxMbarrierCount)
      user_error(ErrorKind::Plan, "tma pipeline: a stage of loop #" + num(loop.id) + " is " + num(bytes) +
                                      " bytes; an mbarrier phase counts at most " + num(kMaxMbarrierCount));
    out[1].mbar_count = bytes;
    GroupOp arrive = mbar_op(GroupOpKind::MbarArrive, full_, slot(j));
    arrive.leader = true;
    out.push_back(arrive);
    return out;
  }

  GroupOp if_op(const Expr& lhs, CmpOp cmp, const Expr& rhs, std::vector<GroupOp> then) {
    GroupOp g = p_.new_op(GroupOpKind::If);
    g.cond.lhs = lhs;
    g.cond.rhs = rhs;
    g.cond.op = cmp;
    g.bodies = {std::move(then), {}};
    return g;
  }

  void convert(GroupOp& loop, Split split, const std::vector<Enclosing>& enclosing, std::vector<GroupOp>& out) {
    const int w = o_.window;
    const bool roles = o_.producers > 0;
    full_ = add_mbarrier("full", w);
    empty_ = add_mbarrier("empty", w);
    std::set<int> staged;
    for (const GroupOp& c : split.copies) {
      staged.insert(c.dst.buffer);
      p_.buffers[c.dst.buffer].versions = w;
    }
    // Stage of iteration k: base + k - lo, where base counts the stages of the
    // enclosing loops' earlier executions (or is the loop's own stage_base).
    const Expr lo = loop.lo, hi = loop.hi, n = hi - lo;
    Expr linear = expr_const(0);
    for (const Enclosing& e : enclosing) linear = linear * (e.hi - e.lo) + (expr_sym(e.iv) - e.lo);
    const Expr base = loop.stage_base ? loop.stage_base : linear * n;
    const Expr k = expr_sym(loop.iv);
    auto stage = [&](const Expr& iteration) { return base + (iteration - lo); };

    // One mma in flight: the body is mmas alone, each on its own accumulator.
    std::vector<GroupOp> consumers;
    bool mmas_only = true;
    std::set<int> accumulators;
    for (GroupOp& c : split.consumers) {
      if (c.kind == GroupOpKind::Fence) continue;
      mmas_only = mmas_only && c.kind == GroupOpKind::Mma && accumulators.insert(c.frag).second;
    }
    // (W >= 2: with one stage, the stage an mma still reads is the next one's slot.)
    const int lag = o_.async_consumers && mmas_only && w >= 2 ? 1 : 0;
    drop_fences_ = roles || !split.body_writes;
    for (GroupOp& c : split.consumers) {
      if (c.kind == GroupOpKind::Fence && drop_fences_) continue;
      if (lag) c.async = true;
      consumers.push_back(std::move(c));
    }
    read_version(consumers, staged, slot(stage(k)));

    std::vector<GroupOp> body;
    body.push_back(wait(full_, stage(k), 0));
    for (GroupOp& c : consumers) body.push_back(std::move(c));
    auto release = [&](const Expr& j) { return mbar_op(GroupOpKind::MbarArrive, empty_, slot(j)); };
    if (lag == 0) {
      body.push_back(release(stage(k)));
      if (!roles)
        body.push_back(if_op(k + expr_const(w), CmpOp::LT, hi,
                             produce(loop, split.copies, k + expr_const(w), stage(k), 1)));
    } else {
      GroupOp in_flight = p_.new_op(GroupOpKind::MmaWait);
      in_flight.pending = 1;
      body.push_back(in_flight);
      std::vector<GroupOp> previous = {release(stage(k) - expr_const(1))};
      if (!roles) {
        Expr next = k + expr_const(w - 1);
        previous.push_back(if_op(next, CmpOp::LT, hi,
                                 produce(loop, split.copies, next, stage(k) - expr_const(1), 1)));
      }
      body.push_back(if_op(k, CmpOp::GT, lo, std::move(previous)));
    }

    if (!roles) {
      GroupOp prologue = p_.new_op(GroupOpKind::For);
      prologue.iv = loop.iv + "_pro";
      prologue.lo = lo;
      prologue.hi = expr_min(hi, lo + expr_const(w));
      Expr s = expr_sym(prologue.iv);
      prologue.bodies = {produce(loop, split.copies, s, stage(s), 0)};
      out.push_back(std::move(prologue));
    } else {
      // The producers walk the same loop nest and produce every stage.
      GroupOp producer = p_.new_op(GroupOpKind::For);
      producer.iv = loop.iv;
      producer.lo = lo;
      producer.hi = hi;
      producer.bodies = {produce(loop, split.copies, k, stage(k), 0)};
      std::vector<GroupOp> nest = {std::move(producer)};
      for (auto e = enclosing.rbegin(); e != enclosing.rend(); ++e) {
        GroupOp f = p_.new_op(GroupOpKind::For);
        f.iv = e->iv;
        f.lo = e->lo;
        f.hi = e->hi;
        f.bodies = {std::move(nest)};
        nest = {std::move(f)};
      }
      producer_body = std::move(nest);
    }
    loop.bodies[0] = std::move(body);
    loop.pipelined = false;  // its iterations are ordered by the mbarriers now
    out.push_back(std::move(loop));
    if (lag) {
      GroupOp drain = p_.new_op(GroupOpKind::MmaWait);
      drain.pending = 0;
      out.push_back(drain);
      out.push_back(if_op(hi, CmpOp::GT, lo, {release(stage(hi) - expr_const(1))}));
    }
  }

  GroupProgram& p_;
  const TmaPipelineOptions& o_;
  int full_ = -1, empty_ = -1;
};

// Roles hold no fences: the consumer role's ops may share nothing through shared
// memory but the staged tiles (which the mbarriers order), and a global access may
// not follow a global write that it may overlap (a fence ordered them across
// workers) unless a ticket, where the role's workers meet, lies between. Distinct
// tensors never overlap (the launch checks its arguments); two windows of one
// tensor are apart when they differ by a constant, at least the earlier's extent,
// in one dimension and nowhere else (the halves of one tile row).
struct GlobalWrite {
  int buffer = -1;
  const GroupOp* op = nullptr;  // a FragStore writes its window, other ops the whole buffer
};

// e = base + c (c: a constant term at the top, 0 if none).
std::pair<Expr, int64_t> split_constant(const Expr& e) {
  int64_t c = 0;
  if (e && e->kind == ExprKind::Add && expr_is_const(e->rhs, &c)) return {e->lhs, c};
  if (e && expr_is_const(e, &c)) return {expr_const(0), c};
  return {e, 0};
}

// Whether [a, a + a_extent) and [b, b + b_extent) are provably apart.
bool ranges_apart(const Expr& a, int64_t a_extent, const Expr& b, int64_t b_extent) {
  auto [ab, ac] = split_constant(a);
  auto [bb, bc] = split_constant(b);
  return expr_equal(ab, bb) && (ac + a_extent <= bc || bc + b_extent <= ac);
}

bool same_expr(const Expr& a, const Expr& b) { return (!a && !b) || (a && b && expr_equal(a, b)); }

// `written`: a FragStore; `access`: a later op on its buffer. The windows' extents
// are their fragments'.
bool windows_apart(const GroupProgram& p, const GroupOp& written, const GroupOp& access) {
  const bool load = access.kind == GroupOpKind::FragLoad;
  if (written.kind != GroupOpKind::FragStore || (!load && access.kind != GroupOpKind::FragStore) ||
      access.transpose)
    return false;
  const BufferRef &w = written.dst, &x = load ? access.src : access.dst;
  const Buffer &wf = p.buffer(written.frag), &xf = p.buffer(access.frag);
  if (!same_expr(w.offset, x.offset) || !same_expr(w.row_stride, x.row_stride) ||
      !same_expr(w.col_stride, x.col_stride))
    return false;
  return (same_expr(w.row, x.row) && ranges_apart(w.col, wf.cols, x.col, xf.cols)) ||
         (same_expr(w.col, x.col) && ranges_apart(w.row, wf.rows, x.row, xf.rows));
}

void check_role_ops(const GroupProgram& p, const std::vector<GroupOp>& ops, std::vector<GlobalWrite>* written) {
  auto refuse = [](const GroupOp& op, const std::string& why) {
    user_error(ErrorKind::Plan, "producers: op #" + num(op.id) + " (" + group_op_name(op.kind) + ") " + why +
                                    "; a consumer role has no fences (plan producers=0)");
  };
  for (const GroupOp& op : ops) {
    if (op.kind == GroupOpKind::Ticket) {  // the role's workers meet there: earlier accesses are ordered
      written->clear();
      continue;
    }
    switch (op.kind) {
      case GroupOpKind::Copy: case GroupOpKind::Reduce: case GroupOpKind::Barrier: case GroupOpKind::Call:
      case GroupOpKind::AsyncCommit: case GroupOpKind::AsyncWait: case GroupOpKind::Roles:
        refuse(op, "cannot run inside a role");
      default: break;
    }
    for (const MemEffect& e : op_effects(p, op)) {
      if (e.space == Space::Shared && e.write && op.kind != GroupOpKind::Tma)
        refuse(op, "writes shared buffer " + p.buffer(e.buffer).name);
      if (e.space != Space::Global || op.kind == GroupOpKind::Tma) continue;
      for (const GlobalWrite& w : *written)
        if (w.buffer == e.buffer && !windows_apart(p, *w.op, op))
          refuse(op, "accesses global memory after a global write it may overlap (op #" + num(w.op->id) + ")");
    }
    for (const MemEffect& e : op_effects(p, op))
      if (e.space == Space::Global && e.write && op.kind != GroupOpKind::Tma)
        written->push_back({e.buffer, &op});
    if (op.kind == GroupOpKind::If) {
      std::vector<GlobalWrite> a = *written, b = *written;
      check_role_ops(p, op.bodies[0], &a);
      check_role_ops(p, op.bodies[1], &b);
      *written = a;
      written->insert(written->end(), b.begin(), b.end());
    } else if (op.kind == GroupOpKind::For) {
      check_role_ops(p, op.bodies[0], written);
      // The next iteration follows this one, unless iterations are independent
      // (pipelined: a pipeline nest, or the persistent loop over distinct tiles).
      if (!op.pipelined) check_role_ops(p, op.bodies[0], written);
    }
  }
}

bool uses_symbol(const Expr& e, const std::string& name) {
  bool used = false;
  if (e) expr_symbols(e, [&](const std::string& s) { used = used || s == name; });
  return used;
}

// Every op of `kind` in ops and their bodies.
void collect(std::vector<GroupOp>& ops, GroupOpKind kind, std::vector<GroupOp*>* out) {
  for (GroupOp& op : ops) {
    if (op.kind == kind) out->push_back(&op);
    for (auto& body : op.bodies) collect(body, kind, out);
  }
}

// Clusters (tma_pipeline.h): the producer role's boxes that do not depend on the
// cluster dimension become multicast parts, one per rank, and every release of a
// stage reaches every group.
void share_in_clusters(GroupProgram& p, GroupOp& roles, int empty, int cluster) {
  std::vector<GroupOp*> tmas, loops, releases;
  collect(roles.bodies[0], GroupOpKind::Tma, &tmas);
  collect(roles.bodies[0], GroupOpKind::For, &loops);
  collect(roles.bodies[1], GroupOpKind::MbarArrive, &releases);
  auto shared_along = [&](const GroupOp& t, const std::string& iv) {
    for (const Expr* e : {&t.src.row, &t.src.col, &t.src.offset, &t.src_row_bound, &t.src_col_bound})
      if (uses_symbol(*e, iv)) return false;
    return true;
  };
  int dim = -1;
  int64_t best = 0;
  for (size_t d = 0; d < p.grid.size(); ++d) {
    int64_t bytes = 0;
    for (const GroupOp* t : tmas)
      if (shared_along(*t, p.grid[d].iv)) bytes += tma_bytes(p, *t);
    if (bytes > best) best = bytes, dim = static_cast<int>(d);
  }
  if (dim < 0)
    user_error(ErrorKind::Plan, "cluster " + num(cluster) + ": no staged box is the same for the groups along any "
                                "grid dimension, so there is nothing to share");
  const std::string iv = p.grid[dim].iv;
  for (const GroupOp* loop : loops)
    if (uses_symbol(loop->lo, iv) || uses_symbol(loop->hi, iv))
      user_error(ErrorKind::Plan, "cluster " + num(cluster) + ": the stages of loop #" + num(loop->id) +
                                      " depend on " + iv + ", so the groups of a cluster would not run the same ones");
  const Expr rank = expr_mod(expr_sym(iv), expr_const(cluster));
  for (GroupOp* t : tmas) {
    if (!shared_along(*t, iv)) continue;
    // Into whole panels where they divide (a panel's lines stay whole), else across
    // the lines: a row-major buffer's lines are its rows, a panel's its k.
    const Buffer& d = p.buffer(t->dst.buffer);
    bool by_cols = false;
    switch (d.layout) {
      case Layout::ColPanels: by_cols = t->cols % (cluster * d.panel) == 0 || t->rows % cluster; break;
      case Layout::RowPanels: by_cols = t->rows % (cluster * d.panel) && t->cols % cluster == 0; break;
      case Layout::RowMajor: by_cols = t->rows % cluster; break;
    }
    if (by_cols ? t->cols % cluster : t->rows % cluster)
      user_error(ErrorKind::Plan, "cluster " + num(cluster) + ": tma #" + num(t->id) + "'s box " + num(t->rows) + "x" +
                                      num(t->cols) + " does not split into " + num(cluster) + " equal parts");
    int64_t& extent = by_cols ? t->cols : t->rows;
    extent /= cluster;
    Expr& src = by_cols ? t->src.col : t->src.row;
    Expr& dst = by_cols ? t->dst.col : t->dst.row;
    src = src + rank * expr_const(extent);
    dst = dst + rank * expr_const(extent);
    t->cluster_wide = true;
  }
  for (GroupOp* r : releases)
    if (r->mbar == empty) r->cluster_wide = true;
  LoopDim& g = p.grid[dim];
  g.extent = ceil_div(g.extent, expr_const(cluster)) * expr_const(cluster);
  p.cluster = cluster;
  p.cluster_dim = dim;
}

void drop_fences(std::vector<GroupOp>& ops) {
  std::vector<GroupOp> out;
  for (GroupOp& op : ops) {
    if (op.kind == GroupOpKind::Fence) continue;
    for (auto& body : op.bodies) drop_fences(body);
    out.push_back(std::move(op));
  }
  ops = std::move(out);
}

}  // namespace

TmaPipelineStats tma_pipeline(GroupProgram& program, const TmaPipelineOptions& options) {
  TESSEL_ASSERT(options.window >= 1 && options.producers >= 0 && options.cluster >= 1, "tma pipeline: bad options");
  if (options.cluster > 1 && options.producers == 0)
    user_error(ErrorKind::Plan, "cluster " + num(options.cluster) + ": the groups of a cluster share copies through "
                                "a producer role (plan producers >= 1)");
  TmaPipelineStats stats;
  const int computing = program.workers;
  const int first_mbar = static_cast<int>(program.mbarriers.size());
  TmaPipeliner pipeliner(program, options);
  std::vector<Enclosing> enclosing;
  pipeliner.run(program.body, enclosing, false, stats);
  if (stats.loops_converted == 0) {
    if (options.producers > 0)
      user_error(ErrorKind::Plan, "producers " + num(options.producers) + ": no pipeline loop could take tma copies" +
                                      (stats.skipped_reason.empty() ? "" : " (" + stats.skipped_reason + ")"));
    return stats;
  }
  // Each mbarrier initialized once, before every other use: full counts the
  // leader's arrival (and the bytes), empty every computing worker's release.
  std::vector<GroupOp> head;
  for (int m = first_mbar; m < static_cast<int>(program.mbarriers.size()); ++m) {
    GroupOp init = program.new_op(GroupOpKind::MbarInit);
    init.mbar = m;
    init.mbar_count = (m - first_mbar) % 2 == 0 ? 1 : int64_t{computing} * options.cluster;
    head.push_back(init);
  }
  head.push_back(program.new_op(GroupOpKind::Fence));
  if (options.cluster > 1) head.push_back(program.new_op(GroupOpKind::ClusterSync));
  if (options.producers > 0) {
    std::vector<GroupOp> consumer = std::move(program.body);
    drop_fences(consumer);
    std::vector<GlobalWrite> written;
    check_role_ops(program, consumer, &written);
    program.workers = computing + options.producers;
    GroupOp roles = program.new_op(GroupOpKind::Roles);
    WorkerRole producers{computing, options.producers, 0}, consumers{0, computing, 0};
    if (program.lanes == 128) {  // warpgroups: setmaxnreg moves registers to the consumers
      // The consumers share what the producers give back of the launch's share, not
      // the whole register file: asking for more waits forever (4 consumer
      // warpgroups asking for 112 of a 96-register launch hung on the H200).
      const int share = cuda_launch_register_share(program.workers * 128);
      producers.regs = std::min(40, share);
      const int64_t freed = int64_t{options.producers} * (share - producers.regs);
      consumers.regs = static_cast<int>(std::clamp<int64_t>((share + freed / computing) / 8 * 8, 24, 256));
    }
    roles.roles = {producers, consumers};
    roles.bodies = {std::move(pipeliner.producer_body), std::move(consumer)};
    program.body = {};
    if (options.cluster > 1) share_in_clusters(program, roles, pipeliner.empty_mbarrier(), options.cluster);
    head.push_back(std::move(roles));
    if (options.cluster > 1) head.push_back(program.new_op(GroupOpKind::ClusterSync));
  } else {
    for (GroupOp& op : program.body) head.push_back(std::move(op));
  }
  program.body = std::move(head);
  return stats;
}

}  // namespace tessel
