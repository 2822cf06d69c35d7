// Small helpers that build GroupIR by hand for the pass tests, and a compact
// printer of op sequences ("copy copy fence mma fence") to compare against.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/group_ir.h"

namespace tessel::test {

inline Expr c(int64_t v) { return expr_const(v); }
inline Expr s(const std::string& name) { return expr_sym(name); }

struct Builder {
  GroupProgram p;

  explicit Builder(int workers = 4, int worker_rows = 2, int worker_cols = 2) {
    p.name = "test";
    p.workers = workers;
    p.worker_rows = worker_rows;
    p.worker_cols = worker_cols;
  }

  int buffer(Buffer b) {
    b.id = static_cast<int>(p.buffers.size());
    p.buffers.push_back(b);
    return b.id;
  }
  // A global tensor named `name`, rows x cols with ld = cols (size parameters
  // `<name>_rows`, `<name>_cols`).
  int tensor(const std::string& name, Access access = Access::InOut) {
    std::string rows = name + "_rows", cols = name + "_cols";
    TensorParam t{name, DType::F32, {s(rows), s(cols)}, {s(cols), c(1)}, access};
    p.tensors.push_back(t);
    p.size_params.push_back(rows);
    p.size_params.push_back(cols);
    Buffer b;
    b.name = name;
    b.space = Space::Global;
    b.tensor = static_cast<int>(p.tensors.size()) - 1;
    return buffer(b);
  }
  int shared(const std::string& name, int64_t rows, int64_t cols, int versions = 1) {
    Buffer b;
    b.name = name;
    b.space = Space::Shared;
    b.rows = rows;
    b.cols = cols;
    b.versions = versions;
    return buffer(b);
  }
  int frag(const std::string& name, int64_t rows, int64_t cols) {
    Buffer b;
    b.name = name;
    b.space = Space::Private;
    b.rows = rows;
    b.cols = cols;
    return buffer(b);
  }

  GroupOp op(GroupOpKind kind) {
    GroupOp o;
    o.kind = kind;
    o.id = p.new_op_id();
    return o;
  }
  GroupOp fence() { return op(GroupOpKind::Fence); }
  GroupOp barrier() { return op(GroupOpKind::Barrier); }
  GroupOp call(const std::string& callee) {
    GroupOp o = op(GroupOpKind::Call);
    o.callee = callee;
    return o;
  }
  GroupOp copy(BufferRef src, BufferRef dst, int64_t rows, int64_t cols, int batch = 1) {
    GroupOp o = op(GroupOpKind::Copy);
    o.src = src;
    o.dst = dst;
    o.rows = rows;
    o.cols = cols;
    o.batch = batch;
    return o;
  }
  GroupOp fill(int frag, double value) {
    GroupOp o = op(GroupOpKind::FragFill);
    o.frag = frag;
    o.constant = value;
    return o;
  }
  GroupOp frag_load(int frag, BufferRef src) {
    GroupOp o = op(GroupOpKind::FragLoad);
    o.frag = frag;
    o.src = src;
    o.rows = p.buffer(frag).rows;
    o.cols = p.buffer(frag).cols;
    return o;
  }
  GroupOp frag_store(int frag, BufferRef dst) {
    GroupOp o = op(GroupOpKind::FragStore);
    o.frag = frag;
    o.dst = dst;
    o.rows = p.buffer(frag).rows;
    o.cols = p.buffer(frag).cols;
    return o;
  }
  GroupOp mma(int acc, BufferRef a, BufferRef b, int64_t m, int64_t n, int64_t k) {
    GroupOp o = op(GroupOpKind::Mma);
    o.frag = acc;
    o.a = a;
    o.b = b;
    o.m = m;
    o.n = n;
    o.k = k;
    return o;
  }
  GroupOp add(int dst, int x, int y) {
    GroupOp o = op(GroupOpKind::Elementwise);
    o.frag = dst;
    o.ew = EwOp::Add;
    EwOperand a, b;
    a.kind = b.kind = EwOperand::Kind::Frag;
    a.frag = x;
    b.frag = y;
    o.operands = {a, b};
    return o;
  }
  GroupOp loop(const std::string& iv, Expr lo, Expr hi, std::vector<GroupOp> body) {
    GroupOp o = op(GroupOpKind::For);
    o.iv = iv;
    o.lo = lo;
    o.hi = hi;
    o.bodies = {std::move(body)};
    return o;
  }
  GroupOp branch(Expr lhs, CmpOp cmp, Expr rhs, std::vector<GroupOp> then_body,
                 std::vector<GroupOp> else_body) {
    GroupOp o = op(GroupOpKind::If);
    o.cond.lhs = lhs;
    o.cond.rhs = rhs;
    o.cond.op = cmp;
    o.bodies = {std::move(then_body), std::move(else_body)};
    return o;
  }
};

inline BufferRef ref(int buffer, Expr row, Expr col, Expr version = nullptr) {
  return BufferRef{buffer, version, row, col};
}
inline BufferRef ref(int buffer, int64_t row = 0, int64_t col = 0, Expr version = nullptr) {
  return ref(buffer, c(row), c(col), version);
}

// Gives every global window that has none the strides of its (2-D) tensor, as the
// lowering does; the builders above leave them out. Returns the program.
inline GroupProgram& with_global_strides(GroupProgram& p) {
  auto fill = [&](BufferRef& r) {
    if (r.buffer < 0 || p.buffers[r.buffer].space != Space::Global || r.row_stride) return;
    const TensorParam& t = p.tensors[p.buffers[r.buffer].tensor];
    r.row_stride = t.strides.at(0);
    r.col_stride = t.strides.at(1);
  };
  std::function<void(std::vector<GroupOp>&)> walk = [&](std::vector<GroupOp>& ops) {
    for (GroupOp& o : ops) {
      for (BufferRef* r : {&o.src, &o.dst, &o.a, &o.b}) fill(*r);
      for (auto& body : o.bodies) walk(body);
    }
  };
  walk(p.body);
  return p;
}

// A 2-D row-major tensor parameter: rows x cols with leading dimension ld.
inline TensorParam matrix(const std::string& name, const std::string& rows, const std::string& cols,
                          const std::string& ld, Access access) {
  return TensorParam{name, DType::F32, {s(rows), s(cols)}, {s(ld), c(1)}, access};
}

// "copy copy fence for { mma fence } fence"
inline std::string shape(const std::vector<GroupOp>& ops) {
  std::string out;
  for (const GroupOp& o : ops) {
    if (!out.empty()) out += " ";
    out += group_op_name(o.kind);
    for (const auto& body : o.bodies) out += " { " + shape(body) + " }";
  }
  return out;
}

}  // namespace tessel::test
