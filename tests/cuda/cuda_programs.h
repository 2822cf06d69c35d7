// GroupIR programs for the cuda target's fma-atom ops (reductions in their three
// modes, broadcasting, every elementwise op, casts, padding, transposed loads,
// stores into every shared layout, strided and batched tensors, 1-3 D grids), each
// with an FP64 oracle of what it writes. tests/cuda compiles them through NVRTC and
// runs them on the sim (races, and the oracle); tests/gpu runs them on the device.
//
// Tensors are filled by fill_inputs: random values in [-1, 1] away from zero (rounded
// to the tensor's dtype), outputs NaN-poisoned everywhere, their padding included.
// The oracle writes the expected value of every element the program writes; every
// other element must stay poison.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/group_ir.h"
#include "ir/group_text.h"
#include "runtime/launch_args.h"
#include "runtime/tensor_check.h"
#include "target/sim/float_round.h"

namespace tessel::test {

// One tensor on the host: its evaluated layout and its values (as stored: already
// rounded to the dtype), by storage offset.
struct HostTensor {
  TensorParam param;
  TensorLayout layout;
  std::vector<double> v;
  int64_t offset(std::initializer_list<int64_t> idx) const {
    int64_t o = 0, d = 0;
    for (int64_t i : idx) o += i * layout.strides[d++];
    return o;
  }
  double at(std::initializer_list<int64_t> idx) const { return v[offset(idx)]; }
  void set(std::initializer_list<int64_t> idx, double x) { v[offset(idx)] = x; }
  int64_t dim(int d) const { return layout.shape[d]; }
};
using HostTensors = std::map<std::string, HostTensor>;

struct OpsCase {
  std::string name;
  std::string gir;
  std::map<std::string, int64_t> sizes;
  std::map<std::string, double> scalars;
  // Expected outputs from the inputs (outputs arrive all-NaN).
  std::function<void(const std::map<std::string, int64_t>& sizes, HostTensors& t)> oracle;
  double rtol = 2e-5, atol = 2e-6;
};

inline double round_as(DType t, double x) { return round_to(t, static_cast<float>(x)); }

// Inputs random in [-1, -0.05] u [0.05, 1], rounded to their dtype; outputs NaN.
inline HostTensors fill_inputs(const GroupProgram& p, const std::map<std::string, int64_t>& sizes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mag(0.05, 1.0);
  HostTensors out;
  for (const TensorParam& t : p.tensors) {
    HostTensor h;
    h.param = t;
    h.layout = check_tensor(t, sizes);
    h.v.assign(std::max<int64_t>(h.layout.elements, 1), NAN);
    if (t.access != Access::Out)
      for (double& x : h.v) x = round_as(t.dtype, (rng() & 1 ? 1 : -1) * mag(rng));
    out[t.name] = std::move(h);
  }
  return out;
}

// ---- the programs ----

// Row softmax of rows up to 128 long: max and sum through shared scratch
// (partial, fence, combine), broadcast sub and div, exp, -inf padding. On the
// 4x16 worker grid the combine finishes with lane shuffles; on 4x6 (24 threads,
// not whole warps) each worker reads every partial.
inline OpsCase softmax_row_case(int64_t M, int64_t N, int64_t ldx, int64_t ldy, bool odd_grid = false) {
  OpsCase c;
  c.name = "softmax_row " + std::to_string(M) + "x" + std::to_string(N) + " ldx " + std::to_string(ldx) +
           (odd_grid ? " grid 4x6" : "");
  c.gir = R"(group softmax_row(sizes M, N, ldx, ldy; tensors X: f32[M, N] strides(ldx, 1) in, Y: f32[M, N] strides(ldy, 1) out; scalars) {
  grid i = ceildiv(M, 4)
  workers 64 grid 4x16 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Y: global f32 tensor Y
  buffer Rs: shared f32[4, 16] row panel 1 versions 1
  buffer x: private f32[4, 128] row panel 1 versions 1
  buffer m: private f32[4, 1] row panel 1 versions 1
  buffer s: private f32[4, 1] row panel 1 versions 1
  frag.load #0 x <- X[(i * 4), 0] strides(ldx, 1) pad -inf guard src(M, N)
  reduce.max #1 Rs[0, 0] <- x axis 1 partial
  fence #2
  reduce.max #3 m <- Rs[0, 0] axis 1 combine 4x16
  fence #4
  ew #5 x = sub x, m
  ew #6 x = exp x
  reduce.sum #7 Rs[0, 0] <- x axis 1 partial
  fence #8
  reduce.sum #9 s <- Rs[0, 0] axis 1 combine 4x16
  ew #10 x = div x, s
  frag.store #11 Y[(i * 4), 0] strides(ldy, 1) <- x guard dst(M, N)
}
)";
  if (odd_grid) {
    auto swap = [&](const std::string& from, const std::string& to) { c.gir.replace(c.gir.find(from), from.size(), to); };
    swap("workers 64 grid 4x16", "workers 24 grid 4x6");
    swap("Rs: shared f32[4, 16]", "Rs: shared f32[4, 6]");
    swap("x: private f32[4, 128]", "x: private f32[4, 120]");
    swap("combine 4x16", "combine 4x6");
    swap("combine 4x16", "combine 4x6");
  }
  c.sizes = {{"M", M}, {"N", N}, {"ldx", ldx}, {"ldy", ldy}};
  c.oracle = [](const auto& s, HostTensors& t) {
    const HostTensor& X = t.at("X");
    HostTensor& Y = t.at("Y");
    for (int64_t r = 0; r < s.at("M"); ++r) {
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < s.at("N"); ++j) m = std::max(m, X.at({r, j}));
      for (int64_t j = 0; j < s.at("N"); ++j) sum += std::exp(X.at({r, j}) - m);
      for (int64_t j = 0; j < s.at("N"); ++j) Y.set({r, j}, std::exp(X.at({r, j}) - m) / sum);
    }
  };
  return c;
}

// Row softmax of any length: a loop over column tiles carries the running max
// and sum (online), a second loop writes.
inline OpsCase softmax_online_case(int64_t M, int64_t N, int64_t ldx, int64_t ldy) {
  OpsCase c = softmax_row_case(M, N, ldx, ldy);
  c.name = "softmax_online " + std::to_string(M) + "x" + std::to_string(N) + " ldx " + std::to_string(ldx);
  c.gir = R"(group softmax_online(sizes M, N, ldx, ldy; tensors X: f32[M, N] strides(ldx, 1) in, Y: f32[M, N] strides(ldy, 1) out; scalars) {
  grid i = ceildiv(M, 2)
  workers 128 grid 2x64 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer Y: global f32 tensor Y
  buffer Rs: shared f32[2, 64] row panel 1 versions 1
  buffer x: private f32[2, 256] row panel 1 versions 1
  buffer m: private f32[2, 1] row panel 1 versions 1
  buffer t: private f32[2, 1] row panel 1 versions 1
  buffer mn: private f32[2, 1] row panel 1 versions 1
  buffer s: private f32[2, 1] row panel 1 versions 1
  buffer u: private f32[2, 1] row panel 1 versions 1
  frag.fill #0 m = -inf
  frag.fill #1 s = 0
  for #2 k = 0 to ceildiv(N, 256) {
    frag.load #3 x <- X[(i * 2), (k * 256)] strides(ldx, 1) pad -inf guard src(M, N)
    reduce.max #4 Rs[0, 0] <- x axis 1 partial
    fence #5
    reduce.max #6 t <- Rs[0, 0] axis 1 combine 2x64
    fence #7
    ew #8 mn = max m, t
    ew #9 x = sub x, mn
    ew #10 x = exp x
    reduce.sum #11 Rs[0, 0] <- x axis 1 partial
    fence #12
    reduce.sum #13 u <- Rs[0, 0] axis 1 combine 2x64
    fence #14
    ew #15 t = sub m, mn
    ew #16 t = exp t
    ew #17 s = mul s, t
    ew #18 s = add s, u
    ew #19 m = copy mn
  }
  for #20 k = 0 to ceildiv(N, 256) {
    frag.load #21 x <- X[(i * 2), (k * 256)] strides(ldx, 1) guard src(M, N)
    ew #22 x = sub x, m
    ew #23 x = exp x
    ew #24 x = div x, s
    frag.store #25 Y[(i * 2), (k * 256)] strides(ldy, 1) <- x guard dst(M, N)
  }
}
)";
  return c;
}

// Layernorm of rows up to 64 long, output bf16: mean and variance through
// scratch, column validity from index/cmp/select, rsqrt, a scalar, index-valued
// operands, gamma and beta as replicated [1, 64] fragments of rank-1 tensors.
inline OpsCase layernorm_case(int64_t M, int64_t N, int64_t ldx, int64_t ldy) {
  OpsCase c;
  c.name = "layernorm " + std::to_string(M) + "x" + std::to_string(N) + " ldy " + std::to_string(ldy);
  c.gir = R"(group layernorm(sizes M, N, ldx, ldy; tensors X: f32[M, N] strides(ldx, 1) in, G: f32[N] strides(1) in, Bt: f32[N] strides(1) in, Y: bf16[M, N] strides(ldy, 1) out; scalars eps: f32) {
  grid i = ceildiv(M, 8)
  workers 64 grid 8x8 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer G: global f32 tensor G
  buffer Bt: global f32 tensor Bt
  buffer Y: global bf16 tensor Y
  buffer Rs: shared f32[8, 8] row panel 1 versions 1
  buffer x: private f32[8, 64] row panel 1 versions 1
  buffer c: private f32[8, 64] row panel 1 versions 1
  buffer g: private f32[1, 64] row panel 1 versions 1
  buffer b: private f32[1, 64] row panel 1 versions 1
  buffer mu: private f32[8, 1] row panel 1 versions 1
  buffer rs: private f32[8, 1] row panel 1 versions 1
  frag.load #0 x <- X[(i * 8), 0] strides(ldx, 1) guard src(M, N)
  frag.load #1 g <- G[0, 0] strides(0, 1) guard src(1, N)
  frag.load #2 b <- Bt[0, 0] strides(0, 1) guard src(1, N)
  reduce.sum #3 Rs[0, 0] <- x axis 1 partial
  fence #4
  reduce.sum #5 mu <- Rs[0, 0] axis 1 combine 8x8
  fence #6
  ew #7 mu = div mu, #(N)
  ew #8 x = sub x, mu
  ew #9 c = index axis 1
  ew #10 c = cmp.lt c, #(N)
  ew #11 x = select c, x, 0
  ew #12 c = mul x, x
  reduce.sum #13 Rs[0, 0] <- c axis 1 partial
  fence #14
  reduce.sum #15 rs <- Rs[0, 0] axis 1 combine 8x8
  ew #16 rs = div rs, #(N)
  ew #17 rs = add rs, $eps
  ew #18 rs = rsqrt rs
  ew #19 x = mul x, rs
  ew #20 x = mul x, g
  ew #21 x = add x, b
  frag.store #22 Y[(i * 8), 0] strides(ldy, 1) <- x guard dst(M, N)
}
)";
  c.sizes = {{"M", M}, {"N", N}, {"ldx", ldx}, {"ldy", ldy}};
  c.scalars = {{"eps", 1e-5}};
  c.rtol = 1.0 / 128, c.atol = 1e-5;  // bf16 output: one rounding, plus fp32 rsqrt
  c.oracle = [](const auto& s, HostTensors& t) {
    const HostTensor &X = t.at("X"), &G = t.at("G"), &B = t.at("Bt");
    HostTensor& Y = t.at("Y");
    const int64_t N = s.at("N");
    for (int64_t r = 0; r < s.at("M"); ++r) {
      double mu = 0, var = 0;
      for (int64_t j = 0; j < N; ++j) mu += X.at({r, j});
      mu /= N;
      for (int64_t j = 0; j < N; ++j) var += (X.at({r, j}) - mu) * (X.at({r, j}) - mu);
      double rstd = 1 / std::sqrt(var / N + 1e-5);
      for (int64_t j = 0; j < N; ++j) Y.set({r, j}, (X.at({r, j}) - mu) * rstd * G.at({j}) + B.at({j}));
    }
  };
  return c;
}

// Column sums and maxima over a loop of row tiles (axis-0 partial/combine into a
// replicated [1, 16] fragment, stored by its owners into rank-1 tensors), a bf16
// input, index axis 0 with an index-expression operand, and every unary op, min,
// casts to bf16 and f16 stored as f32.
inline OpsCase colstats_case(int64_t M, int64_t N, int64_t ldx, int64_t ldy) {
  OpsCase c;
  c.name = "colstats " + std::to_string(M) + "x" + std::to_string(N) + " ldx " + std::to_string(ldx);
  c.gir = R"(group colstats(sizes M, N, ldx, ldy; tensors X: bf16[M, N] strides(ldx, 1) in, Y: f32[M, N] strides(ldy, 1) out, Z: f32[M, N] strides(ldy, 1) out, S: f32[N] strides(1) out, Mx: f32[N] strides(1) out; scalars) {
  grid j = ceildiv(N, 16)
  workers 32 grid 8x4 lanes 1
  atom fma 1x1
  buffer X: global bf16 tensor X
  buffer Y: global f32 tensor Y
  buffer Z: global f32 tensor Z
  buffer S: global f32 tensor S
  buffer Mx: global f32 tensor Mx
  buffer Rs: shared f32[8, 16] row panel 1 versions 1
  buffer x: private f32[32, 16] row panel 1 versions 1
  buffer a: private f32[32, 16] row panel 1 versions 1
  buffer y: private f32[32, 16] row panel 1 versions 1
  buffer acc: private f32[1, 16] row panel 1 versions 1
  buffer mx: private f32[1, 16] row panel 1 versions 1
  buffer t: private f32[1, 16] row panel 1 versions 1
  frag.fill #0 acc = 0
  frag.fill #1 mx = -inf
  for #2 k = 0 to ceildiv(M, 32) {
    frag.load #3 x <- X[(k * 32), (j * 16)] strides(ldx, 1) guard src(M, N)
    ew #4 a = abs x
    ew #5 y = tanh x
    ew #6 t = copy 0.5
    ew #7 a = add a, 1
    ew #8 y = add y, a
    ew #9 a = log a
    ew #10 y = sub y, a
    ew #11 a = exp2 x
    ew #12 y = add y, a
    ew #13 a = abs x
    ew #14 a = sqrt a
    ew #15 y = add y, a
    ew #16 a = recip y
    ew #17 y = add y, a
    ew #18 a = neg x
    ew #19 a = min a, 0.25
    ew #20 y = add y, a
    ew #21 a = cast.bf16 y
    frag.store #22 Y[(k * 32), (j * 16)] strides(ldy, 1) <- a guard dst(M, N)
    ew #23 a = cast.f16 y
    frag.store #24 Z[(k * 32), (j * 16)] strides(ldy, 1) <- a guard dst(M, N)
    reduce.sum #25 Rs[0, 0] <- x axis 0 partial
    fence #26
    reduce.sum #27 t <- Rs[0, 0] axis 0 combine 8x16
    fence #28
    ew #29 acc = add acc, t
    ew #30 a = index axis 0
    ew #31 a = cmp.lt a, #((M - (k * 32)))
    ew #32 a = select a, x, -inf
    reduce.max #33 Rs[0, 0] <- a axis 0 partial
    fence #34
    reduce.max #35 t <- Rs[0, 0] axis 0 combine 8x16
    fence #36
    ew #37 mx = max mx, t
  }
  frag.store #38 S[0, (j * 16)] strides(0, 1) <- acc guard dst(1, N)
  frag.store #39 Mx[0, (j * 16)] strides(0, 1) <- mx guard dst(1, N)
}
)";
  c.sizes = {{"M", M}, {"N", N}, {"ldx", ldx}, {"ldy", ldy}};
  // Y and Z hold values rounded to bf16 / f16 from fp32 arithmetic: one rounding
  // step of bf16 (2^-8) covers a boundary the fp32 and FP64 paths straddle.
  c.rtol = 1.0 / 128, c.atol = 1e-4;
  c.oracle = [](const auto& s, HostTensors& t) {
    const HostTensor& X = t.at("X");
    HostTensor &Y = t.at("Y"), &Z = t.at("Z"), &S = t.at("S"), &Mx = t.at("Mx");
    for (int64_t j = 0; j < s.at("N"); ++j) {
      double sum = 0, mx = -INFINITY;
      for (int64_t r = 0; r < s.at("M"); ++r) {
        double x = X.at({r, j});
        double y = std::tanh(x) + (std::fabs(x) + 1) - std::log(std::fabs(x) + 1) + std::exp2(x) +
                   std::sqrt(std::fabs(x));
        y += 1 / y;
        y += std::min(-x, 0.25);
        Y.set({r, j}, round_as(DType::BF16, y));
        Z.set({r, j}, round_as(DType::F16, y));
        sum += x;
        mx = std::max(mx, x);
      }
      S.set({j}, sum);
      Mx.set({j}, mx);
    }
  };
  return c;
}

// Transposes: a fragment stored into a col-panel shared buffer and read back
// transposed; a transposed load straight from global; a fragment stored into a
// row-panel buffer and copied out; a column-major (strides(1, ldv)) input.
inline OpsCase transpose_case(int64_t M, int64_t N, int64_t ldx, int64_t ldv) {
  OpsCase c;
  c.name = "transpose " + std::to_string(M) + "x" + std::to_string(N) + " ldx " + std::to_string(ldx);
  c.gir = R"(group transposes(sizes M, N, ldx, ldv, ldy, ldw; tensors X: f32[M, N] strides(ldx, 1) in, V: f32[M, N] strides(1, ldv) in, Y: f32[N, M] strides(ldy, 1) out, Z: f32[N, M] strides(ldy, 1) out, W: f32[M, N] strides(ldw, 1) out; scalars) {
  grid i = ceildiv(M, 16), j = ceildiv(N, 32)
  workers 32 grid 4x8 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer V: global f32 tensor V
  buffer Y: global f32 tensor Y
  buffer Z: global f32 tensor Z
  buffer W: global f32 tensor W
  buffer T: shared f32[16, 32] colpanels panel 4 versions 1
  buffer P: shared f32[16, 32] rowpanels panel 4 versions 1
  buffer x: private f32[16, 32] row panel 1 versions 1
  buffer v: private f32[16, 32] row panel 1 versions 1
  buffer xt: private f32[32, 16] row panel 1 versions 1
  buffer xg: private f32[32, 16] row panel 1 versions 1
  frag.load #0 x <- X[(i * 16), (j * 32)] strides(ldx, 1) guard src(M, N)
  frag.store #1 T[0, 0] <- x
  fence #2
  frag.load #3 xt <- T[0, 0] transpose
  frag.store #4 Y[(j * 32), (i * 16)] strides(ldy, 1) <- xt guard dst(N, M)
  frag.load #5 xg <- X[(i * 16), (j * 32)] strides(ldx, 1) transpose guard src(M, N)
  ew #6 xg = mul xg, 2
  frag.store #7 Z[(j * 32), (i * 16)] strides(ldy, 1) <- xg guard dst(N, M)
  frag.load #8 v <- V[(i * 16), (j * 32)] strides(1, ldv) guard src(M, N)
  ew #9 x = sub x, v
  frag.store #10 P[0, 0] <- x
  fence #11
  copy #12 P[0, 0] -> W[(i * 16), (j * 32)] strides(ldw, 1) 16x32 batch 4 guard dst(M, N)
}
)";
  c.sizes = {{"M", M}, {"N", N}, {"ldx", ldx}, {"ldv", ldv}, {"ldy", M + 1}, {"ldw", N}};
  c.oracle = [](const auto& s, HostTensors& t) {
    const HostTensor &X = t.at("X"), &V = t.at("V");
    HostTensor &Y = t.at("Y"), &Z = t.at("Z"), &W = t.at("W");
    for (int64_t r = 0; r < s.at("M"); ++r)
      for (int64_t j = 0; j < s.at("N"); ++j) {
        Y.set({j, r}, X.at({r, j}));
        Z.set({j, r}, 2 * X.at({r, j}));
        W.set({r, j}, X.at({r, j}) - V.at({r, j}));
      }
  };
  return c;
}

// Copies with padding (async vector and strided scalar) into shared memory, a
// fragment load with padding, over a 3-D grid whose batch coordinate enters
// through offsets; the output is larger than the input, so the padded values
// land in it.
inline OpsCase copies_case(int64_t B, int64_t M, int64_t N, int64_t ldx) {
  OpsCase c;
  c.name = "copies " + std::to_string(B) + "x" + std::to_string(M) + "x" + std::to_string(N) + " ldx " +
           std::to_string(ldx);
  c.gir = R"(group copies(sizes B, M, N, MY, NY, ldx, sx, ldv, sv, ldy, sy; tensors X: f32[B, M, N] strides(sx, ldx, 1) in, V: f32[B, M, N] strides(sv, 1, ldv) in, Y: f32[B, MY, NY] strides(sy, ldy, 1) out; scalars) {
  grid b = B, i = ceildiv(M, 16), j = ceildiv(N, 32)
  workers 64 grid 4x16 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer V: global f32 tensor V
  buffer Y: global f32 tensor Y
  buffer S: shared f32[16, 32] row panel 1 versions 1
  buffer U: shared f32[16, 32] row panel 1 versions 1
  buffer s: private f32[16, 32] row panel 1 versions 1
  buffer u: private f32[16, 32] row panel 1 versions 1
  buffer x: private f32[16, 32] row panel 1 versions 1
  copy #0 X[(i * 16), (j * 32)] strides(ldx, 1) offset((b * sx)) -> S[0, 0] 16x32 batch 4 async pad 2.5 guard src(M, N)
  async.commit #1
  copy #2 V[(i * 16), (j * 32)] strides(1, ldv) offset((b * sv)) -> U[0, 0] 16x32 batch 1 pad -1.5 guard src(M, N)
  async.wait #3 pending 0
  fence #4
  frag.load #5 s <- S[0, 0]
  frag.load #6 u <- U[0, 0]
  ew #7 s = mul s, u
  frag.load #8 x <- X[(i * 16), (j * 32)] strides(ldx, 1) offset((b * sx)) pad 0.75 guard src(M, N)
  ew #9 s = add s, x
  frag.store #10 Y[(i * 16), (j * 32)] strides(ldy, 1) offset((b * sy)) <- s guard dst(MY, NY)
}
)";
  const int64_t MY = M + 3, NY = N + 5;
  c.sizes = {{"B", B},     {"M", M},          {"N", N},           {"MY", MY},     {"NY", NY},       {"ldx", ldx},
             {"sx", M * ldx + 1}, {"ldv", M}, {"sv", M * N},     {"ldy", NY + 2}, {"sy", MY * (NY + 2)}};
  c.oracle = [](const auto& s, HostTensors& t) {
    const HostTensor &X = t.at("X"), &V = t.at("V");
    HostTensor& Y = t.at("Y");
    const int64_t M = s.at("M"), N = s.at("N");
    const int64_t rows = std::min(s.at("MY"), (M + 15) / 16 * 16), cols = std::min(s.at("NY"), (N + 31) / 32 * 32);
    for (int64_t b = 0; b < s.at("B"); ++b)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) {
          bool in = r < M && j < N;
          double x = in ? X.at({b, r, j}) : 2.5, v = in ? V.at({b, r, j}) : -1.5, x2 = in ? X.at({b, r, j}) : 0.75;
          Y.set({b, r, j}, x * v + x2);
        }
  };
  return c;
}

// Local reductions (the axis is not split over the workers): row sums of exp(x)
// with -inf padding on an 8x1 worker grid (each worker a whole row), then column
// minima on a 1x8 grid (each worker whole columns), stored by their owners into a
// rank-1 tensor and into one row per group.
inline OpsCase local_reduce_case(int64_t M, int64_t N) {
  OpsCase c;
  c.name = "local_reduce " + std::to_string(M) + "x" + std::to_string(N);
  c.gir = R"(group local_rows(sizes M, N, ldx; tensors X: f32[M, N] strides(ldx, 1) in, R: f32[M] strides(1) out; scalars) {
  grid i = ceildiv(M, 8)
  workers 8 grid 8x1 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer R: global f32 tensor R
  buffer x: private f32[8, 64] row panel 1 versions 1
  buffer r: private f32[8, 1] row panel 1 versions 1
  frag.load #0 x <- X[(i * 8), 0] strides(ldx, 1) pad -inf guard src(M, N)
  ew #1 x = exp x
  reduce.sum #2 r = x axis 1
  frag.store #3 R[(i * 8), 0] strides(1, 0) <- r guard dst(M, 1)
}
)";
  c.sizes = {{"M", M}, {"N", N}, {"ldx", N + 3}};
  c.oracle = [](const auto& s, HostTensors& t) {
    const HostTensor& X = t.at("X");
    HostTensor& R = t.at("R");
    for (int64_t r = 0; r < s.at("M"); ++r) {
      double sum = 0;
      for (int64_t j = 0; j < s.at("N"); ++j) sum += std::exp(X.at({r, j}));
      R.set({r}, sum);
    }
  };
  return c;
}

inline OpsCase local_reduce_cols_case(int64_t M, int64_t N) {
  OpsCase c;
  c.name = "local_reduce_cols " + std::to_string(M) + "x" + std::to_string(N);
  c.gir = R"(group local_cols(sizes M, N, ldx, MB; tensors X: f32[M, N] strides(ldx, 1) in, C: f32[MB, N] strides(N, 1) out; scalars) {
  grid i = MB, j = ceildiv(N, 64)
  workers 8 grid 1x8 lanes 1
  atom fma 1x1
  buffer X: global f32 tensor X
  buffer C: global f32 tensor C
  buffer x: private f32[16, 64] row panel 1 versions 1
  buffer c: private f32[1, 64] row panel 1 versions 1
  frag.load #0 x <- X[(i * 16), (j * 64)] strides(ldx, 1) pad inf guard src(M, N)
  reduce.min #1 c = x axis 0
  frag.store #2 C[i, (j * 64)] strides(N, 1) <- c guard dst(MB, N)
}
)";
  c.sizes = {{"M", M}, {"N", N}, {"ldx", N + 1}, {"MB", (M + 15) / 16}};
  c.oracle = [](const auto& s, HostTensors& t) {
    const HostTensor& X = t.at("X");
    HostTensor& C = t.at("C");
    for (int64_t i = 0; i < s.at("MB"); ++i)
      for (int64_t j = 0; j < s.at("N"); ++j) {
        double m = INFINITY;
        for (int64_t r = i * 16; r < std::min(s.at("M"), i * 16 + 16); ++r) m = std::min(m, X.at({r, j}));
        C.set({i, j}, m);
      }
  };
  return c;
}

// A 2-D grid whose first dimension passes gridDim.y's 65535: the launch folds it
// into x and the kernel decodes both coordinates (written as index operands).
inline OpsCase fold_case(int64_t B, int64_t I) {
  OpsCase c;
  c.name = "fold " + std::to_string(B) + "x" + std::to_string(I);
  c.gir = R"(group fold(sizes B, I; tensors Y: f32[B, I, 2] strides((I * 2), 2, 1) out; scalars) {
  grid b = B, i = I
  workers 2 grid 1x2 lanes 1
  atom fma 1x1
  buffer Y: global f32 tensor Y
  buffer y: private f32[1, 2] row panel 1 versions 1
  buffer k: private f32[1, 2] row panel 1 versions 1
  ew #0 k = index axis 1
  ew #1 k = cmp.eq k, 0
  ew #2 y = select k, #(b), #(i)
  frag.store #3 Y[0, 0] strides(0, 1) offset(((b * (I * 2)) + (i * 2))) <- y
}
)";
  c.sizes = {{"B", B}, {"I", I}};
  c.oracle = [](const auto& s, HostTensors& t) {
    HostTensor& Y = t.at("Y");
    for (int64_t b = 0; b < s.at("B"); ++b)
      for (int64_t i = 0; i < s.at("I"); ++i) Y.set({b, i, 0}, double(b)), Y.set({b, i, 1}, double(i));
  };
  c.rtol = 0, c.atol = 0;
  return c;
}

// Every case at a few shapes: ragged, aligned and misaligned leading dimensions.
inline std::vector<OpsCase> all_ops_cases() {
  return {softmax_row_case(37, 100, 100, 101), softmax_row_case(64, 128, 128, 128),
          softmax_row_case(5, 3, 7, 3),         softmax_row_case(30, 117, 117, 120, true),
          softmax_online_case(9, 700, 704, 700),
          softmax_online_case(4, 1000, 1001, 1003), layernorm_case(50, 60, 60, 64),
          layernorm_case(17, 64, 67, 65),      colstats_case(70, 40, 40, 41),
          colstats_case(33, 16, 25, 16),       transpose_case(37, 70, 71, 40),
          transpose_case(32, 64, 64, 32),      copies_case(3, 21, 45, 48),
          copies_case(2, 16, 64, 67),          local_reduce_case(21, 50),
          local_reduce_cols_case(40, 100),     fold_case(3, 5)};
}

// ---- running and checking ----

// The expected outputs: the inputs as filled, outputs as the oracle writes them.
inline HostTensors expected_outputs(const OpsCase& c, const HostTensors& inputs) {
  HostTensors t = inputs;
  c.oracle(c.sizes, t);
  for (auto& [name, h] : t)  // the program stores in the tensor's dtype
    if (h.param.access != Access::In)
      for (double& x : h.v) x = std::isnan(x) ? x : round_as(h.param.dtype, x);
  return t;
}

// A tensor's values as the sim holds them (floats of any dtype).
inline std::vector<float> as_floats(const HostTensor& h) {
  return std::vector<float>(h.v.begin(), h.v.end());
}

// Device bytes: f32 as floats, bf16 and f16 as their 16-bit patterns.
inline std::vector<unsigned char> packed(const HostTensor& h) {
  const int bytes = dtype_bytes(h.param.dtype);
  std::vector<unsigned char> out(h.v.size() * bytes);
  for (size_t i = 0; i < h.v.size(); ++i) {
    float f = static_cast<float>(h.v[i]);
    if (bytes == 4) {
      std::memcpy(&out[i * 4], &f, 4);
      continue;
    }
    uint16_t x = 0;
    if (h.param.dtype == DType::BF16) {
      x = static_cast<uint16_t>(std::bit_cast<uint32_t>(round_to_bf16(f)) >> 16);
      if (std::isnan(f)) x = 0x7fc0;
    } else {
      // f16 bits of an f16-representable float (or NaN).
      float r = round_to_f16(f);
      uint32_t b = std::bit_cast<uint32_t>(r), sign = (b >> 16) & 0x8000u;
      if (std::isnan(r)) x = 0x7e00;
      else if (std::isinf(r)) x = static_cast<uint16_t>(sign | 0x7c00u);
      else if (r == 0) x = static_cast<uint16_t>(sign);
      else {
        int e = 0;
        double m = std::frexp(std::fabs(static_cast<double>(r)), &e);  // r = m * 2^e, m in [0.5, 1)
        if (e - 1 < -14) x = static_cast<uint16_t>(sign | static_cast<uint32_t>(std::ldexp(std::fabs(r), 24)));
        else x = static_cast<uint16_t>(sign | static_cast<uint32_t>((e - 1 + 15) << 10) |
                                       static_cast<uint32_t>((m * 2 - 1) * 1024));
      }
    }
    std::memcpy(&out[i * 2], &x, 2);
  }
  return out;
}

inline std::vector<double> unpacked(const std::vector<unsigned char>& bytes, DType t) {
  const int eb = dtype_bytes(t);
  std::vector<double> out(bytes.size() / eb);
  for (size_t i = 0; i < out.size(); ++i) {
    if (eb == 4) {
      float f;
      std::memcpy(&f, &bytes[i * 4], 4);
      out[i] = f;
      continue;
    }
    uint16_t x;
    std::memcpy(&x, &bytes[i * 2], 2);
    if (t == DType::BF16) {
      out[i] = std::bit_cast<float>(static_cast<uint32_t>(x) << 16);
    } else {
      int e = (x >> 10) & 31, m = x & 1023;
      double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
      out[i] = (x & 0x8000) ? -v : v;
    }
  }
  return out;
}

// "" when every output element matches: poison stays poison where nothing is
// expected, and the rest is within the case's tolerance. Else the first misses.
inline std::string compare_outputs(const OpsCase& c, const HostTensors& expected,
                                   const std::map<std::string, std::vector<double>>& actual) {
  std::string why;
  int shown = 0;
  int64_t bad = 0;
  for (const auto& [name, h] : expected) {
    if (h.param.access == Access::In) continue;
    const std::vector<double>& got = actual.at(name);
    for (size_t i = 0; i < h.v.size(); ++i) {
      double e = h.v[i], g = got[i];
      bool ok = std::isnan(e) ? std::isnan(g) : std::fabs(g - e) <= c.atol + c.rtol * std::fabs(e);
      if (ok) continue;
      ++bad;
      if (shown++ < 8)
        why += "\n  " + name + "[" + std::to_string(i) + "]: got " + std::to_string(g) + ", expected " +
               std::to_string(e);
    }
  }
  return bad ? c.name + ": " + std::to_string(bad) + " elements differ" + why : "";
}

}  // namespace tessel::test
