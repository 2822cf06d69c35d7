// A GEMM GroupProgram built by hand, in the shape the lowering produces
// (C = alpha * A * B + beta * C, row-major, fp32), so the cpu target can be
// developed and measured on its own. Shared by tests/cpu and bench/.
#pragma once
#include <cstdint>

#include "ir/group_ir.h"

namespace tessel::testing {

struct HandGemm {
  int64_t bm = 96, bn = 512, bk = 256;
  int64_t atom_m = 12, atom_n = 32;
  int workers = 1, worker_rows = 1, worker_cols = 1;
  int batch = 16;
};

inline GroupProgram hand_gemm_program(const HandGemm& g) {
  GroupProgram p;
  p.name = "gemm";
  p.size_params = {"M", "N", "K", "lda", "ldb", "ldc"};
  auto tensor = [](const char* name, const char* rows, const char* cols, const char* ld, Access access) {
    return TensorParam{name, DType::F32, {expr_sym(rows), expr_sym(cols)}, {expr_sym(ld), expr_const(1)}, access};
  };
  p.tensors = {tensor("A", "M", "K", "lda", Access::In), tensor("B", "K", "N", "ldb", Access::In),
               tensor("C", "M", "N", "ldc", Access::InOut)};
  p.scalars = {{"alpha", DType::F32}, {"beta", DType::F32}};
  Expr M = expr_sym("M"), N = expr_sym("N"), K = expr_sym("K");
  Expr i = expr_sym("i"), j = expr_sym("j"), k = expr_sym("k");
  p.grid = {{"i", ceil_div(M, expr_const(g.bm))}, {"j", ceil_div(N, expr_const(g.bn))}};
  p.workers = g.workers;
  p.worker_rows = g.worker_rows;
  p.worker_cols = g.worker_cols;
  p.atom_m = g.atom_m;
  p.atom_n = g.atom_n;

  auto buffer = [&](const char* name, Space space, int64_t rows, int64_t cols, int tensor = -1,
                    Layout layout = Layout::RowMajor, int64_t panel = 1) {
    Buffer b;
    b.id = static_cast<int>(p.buffers.size());
    b.name = name;
    b.space = space;
    b.rows = rows;
    b.cols = cols;
    b.tensor = tensor;
    b.layout = layout;
    b.panel = panel;
    p.buffers.push_back(b);
    return b.id;
  };
  int A = buffer("A", Space::Global, 0, 0, 0), B = buffer("B", Space::Global, 0, 0, 1),
      C = buffer("C", Space::Global, 0, 0, 2);
  int As = buffer("As", Space::Shared, g.bm, g.bk);
  int Bs = buffer("Bs", Space::Shared, g.bk, g.bn, -1, Layout::ColPanels, g.atom_n);
  int acc = buffer("acc", Space::Private, g.bm, g.bn);
  int acc2 = buffer("acc2", Space::Private, g.bm, g.bn);
  int cfrag = buffer("cfrag", Space::Private, g.bm, g.bn);
  int t = buffer("t", Space::Private, g.bm, g.bn);

  auto ref = [](int buf, Expr row, Expr col) { return BufferRef{buf, nullptr, row, col}; };
  // A window of a global buffer: row-major with leading dimension `ld`.
  auto gref = [](int buf, Expr row, Expr col, const char* ld) {
    return BufferRef{buf, nullptr, row, col, nullptr, expr_sym(ld), expr_const(1)};
  };
  auto zero = expr_const(0);
  auto op = [&](GroupOpKind kind) {
    GroupOp o;
    o.kind = kind;
    o.id = p.new_op_id();
    return o;
  };
  auto fence = [&] { return op(GroupOpKind::Fence); };
  auto copy = [&](BufferRef src, BufferRef dst, int64_t rows, int64_t cols, Expr rb, Expr cb) {
    GroupOp o = op(GroupOpKind::Copy);
    o.src = src;
    o.dst = dst;
    o.rows = rows;
    o.cols = cols;
    o.src_row_bound = rb;
    o.src_col_bound = cb;
    o.batch = g.batch;
    return o;
  };
  auto ew = [&](int dst, EwOp e, std::vector<EwOperand> operands) {
    GroupOp o = op(GroupOpKind::Elementwise);
    o.frag = dst;
    o.ew = e;
    o.operands = std::move(operands);
    return o;
  };
  auto frag_operand = [](int f) { EwOperand o; o.kind = EwOperand::Kind::Frag; o.frag = f; return o; };
  auto scalar_operand = [](const char* s) { EwOperand o; o.kind = EwOperand::Kind::Scalar; o.scalar = s; return o; };
  auto store = [&](int f) {
    GroupOp o = op(GroupOpKind::FragStore);
    o.frag = f;
    o.dst = gref(C, i * g.bm, j * g.bn, "ldc");
    o.dst_row_bound = M;
    o.dst_col_bound = N;
    return o;
  };

  GroupOp fill = op(GroupOpKind::FragFill);
  fill.frag = acc;
  fill.constant = 0;
  p.body.push_back(fill);

  GroupOp loop = op(GroupOpKind::For);
  loop.iv = "k";
  loop.lo = zero;
  loop.hi = ceil_div(K, expr_const(g.bk));
  std::vector<GroupOp> body;
  body.push_back(copy(gref(A, i * g.bm, k * g.bk, "lda"), ref(As, zero, zero), g.bm, g.bk, M, K));
  body.push_back(fence());
  body.push_back(copy(gref(B, k * g.bk, j * g.bn, "ldb"), ref(Bs, zero, zero), g.bk, g.bn, K, N));
  body.push_back(fence());
  GroupOp mma = op(GroupOpKind::Mma);
  mma.frag = acc;
  mma.a = ref(As, zero, zero);
  mma.b = ref(Bs, zero, zero);
  mma.m = g.bm;
  mma.n = g.bn;
  mma.k = g.bk;
  body.push_back(mma);
  body.push_back(fence());
  loop.bodies = {body};
  p.body.push_back(loop);

  GroupOp branch = op(GroupOpKind::If);
  branch.cond.on_scalar = true;
  branch.cond.scalar = "beta";
  branch.cond.value = 0;
  branch.cond.op = CmpOp::EQ;
  std::vector<GroupOp> then_body, else_body;
  then_body.push_back(ew(acc2, EwOp::Mul, {frag_operand(acc), scalar_operand("alpha")}));
  then_body.push_back(store(acc2));
  GroupOp load = op(GroupOpKind::FragLoad);
  load.frag = cfrag;
  load.src = gref(C, i * g.bm, j * g.bn, "ldc");
  load.src_row_bound = M;
  load.src_col_bound = N;
  else_body.push_back(load);
  else_body.push_back(ew(t, EwOp::Mul, {frag_operand(cfrag), scalar_operand("beta")}));
  else_body.push_back(ew(acc, EwOp::Mul, {frag_operand(acc), scalar_operand("alpha")}));
  else_body.push_back(ew(acc, EwOp::Add, {frag_operand(acc), frag_operand(t)}));
  else_body.push_back(store(acc));
  branch.bodies = {then_body, else_body};
  p.body.push_back(branch);
  return p;
}

}  // namespace tessel::testing
