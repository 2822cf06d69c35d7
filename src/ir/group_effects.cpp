#include "ir/group_effects.h"

namespace tessel {
namespace {

// Splits a version of the form (X + c) % W (c may be absent or negative) into
// its parts. Only this form and constants are ever told apart.
bool split_rotating(const Expr& v, Expr* x, int64_t* c, int64_t* w) {
  if (!v || v->kind != ExprKind::Mod || !expr_is_const(v->rhs, w) || *w <= 0) return false;
  const Expr& lhs = v->lhs;
  if (lhs->kind == ExprKind::Add && expr_is_const(lhs->rhs, c)) {
    *x = lhs->lhs;
  } else if (lhs->kind == ExprKind::Add && expr_is_const(lhs->lhs, c)) {
    *x = lhs->rhs;
  } else if (lhs->kind == ExprKind::Sub && expr_is_const(lhs->rhs, c)) {
    *c = -*c;
    *x = lhs->lhs;
  } else {
    *c = 0;
    *x = lhs;
  }
  return true;
}

// Whether `v` provably names a slot in [0, versions): then comparing two such
// versions is comparing slots. Anything else is reported as "all versions", so a
// version that the simulator would wrap or reject can never be told apart.
bool in_range(const Expr& v, int versions) {
  int64_t c = 0, w = 0;
  Expr x;
  if (expr_is_const(v, &c)) return c >= 0 && c < versions;
  return split_rotating(v, &x, &c, &w) && w <= versions;
}

void add_effect(const GroupProgram& program, const BufferRef& ref, bool write,
                std::vector<MemEffect>* out) {
  const Buffer& b = program.buffer(ref.buffer);
  if (b.space == Space::Private) return;  // per worker: never shared
  MemEffect e;
  e.buffer = b.id;
  e.space = b.space;
  e.write = write;
  if (b.space == Space::Shared && b.versions > 1) {
    Expr v = ref.version ? ref.version : expr_const(0);  // null ref version = slot 0
    if (in_range(v, b.versions)) e.version = v;
  }
  out->push_back(e);
}

// Two versions touch different slots only when both are distinct constants, or
// both rotate the same X by the same W with offsets that differ modulo W. Ops
// compared by the planner sit in one region, so X has one value for both.
bool versions_may_equal(const Expr& a, const Expr& b) {
  if (!a || !b) return true;
  int64_t ca = 0, cb = 0;
  if (expr_is_const(a, &ca) && expr_is_const(b, &cb)) return ca == cb;
  Expr xa, xb;
  int64_t wa = 0, wb = 0;
  if (split_rotating(a, &xa, &ca, &wa) && split_rotating(b, &xb, &cb, &wb) && wa == wb &&
      expr_equal(xa, xb))
    return ((ca - cb) % wa + wa) % wa == 0;
  return true;
}

}  // namespace

std::vector<MemEffect> op_effects(const GroupProgram& program, const GroupOp& op) {
  std::vector<MemEffect> out;
  switch (op.kind) {
    case GroupOpKind::Copy:
    case GroupOpKind::Tma:  // lands later, on its mbarrier: the sync is the mbar.wait
      add_effect(program, op.src, false, &out);
      add_effect(program, op.dst, true, &out);
      break;
    case GroupOpKind::FragLoad: add_effect(program, op.src, false, &out); break;
    case GroupOpKind::FragStore: add_effect(program, op.dst, true, &out); break;
    // Partial writes its workers' elements of the scratch window; Combine reads them.
    // At buffer-version granularity that is one write and one read of the scratch.
    case GroupOpKind::Reduce:
      if (op.reduce_mode == ReduceMode::Partial) add_effect(program, op.dst, true, &out);
      if (op.reduce_mode == ReduceMode::Combine) add_effect(program, op.src, false, &out);
      break;
    case GroupOpKind::Mma:
      add_effect(program, op.a, false, &out);
      add_effect(program, op.b, false, &out);
      break;
    default: break;  // no shared or global memory of its own (bodies not counted)
  }
  return out;
}

bool effects_conflict(const MemEffect& a, const MemEffect& b) {
  if (!a.write && !b.write) return false;
  if (a.space != b.space) return false;        // shared allocations are fresh
  if (a.space == Space::Global) return true;   // one alias class for all tensors
  return a.buffer == b.buffer && versions_may_equal(a.version, b.version);
}

}  // namespace tessel
