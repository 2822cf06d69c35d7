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
    case GroupOpKind::Fence: return "fence";
    case GroupOpKind::Barrier: return "barrier";
    case GroupOpKind::Call: return "call";
    case GroupOpKind::For: return "for";
    case GroupOpKind::If: return "if";
  }
  return "?";
}

const char* ew_op_name(EwOp op) {
  switch (op) {
    case EwOp::Add: return "add";
    case EwOp::Sub: return "sub";
    case EwOp::Mul: return "mul";
    case EwOp::Max: return "max";
    case EwOp::Exp: return "exp";
    case EwOp::Neg: return "neg";
    case EwOp::Copy: return "copy";
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

FragPart frag_part(const GroupProgram& p, const Buffer& frag, int worker) {
  TESSEL_ASSERT(frag.space == Space::Private, "frag_part of a non-private buffer");
  TESSEL_ASSERT(worker >= 0 && worker < p.workers, "worker out of range");
  int64_t part_rows = frag.rows / p.worker_rows, part_cols = frag.cols / p.worker_cols;
  int wr = worker / p.worker_cols, wc = worker % p.worker_cols;
  if (wr >= p.worker_rows) return {0, 0, 0, 0};  // surplus workers own nothing
  return {wr * part_rows, wc * part_cols, part_rows, part_cols};
}

int64_t layout_offset(const Buffer& b, int64_t r, int64_t c) {
  switch (b.layout) {
    case Layout::RowMajor: return r * b.cols + c;
    case Layout::ColPanels: return ((c / b.panel) * b.rows + r) * b.panel + c % b.panel;
    case Layout::RowPanels: return ((r / b.panel) * b.cols + c) * b.panel + r % b.panel;
  }
  return 0;
}

}  // namespace tessel
