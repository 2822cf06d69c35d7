#include "gemm_programs.h"

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

namespace tessel::test {
namespace {

Expr sym(const char* name) { return expr_sym(name); }
Expr cst(int64_t v) { return expr_const(v); }

int add_buffer(GroupProgram& p, const std::string& name, Space space, int64_t rows, int64_t cols,
               int tensor = -1) {
  Buffer b;
  b.id = static_cast<int>(p.buffers.size());
  b.name = name;
  b.space = space;
  b.rows = rows;
  b.cols = cols;
  b.tensor = tensor;
  p.buffers.push_back(b);
  return b.id;
}

GroupOp make_op(GroupProgram& p, GroupOpKind kind) {
  GroupOp op;
  op.kind = kind;
  op.id = p.new_op_id();
  return op;
}

BufferRef ref(int buffer, Expr row, Expr col, Expr version = nullptr) {
  return BufferRef{buffer, std::move(version), std::move(row), std::move(col)};
}

// A window of a row-major global tensor with leading dimension `ld`.
BufferRef global_ref(int buffer, Expr row, Expr col, const char* ld) {
  BufferRef r = ref(buffer, std::move(row), std::move(col));
  r.row_stride = sym(ld);
  r.col_stride = cst(1);
  return r;
}

struct Ids {
  int ga, gb, gc, as, bs, acc, c;
};

// Parameters, grid, workers and buffers shared by both GEMM programs.
Ids skeleton(GroupProgram& p, const GemmConfig& cfg, int versions) {
  p.name = "gemm";
  p.size_params = {"M", "N", "K", "lda", "ldb", "ldc"};
  p.tensors = {{"A", DType::F32, {sym("M"), sym("K")}, {sym("lda"), cst(1)}, Access::In},
               {"B", DType::F32, {sym("K"), sym("N")}, {sym("ldb"), cst(1)}, Access::In},
               {"C", DType::F32, {sym("M"), sym("N")}, {sym("ldc"), cst(1)}, Access::InOut}};
  p.scalars = {{"alpha", DType::F32}, {"beta", DType::F32}};
  p.grid = {{"i", ceil_div(sym("M"), cst(cfg.bm))}, {"j", ceil_div(sym("N"), cst(cfg.bn))}};
  p.worker_rows = cfg.worker_rows;
  p.worker_cols = cfg.worker_cols;
  p.workers = cfg.worker_rows * cfg.worker_cols + cfg.extra_workers;
  Ids ids;
  ids.ga = add_buffer(p, "A", Space::Global, 0, 0, 0);
  ids.gb = add_buffer(p, "B", Space::Global, 0, 0, 1);
  ids.gc = add_buffer(p, "C", Space::Global, 0, 0, 2);
  ids.as = add_buffer(p, "As", Space::Shared, cfg.bm, cfg.bk);
  p.buffers[ids.as].layout = cfg.a_layout;
  p.buffers[ids.as].panel = cfg.a_panel;
  p.buffers[ids.as].versions = versions;
  ids.bs = add_buffer(p, "Bs", Space::Shared, cfg.bk, cfg.bn);
  p.buffers[ids.bs].layout = cfg.b_layout;
  p.buffers[ids.bs].panel = cfg.b_panel;
  p.buffers[ids.bs].versions = versions;
  ids.acc = add_buffer(p, "acc", Space::Private, cfg.bm, cfg.bn);
  ids.c = add_buffer(p, "c", Space::Private, cfg.bm, cfg.bn);
  return ids;
}

// A k-tile copy: A[i*BM, kt*BK] -> As or B[kt*BK, j*BN] -> Bs, guarded on the source.
GroupOp tile_copy(GroupProgram& p, const GemmConfig& cfg, const Ids& ids, bool is_a, Expr kt,
                  Expr version) {
  GroupOp op = make_op(p, GroupOpKind::Copy);
  if (is_a) {
    op.src = global_ref(ids.ga, sym("i") * cfg.bm, kt * cfg.bk, "lda");
    op.dst = ref(ids.as, cst(0), cst(0), version);
    op.src_row_bound = sym("M");
    op.src_col_bound = sym("K");
    op.rows = cfg.bm;
    op.cols = cfg.bk;
  } else {
    op.src = global_ref(ids.gb, kt * cfg.bk, sym("j") * cfg.bn, "ldb");
    op.dst = ref(ids.bs, cst(0), cst(0), version);
    op.src_row_bound = sym("K");
    op.src_col_bound = sym("N");
    op.rows = cfg.bk;
    op.cols = cfg.bn;
  }
  op.batch = cfg.batch;
  op.async = cfg.async;
  return op;
}

GroupOp tile_mma(GroupProgram& p, const GemmConfig& cfg, const Ids& ids, Expr version) {
  GroupOp op = make_op(p, GroupOpKind::Mma);
  op.frag = ids.acc;
  op.a = ref(ids.as, cst(0), cst(0), version);
  op.b = ref(ids.bs, cst(0), cst(0), version);
  op.m = cfg.bm;
  op.n = cfg.bn;
  op.k = cfg.bk;
  return op;
}

GroupOp ew(GroupProgram& p, EwOp kind, int dst, std::vector<EwOperand> operands) {
  GroupOp op = make_op(p, GroupOpKind::Elementwise);
  op.ew = kind;
  op.frag = dst;
  op.operands = std::move(operands);
  return op;
}

EwOperand frag_operand(int frag) { return {EwOperand::Kind::Frag, frag, "", 0}; }
EwOperand scalar_operand(const char* name) { return {EwOperand::Kind::Scalar, -1, name, 0}; }

// beta == 0: C = alpha * acc (C is never read); else C = alpha * acc + beta * C.
GroupOp epilogue(GroupProgram& p, const GemmConfig& cfg, const Ids& ids) {
  auto c_ref = [&] { return global_ref(ids.gc, sym("i") * cfg.bm, sym("j") * cfg.bn, "ldc"); };
  auto store = [&] {
    GroupOp op = make_op(p, GroupOpKind::FragStore);
    op.frag = ids.acc;
    op.dst = c_ref();
    op.dst_row_bound = sym("M");
    op.dst_col_bound = sym("N");
    return op;
  };

  GroupOp branch = make_op(p, GroupOpKind::If);
  branch.cond.on_scalar = true;
  branch.cond.scalar = "beta";
  branch.cond.value = 0;
  branch.cond.op = CmpOp::EQ;
  branch.bodies.resize(2);
  branch.bodies[0].push_back(ew(p, EwOp::Mul, ids.acc, {frag_operand(ids.acc), scalar_operand("alpha")}));
  branch.bodies[0].push_back(store());

  GroupOp load = make_op(p, GroupOpKind::FragLoad);
  load.frag = ids.c;
  load.src = c_ref();
  load.src_row_bound = sym("M");
  load.src_col_bound = sym("N");
  auto& other = branch.bodies[1];
  other.push_back(load);
  other.push_back(ew(p, EwOp::Mul, ids.acc, {frag_operand(ids.acc), scalar_operand("alpha")}));
  other.push_back(ew(p, EwOp::Mul, ids.c, {frag_operand(ids.c), scalar_operand("beta")}));
  other.push_back(ew(p, EwOp::Add, ids.acc, {frag_operand(ids.acc), frag_operand(ids.c)}));
  other.push_back(store());
  return branch;
}

GroupOp fill_zero(GroupProgram& p, int frag) {
  GroupOp op = make_op(p, GroupOpKind::FragFill);
  op.frag = frag;
  op.constant = 0;
  return op;
}

GroupOp commit(GroupProgram& p) { return make_op(p, GroupOpKind::AsyncCommit); }

GroupOp wait(GroupProgram& p, int pending) {
  GroupOp op = make_op(p, GroupOpKind::AsyncWait);
  op.pending = pending;
  return op;
}

bool remove_in(std::vector<GroupOp>& ops, int id) {
  for (auto it = ops.begin(); it != ops.end(); ++it) {
    if (it->id == id) {
      ops.erase(it);
      return true;
    }
    for (auto& body : it->bodies)
      if (remove_in(body, id)) return true;
  }
  return false;
}

GroupOp* find_in(std::vector<GroupOp>& ops, int id) {
  for (GroupOp& op : ops) {
    if (op.id == id) return &op;
    for (auto& body : op.bodies)
      if (GroupOp* found = find_in(body, id)) return found;
  }
  return nullptr;
}

}  // namespace

GemmProgram make_gemm(const GemmConfig& cfg) {
  GemmProgram g;
  GroupProgram& p = g.program;
  Ids ids = skeleton(p, cfg, 1);
  p.body.push_back(fill_zero(p, ids.acc));

  GroupOp loop = make_op(p, GroupOpKind::For);
  loop.iv = "k";
  loop.lo = cst(0);
  loop.hi = ceil_div(sym("K"), cst(cfg.bk));
  auto& body = loop.bodies.emplace_back();
  body.push_back(tile_copy(p, cfg, ids, true, sym("k"), nullptr));
  g.copy_a = body.back().id;
  body.push_back(make_op(p, GroupOpKind::Fence));
  g.fence_after_a = body.back().id;
  body.push_back(tile_copy(p, cfg, ids, false, sym("k"), nullptr));
  g.copy_b = body.back().id;
  if (cfg.async) body.push_back(commit(p));
  if (cfg.async && !cfg.wait_after_mma) {
    body.push_back(wait(p, 0));
    g.wait = body.back().id;
  }
  body.push_back(make_op(p, GroupOpKind::Fence));
  g.fence_after_b = body.back().id;
  body.push_back(tile_mma(p, cfg, ids, nullptr));
  g.mma = body.back().id;
  if (cfg.async && cfg.wait_after_mma) {
    body.push_back(wait(p, 0));
    g.wait = body.back().id;
  }
  body.push_back(make_op(p, GroupOpKind::Fence));
  g.fence_after_mma = body.back().id;
  p.body.push_back(loop);
  p.body.push_back(epilogue(p, cfg, ids));
  return g;
}

GemmProgram make_pipelined_gemm(const GemmConfig& config) {
  GemmConfig cfg = config;
  cfg.async = true;
  GemmProgram g;
  GroupProgram& p = g.program;
  Ids ids = skeleton(p, cfg, 2);
  Expr tiles = ceil_div(sym("K"), cst(cfg.bk));
  p.body.push_back(fill_zero(p, ids.acc));
  p.body.push_back(tile_copy(p, cfg, ids, true, cst(0), cst(0)));
  p.body.push_back(tile_copy(p, cfg, ids, false, cst(0), cst(0)));
  p.body.push_back(commit(p));

  GroupOp loop = make_op(p, GroupOpKind::For);
  loop.iv = "k";
  loop.lo = cst(0);
  loop.hi = tiles;
  auto& body = loop.bodies.emplace_back();
  Expr next = sym("k") + 1;
  GroupOp prefetch = make_op(p, GroupOpKind::If);
  prefetch.cond.lhs = next;
  prefetch.cond.rhs = tiles;
  prefetch.cond.op = CmpOp::LT;
  prefetch.bodies.resize(2);
  prefetch.bodies[0].push_back(tile_copy(p, cfg, ids, true, next, expr_mod(next, cst(2))));
  g.copy_a = prefetch.bodies[0].back().id;
  prefetch.bodies[0].push_back(tile_copy(p, cfg, ids, false, next, expr_mod(next, cst(2))));
  g.copy_b = prefetch.bodies[0].back().id;
  body.push_back(prefetch);
  body.push_back(commit(p));  // possibly empty, so that wait(1) always means tile k
  body.push_back(wait(p, 1));
  g.wait = body.back().id;
  body.push_back(make_op(p, GroupOpKind::Fence));
  g.fence_after_b = body.back().id;
  body.push_back(tile_mma(p, cfg, ids, expr_mod(sym("k"), cst(2))));
  g.mma = body.back().id;
  body.push_back(make_op(p, GroupOpKind::Fence));
  g.fence_after_mma = body.back().id;
  p.body.push_back(loop);
  p.body.push_back(epilogue(p, cfg, ids));
  return g;
}

void remove_op(GroupProgram& program, int id) {
  if (!remove_in(program.body, id)) throw std::logic_error("no op #" + std::to_string(id));
}

GroupOp& find_op(GroupProgram& program, int id) {
  GroupOp* op = find_in(program.body, id);
  if (!op) throw std::logic_error("no op #" + std::to_string(id));
  return *op;
}

GemmData::GemmData(int64_t m_, int64_t n_, int64_t k_, double alpha_, double beta_, uint64_t seed)
    : m(m_), n(n_), k(k_), lda(k_ + 3), ldb(n_ + 1), ldc(n_ + 2), alpha(alpha_), beta(beta_) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mag(0.5f, 1.5f);
  std::bernoulli_distribution neg(0.5);
  auto fill = [&](std::vector<float>& v, int64_t rows, int64_t cols, int64_t ld, bool poison) {
    v.assign(rows * ld, kSentinel);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        v[r * ld + c] = poison ? std::numeric_limits<float>::quiet_NaN()
                               : (neg(rng) ? -mag(rng) : mag(rng));
  };
  fill(a, m, k, lda, false);
  fill(b, k, n, ldb, false);
  fill(c, m, n, ldc, beta == 0);
}

LaunchArgs GemmData::args() {
  LaunchArgs args;
  args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}};
  args.scalars = {{"alpha", alpha}, {"beta", beta}};
  args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
  return args;
}

double GemmData::error_ratio(const std::vector<float>& c_before) const {
  const double inf = std::numeric_limits<double>::infinity();
  double worst = 0;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t col = n; col < ldc; ++col)
      if (c[r * ldc + col] != kSentinel) return inf;
    for (int64_t col = 0; col < n; ++col) {
      double exact = 0, magnitude = 0;
      for (int64_t i = 0; i < k; ++i) {
        double prod = double(a[r * lda + i]) * double(b[i * ldb + col]);
        exact += prod;
        magnitude += std::fabs(prod);
      }
      exact *= alpha;
      magnitude *= std::fabs(alpha);
      if (beta != 0) {
        exact += beta * double(c_before[r * ldc + col]);
        magnitude += std::fabs(beta * double(c_before[r * ldc + col]));
      }
      // Float accumulation: each of k + 3 roundings costs at most one ulp of the magnitude.
      double bound = (k + 3) * std::numeric_limits<float>::epsilon() * magnitude + 1e-30;
      double got = c[r * ldc + col];
      if (std::isnan(got)) return inf;
      worst = std::max(worst, std::fabs(got - exact) / bound);
    }
  }
  return worst;
}

}  // namespace tessel::test
