#include "ir_examples.h"

#include <gtest/gtest.h>

#include <bit>
#include <fstream>
#include <sstream>

// Ops are built with designated initializers that leave the other fields default.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tessel::test {
namespace {

Expr sym(const char* name) { return expr_sym(name); }

TileType tile(Expr rows, Expr cols) { return TileType{DType::F32, {rows, cols}}; }

SourceLoc at(uint32_t line) { return SourceLoc{"gemm.cpp", line}; }

void expect_same_expr(const Expr& a, const Expr& b) {
  EXPECT_TRUE(expr_equal(a, b)) << expr_to_string(a) << " vs " << expr_to_string(b);
}

void expect_same_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) expect_same_expr(a[i], b[i]);
}

void expect_same_cond(const Cond& a, const Cond& b) {
  EXPECT_EQ(a.on_scalar, b.on_scalar);
  EXPECT_EQ(a.scalar, b.scalar);
  EXPECT_EQ(std::bit_cast<uint64_t>(a.value), std::bit_cast<uint64_t>(b.value));
  expect_same_expr(a.lhs, b.lhs);
  expect_same_expr(a.rhs, b.rhs);
  EXPECT_EQ(a.op, b.op);
}

void expect_same_loops(const std::vector<LoopDim>& a, const std::vector<LoopDim>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].iv, b[i].iv);
    expect_same_expr(a[i].extent, b[i].extent);
  }
}

void expect_same_params(const std::vector<TensorParam>& a, const std::vector<TensorParam>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].dtype, b[i].dtype);
    expect_same_exprs(a[i].shape, b[i].shape);
    expect_same_exprs(a[i].strides, b[i].strides);
    EXPECT_EQ(a[i].access, b[i].access);
  }
}

void expect_same_scalars(const std::vector<ScalarParam>& a, const std::vector<ScalarParam>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].dtype, b[i].dtype);
  }
}

void expect_same_region(const Region& a, const Region& b) {
  EXPECT_EQ(a.args, b.args);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const TileOp &x = a.ops[i], &y = b.ops[i];
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.operands, y.operands);
    EXPECT_EQ(x.results, y.results);
    EXPECT_EQ(x.param, y.param);
    EXPECT_EQ(std::bit_cast<uint64_t>(x.constant), std::bit_cast<uint64_t>(y.constant));
    expect_same_expr(x.index_value, y.index_value);
    expect_same_exprs(x.coords, y.coords);
    EXPECT_EQ(x.dims, y.dims);
    EXPECT_EQ(x.axis, y.axis);
    EXPECT_EQ(x.reduce, y.reduce);
    EXPECT_EQ(x.cmp, y.cmp);
    expect_same_loops(x.loops, y.loops);
    expect_same_cond(x.cond, y.cond);
    EXPECT_EQ(x.loc.file, y.loc.file);
    EXPECT_EQ(x.loc.line, y.loc.line);
    ASSERT_EQ(x.regions.size(), y.regions.size());
    for (size_t r = 0; r < x.regions.size(); ++r) expect_same_region(x.regions[r], y.regions[r]);
  }
}

BufferRef ref(int buffer, Expr row, Expr col, Expr version = nullptr) {
  return BufferRef{buffer, version, row, col};
}

void expect_same_ref(const BufferRef& a, const BufferRef& b) {
  EXPECT_EQ(a.buffer, b.buffer);
  expect_same_expr(a.version, b.version);
  expect_same_expr(a.row, b.row);
  expect_same_expr(a.col, b.col);
}

void expect_same_ops(const std::vector<GroupOp>& a, const std::vector<GroupOp>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const GroupOp &x = a[i], &y = b[i];
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.id, y.id);
    expect_same_ref(x.src, y.src);
    expect_same_ref(x.dst, y.dst);
    expect_same_expr(x.src_row_bound, y.src_row_bound);
    expect_same_expr(x.src_col_bound, y.src_col_bound);
    expect_same_expr(x.dst_row_bound, y.dst_row_bound);
    expect_same_expr(x.dst_col_bound, y.dst_col_bound);
    EXPECT_EQ(x.rows, y.rows);
    EXPECT_EQ(x.cols, y.cols);
    EXPECT_EQ(x.batch, y.batch);
    EXPECT_EQ(x.async, y.async);
    EXPECT_EQ(x.pending, y.pending);
    EXPECT_EQ(x.frag, y.frag);
    EXPECT_EQ(std::bit_cast<uint64_t>(x.constant), std::bit_cast<uint64_t>(y.constant));
    expect_same_ref(x.a, y.a);
    expect_same_ref(x.b, y.b);
    EXPECT_EQ(x.m, y.m);
    EXPECT_EQ(x.n, y.n);
    EXPECT_EQ(x.k, y.k);
    EXPECT_EQ(x.ew, y.ew);
    ASSERT_EQ(x.operands.size(), y.operands.size());
    for (size_t j = 0; j < x.operands.size(); ++j) {
      EXPECT_EQ(x.operands[j].kind, y.operands[j].kind);
      EXPECT_EQ(x.operands[j].frag, y.operands[j].frag);
      EXPECT_EQ(x.operands[j].scalar, y.operands[j].scalar);
      EXPECT_EQ(std::bit_cast<uint64_t>(x.operands[j].value),
                std::bit_cast<uint64_t>(y.operands[j].value));
    }
    EXPECT_EQ(x.callee, y.callee);
    EXPECT_EQ(x.iv, y.iv);
    EXPECT_EQ(x.pipelined, y.pipelined);
    expect_same_expr(x.lo, y.lo);
    expect_same_expr(x.hi, y.hi);
    expect_same_cond(x.cond, y.cond);
    ASSERT_EQ(x.bodies.size(), y.bodies.size());
    for (size_t r = 0; r < x.bodies.size(); ++r) expect_same_ops(x.bodies[r], y.bodies[r]);
  }
}

}  // namespace

TileKernel gemm_tile_kernel() {
  TileKernel k;
  k.name = "gemm";
  k.size_params = {"M", "N", "K", "lda", "ldb", "ldc"};
  k.tile_params = {"BM", "BN", "BK"};
  Expr one = expr_const(1);
  k.tensors = {{"A", DType::F32, {sym("M"), sym("K")}, {sym("lda"), one}, Access::In},
               {"B", DType::F32, {sym("K"), sym("N")}, {sym("ldb"), one}, Access::In},
               {"C", DType::F32, {sym("M"), sym("N")}, {sym("ldc"), one}, Access::InOut}};
  k.scalars = {{"alpha", DType::F32}, {"beta", DType::F32}};
  auto value = [&](const char* name, TileType type) {
    int id = static_cast<int>(k.values.size());
    k.values.push_back(Value{id, type, name});
    return id;
  };
  Expr BM = sym("BM"), BN = sym("BN"), BK = sym("BK");
  Expr i = sym("i"), j = sym("j"), kk = sym("k");
  TileType acc_t = tile(BM, BN);

  TileOp alpha{.kind = TileOpKind::ScalarParam, .results = {value("alpha", TileType{})},
               .param = "alpha"};
  TileOp zero{.kind = TileOpKind::Const, .results = {value("z", acc_t)}, .constant = 0};

  Region loop_body;
  loop_body.args = {value("c", acc_t)};
  int a = value("a", tile(BM, BK)), b = value("b", tile(BK, BN)), d = value("d", acc_t);
  loop_body.ops = {
      {.kind = TileOpKind::Load, .results = {a}, .param = "A", .coords = {i * BM, kk * BK},
       .loc = at(41)},
      {.kind = TileOpKind::Load, .results = {b}, .param = "B", .coords = {kk * BK, j * BN},
       .loc = at(42)},
      {.kind = TileOpKind::Mma, .operands = {a, b, loop_body.args[0]}, .results = {d},
       .loc = at(43)},
      {.kind = TileOpKind::Yield, .operands = {d}}};
  int acc = value("acc", acc_t);
  TileOp pipeline{.kind = TileOpKind::Pipeline, .operands = {zero.results[0]}, .results = {acc},
                  .loops = {{"k", ceil_div(sym("K"), BK)}}, .regions = {loop_body},
                  .loc = at(40)};
  int scaled = value("s", acc_t);
  TileOp scale{.kind = TileOpKind::Mul, .operands = {acc, alpha.results[0]}, .results = {scaled}};

  Region overwrite, update;
  overwrite.ops = {{.kind = TileOpKind::Store, .operands = {scaled}, .param = "C",
                    .coords = {i * BM, j * BN}, .loc = at(47)}};
  int beta = value("beta", TileType{}), old = value("old", acc_t), t = value("t", acc_t),
      u = value("u", acc_t);
  update.ops = {
      {.kind = TileOpKind::ScalarParam, .results = {beta}, .param = "beta"},
      {.kind = TileOpKind::Load, .results = {old}, .param = "C", .coords = {i * BM, j * BN}},
      {.kind = TileOpKind::Mul, .operands = {old, beta}, .results = {t}},
      {.kind = TileOpKind::Add, .operands = {scaled, t}, .results = {u}},
      {.kind = TileOpKind::Store, .operands = {u}, .param = "C", .coords = {i * BM, j * BN},
       .loc = at(49)}};
  TileOp branch{.kind = TileOpKind::If, .regions = {overwrite, update}, .loc = at(46)};
  branch.cond.on_scalar = true;
  branch.cond.scalar = "beta";
  branch.cond.value = 0;

  Region grid;
  grid.ops = {alpha, zero, pipeline, scale, branch};
  TileOp parallel{.kind = TileOpKind::Parallel,
                  .loops = {{"i", ceil_div(sym("M"), BM)}, {"j", ceil_div(sym("N"), BN)}},
                  .regions = {grid}, .loc = at(38)};
  k.body.ops = {parallel};
  return k;
}

GroupProgram gemm_group_program() {
  GroupProgram p;
  p.name = "gemm";
  p.size_params = {"M", "N", "K", "lda", "ldb", "ldc"};
  p.tensors = gemm_tile_kernel().tensors;
  p.scalars = {{"alpha", DType::F32}, {"beta", DType::F32}};
  p.grid = {{"i", ceil_div(sym("M"), expr_const(64))}, {"j", ceil_div(sym("N"), expr_const(64))}};
  p.workers = 4;
  p.worker_rows = 2;
  p.worker_cols = 2;
  p.atom_m = 4;
  p.atom_n = 16;
  auto buffer = [&](const char* name, Space space, int64_t rows, int64_t cols, int tensor,
                    Layout layout, int64_t panel, int versions) {
    int id = static_cast<int>(p.buffers.size());
    p.buffers.push_back(Buffer{id, name, space, DType::F32, rows, cols, tensor, layout, panel,
                               versions});
    return id;
  };
  int A = buffer("A", Space::Global, 0, 0, 0, Layout::RowMajor, 1, 1);
  int B = buffer("B", Space::Global, 0, 0, 1, Layout::RowMajor, 1, 1);
  int C = buffer("C", Space::Global, 0, 0, 2, Layout::RowMajor, 1, 1);
  int As = buffer("As", Space::Shared, 64, 32, -1, Layout::RowPanels, 4, 2);
  int Bs = buffer("Bs", Space::Shared, 32, 64, -1, Layout::ColPanels, 16, 2);
  int acc = buffer("acc", Space::Private, 64, 64, -1, Layout::RowMajor, 1, 1);
  int old = buffer("old", Space::Private, 64, 64, -1, Layout::RowMajor, 1, 1);

  Expr i = sym("i"), j = sym("j"), k = sym("k"), M = sym("M"), N = sym("N"), K = sym("K");
  Expr slot = expr_mod(k, expr_const(2)), c0 = expr_const(0);
  auto op = [&](GroupOpKind kind) {
    GroupOp o;
    o.kind = kind;
    o.id = p.new_op_id();
    return o;
  };

  GroupOp fill = op(GroupOpKind::FragFill);
  fill.frag = acc;
  fill.constant = 0;

  GroupOp loop = op(GroupOpKind::For);
  loop.iv = "k";
  loop.lo = c0;
  loop.hi = ceil_div(K, expr_const(32));
  loop.pipelined = true;
  GroupOp copy_a = op(GroupOpKind::Copy);
  copy_a.src = ref(A, i * 64, k * 32);
  copy_a.dst = ref(As, c0, c0, slot);
  copy_a.rows = 64;
  copy_a.cols = 32;
  copy_a.batch = 4;
  copy_a.async = true;
  copy_a.src_row_bound = M;
  copy_a.src_col_bound = K;
  GroupOp copy_b = op(GroupOpKind::Copy);
  copy_b.src = ref(B, k * 32, j * 64);
  copy_b.dst = ref(Bs, c0, c0, slot);
  copy_b.rows = 32;
  copy_b.cols = 64;
  copy_b.batch = 4;
  copy_b.async = true;
  copy_b.src_row_bound = K;
  copy_b.src_col_bound = N;
  GroupOp commit = op(GroupOpKind::AsyncCommit);
  GroupOp wait = op(GroupOpKind::AsyncWait);
  wait.pending = 0;
  GroupOp fence1 = op(GroupOpKind::Fence);
  GroupOp mma = op(GroupOpKind::Mma);
  mma.frag = acc;
  mma.a = ref(As, c0, c0, slot);
  mma.b = ref(Bs, c0, c0, slot);
  mma.m = 64;
  mma.n = 64;
  mma.k = 32;
  GroupOp fence2 = op(GroupOpKind::Fence);
  loop.bodies = {{copy_a, copy_b, commit, wait, fence1, mma, fence2}};

  GroupOp scale = op(GroupOpKind::Elementwise);
  scale.frag = acc;
  scale.ew = EwOp::Mul;
  scale.operands = {{EwOperand::Kind::Frag, acc, "", 0}, {EwOperand::Kind::Scalar, -1, "alpha", 0}};

  GroupOp branch = op(GroupOpKind::If);
  branch.cond.on_scalar = true;
  branch.cond.scalar = "beta";
  GroupOp store = op(GroupOpKind::FragStore);
  store.frag = acc;
  store.dst = ref(C, i * 64, j * 64);
  store.dst_row_bound = M;
  store.dst_col_bound = N;
  GroupOp load = op(GroupOpKind::FragLoad);
  load.frag = old;
  load.src = ref(C, i * 64, j * 64);
  load.src_row_bound = M;
  load.src_col_bound = N;
  GroupOp times_beta = op(GroupOpKind::Elementwise);
  times_beta.frag = old;
  times_beta.ew = EwOp::Mul;
  times_beta.operands = {{EwOperand::Kind::Frag, old, "", 0},
                         {EwOperand::Kind::Scalar, -1, "beta", 0}};
  GroupOp sum = op(GroupOpKind::Elementwise);
  sum.frag = acc;
  sum.ew = EwOp::Add;
  sum.operands = {{EwOperand::Kind::Frag, acc, "", 0}, {EwOperand::Kind::Frag, old, "", 0}};
  GroupOp store2 = store;
  store2.id = p.new_op_id();
  branch.bodies = {{store}, {load, times_beta, sum, store2}};
  GroupOp barrier = op(GroupOpKind::Barrier);

  p.body = {fill, loop, scale, branch, barrier};
  return p;
}

std::string read_data(const std::string& name) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/tests/ir/data/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read tests/ir/data/" << name;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_same_kernel(const TileKernel& a, const TileKernel& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.size_params, b.size_params);
  EXPECT_EQ(a.tile_params, b.tile_params);
  expect_same_params(a.tensors, b.tensors);
  expect_same_scalars(a.scalars, b.scalars);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    EXPECT_EQ(a.values[i].id, b.values[i].id);
    EXPECT_EQ(a.values[i].name, b.values[i].name);
    EXPECT_EQ(a.values[i].type.dtype, b.values[i].type.dtype);
    expect_same_exprs(a.values[i].type.shape, b.values[i].type.shape);
  }
  expect_same_region(a.body, b.body);
}

void expect_same_program(const GroupProgram& a, const GroupProgram& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.size_params, b.size_params);
  expect_same_params(a.tensors, b.tensors);
  expect_same_scalars(a.scalars, b.scalars);
  expect_same_loops(a.grid, b.grid);
  EXPECT_EQ(a.workers, b.workers);
  EXPECT_EQ(a.worker_rows, b.worker_rows);
  EXPECT_EQ(a.worker_cols, b.worker_cols);
  EXPECT_EQ(a.atom_m, b.atom_m);
  EXPECT_EQ(a.atom_n, b.atom_n);
  EXPECT_EQ(a.atom, b.atom);
  EXPECT_EQ(a.lanes, b.lanes);
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    const Buffer &x = a.buffers[i], &y = b.buffers[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.space, y.space);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.rows, y.rows);
    EXPECT_EQ(x.cols, y.cols);
    EXPECT_EQ(x.tensor, y.tensor);
    EXPECT_EQ(x.layout, y.layout);
    EXPECT_EQ(x.panel, y.panel);
    EXPECT_EQ(x.versions, y.versions);
  }
  expect_same_ops(a.body, b.body);
  EXPECT_EQ(a.next_op_id, b.next_op_id);
}

}  // namespace tessel::test
