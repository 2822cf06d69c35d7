#include "ir/group_ir.h"

#include "tessel/error.h"

namespace tessel {

const char* space_name(Space s) {
  switch (s) {
    case Space::Global: return "global";
    case Space::Shared: return "shared";
    case Space::Private: return "private";
  }
  return "?";
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::RowMajor: return "row";
    case Layout::ColPanels: return "colpanels";
    case Layout::RowPanels: return "rowpanels";
  }
  return "?";
}

const char* group_op_name(GroupOpKind k) {
  switch (k) {
    case GroupOpKind::Copy: return "copy";
    case GroupOpKind::AsyncCommit: return "async.commit";
    case GroupOpKind::AsyncWait: return "async.wait";
    case GroupOpKind::FragFill: return "frag.fill";
    case GroupOpKind::FragLoad: return "frag.load";
    case GroupOpKind::FragStore: return "frag.store";
    case GroupOpKind::Mma: return "mma";
    case GroupOpKind::MmaWait: return "mma.wait";
    case GroupOpKind::Elementwise: return "ew";
    case GroupOpKind::Reduce: return "reduce";
    case GroupOpKind::Fence: return "fence";
    case GroupOpKind::Barrier: return "barrier";
    case GroupOpKind::Ticket: return "ticket";
    case GroupOpKind::Call: return "call";
    case GroupOpKind::For: return "for";
    case GroupOpKind::If: return "if";
    case GroupOpKind::MbarInit: return "mbar.init";
    case GroupOpKind::MbarArrive: return "mbar.arrive";
    case GroupOpKind::MbarExpectTx: return "mbar.expect_tx";
    case GroupOpKind::MbarWait: return "mbar.wait";
    case GroupOpKind::Tma: return "tma";
    case GroupOpKind::Roles: return "roles";
    case GroupOpKind::ClusterSync: return "cluster.sync";
  }
  return "?";
}

const char* ew_op_name(EwOp op) {
  switch (op) {
    case EwOp::Add: return "add";
    case EwOp::Sub: return "sub";
    case EwOp::Mul: return "mul";
    case EwOp::Div: return "div";
    case EwOp::Max: return "max";
    case EwOp::Min: return "min";
    case EwOp::Exp: return "exp";
    case EwOp::Exp2: return "exp2";
    case EwOp::Log: return "log";
    case EwOp::Neg: return "neg";
    case EwOp::Abs: return "abs";
    case EwOp::Sqrt: return "sqrt";
    case EwOp::Rsqrt: return "rsqrt";
    case EwOp::Recip: return "recip";
    case EwOp::Tanh: return "tanh";
    case EwOp::Cmp: return "cmp";
    case EwOp::Select: return "select";
    case EwOp::Cast: return "cast";
    case EwOp::Index: return "index";
    case EwOp::Copy: return "copy";
  }
  return "?";
}

int ew_arity(EwOp op) {
  switch (op) {
    case EwOp::Add:
    case EwOp::Sub:
    case EwOp::Mul:
    case EwOp::Div:
    case EwOp::Max:
    case EwOp::Min:
    case EwOp::Cmp: return 2;
    case EwOp::Select: return 3;
    case EwOp::Index: return 0;
    default: return 1;
  }
}

const char* reduce_mode_name(ReduceMode m) {
  switch (m) {
    case ReduceMode::Local: return "local";
    case ReduceMode::Partial: return "partial";
    case ReduceMode::Combine: return "combine";
  }
  return "?";
}

const Buffer& GroupProgram::buffer(int id) const {
  TESSEL_ASSERT(id >= 0 && id < static_cast<int>(buffers.size()), "buffer id out of range");
  return buffers[id];
}

int GroupProgram::find_buffer(const std::string& name) const {
  for (const Buffer& b : buffers)
    if (b.name == name) return b.id;
  return -1;
}

int GroupProgram::find_mbarrier(const std::string& name) const {
  for (const MBarrier& b : mbarriers)
    if (b.name == name) return b.id;
  return -1;
}

bool is_mbarrier_op(GroupOpKind k) {
  return k == GroupOpKind::MbarInit || k == GroupOpKind::MbarArrive || k == GroupOpKind::MbarExpectTx ||
         k == GroupOpKind::MbarWait || k == GroupOpKind::Tma;
}

int64_t tma_bytes(const GroupProgram& p, const GroupOp& tma) {
  return tma.rows * tma.cols * dtype_bytes(p.buffer(tma.dst.buffer).dtype);
}

std::pair<int, int> worker_position(const GroupProgram& p, int worker) {
  TESSEL_ASSERT(worker >= 0 && worker < p.workers, "worker out of range");
  int wr = worker / p.worker_cols, wc = worker % p.worker_cols;
  if (wr >= p.worker_rows) return {-1, -1};  // surplus workers
  return {wr, wc};
}

FragPart frag_part(const GroupProgram& p, const Buffer& frag, int worker) {
  TESSEL_ASSERT(frag.space == Space::Private, "frag_part of a non-private buffer");
  auto [wr, wc] = worker_position(p, worker);
  if (wr < 0) return {0, 0, 0, 0, false};  // surplus workers hold nothing
  // An extent of 1 is replicated along its grid axis: the first replica owns it.
  bool rows_replicated = frag.rows == 1, cols_replicated = frag.cols == 1;
  int64_t part_rows = rows_replicated ? 1 : frag.rows / p.worker_rows;
  int64_t part_cols = cols_replicated ? 1 : frag.cols / p.worker_cols;
  FragPart part{rows_replicated ? 0 : wr * part_rows, cols_replicated ? 0 : wc * part_cols,
                part_rows, part_cols, true};
  part.owner = (!rows_replicated || wr == 0) && (!cols_replicated || wc == 0);
  return part;
}

int64_t layout_offset(const Buffer& b, int64_t r, int64_t c) {
  switch (b.layout) {
    case Layout::RowMajor: return r * b.cols + c;
    case Layout::ColPanels: return ((c / b.panel) * b.rows + r) * b.panel + c % b.panel;
    case Layout::RowPanels: return ((r / b.panel) * b.cols + c) * b.panel + r % b.panel;
  }
  return 0;
}

namespace {
void substitute_in(Expr& e, const std::function<Expr(const std::string&)>& lookup) {
  if (e) e = expr_substitute(e, lookup);
}
}  // namespace

void substitute_symbols(std::vector<GroupOp>& ops, const std::function<Expr(const std::string&)>& lookup) {
  for (GroupOp& op : ops) {
    for (BufferRef* r : {&op.src, &op.dst, &op.a, &op.b})
      for (Expr* e : {&r->version, &r->row, &r->col, &r->offset, &r->row_stride, &r->col_stride})
        substitute_in(*e, lookup);
    for (Expr* e : {&op.src_row_bound, &op.src_col_bound, &op.dst_row_bound, &op.dst_col_bound, &op.m_valid,
                    &op.n_valid, &op.k_valid, &op.mbar_slot, &op.parity, &op.lo, &op.hi, &op.stage_base, &op.cond.lhs,
                    &op.cond.rhs})
      substitute_in(*e, lookup);
    for (EwOperand& o : op.operands) substitute_in(o.index, lookup);
    for (auto& body : op.bodies) substitute_symbols(body, lookup);
  }
}

}  // namespace tessel
