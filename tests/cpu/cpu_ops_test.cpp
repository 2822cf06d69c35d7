// The cpu target on GroupIR beyond GEMM, one program per feature, written by hand
// in the shape the lowering produces: strided and offset windows, padding, transposed
// loads, replicated fragments, every elementwise op with broadcasting, the three
// reduction modes, fragment stores into shared buffers of each layout feeding an
// mma, 16-bit and f64 storage, and 1-D and 3-D grids. Each runs on the cpu and the
// sim against a double-precision reference (group_run.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "group_run.h"
#include "target/cpu/cpu_emit.h"
#include "tessel/error.h"

namespace tessel::testing {
namespace {

class CpuOps : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/tessel-test-cpu-ops-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    setenv("TESSEL_CACHE_DIR", dir, 1);
    set_cpu_scratch_poison(true);  // a read of staging or fragments never written shows
  }
  void TearDown() override {
    set_cpu_scratch_poison(false);
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string dir_;
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
  return s;
}

// Row softmax over a 2x2 worker grid: the row max and sum are split over the worker
// columns, so each goes through per-worker partials in shared scratch and a combine
// into a column vector replicated along the worker columns. Ragged edges load as
// -inf, which exp turns into 0 in the sum.
const char* kSoftmax = R"(
group softmax(sizes M, N, ldx, ldy; tensors X: f32[M, N] strides(ldx, 1) in, Y: f32[M, N] strides(ldy, 1) out; scalars) {
  grid i = ceildiv(M, 8)
  workers 4 grid 2x2 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Y: global f32 tensor Y
  buffer Rs: shared f32[8, 2] row panel 1 versions 1
  buffer x: private f32[8, 16] row panel 1 versions 1
  buffer m: private f32[8, 1] row panel 1 versions 1
  buffer s: private f32[8, 1] row panel 1 versions 1
  buffer e: private f32[8, 16] row panel 1 versions 1
  buffer y: private f32[8, 16] row panel 1 versions 1
  frag.load #0 x <- X[(i * 8), 0] strides(ldx, 1) pad -inf guard src(M, N)
  reduce.max #1 Rs[0, 0] <- x axis 1 partial
  fence #2
  reduce.max #3 m <- Rs[0, 0] axis 1 combine 8x2
  fence #4
  ew #5 e = sub x, m
  ew #6 e = exp e
  reduce.sum #7 Rs[0, 0] <- e axis 1 partial
  fence #8
  reduce.sum #9 s <- Rs[0, 0] axis 1 combine 8x2
  ew #10 y = div e, s
  frag.store #11 Y[(i * 8), 0] strides(ldy, 1) <- y guard dst(M, N)
}
)";

void softmax_reference(const Tensors& in, std::map<std::string, std::vector<double>>& out) {
  const HostTensor& x = in.at("X");
  int64_t m = x.layout.shape[0], n = x.layout.shape[1];
  for (int64_t r = 0; r < m; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < n; ++c) mx = std::max(mx, x({r, c}));
    for (int64_t c = 0; c < n; ++c) sum += std::exp(x({r, c}) - mx);
    for (int64_t c = 0; c < n; ++c) out["Y"].push_back(std::exp(x({r, c}) - mx) / sum);
  }
}

TEST_F(CpuOps, RowSoftmaxThroughPartialsAndCombine) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{37, 13}, {16, 16}, {1, 1}, {9, 5}}) {
    SCOPED_TRACE("M = " + std::to_string(m) + ", N = " + std::to_string(n));
    GroupCase c;
    c.text = kSoftmax;
    c.sizes = {{"M", m}, {"N", n}, {"ldx", n + 3}, {"ldy", n + 2}};
    c.reference = softmax_reference;
    c.lo = -4, c.hi = 4;
    run_group_case(c);
  }
}

// A batched transpose with a column-vector scale, over a 3-D grid (batch, rows,
// columns), reading the same tensor two ways: a transposed fragment load, and a
// window whose column stride is not 1. Batches are at an offset. The result also
// goes through shared memory and back transposed (how the lowering transposes a
// tile) to a second output.
//   Y[b, r, c] = X[b, c, r] * (1 + v[c]),  Z[b, c, r] = Y[b, r, c]
const char* kBatchedTranspose = R"(
group bt(sizes B, M, N, sxb, ldx, syb, ldy, szb, ldz; tensors X: f32[B, N, M] strides(sxb, ldx, 1) in, Y: f32[B, M, N] strides(syb, ldy, 1) out, v: f32[N] strides(1) in, Z: f32[B, N, M] strides(szb, ldz, 1) out; scalars) {
  grid b = B, i = ceildiv(M, 8), j = ceildiv(N, 16)
  workers 4 grid 2x2 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Y: global f32 tensor Y
  buffer v: global f32 tensor v
  buffer Z: global f32 tensor Z
  buffer Ts: shared f32[8, 16] row panel 1 versions 1
  buffer a: private f32[8, 16] row panel 1 versions 1
  buffer t: private f32[8, 16] row panel 1 versions 1
  buffer c: private f32[1, 16] row panel 1 versions 1
  buffer y: private f32[8, 16] row panel 1 versions 1
  buffer z: private f32[16, 8] row panel 1 versions 1
  frag.load #0 a <- X[(j * 16), (i * 8)] strides(ldx, 1) offset((b * sxb)) transpose guard src(N, M)
  frag.load #1 t <- X[(i * 8), (j * 16)] strides(1, ldx) offset((b * sxb)) guard src(M, N)
  frag.load #2 c <- v[0, (j * 16)] strides(0, 1) guard src(_, N)
  ew #3 y = mul t, c
  ew #4 y = add y, a
  frag.store #5 Y[(i * 8), (j * 16)] strides(ldy, 1) offset((b * syb)) <- y guard dst(M, N)
  frag.store #6 Ts[0, 0] <- y
  fence #7
  frag.load #8 z <- Ts[0, 0] transpose
  frag.store #9 Z[(j * 16), (i * 8)] strides(ldz, 1) offset((b * szb)) <- z guard dst(N, M)
}
)";

TEST_F(CpuOps, BatchedTransposeStridedOffsetAndThreeDimensionalGrid) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{19, 21}, {8, 16}, {3, 40}}) {
    SCOPED_TRACE("M = " + std::to_string(m) + ", N = " + std::to_string(n));
    const int64_t b = 3, ldx = m + 1, ldy = n + 3, ldz = m + 2;
    GroupCase c;
    c.text = kBatchedTranspose;
    c.sizes = {{"B", b},          {"M", m},   {"N", n},           {"sxb", n * ldx + 5}, {"ldx", ldx},
               {"syb", m * ldy}, {"ldy", ldy}, {"szb", n * ldz + 1}, {"ldz", ldz}};
    c.reference = [&](const Tensors& in, std::map<std::string, std::vector<double>>& out) {
      const HostTensor &x = in.at("X"), &v = in.at("v");
      for (int64_t q = 0; q < b; ++q)
        for (int64_t r = 0; r < m; ++r)
          for (int64_t k = 0; k < n; ++k) out["Y"].push_back(x({q, k, r}) * v({k}) + x({q, k, r}));
      for (int64_t q = 0; q < b; ++q)
        for (int64_t k = 0; k < n; ++k)
          for (int64_t r = 0; r < m; ++r) out["Z"].push_back(x({q, k, r}) * v({k}) + x({q, k, r}));
    };
    run_group_case(c);
  }
}

// A column max through a staging copy whose padding is -inf, accumulated over a
// loop: the partials run along the worker rows (axis 0), the result is a row vector
// replicated along them, and only its owners store it.
const char* kColumnMax = R"(
group colmax(sizes M, N, ldx; tensors X: f32[M, N] strides(ldx, 1) in, Y: f32[N] strides(1) out; scalars) {
  grid j = ceildiv(N, 16)
  workers 4 grid 2x2 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Y: global f32 tensor Y
  buffer Xs: shared f32[8, 16] row panel 1 versions 1
  buffer Rs: shared f32[2, 16] row panel 1 versions 1
  buffer x: private f32[8, 16] row panel 1 versions 1
  buffer m: private f32[1, 16] row panel 1 versions 1
  buffer acc: private f32[1, 16] row panel 1 versions 1
  frag.fill #0 acc = -inf
  for #1 k = 0 to ceildiv(M, 8) {
    copy #2 X[(k * 8), (j * 16)] strides(ldx, 1) -> Xs[0, 0] 8x16 batch 4 pad -inf guard src(M, N)
    fence #3
    frag.load #4 x <- Xs[0, 0]
    reduce.max #5 Rs[0, 0] <- x axis 0 partial
    fence #6
    reduce.max #7 m <- Rs[0, 0] axis 0 combine 2x16
    ew #8 acc = max acc, m
  }
  frag.store #9 Y[0, (j * 16)] strides(0, 1) <- acc guard dst(_, N)
}
)";

TEST_F(CpuOps, ColumnMaxWithCopyPaddingAndReplicatedOwners) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{29, 37}, {8, 16}, {1, 3}}) {
    SCOPED_TRACE("M = " + std::to_string(m) + ", N = " + std::to_string(n));
    GroupCase c;
    c.text = kColumnMax;
    c.sizes = {{"M", m}, {"N", n}, {"ldx", n + 1}};
    c.lo = -3, c.hi = -1;  // all negative: padding with 0 instead of -inf would show
    c.reference = [&](const Tensors& in, std::map<std::string, std::vector<double>>& out) {
      const HostTensor& x = in.at("X");
      for (int64_t k = 0; k < n; ++k) {
        double mx = -INFINITY;
        for (int64_t r = 0; r < m; ++r) mx = std::max(mx, x({r, k}));
        out["Y"].push_back(mx);
      }
    };
    run_group_case(c);
  }
}

// A masked row sum (columns below a scalar-free index bound), reduced locally: the
// worker grid is 4x1, so no worker column splits a row. Index, Cmp and Select make
// the mask; the sum and the min land in column vectors stored to two outputs.
//   S[r] = sum over c < N of (c < K ? X[r, c] : 0) + r,  L[r] = min over c of X[r, c]
const char* kMaskedRowSum = R"(
group rowsum(sizes M, N, K, ldx; tensors X: f32[M, N] strides(ldx, 1) in, S: f32[M] strides(1) out, L: f32[M, 1] strides(1, 1) out; scalars) {
  grid i = ceildiv(M, 16)
  workers 4 grid 4x1 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer S: global f32 tensor S
  buffer L: global f32 tensor L
  buffer x: private f32[16, 32] row panel 1 versions 1
  buffer col: private f32[16, 32] row panel 1 versions 1
  buffer row: private f32[16, 1] row panel 1 versions 1
  buffer keep: private f32[16, 32] row panel 1 versions 1
  buffer y: private f32[16, 32] row panel 1 versions 1
  buffer s: private f32[16, 1] row panel 1 versions 1
  buffer l: private f32[16, 1] row panel 1 versions 1
  frag.load #0 x <- X[(i * 16), 0] strides(ldx, 1) pad inf guard src(M, N)
  ew #1 col = index axis 1
  ew #2 keep = cmp.lt col, #(K)
  ew #3 y = select keep, x, 0
  reduce.sum #4 s = y axis 1
  ew #5 row = index axis 0
  ew #6 row = add row, #((i * 16))
  ew #7 s = add s, row
  reduce.min #8 l = x axis 1
  frag.store #9 S[(i * 16), 0] strides(1, 0) <- s guard dst(M, _)
  frag.store #10 L[(i * 16), 0] strides(1, 1) <- l guard dst(M, 1)
}
)";

TEST_F(CpuOps, MaskedRowSumReducedLocallyWithIndexCmpSelect) {
  const int64_t m = 45, n = 27, k = 19;
  GroupCase c;
  c.text = kMaskedRowSum;
  c.sizes = {{"M", m}, {"N", n}, {"K", k}, {"ldx", n + 4}};
  c.tolerance = 1e-5;
  c.reference = [&](const Tensors& in, std::map<std::string, std::vector<double>>& out) {
    const HostTensor& x = in.at("X");
    for (int64_t r = 0; r < m; ++r) {
      double s = r, l = INFINITY;
      for (int64_t q = 0; q < n; ++q) {
        if (q < k) s += x({r, q});
        l = std::min(l, x({r, q}));
      }
      out["S"].push_back(s);
      out["L"].push_back(l);
    }
  };
  run_group_case(c);
}


// Every elementwise op, each result stored to its own slice of Y (at an offset):
// operands broadcast from a column vector [8, 1], a row vector [1, 16], a scalar,
// a constant and an index expression; Cast rounds to bf16 / f16 to nearest even.
struct EwCase {
  std::string op;  // the right-hand side in GroupIR
  std::function<double(double x, double z, double rv, double cv, double s, int64_t r, int64_t c)> want;
};

const std::vector<EwCase>& ew_cases() {
  static const std::vector<EwCase> cases = {
      {"add x, z", [](double x, double z, double, double, double, int64_t, int64_t) { return x + z; }},
      {"sub x, rv", [](double x, double, double rv, double, double, int64_t, int64_t) { return x - rv; }},
      {"mul z, cv", [](double, double z, double, double cv, double, int64_t, int64_t) { return z * cv; }},
      {"div z, x", [](double x, double z, double, double, double, int64_t, int64_t) { return z / x; }},
      {"max z, $s", [](double, double z, double, double, double s, int64_t, int64_t) { return std::max(z, s); }},
      {"min z, 0.25", [](double, double z, double, double, double, int64_t, int64_t) { return std::min(z, 0.25); }},
      {"exp z", [](double, double z, double, double, double, int64_t, int64_t) { return std::exp(z); }},
      {"exp2 z", [](double, double z, double, double, double, int64_t, int64_t) { return std::exp2(z); }},
      {"log x", [](double x, double, double, double, double, int64_t, int64_t) { return std::log(x); }},
      {"neg z", [](double, double z, double, double, double, int64_t, int64_t) { return -z; }},
      {"abs z", [](double, double z, double, double, double, int64_t, int64_t) { return std::fabs(z); }},
      {"sqrt x", [](double x, double, double, double, double, int64_t, int64_t) { return std::sqrt(x); }},
      {"rsqrt x", [](double x, double, double, double, double, int64_t, int64_t) { return 1 / std::sqrt(x); }},
      {"recip x", [](double x, double, double, double, double, int64_t, int64_t) { return 1 / x; }},
      {"tanh z", [](double, double z, double, double, double, int64_t, int64_t) { return std::tanh(z); }},
      {"cmp.gt z, cv", [](double, double z, double, double cv, double, int64_t, int64_t) { return z > cv ? 1.0 : 0.0; }},
      {"cmp.le x, 1", [](double x, double, double, double, double, int64_t, int64_t) { return x <= 1 ? 1.0 : 0.0; }},
      {"cmp.ge z, $s", [](double, double z, double, double, double s, int64_t, int64_t) { return z >= s ? 1.0 : 0.0; }},
      {"cmp.eq z, z", [](double, double, double, double, double, int64_t, int64_t) { return 1.0; }},
      {"cmp.ne x, z", [](double x, double z, double, double, double, int64_t, int64_t) { return x != z ? 1.0 : 0.0; }},
      {"cmp.lt rv, cv", [](double, double, double rv, double cv, double, int64_t, int64_t) { return rv < cv ? 1.0 : 0.0; }},
      {"cast.bf16 z", [](double, double z, double, double, double, int64_t, int64_t) { return bf16_to_float(float_to_bf16(float(z))); }},
      {"cast.f16 z", [](double, double z, double, double, double, int64_t, int64_t) { return f16_to_float(float_to_f16(float(z))); }},
      {"cast.f32 z", [](double, double z, double, double, double, int64_t, int64_t) { return z; }},
      {"copy z", [](double, double z, double, double, double, int64_t, int64_t) { return z; }},
      {"add rv, cv", [](double, double, double rv, double cv, double, int64_t, int64_t) { return rv + cv; }},
      {"sub $s, z", [](double, double z, double, double, double s, int64_t, int64_t) { return s - z; }},
      {"mul z, #((i * 8))", [](double, double z, double, double, double, int64_t r, int64_t) { return z * double(r / 8 * 8); }},
      {"index axis 0", [](double, double, double, double, double, int64_t r, int64_t) { return double(r % 8); }},
      {"index axis 1", [](double, double, double, double, double, int64_t, int64_t c) { return double(c % 16); }},
  };
  return cases;
}

std::string ew_program() {
  std::string s = R"(
group zoo(sizes M, N, Q, ldx, syq, ldy; tensors X: f32[M, N] strides(ldx, 1) in, Z: f32[M, N] strides(ldx, 1) in, rv: f32[M] strides(1) in, cv: f32[N] strides(1) in, Y: f32[Q, M, N] strides(syq, ldy, 1) out; scalars s: f32) {
  grid i = ceildiv(M, 8), j = ceildiv(N, 16)
  workers 4 grid 2x2 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Z: global f32 tensor Z
  buffer RV: global f32 tensor rv
  buffer CV: global f32 tensor cv
  buffer Y: global f32 tensor Y
  buffer x: private f32[8, 16] row panel 1 versions 1
  buffer z: private f32[8, 16] row panel 1 versions 1
  buffer rv: private f32[8, 1] row panel 1 versions 1
  buffer cv: private f32[1, 16] row panel 1 versions 1
  buffer y: private f32[8, 16] row panel 1 versions 1
  frag.load #0 x <- X[(i * 8), (j * 16)] strides(ldx, 1) guard src(M, N)
  frag.load #1 z <- Z[(i * 8), (j * 16)] strides(ldx, 1) guard src(M, N)
  frag.load #2 rv <- RV[(i * 8), 0] strides(1, 0) guard src(M, _)
  frag.load #3 cv <- CV[0, (j * 16)] strides(0, 1) guard src(_, N)
)";
  int id = 4;
  for (size_t q = 0; q < ew_cases().size(); ++q) {
    s += "  ew #" + std::to_string(id++) + " y = " + ew_cases()[q].op + "\n";
    s += "  frag.store #" + std::to_string(id++) + " Y[(i * 8), (j * 16)] strides(ldy, 1) offset((" +
         std::to_string(q) + " * syq)) <- y guard dst(M, N)\n";
  }
  return s + "}\n";
}

TEST_F(CpuOps, EveryElementwiseOpWithBroadcastOperands) {
  const int64_t m = 21, n = 35, q = static_cast<int64_t>(ew_cases().size());
  GroupCase c;
  c.text = ew_program();
  c.sizes = {{"M", m}, {"N", n}, {"Q", q}, {"ldx", n + 2}, {"syq", m * (n + 1) + 3}, {"ldy", n + 1}};
  c.scalars = {{"s", 0.3}};
  c.ranges = {{"X", {0.5, 2}}};
  c.reference = [&](const Tensors& in, std::map<std::string, std::vector<double>>& out) {
    const HostTensor &x = in.at("X"), &z = in.at("Z"), &rv = in.at("rv"), &cv = in.at("cv");
    for (int64_t k = 0; k < q; ++k)
      for (int64_t r = 0; r < m; ++r)
        for (int64_t col = 0; col < n; ++col)
          out["Y"].push_back(ew_cases()[k].want(x({r, col}), z({r, col}), rv({r}), cv({col}), 0.3f, r, col));
  };
  run_group_case(c);
}


// Computed mma operands: fragments transformed in registers are stored into shared
// buffers in the layouts an mma reads (A row-major or in row panels, B in column
// panels of the atom's width or row-major), then multiplied; the loop runs K in
// steps with a ragged tail that the loads pad with 0.
//   C = tanh(A) * (2 B)
const char* kComputedMma = R"(
group mm(sizes M, N, K, lda, ldb, ldc; tensors A: f32[M, K] strides(lda, 1) in, B: f32[K, N] strides(ldb, 1) in, C: f32[M, N] strides(ldc, 1) out; scalars) {
  grid i = ceildiv(M, 24), j = ceildiv(N, 64)
  workers 4 grid 2x2 lanes 1
  atom fma ATOM
  buffer A: global f32 tensor A
  buffer B: global f32 tensor B
  buffer C: global f32 tensor C
  buffer As: shared f32[24, 16] A_LAYOUT versions 1
  buffer Bs: shared f32[16, 64] B_LAYOUT versions 1
  buffer a: private f32[24, 16] row panel 1 versions 1
  buffer b: private f32[16, 64] row panel 1 versions 1
  buffer acc: private f32[24, 64] row panel 1 versions 1
  frag.fill #0 acc = 0
  for #1 k = 0 to ceildiv(K, 16) {
    frag.load #2 a <- A[(i * 24), (k * 16)] strides(lda, 1) guard src(M, K)
    frag.load #3 b <- B[(k * 16), (j * 64)] strides(ldb, 1) guard src(K, N)
    ew #4 a = tanh a
    ew #5 b = mul b, 2
    frag.store #6 As[0, 0] <- a
    frag.store #7 Bs[0, 0] <- b
    fence #8
    mma #9 acc += As[0, 0] * Bs[0, 0] 24x64x16
    fence #10
  }
  frag.store #11 C[(i * 24), (j * 64)] strides(ldc, 1) <- acc guard dst(M, N)
}
)";

TEST_F(CpuOps, ComputedMmaOperandsStoredIntoSharedLayouts) {
  struct Variant { const char *atom, *a_layout, *b_layout; };
  for (Variant v : {Variant{"12x32", "row panel 1", "colpanels panel 32"},
                    Variant{"1x1", "rowpanels panel 4", "row panel 1"},
                    Variant{"12x32", "rowpanels panel 6", "colpanels panel 16"}}) {
    SCOPED_TRACE(std::string("atom ") + v.atom + ", As " + v.a_layout + ", Bs " + v.b_layout);
    const int64_t m = 53, n = 70, k = 37;
    GroupCase c;
    c.text = replace_all(replace_all(replace_all(kComputedMma, "ATOM", v.atom), "A_LAYOUT", v.a_layout),
                         "B_LAYOUT", v.b_layout);
    c.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k + 1}, {"ldb", n}, {"ldc", n + 5}};
    c.tolerance = 1e-5;
    c.reference = [&](const Tensors& in, std::map<std::string, std::vector<double>>& out) {
      const HostTensor &a = in.at("A"), &b = in.at("B");
      for (int64_t r = 0; r < m; ++r)
        for (int64_t q = 0; q < n; ++q) {
          double sum = 0;
          for (int64_t l = 0; l < k; ++l) sum += std::tanh(a({r, l})) * 2 * b({l, q});
          out["C"].push_back(sum);
        }
    };
    run_group_case(c);
  }
}

// An accumulator zero-filled before its k loop and then reduced whole, padding
// included: row sums of C = A B. Where a tile is ragged (N = 20 of 64 columns) the
// mma leaves the columns past its valid part as they were, so the fill must run and
// they must read 0; where every tile is whole the cpu target skips the fill and the
// first k step's micro-kernels overwrite the fragment (cpu_emit.cpp,
// find_first_writes). The scratch is NaN-poisoned, so a skipped fill shows.
const char* kMmaRowSums = R"(
group mmrows(sizes M, N, K, lda, ldb, ldc; tensors A: f32[M, K] strides(lda, 1) in, B: f32[K, N] strides(ldb, 1) in, C: f32[M, N] strides(ldc, 1) out, S: f32[M] strides(1) out; scalars) {
  grid i = ceildiv(M, 24)
  workers 1 grid 1x1 lanes 1
  atom fma 12x32
  buffer A: global f32 tensor A
  buffer B: global f32 tensor B
  buffer C: global f32 tensor C
  buffer S: global f32 tensor S
  buffer As: shared f32[24, 16] row panel 1 versions 1
  buffer Bs: shared f32[16, 64] colpanels panel 32 versions 1
  buffer acc: private f32[24, 64] row panel 1 versions 1
  buffer s: private f32[24, 1] row panel 1 versions 1
  frag.fill #0 acc = 0
  for #1 k = 0 to ceildiv(K, 16) {
    copy #2 A[(i * 24), (k * 16)] strides(lda, 1) -> As[0, 0] 24x16 batch 4 guard src(M, K)
    copy #3 B[(k * 16), 0] strides(ldb, 1) -> Bs[0, 0] 16x64 batch 4 guard src(K, N)
    fence #4
    mma #5 acc += As[0, 0] * Bs[0, 0] 24x64x16 valid(min(24, (M - (i * 24))), min(64, N), min(16, (K - (k * 16))))
    fence #6
  }
  reduce.sum #7 s = acc axis 1
  frag.store #8 C[(i * 24), 0] strides(ldc, 1) <- acc guard dst(M, N)
  frag.store #9 S[(i * 24), 0] strides(1, 0) <- s guard dst(M, _)
}
)";

TEST_F(CpuOps, ZeroFilledAccumulatorReducedWithItsPadding) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{53, 20}, {48, 64}}) {
    SCOPED_TRACE("M = " + std::to_string(m) + ", N = " + std::to_string(n));
    const int64_t k = 37;
    GroupCase c;
    c.text = kMmaRowSums;
    c.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k + 1}, {"ldb", n}, {"ldc", n + 3}};
    c.tolerance = 1e-5;
    c.reference = [&](const Tensors& in, std::map<std::string, std::vector<double>>& out) {
      const HostTensor &a = in.at("A"), &b = in.at("B");
      for (int64_t r = 0; r < m; ++r) {
        double row = 0;
        for (int64_t q = 0; q < n; ++q) {
          double sum = 0;
          for (int64_t l = 0; l < k; ++l) sum += a({r, l}) * b({l, q});
          out["C"].push_back(sum);
          row += sum;
        }
        out["S"].push_back(row);
      }
    };
    run_group_case(c);
  }
  // The emitted unit skips the fill only under the whole-tile condition.
  std::string code = emit_cpu(parse_group_program(kMmaRowSums));
  EXPECT_NE(code.find("const bool tsl_whole_0 = "), std::string::npos) << code;
  EXPECT_NE(code.find("if (!tsl_whole_0)"), std::string::npos);
  EXPECT_NE(code.find("const int overwrite = (tsl_whole_0 && v_k == (INT64_C(0)));"), std::string::npos);
}

// Storage types: a bf16 tensor staged through a bf16 shared buffer, results stored
// to f16 and bf16 tensors (rounded to nearest even), and an f64 tensor computed in
// f64 fragments (exp in double precision, plus an f32 fragment).
const char* kStorage = R"(
group st(sizes M, N, ldx, ldy; tensors X: bf16[M, N] strides(ldx, 1) in, D: f64[M, N] strides(ldx, 1) in, Y: f16[M, N] strides(ldy, 1) out, H: bf16[M, N] strides(ldy, 1) out, E: f64[M, N] strides(ldy, 1) out; scalars) {
  grid i = ceildiv(M, 8), j = ceildiv(N, 16)
  workers 2 grid 1x2 lanes 1
  atom fma 1x1
  buffer X: global bf16 tensor X
  buffer D: global f64 tensor D
  buffer Y: global f16 tensor Y
  buffer H: global bf16 tensor H
  buffer E: global f64 tensor E
  buffer Xs: shared bf16[8, 16] row panel 1 versions 1
  buffer x: private f32[8, 16] row panel 1 versions 1
  buffer y: private f32[8, 16] row panel 1 versions 1
  buffer d: private f64[8, 16] row panel 1 versions 1
  buffer e: private f64[8, 16] row panel 1 versions 1
  copy #0 X[(i * 8), (j * 16)] strides(ldx, 1) -> Xs[0, 0] 8x16 batch 4 guard src(M, N)
  fence #1
  frag.load #2 x <- Xs[0, 0]
  ew #3 y = mul x, 3.3
  frag.store #4 Y[(i * 8), (j * 16)] strides(ldy, 1) <- y guard dst(M, N)
  frag.store #5 H[(i * 8), (j * 16)] strides(ldy, 1) <- y guard dst(M, N)
  frag.load #6 d <- D[(i * 8), (j * 16)] strides(ldx, 1) guard src(M, N)
  ew #7 e = exp d
  ew #8 e = add e, x
  frag.store #9 E[(i * 8), (j * 16)] strides(ldy, 1) <- e guard dst(M, N)
}
)";

TEST_F(CpuOps, SixteenBitAndF64Storage) {
  const int64_t m = 13, n = 29;
  GroupCase c;
  c.text = kStorage;
  c.sizes = {{"M", m}, {"N", n}, {"ldx", n + 3}, {"ldy", n + 1}};
  c.tolerance = 1e-13;  // f64 results in f64; the 16-bit ones are exact roundings
  c.sim = false;        // the sim reads every tensor as f32
  c.reference = [&](const Tensors& in, std::map<std::string, std::vector<double>>& out) {
    const HostTensor &x = in.at("X"), &d = in.at("D");
    for (int64_t r = 0; r < m; ++r)
      for (int64_t q = 0; q < n; ++q) {
        float y = static_cast<float>(x({r, q})) * 3.3f;
        out["Y"].push_back(f16_to_float(float_to_f16(y)));
        out["H"].push_back(bf16_to_float(float_to_bf16(y)));
        out["E"].push_back(std::exp(d({r, q})) + x({r, q}));
      }
  };
  run_group_case(c);
  // The same program over f32 tensors, for the sim's race check.
  std::string f32 = c.text;
  for (const char* t : {"bf16", "f16", "f64"}) f32 = replace_all(f32, std::string(t) + "[", "f32[");
  for (const char* t : {"global bf16", "global f16", "global f64"}) f32 = replace_all(f32, t, "global f32");
  expect_no_races(f32, c);
}

// Launch checks: a written tensor whose elements would share addresses (a stride 0
// broadcast view, or rows that overlap) is refused naming the tensor, the dim and
// the numbers; a read-only broadcast view is fine.
TEST_F(CpuOps, TensorLayoutsAreCheckedAtLaunch) {
  GroupCase c;
  c.text = kSoftmax;
  c.sizes = {{"M", 5}, {"N", 7}, {"ldx", 0}, {"ldy", 7}};  // every row of X is row 0
  c.reference = [&](const Tensors& in, std::map<std::string, std::vector<double>>& out) {
    const HostTensor& x = in.at("X");
    for (int64_t r = 0; r < 5; ++r) {
      double mx = -INFINITY, sum = 0;
      for (int64_t q = 0; q < 7; ++q) mx = std::max(mx, x({0, q}));
      for (int64_t q = 0; q < 7; ++q) sum += std::exp(x({0, q}) - mx);
      for (int64_t q = 0; q < 7; ++q) out["Y"].push_back(std::exp(x({0, q}) - mx) / sum);
    }
  };
  run_group_case(c);

  GroupProgram p = parse_group_program(kSoftmax);
  auto kernel = compile_cpu(p);
  std::vector<float> x(64, 1.0f), y(64, 0.0f);
  auto expect_refused = [&](int64_t ldy, const std::string& needle) {
    LaunchArgs a;
    a.sizes = {{"M", 5}, {"N", 7}, {"ldx", 7}, {"ldy", ldy}};
    a.tensors = {{"X", x.data()}, {"Y", y.data()}};
    try {
      kernel->run(a, 1);
      ADD_FAILURE() << "no error for ldy " << ldy;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    for (float v : y) ASSERT_EQ(v, 0.0f) << "a refused launch wrote its output";
  };
  expect_refused(0, "tensor 'Y': it is written (out) but stride of dim 0 (ldy) is 0 with extent 5");
  expect_refused(3, "tensor 'Y': it is written (out) but its elements overlap: stride of dim 0 (ldy) is 3");
  expect_refused(-1, "size parameter 'ldy' is negative (-1)");
}

// What the cpu target refuses in a program: clear typed errors naming the op.
TEST_F(CpuOps, MalformedProgramsAreVerifyErrors) {
  GroupProgram p = parse_group_program(kSoftmax);
  auto expect_verify = [](GroupProgram q, const std::string& needle) {
    try {
      compile_cpu(q);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Verify) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  GroupProgram q = p;
  q.body[0].src.row_stride = nullptr;  // a global window without its strides
  expect_verify(q, "op #0: window of tensor 'X' has no row or column stride");
  q = p;
  q.body[5].operands[1].frag = q.find_buffer("Rs");  // a shared buffer as an operand
  expect_verify(q, "op #5: 'Rs' is not a fragment");
  q = p;
  q.body[9].axis = 2;
  expect_verify(q, "reduce #9: axis 2 is not 0 or 1");
}


// The cpu target's own fp32 exp and exp2 (vectorizable; the prelude of cpu_emit.cpp)
// across their whole range: overflow to inf, gradual underflow through the
// subnormals to 0, and inf, -inf, NaN, +-0 as libm has them.
const char* kExp = R"(
group ex(sizes N; tensors X: f32[N] strides(1) in, Y: f32[N] strides(1) out, Z: f32[N] strides(1) out; scalars) {
  grid j = ceildiv(N, 64)
  workers 1 grid 1x1 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Y: global f32 tensor Y
  buffer Z: global f32 tensor Z
  buffer x: private f32[1, 64] row panel 1 versions 1
  buffer y: private f32[1, 64] row panel 1 versions 1
  frag.load #0 x <- X[0, (j * 64)] strides(0, 1) guard src(_, N)
  ew #1 y = exp x
  frag.store #2 Y[0, (j * 64)] strides(0, 1) <- y guard dst(_, N)
  ew #3 y = exp2 x
  frag.store #4 Z[0, (j * 64)] strides(0, 1) <- y guard dst(_, N)
}
)";

TEST_F(CpuOps, ExpAndExp2AcrossTheirRange) {
  const std::vector<double> special = {-INFINITY, INFINITY, NAN, 0.0, -0.0, 1e-30, -1e-30,
                                       88.72, 88.7228, 88.73, 89, 127.9, 128, 128.1,
                                       -87.33, -87.34, -100, -103.9, -104, -149.5, -150, -151};
  const int64_t n = 20000;
  GroupCase c;
  c.text = kExp;
  c.sizes = {{"N", n}};
  c.sim = false;  // the point is the cpu's own exp; the sim takes libm's
  c.edit_inputs = [&](Tensors& t) {
    HostTensor& x = t.at("X");
    for (int64_t i = 0; i < n; ++i)
      x.set(i, i < static_cast<int64_t>(special.size()) ? special[i] : -160.0 + 300.0 * double(i) / double(n));
  };
  c.reference = [&](const Tensors& in, std::map<std::string, std::vector<double>>& out) {
    const HostTensor& x = in.at("X");
    for (int64_t i = 0; i < n; ++i) out["Y"].push_back(static_cast<float>(std::exp(x({i}))));
    for (int64_t i = 0; i < n; ++i) out["Z"].push_back(static_cast<float>(std::exp2(x({i}))));
  };
  // Within 2 ulp: relative 2.4e-7, and a subnormal result within 2^-148.
  c.tolerance = 2.4e-7;
  c.relative = true;
  c.absolute = std::ldexp(1.0, -148);
  run_group_case(c);
  expect_no_races(kExp, c);
}

}  // namespace
}  // namespace tessel::testing
