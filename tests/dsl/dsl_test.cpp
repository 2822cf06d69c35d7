// The DSL captures TileIR: each test builds a kernel, which finish() verifies, and
// checks the captured structure; the printed text must parse and verify again.
#include "dsl/dsl.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "ir/tile_text.h"
#include "ir/tile_verify.h"
#include "tessel/error.h"

namespace tessel {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The kernel's text reparses and verifies, and prints the same again.
void expect_round_trip(const TileKernel& k) {
  std::string text = print_tile_kernel(k);
  TileKernel parsed = parse_tile_kernel(text);
  EXPECT_NO_THROW(verify_tile_kernel(parsed));
  EXPECT_EQ(print_tile_kernel(parsed), text);
}

std::vector<const TileOp*> ops_of(const Region& r) {
  std::vector<const TileOp*> out;
  std::function<void(const Region&)> walk = [&](const Region& region) {
    for (const TileOp& op : region.ops) {
      out.push_back(&op);
      for (const Region& sub : op.regions) walk(sub);
    }
  };
  walk(r);
  return out;
}

int count(const TileKernel& k, TileOpKind kind) {
  int n = 0;
  for (const TileOp* op : ops_of(k.body)) n += op->kind == kind;
  return n;
}

const TileOp& first(const TileKernel& k, TileOpKind kind) {
  for (const TileOp* op : ops_of(k.body))
    if (op->kind == kind) return *op;
  ADD_FAILURE() << "no " << tile_op_name(kind);
  return k.body.ops.at(0);
}

std::string shape(const TileKernel& k, int id) {
  std::string s;
  for (const Expr& e : k.values.at(id).type.shape) s += (s.empty() ? "" : ", ") + expr_to_string(e);
  return "[" + s + "]";
}

std::string read_source(const std::string& path) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines between "BEGIN EXAMPLE" and "END EXAMPLE", without a leading "//" and
// without their common indentation.
std::vector<std::string> example_block(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  bool inside = false;
  auto marker = [](const std::string& line, const char* word) {
    size_t start = line.find_first_not_of(' ');
    return start != std::string::npos && line.substr(start) == std::string("// ") + word;
  };
  for (std::string line; std::getline(in, line);) {
    if (marker(line, "END EXAMPLE")) break;
    if (inside) {
      size_t start = line.find_first_not_of(' ');
      if (start != std::string::npos && line.compare(start, 2, "//") == 0) line = line.substr(start + 2);
      lines.push_back(line);
    }
    if (marker(line, "BEGIN EXAMPLE")) inside = true;
  }
  size_t indent = std::string::npos;
  for (const std::string& l : lines)
    if (l.find_first_not_of(' ') != std::string::npos) indent = std::min(indent, l.find_first_not_of(' '));
  for (std::string& l : lines) l = l.size() > indent ? l.substr(indent) : "";
  return lines;
}

// The example of src/dsl/dsl.h's header comment, verbatim (ExampleMatchesTheHeader
// checks that the two stay identical).
TileKernel scale_example() {
  // BEGIN EXAMPLE
  KernelBuilder kb("scale");
  Sym M = kb.size("M"), N = kb.size("N"), ld = kb.size("ld");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN");
  Tensor X = kb.tensor("X", {M, N}, {ld, 1}, Access::InOut);
  std::string s = kb.scalar("s");
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile x = kb.load(X, {i * BM, j * BN}, BM, BN);
    kb.store(X, {i * BM, j * BN}, kb.mul(x, kb.scalar_value(s)));
  });
  TileKernel k = kb.finish();  // verified
  // END EXAMPLE
  return k;
}

TEST(DslExample, ExampleMatchesTheHeader) {
  std::vector<std::string> header = example_block(read_source("src/dsl/dsl.h"));
  std::vector<std::string> here = example_block(read_source("tests/dsl/dsl_test.cpp"));
  ASSERT_GE(header.size(), 5u);
  EXPECT_EQ(header, here);
}

TEST(DslExample, ExampleCapturesTheScaleKernel) {
  TileKernel k = scale_example();
  ASSERT_EQ(k.tensors.size(), 1u);
  EXPECT_EQ(k.tensors[0].rank(), 2);
  EXPECT_EQ(expr_to_string(k.tensors[0].strides[0]), "ld");
  EXPECT_EQ(expr_to_string(k.tensors[0].strides[1]), "1");
  ASSERT_EQ(k.body.ops.size(), 1u);
  const TileOp& grid = k.body.ops[0];
  EXPECT_EQ(grid.kind, TileOpKind::Parallel);
  EXPECT_EQ(grid.loops.size(), 2u);
  std::vector<TileOpKind> kinds;
  for (const TileOp& op : grid.regions[0].ops) kinds.push_back(op.kind);
  EXPECT_EQ(kinds, (std::vector<TileOpKind>{TileOpKind::Load, TileOpKind::ScalarParam,
                                             TileOpKind::Mul, TileOpKind::Store}));
  EXPECT_EQ(expr_to_string(grid.regions[0].ops[0].coords[0]), "(i0 * BM)");
  EXPECT_EQ(grid.regions[0].ops[0].dims, (std::array<int, 2>{0, 1}));
  // Locations point at this file.
  EXPECT_NE(grid.regions[0].ops[0].loc.file.find("dsl_test.cpp"), std::string::npos);
  expect_round_trip(k);
}

TEST(DslTensors, ShapesAndStrides) {
  KernelBuilder kb("t");
  Sym B = kb.size("B"), M = kb.size("M"), N = kb.size("N"), ld = kb.size("ld");
  kb.tensor("row_major", {B, M, N}, Access::In);
  kb.tensor("old", M, N, ld, Access::Out);
  kb.tensor("transposed", {N, M}, {1, ld}, Access::In, DType::BF16);
  kb.tensor("vec", {N}, Access::In, DType::F64);
  TileKernel k = kb.finish();
  auto strides = [&](int t) {
    std::string s;
    for (const Expr& e : k.tensors[t].strides) s += (s.empty() ? "" : " ") + expr_to_string(e);
    return s;
  };
  EXPECT_EQ(strides(0), "(N * M) N 1");
  EXPECT_EQ(strides(1), "ld 1");
  EXPECT_EQ(strides(2), "1 ld");
  EXPECT_EQ(k.tensors[2].dtype, DType::BF16);
  EXPECT_EQ(strides(3), "1");
  EXPECT_EQ(k.tensors[3].dtype, DType::F64);
  expect_round_trip(k);
}

TEST(DslSym, FloorDivisionAndModulo) {
  Sym a = expr_sym("a"), b = expr_sym("b");
  EXPECT_EQ(expr_to_string((a / b).e), "floordiv(a, b)");
  EXPECT_EQ(expr_to_string((a % 4).e), "(a % 4)");
  EXPECT_EQ(expr_to_string((Sym(7) / 2).e), "3");
  EXPECT_EQ(expr_to_string((Sym(-7) / 2).e), "-4");
  EXPECT_EQ(expr_to_string((Sym(-7) % 2).e), "1");
  EXPECT_EQ(expr_to_string((a / 1).e), "a");
}

// Row softmax: a grid over row blocks; one loop carries the running max and sum, a
// second writes exp(x - m) / l.
TEST(DslKernels, RowSoftmax) {
  KernelBuilder kb("softmax");
  Sym M = kb.size("M"), N = kb.size("N"), ldx = kb.size("ldx"), ldy = kb.size("ldy");
  Sym BR = kb.tile("BR"), BC = kb.tile("BC");
  Tensor X = kb.tensor("X", {M, N}, {ldx, 1}, Access::In);
  Tensor Y = kb.tensor("Y", {M, N}, {ldy, 1}, Access::Out);
  kb.parallel(ceil_div(M, BR), [&](Sym i) {
    Tile m0 = kb.constant(-kInf, BR, 1), l0 = kb.constant(0.0, BR, 1);
    std::vector<Tile> ml = kb.serial(
        ceil_div(N, BC), {m0, l0}, [&](Sym k, std::vector<Tile> c) -> std::vector<Tile> {
          Tile x = kb.load(X, {i * BR, k * BC}, BR, BC, -kInf);
          Tile m_new = kb.max(c[0], kb.reduce_max(x, 1));
          Tile rescale = kb.exp(kb.sub(c[0], m_new));
          Tile block_sum = kb.reduce_sum(kb.exp(kb.sub(x, m_new)), 1);
          return {m_new, kb.add(kb.mul(c[1], rescale), block_sum)};
        });
    kb.serial(ceil_div(N, BC), {}, [&](Sym k, std::vector<Tile>) -> std::vector<Tile> {
      Tile x = kb.load(X, {i * BR, k * BC}, BR, BC);
      kb.store(Y, {i * BR, k * BC}, kb.div(kb.exp(kb.sub(x, ml[0])), ml[1]));
      return {};
    });
  });
  TileKernel k = kb.finish();
  EXPECT_EQ(count(k, TileOpKind::Serial), 2);
  const TileOp& loop = first(k, TileOpKind::Serial);
  EXPECT_EQ(loop.operands.size(), 2u);
  EXPECT_EQ(loop.results.size(), 2u);
  EXPECT_EQ(shape(k, loop.results[1]), "[BR, 1]");
  EXPECT_EQ(first(k, TileOpKind::Load).constant, -kInf);
  EXPECT_EQ(first(k, TileOpKind::Reduce).reduce, ReduceOp::Max);
  EXPECT_EQ(shape(k, first(k, TileOpKind::Div).results[0]), "[BR, BC]");
  expect_round_trip(k);
}

// Layernorm: mean, variance by a second pass masked for ragged columns (index, cmp,
// select), then the affine output with rank-1 gamma and beta.
TEST(DslKernels, Layernorm) {
  KernelBuilder kb("layernorm");
  Sym M = kb.size("M"), N = kb.size("N"), ldx = kb.size("ldx"), ldy = kb.size("ldy");
  Sym BR = kb.tile("BR"), BC = kb.tile("BC");
  Tensor X = kb.tensor("X", {M, N}, {ldx, 1}, Access::In);
  Tensor gamma = kb.tensor("gamma", {N}, Access::In);
  Tensor beta = kb.tensor("beta", {N}, Access::In);
  Tensor Y = kb.tensor("Y", {M, N}, {ldy, 1}, Access::Out);
  std::string eps = kb.scalar("eps");
  kb.parallel(ceil_div(M, BR), [&](Sym i) {
    Tile n = kb.index_value(N);
    Tile inv_n = kb.recip(n);
    Tile zero_col = kb.constant(0.0, BR, 1);
    Tile sum = kb.serial(ceil_div(N, BC), zero_col, [&](Sym k, Tile s) {
      return kb.add(s, kb.reduce_sum(kb.load(X, {i * BR, k * BC}, BR, BC), 1));
    });
    Tile mean = kb.mul(sum, inv_n);
    Tile tile_col = kb.index(1, 1, BC);
    Tile var_sum = kb.serial(ceil_div(N, BC), zero_col, [&](Sym k, Tile v) {
      Tile dev = kb.sub(kb.load(X, {i * BR, k * BC}, BR, BC), mean);
      Tile col = kb.add(tile_col, kb.index_value(k * BC));
      Tile valid = kb.cmp(CmpOp::LT, col, n);
      Tile masked = kb.select(valid, kb.mul(dev, dev), kb.constant(0.0));
      return kb.add(v, kb.reduce_sum(masked, 1));
    });
    Tile rstd = kb.rsqrt(kb.add(kb.mul(var_sum, inv_n), kb.scalar_value(eps)));
    kb.serial(ceil_div(N, BC), {}, [&](Sym k, std::vector<Tile>) -> std::vector<Tile> {
      Tile x = kb.load(X, {i * BR, k * BC}, BR, BC);
      Tile g = kb.load(gamma, {k * BC}, 1, BC);
      Tile b = kb.load(beta, {k * BC}, 1, BC);
      kb.store(Y, {i * BR, k * BC}, kb.add(kb.mul(kb.mul(kb.sub(x, mean), rstd), g), b));
      return {};
    });
  });
  TileKernel k = kb.finish();
  EXPECT_EQ(count(k, TileOpKind::Serial), 3);
  EXPECT_EQ(shape(k, first(k, TileOpKind::Select).results[0]), "[BR, BC]");
  EXPECT_EQ(shape(k, first(k, TileOpKind::Cmp).results[0]), "[1, BC]");
  EXPECT_EQ(first(k, TileOpKind::Cmp).cmp, CmpOp::LT);
  EXPECT_EQ(first(k, TileOpKind::Index).axis, 1);
  EXPECT_EQ(expr_to_string(first(k, TileOpKind::Const).index_value), "N");
  expect_round_trip(k);
}

TEST(DslKernels, BatchedGemmOverARank3TensorAndA3dGrid) {
  KernelBuilder kb("batched_gemm");
  Sym batch = kb.size("batch"), M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", {batch, M, K}, Access::In);
  Tensor B = kb.tensor("B", {batch, K, N}, Access::In);
  Tensor C = kb.tensor("C", {batch, M, N}, Access::Out);
  kb.parallel(batch, ceil_div(M, BM), ceil_div(N, BN), [&](Sym b, Sym i, Sym j) {
    Tile acc = kb.pipeline(ceil_div(K, BK), kb.constant(0.0, BM, BN), [&](Sym k, Tile c) {
      return kb.mma(kb.load(A, {b, i * BM, k * BK}, BM, BK), kb.load(B, {b, k * BK, j * BN}, BK, BN), c);
    });
    kb.store(C, {b, i * BM, j * BN}, acc);
  });
  TileKernel k = kb.finish();
  EXPECT_EQ(k.body.ops[0].loops.size(), 3u);
  EXPECT_EQ(first(k, TileOpKind::Load).coords.size(), 3u);
  EXPECT_EQ(first(k, TileOpKind::Load).dims, (std::array<int, 2>{1, 2}));
  expect_round_trip(k);
}

// C = A * B^T: B is N x K in memory, declared K x N with strides (1, ldb).
TEST(DslKernels, GemmWithBTransposedByStrides) {
  KernelBuilder kb("gemm_nt");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym lda = kb.size("lda"), ldb = kb.size("ldb"), ldc = kb.size("ldc");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", {M, K}, {lda, 1}, Access::In);
  Tensor B = kb.tensor("B", {K, N}, {1, ldb}, Access::In);
  Tensor C = kb.tensor("C", {M, N}, {ldc, 1}, Access::Out);
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile acc = kb.pipeline(ceil_div(K, BK), kb.constant(0.0, BM, BN), [&](Sym k, Tile c) {
      return kb.mma(kb.load(A, {i * BM, k * BK}, BM, BK), kb.load(B, {k * BK, j * BN}, BK, BN), c);
    });
    kb.store(C, {i * BM, j * BN}, acc);
  });
  TileKernel k = kb.finish();
  EXPECT_EQ(expr_to_string(k.tensors[1].strides[1]), "ldb");
  expect_round_trip(k);
}

// The same transposed B, loaded through dims instead: B declared N x K as stored,
// the tile's rows run along dimension 1 (K) and its columns along dimension 0 (N).
TEST(DslKernels, GemmWithBTransposedByDims) {
  KernelBuilder kb("gemm_nt_dims");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", {M, K}, Access::In);
  Tensor B = kb.tensor("B", {N, K}, Access::In);
  Tensor C = kb.tensor("C", {M, N}, Access::Out);
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile acc = kb.serial(ceil_div(K, BK), kb.constant(0.0, BM, BN), [&](Sym k, Tile c) {
      Tile b = kb.load(B, {j * BN, k * BK}, {1, 0}, BK, BN);
      return kb.mma(kb.load(A, {i * BM, k * BK}, BM, BK), b, c);
    });
    kb.store(C, {i * BM, j * BN}, acc);
  });
  TileKernel k = kb.finish();
  EXPECT_EQ(count(k, TileOpKind::Load), 2);
  expect_round_trip(k);
}

// C = A + bias with a rank-1 bias along the columns ([1, BN]) and another along the
// rows ([BM, 1], through dims {0, -1}).
TEST(DslKernels, AddWithRank1Broadcasts) {
  KernelBuilder kb("add_bias");
  Sym M = kb.size("M"), N = kb.size("N");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN");
  Tensor A = kb.tensor("A", {M, N}, Access::In);
  Tensor col_bias = kb.tensor("col_bias", {N}, Access::In);
  Tensor row_bias = kb.tensor("row_bias", {M}, Access::In);
  Tensor C = kb.tensor("C", {M, N}, Access::Out);
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile a = kb.load(A, {i * BM, j * BN}, BM, BN);
    Tile cb = kb.load(col_bias, {j * BN}, 1, BN);
    Tile rb = kb.load(row_bias, {i * BM}, {0, -1}, BM, 1);
    kb.store(C, {i * BM, j * BN}, kb.add(kb.add(a, cb), rb));
  });
  TileKernel k = kb.finish();
  std::vector<const TileOp*> loads;
  for (const TileOp* op : ops_of(k.body))
    if (op->kind == TileOpKind::Load) loads.push_back(op);
  ASSERT_EQ(loads.size(), 3u);
  EXPECT_EQ(loads[1]->dims, (std::array<int, 2>{-1, 0}));
  EXPECT_EQ(loads[2]->dims, (std::array<int, 2>{0, -1}));
  EXPECT_EQ(shape(k, loads[2]->results[0]), "[BM, 1]");
  EXPECT_EQ(shape(k, first(k, TileOpKind::Add).results[0]), "[BM, BN]");
  expect_round_trip(k);
}

// Every op of the DSL, with the old rank-2 load/store forms, a 1-D grid, an if_ on
// indices, and scalar constants as operands.
TEST(DslOps, EveryOpCaptures) {
  KernelBuilder kb("every_op");
  Sym M = kb.size("M"), ld = kb.size("ld");
  Sym BM = kb.tile("BM");
  Tensor X = kb.tensor("X", M, M, ld, Access::InOut);
  Tensor H = kb.tensor("H", {M, M}, Access::Out, DType::BF16);
  Tensor T = kb.tensor("T", {M}, Access::InOut, DType::U32);
  kb.parallel(ceil_div(M, BM), [&](Sym i) {
    Sym t = kb.ticket(T, 0, ceil_div(M, BM));
    Tile two = kb.constant(2.0);
    Tile x = kb.serial(2, kb.load(X, i * BM, 0, BM, BM), [&](Sym, Tile c) { return kb.mul(c, two); });
    Tile y = kb.div(kb.min(kb.max(kb.sub(kb.add(x, two), two), x), two), two);
    y = kb.tanh(kb.recip(kb.rsqrt(kb.sqrt(kb.abs(kb.neg(kb.log(kb.exp2(kb.exp(y)))))))));
    Tile c = kb.cmp(CmpOp::GE, y, kb.index(0, BM, BM));
    Tile s = kb.select(c, y, kb.transpose(x));
    Tile r = kb.broadcast(kb.reduce_min(kb.reduce_max(kb.reduce_sum(s, 0), 1), 0), BM, BM);
    Tile p = kb.mma(r, s, kb.constant(0.0, BM, BM));
    kb.if_(i % 2, CmpOp::EQ, i / 2,
           [&] { kb.store(H, {i * BM, 0}, kb.cast(p, DType::BF16)); },
           [&] { kb.barrier(); });
    kb.if_(i + t, CmpOp::LT, M, [&] { kb.store(X, i * BM, 0, p); });
  });
  TileKernel k = kb.finish();
  for (int kind = static_cast<int>(TileOpKind::ScalarParam) + 1; kind <= static_cast<int>(TileOpKind::Ticket);
       ++kind) {
    TileOpKind kk = static_cast<TileOpKind>(kind);
    if (kk == TileOpKind::Pipeline) continue;
    EXPECT_GT(count(k, kk), 0) << tile_op_name(kk);
  }
  EXPECT_EQ(k.values[first(k, TileOpKind::Cast).results[0]].type.dtype, DType::BF16);
  EXPECT_EQ(shape(k, first(k, TileOpKind::Reduce).results[0]), "[1, BM]");
  EXPECT_TRUE(k.values[first(k, TileOpKind::Const).results[0]].type.is_scalar());
  EXPECT_EQ(shape(k, first(k, TileOpKind::Mul).results[0]), "[BM, BM]");
  const TileOp& branch = first(k, TileOpKind::If);
  EXPECT_FALSE(branch.cond.on_scalar);
  EXPECT_EQ(expr_to_string(branch.cond.rhs), "floordiv(i0, 2)");
  expect_round_trip(k);
}

// if_else: a branch with values; the results have the branches' types, and branches
// that return different counts or types are an InvalidArgument error.
TEST(DslOps, IfElseYieldsValues) {
  KernelBuilder kb("if_else");
  Sym M = kb.size("M");
  Sym BM = kb.tile("BM");
  Tensor X = kb.tensor("X", {M, M}, Access::InOut);
  kb.parallel(ceil_div(M, BM), [&](Sym i) {
    Tile x = kb.load(X, {i * BM, 0}, BM, BM);
    std::vector<Tile> y = kb.if_else(
        i, CmpOp::LT, 2, [&] { return std::vector<Tile>{kb.add(x, x)}; },
        [&] { return std::vector<Tile>{kb.exp2(x)}; });
    kb.store(X, {i * BM, 0}, y[0]);
  });
  TileKernel k = kb.finish();
  const TileOp& branch = first(k, TileOpKind::If);
  ASSERT_EQ(branch.results.size(), 1u);
  EXPECT_EQ(shape(k, branch.results[0]), "[BM, BM]");
  for (const Region& r : branch.regions) EXPECT_EQ(r.ops.back().kind, TileOpKind::Yield);
  expect_round_trip(k);

  auto error = [](bool same_count) {
    KernelBuilder kb("bad");
    Sym M = kb.size("M");
    Tensor X = kb.tensor("X", {M, M}, Access::InOut);
    try {
      kb.parallel(M, [&](Sym i) {
        Tile x = kb.load(X, {i, 0}, 1, 4);
        kb.if_else(
            i, CmpOp::LT, 2, [&] { return std::vector<Tile>{x}; },
            [&] { return same_count ? std::vector<Tile>{kb.load(X, {i, 0}, 2, 4)} : std::vector<Tile>{x, x}; });
      });
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(false).find("the branches return 1 and 2 tiles"), std::string::npos) << error(false);
  EXPECT_NE(error(true).find("result 0 has two different types"), std::string::npos) << error(true);
  KernelBuilder kb2("no_else");
  Sym N = kb2.size("N");
  EXPECT_THROW(kb2.if_else(N, CmpOp::LT, 2, [] { return std::vector<Tile>{}; }, nullptr), Error);
}

// Verifier errors from DSL captures name the user's line.
TEST(DslErrors, PointAtTheUsersLine) {
  KernelBuilder kb("bad");
  Sym M = kb.size("M");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN");
  Tensor X = kb.tensor("X", {M, M}, Access::InOut);
  int line = 0;
  kb.parallel(ceil_div(M, BM), [&](Sym i) {
    Tile a = kb.load(X, {i * BM, 0}, BM, BN);
    Tile b = kb.load(X, {i * BM, 0}, BN, BM);
    line = __LINE__ + 1;
    kb.store(X, {i * BM, 0}, kb.add(a, b));
  });
  try {
    kb.finish();
    FAIL() << "expected a Verify error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Verify);
    std::string message = e.what();
    EXPECT_NE(message.find("dsl_test.cpp:" + std::to_string(line) + ": add operand shapes [BM, BN] and "
                           "[BN, BM] do not broadcast"),
              std::string::npos)
        << message;
  }
}

TEST(DslErrors, BadAxisAndCoordinates) {
  auto message = [](const std::function<void(KernelBuilder&, Tensor, Sym)>& body) {
    KernelBuilder kb("bad");
    Sym M = kb.size("M");
    Sym BM = kb.tile("BM");
    Tensor X = kb.tensor("X", {M, M, M}, Access::InOut);
    kb.parallel(ceil_div(M, BM), [&](Sym i) { body(kb, X, BM * i); });
    try {
      kb.finish();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message([](KernelBuilder& kb, Tensor X, Sym) { kb.load(X, {0, 0}, 4, 4); })
                .find("load of tensor X at 2 coordinates; its rank is 3"),
            std::string::npos);
  EXPECT_NE(message([](KernelBuilder& kb, Tensor X, Sym) {
              kb.reduce_sum(kb.load(X, {0, 0, 0}, 4, 4), 2);
            }).find("reduce axis 2 is neither 0 (rows) nor 1 (columns)"),
            std::string::npos);
  EXPECT_NE(message([](KernelBuilder& kb, Tensor X, Sym) {
              kb.load(X, {0, 0, 0}, {1, 1}, 4, 4);
            }).find("must span different dimensions"),
            std::string::npos);
}

}  // namespace
}  // namespace tessel
