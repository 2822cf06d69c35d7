// The FP64 evaluator against results computed by hand in plain loops: GEMM (plain,
// transposed views, batched rank 3), softmax, reductions, padding, broadcast, cast,
// compare/select/index, if; and its argument errors. Kernels are written as TileIR
// text, verified, then evaluated. Inputs are random, outputs poisoned with NaN.
#include "eval/evaluate.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "ir/tile_text.h"
#include "ir/tile_verify.h"
#include "tessel/error.h"

namespace tessel {
namespace {

TileKernel parse(const std::string& text) {
  TileKernel k = parse_tile_kernel(text);
  verify_tile_kernel(k);
  return k;
}

std::vector<double> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

std::vector<double> poisoned(size_t n) { return std::vector<double>(n, NAN); }

// The message of the Error `f` throws, checking its kind.
template <class F>
std::string error_of(F f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

const char* kGemm = R"(
kernel gemm(sizes M, N, K, lda, ldb, ldc; tiles BM, BN, BK;
            tensors A: f32[M, K] strides(lda, 1) in, B: f32[K, N] strides(ldb, 1) in,
                    C: f32[M, N] strides(ldc, 1) out; scalars) {
  parallel i = ceildiv(M, BM), j = ceildiv(N, BN) {
    %z = const 0 : f32[BM, BN]
    %acc = serial k = ceildiv(K, BK) iter(%c: f32[BM, BN] = %z) : f32[BM, BN] {
      %a = load A[(i * BM), (k * BK)] : f32[BM, BK]
      %b = load B[(k * BK), (j * BN)] : f32[BK, BN]
      %d = mma %a, %b, %c : f32[BM, BN]
      yield %d
    }
    store %acc to C[(i * BM), (j * BN)]
  }
}
)";

TEST(Evaluate, GemmRaggedWithLeadingDimensions) {
  const int64_t M = 13, N = 11, K = 7, lda = K + 2, ldb = N + 3, ldc = N + 1;
  TileKernel k = parse(kGemm);
  std::vector<double> A = random_vector(M * lda, 1), B = random_vector(K * ldb, 2),
                      C = poisoned(M * ldc);
  const double sentinel = 12345.5;  // C's columns N .. ldc must stay untouched
  for (int64_t r = 0; r < M; ++r) C[r * ldc + N] = sentinel;
  EvalArgs args;
  args.sizes = {{"M", M}, {"N", N}, {"K", K}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}};
  args.tiles = {{"BM", 4}, {"BN", 8}, {"BK", 3}};
  args.tensors = {{"A", A}, {"B", B}, {"C", C}};
  evaluate(k, args);
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t c = 0; c < N; ++c) {
      double want = 0;
      for (int64_t p = 0; p < K; ++p) want += A[r * lda + p] * B[p * ldb + c];
      EXPECT_NEAR(C[r * ldc + c], want, 1e-14) << r << ", " << c;
    }
    EXPECT_EQ(C[r * ldc + N], sentinel) << "row " << r;
  }
}

// C = A^T B^T: A is given as a column-major view (strides(1, lda)) of a K x M array
// read as [M, K]; B is [N, K] row-major, loaded as [BN, BK] tiles and transposed.
TEST(Evaluate, TransposedViewsAndTranspose) {
  const int64_t M = 9, N = 10, K = 6, lda = M + 1, ldb = K + 2;
  TileKernel k = parse(R"(
kernel at_bt(sizes M, N, K, lda, ldb; tiles BM, BN, BK;
             tensors A: f32[M, K] strides(1, lda) in, B: f32[N, K] strides(ldb, 1) in,
                     C: f32[M, N] strides(N, 1) out; scalars) {
  parallel i = ceildiv(M, BM), j = ceildiv(N, BN) {
    %z = const 0 : f32[BM, BN]
    %acc = serial k = ceildiv(K, BK) iter(%c: f32[BM, BN] = %z) : f32[BM, BN] {
      %a = load A[(i * BM), (k * BK)] : f32[BM, BK]
      %bt = load B[(j * BN), (k * BK)] : f32[BN, BK]
      %b = transpose %bt : f32[BK, BN]
      %d = mma %a, %b, %c : f32[BM, BN]
      yield %d
    }
    store %acc to C[(i * BM), (j * BN)]
  }
}
)");
  std::vector<double> A = random_vector(K * lda, 3), B = random_vector(N * ldb, 4), C = poisoned(M * N);
  EvalArgs args;
  args.sizes = {{"M", M}, {"N", N}, {"K", K}, {"lda", lda}, {"ldb", ldb}};
  args.tiles = {{"BM", 4}, {"BN", 3}, {"BK", 4}};
  args.tensors = {{"A", A}, {"B", B}, {"C", C}};
  evaluate(k, args);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < N; ++c) {
      double want = 0;
      for (int64_t p = 0; p < K; ++p) want += A[p * lda + r] * B[c * ldb + p];
      EXPECT_NEAR(C[r * N + c], want, 1e-14) << r << ", " << c;
    }
}

// A batched GEMM on a 3-D grid: A and C are rank 3; B is shared by every batch
// through a stride-0 batch dimension (a broadcast view, read-only).
TEST(Evaluate, BatchedRank3WithBroadcastView) {
  const int64_t Bt = 3, M = 5, N = 7, K = 4;
  TileKernel k = parse(R"(
kernel bgemm(sizes Bt, M, N, K, sa, zero; tiles BM, BN;
             tensors A: f32[Bt, M, K] strides(sa, K, 1) in, B: f32[Bt, K, N] strides(zero, N, 1) in,
                     C: f32[Bt, M, N] strides((M * N), N, 1) out; scalars) {
  parallel b = Bt, i = ceildiv(M, BM), j = ceildiv(N, BN) {
    %z = const 0 : f32[BM, BN]
    %a = load A[b, (i * BM), 0] : f32[BM, K]
    %bb = load B[b, 0, (j * BN)] : f32[K, BN]
    %d = mma %a, %bb, %z : f32[BM, BN]
    store %d to C[b, (i * BM), (j * BN)]
  }
}
)");
  const int64_t sa = M * K + 3;
  std::vector<double> A = random_vector(Bt * sa, 5), B = random_vector(K * N, 6),
                      C = poisoned(Bt * M * N);
  EvalArgs args;
  args.sizes = {{"Bt", Bt}, {"M", M}, {"N", N}, {"K", K}, {"sa", sa}, {"zero", 0}};
  args.tiles = {{"BM", 2}, {"BN", 4}};
  args.tensors = {{"A", A}, {"B", B}, {"C", C}};
  evaluate(k, args);
  for (int64_t b = 0; b < Bt; ++b)
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < N; ++c) {
        double want = 0;
        for (int64_t p = 0; p < K; ++p) want += A[b * sa + r * K + p] * B[p * N + c];
        EXPECT_NEAR(C[(b * M + r) * N + c], want, 1e-14) << b << ", " << r << ", " << c;
      }
}

// Numerically stable row softmax, one column tile per row block: the padding -inf
// keeps the ragged columns out of the max and the sum.
TEST(Evaluate, SoftmaxRowsSumToOne) {
  const int64_t M = 7, N = 13;
  TileKernel k = parse(R"(
kernel softmax(sizes M, N; tiles BR, BC; tensors X: f32[M, N] strides(N, 1) in,
               Y: f32[M, N] strides(N, 1) out; scalars) {
  parallel i = ceildiv(M, BR) {
    %x = load X[(i * BR), 0] pad -inf : f32[BR, BC]
    %m = reduce.max %x axis 1 : f32[BR, 1]
    %s = sub %x, %m : f32[BR, BC]
    %e = exp %s : f32[BR, BC]
    %t = reduce.sum %e axis 1 : f32[BR, 1]
    %y = div %e, %t : f32[BR, BC]
    store %y to Y[(i * BR), 0]
  }
}
)");
  std::vector<double> X = random_vector(M * N, 7), Y = poisoned(M * N);
  for (double& x : X) x *= 20;  // wide enough that an unstable softmax would show
  EvalArgs args;
  args.sizes = {{"M", M}, {"N", N}};
  args.tiles = {{"BR", 3}, {"BC", 16}};
  args.tensors = {{"X", X}, {"Y", Y}};
  evaluate(k, args);
  for (int64_t r = 0; r < M; ++r) {
    double mx = -INFINITY, sum = 0, total = 0;
    for (int64_t c = 0; c < N; ++c) mx = std::max(mx, X[r * N + c]);
    for (int64_t c = 0; c < N; ++c) sum += std::exp(X[r * N + c] - mx);
    for (int64_t c = 0; c < N; ++c) {
      EXPECT_NEAR(Y[r * N + c], std::exp(X[r * N + c] - mx) / sum, 1e-15) << r << ", " << c;
      total += Y[r * N + c];
    }
    EXPECT_NEAR(total, 1.0, 1e-14) << "row " << r;
  }
}

// Row sums over column blocks carried by a serial loop, column sums along axis 0,
// row max/min: each against plain loops; both sums add up to the same total.
TEST(Evaluate, ReductionIdentities) {
  const int64_t M = 10, N = 9;
  TileKernel k = parse(R"(
kernel sums(sizes M, N; tiles BR, BC;
            tensors X: f32[M, N] strides(N, 1) in, R: f32[M] strides(1) out,
                    S: f32[N] strides(1) out, Mx: f32[M] strides(1) out, Mn: f32[M] strides(1) out;
            scalars) {
  parallel i = ceildiv(M, BR) {
    %z = const 0 : f32[BR, 1]
    %lo = const -inf : f32[BR, 1]
    %hi = const inf : f32[BR, 1]
    %r, %mx, %mn = serial j = ceildiv(N, BC) iter(%acc: f32[BR, 1] = %z, %amx: f32[BR, 1] = %lo,
                                                  %amn: f32[BR, 1] = %hi) : f32[BR, 1], f32[BR, 1], f32[BR, 1] {
      %x = load X[(i * BR), (j * BC)] : f32[BR, BC]
      %p = reduce.sum %x axis 1 : f32[BR, 1]
      %acc2 = add %acc, %p : f32[BR, 1]
      %xl = load X[(i * BR), (j * BC)] pad -inf : f32[BR, BC]
      %pm = reduce.max %xl axis 1 : f32[BR, 1]
      %amx2 = max %amx, %pm : f32[BR, 1]
      %xh = load X[(i * BR), (j * BC)] pad inf : f32[BR, BC]
      %pn = reduce.min %xh axis 1 : f32[BR, 1]
      %amn2 = min %amn, %pn : f32[BR, 1]
      yield %acc2, %amx2, %amn2
    }
    store %r to R[(i * BR)] dims(0, -1)
    store %mx to Mx[(i * BR)] dims(0, -1)
    store %mn to Mn[(i * BR)] dims(0, -1)
  }
  parallel j = ceildiv(N, BC) {
    %xc = load X[0, (j * BC)] : f32[16, BC]
    %s = reduce.sum %xc axis 0 : f32[1, BC]
    store %s to S[(j * BC)]
  }
}
)");
  std::vector<double> X = random_vector(M * N, 8), R = poisoned(M), S = poisoned(N),
                      Mx = poisoned(M), Mn = poisoned(M);
  EvalArgs args;
  args.sizes = {{"M", M}, {"N", N}};
  args.tiles = {{"BR", 4}, {"BC", 4}};
  args.tensors = {{"X", X}, {"R", R}, {"S", S}, {"Mx", Mx}, {"Mn", Mn}};
  evaluate(k, args);
  double total_r = 0, total_s = 0, total = 0;
  for (int64_t r = 0; r < M; ++r) {
    double sum = 0, mx = -INFINITY, mn = INFINITY;
    for (int64_t c = 0; c < N; ++c) {
      sum += X[r * N + c];
      mx = std::max(mx, X[r * N + c]);
      mn = std::min(mn, X[r * N + c]);
    }
    EXPECT_NEAR(R[r], sum, 1e-14) << r;
    EXPECT_EQ(Mx[r], mx) << r;
    EXPECT_EQ(Mn[r], mn) << r;
    total_r += R[r];
    total += sum;
  }
  for (int64_t c = 0; c < N; ++c) {
    double sum = 0;
    for (int64_t r = 0; r < M; ++r) sum += X[r * N + c];
    EXPECT_NEAR(S[c], sum, 1e-14) << c;
    total_s += S[c];
  }
  EXPECT_NEAR(total_r, total, 1e-13);
  EXPECT_NEAR(total_s, total, 1e-13);
}

// A tile straddling the tensor's corner: outside elements read as the padding, and
// a store writes only the inside ones (the rest of the array keeps its poison).
TEST(Evaluate, PaddingAndDroppedStores) {
  const int64_t M = 5, N = 6, ld = 8;
  TileKernel k = parse(R"(
kernel pad(sizes M, N, ld; tiles T;
           tensors X: f32[M, N] strides(ld, 1) in, P: f32[4, 4] strides(4, 1) out,
                   Y: f32[M, N] strides(ld, 1) out; scalars) {
  parallel g = 1 {
    %x = load X[3, 4] pad 7.5 : f32[T, T]
    store %x to P[0, 0]
    store %x to Y[3, 4]
  }
}
)");
  const int64_t T = 4;
  std::vector<double> X = random_vector(M * ld, 9), P = poisoned(T * T), Y = poisoned(M * ld);
  EvalArgs args;
  args.sizes = {{"M", M}, {"N", N}, {"ld", ld}};
  args.tiles = {{"T", T}};
  args.tensors = {{"X", X}, {"P", P}, {"Y", Y}};
  evaluate(k, args);
  for (int64_t r = 0; r < T; ++r)
    for (int64_t c = 0; c < T; ++c) {
      bool inside = 3 + r < M && 4 + c < N;
      EXPECT_EQ(P[r * T + c], inside ? X[(3 + r) * ld + 4 + c] : 7.5) << r << ", " << c;
    }
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < ld; ++c) {
      bool written = r >= 3 && c >= 4 && c < N;
      if (written) EXPECT_EQ(Y[r * ld + c], X[r * ld + c]) << r << ", " << c;
      else EXPECT_TRUE(std::isnan(Y[r * ld + c])) << r << ", " << c;
    }
}

// Y = relu(X + bias[col]) * scale[row] + s, written with implicit broadcasts, and
// again with explicit broadcast ops; a rank-1 tensor gives a row ([1, BN]) or a
// column ([BM, 1]) by its dims.
TEST(Evaluate, BroadcastRowColumnScalar) {
  const int64_t M = 7, N = 10;
  TileKernel k = parse(R"(
kernel bias(sizes M, N; tiles BM, BN;
            tensors X: f32[M, N] strides(N, 1) in, bias: f32[N] strides(1) in,
                    scale: f32[M] strides(1) in, Y: f32[M, N] strides(N, 1) out,
                    Z: f32[M, N] strides(N, 1) out; scalars s: f32) {
  parallel i = ceildiv(M, BM), j = ceildiv(N, BN) {
    %x = load X[(i * BM), (j * BN)] : f32[BM, BN]
    %b = load bias[(j * BN)] : f32[1, BN]
    %c = load scale[(i * BM)] dims(0, -1) : f32[BM, 1]
    %s = param s : f32
    %zero = const 0 : f32
    %xb = add %x, %b : f32[BM, BN]
    %r = max %xb, %zero : f32[BM, BN]
    %rc = mul %r, %c : f32[BM, BN]
    %y = add %rc, %s : f32[BM, BN]
    store %y to Y[(i * BM), (j * BN)]
    %bb = broadcast %b : f32[BM, BN]
    %cb = broadcast %c : f32[BM, BN]
    %sb = broadcast %s : f32[BM, BN]
    %xb2 = add %x, %bb : f32[BM, BN]
    %r2 = max %xb2, %zero : f32[BM, BN]
    %rc2 = mul %r2, %cb : f32[BM, BN]
    %z = add %rc2, %sb : f32[BM, BN]
    store %z to Z[(i * BM), (j * BN)]
  }
}
)");
  std::vector<double> X = random_vector(M * N, 10), bias = random_vector(N, 11),
                      scale = random_vector(M, 12), Y = poisoned(M * N), Z = poisoned(M * N);
  EvalArgs args;
  args.sizes = {{"M", M}, {"N", N}};
  args.tiles = {{"BM", 3}, {"BN", 4}};
  args.scalars = {{"s", 0.25}};
  args.tensors = {{"X", X}, {"bias", bias}, {"scale", scale}, {"Y", Y}, {"Z", Z}};
  evaluate(k, args);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < N; ++c) {
      double want = std::max(X[r * N + c] + bias[c], 0.0) * scale[r] + 0.25;
      EXPECT_EQ(Y[r * N + c], want) << r << ", " << c;
      EXPECT_EQ(Z[r * N + c], want) << r << ", " << c;
    }
}

// Every unary and binary op, cmp/select/index, and cast, elementwise on one tile.
TEST(Evaluate, ElementwiseOps) {
  const int64_t T = 5;
  TileKernel k = parse(R"(
kernel ew(sizes; tiles T; tensors X: f32[5, 5] strides(5, 1) in, W: f32[5, 5] strides(5, 1) in,
          Y: f32[16, 5, 5] strides(25, 5, 1) out; scalars) {
  parallel g = 1 {
    %x = load X[0, 0] : f32[T, T]
    %w = load W[0, 0] : f32[T, T]
    %one = const 1 : f32
    %a = abs %x : f32[T, T]
    %p = add %a, %one : f32[T, T]
    %y0 = exp %x : f32[T, T]
    store %y0 to Y[0, 0, 0]
    %y1 = exp2 %x : f32[T, T]
    store %y1 to Y[1, 0, 0]
    %y2 = log %p : f32[T, T]
    store %y2 to Y[2, 0, 0]
    %y3 = neg %x : f32[T, T]
    store %y3 to Y[3, 0, 0]
    store %a to Y[4, 0, 0]
    %y5 = sqrt %p : f32[T, T]
    store %y5 to Y[5, 0, 0]
    %y6 = rsqrt %p : f32[T, T]
    store %y6 to Y[6, 0, 0]
    %y7 = recip %p : f32[T, T]
    store %y7 to Y[7, 0, 0]
    %y8 = tanh %x : f32[T, T]
    store %y8 to Y[8, 0, 0]
    %y9 = sub %x, %w : f32[T, T]
    store %y9 to Y[9, 0, 0]
    %y10 = div %x, %p : f32[T, T]
    store %y10 to Y[10, 0, 0]
    %y11 = min %x, %w : f32[T, T]
    store %y11 to Y[11, 0, 0]
    %lt = cmp.lt %x, %w : f32[T, T]
    %y12 = select %lt, %x, %w : f32[T, T]
    store %y12 to Y[12, 0, 0]
    %col = index axis 1 : f32[T, T]
    %row = index axis 0 : f32[T, T]
    %ri = mul %row, %one : f32[T, T]
    %y13 = sub %ri, %col : f32[T, T]
    store %y13 to Y[13, 0, 0]
    %h = cast %x : bf16[T, T]
    %y14 = cast %h : f32[T, T]
    store %y14 to Y[14, 0, 0]
    %ge = cmp.ge %x, %w : f32[T, T]
    store %ge to Y[15, 0, 0]
  }
}
)");
  std::vector<double> X = random_vector(T * T, 13), W = random_vector(T * T, 14),
                      Y = poisoned(16 * T * T);
  for (double& x : X) x *= 3;
  W[0] = X[0];  // one tie for the comparisons
  EvalArgs args;
  args.tiles = {{"T", T}};
  args.tensors = {{"X", X}, {"W", W}, {"Y", Y}};
  evaluate(k, args);
  for (int64_t e = 0; e < T * T; ++e) {
    double x = X[e], w = W[e], p = std::abs(x) + 1;
    double want[16] = {std::exp(x), std::exp2(x), std::log(p), -x, std::abs(x), std::sqrt(p),
                       1 / std::sqrt(p), 1 / p, std::tanh(x), x - w, x / p, std::min(x, w),
                       x < w ? x : w, static_cast<double>(e / T - e % T),
                       round_to_dtype(x, DType::BF16), x >= w ? 1.0 : 0.0};
    for (int op = 0; op < 16; ++op) EXPECT_EQ(Y[op * T * T + e], want[op]) << "op " << op << " element " << e;
  }
}

// `if` on an index condition and on a scalar parameter.
TEST(Evaluate, IfOnIndexAndScalar) {
  TileKernel k = parse(R"(
kernel branch(sizes N; tiles T; tensors Y: f32[N] strides(1) out; scalars beta: f32) {
  parallel g = ceildiv(N, T) {
    %a = const 1 : f32[1, T]
    %b = const 2 : f32[1, T]
    %y = if g < 1 : f32[1, T] {
      yield %a
    } else {
      %z = if param beta == 0 : f32[1, T] {
        yield %b
      } else {
        %c = add %a, %b : f32[1, T]
        yield %c
      }
      yield %z
    }
    store %y to Y[(g * T)]
  }
}
)");
  for (double beta : {0.0, 0.5}) {
    std::vector<double> Y = poisoned(10);
    EvalArgs args;
    args.sizes = {{"N", 10}};
    args.tiles = {{"T", 4}};
    args.scalars = {{"beta", beta}};
    args.tensors = {{"Y", Y}};
    evaluate(k, args);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(Y[i], i < 4 ? 1.0 : beta == 0 ? 2.0 : 3.0) << i;
  }
}

// Carried values feed each other (Fibonacci: (a, b) -> (a + b, a), so the second
// takes the first's old value); a loop of zero trips gives back its initial values.
TEST(Evaluate, SerialLoopCarriesSeveralValues) {
  TileKernel k = parse(R"(
kernel fib(sizes n; tiles T; tensors Y: f32[2] strides(1) out; scalars) {
  parallel g = 1 {
    %zero = const 0 : f32[1, T]
    %one = const 1 : f32[1, T]
    %a, %b = serial k = n iter(%x: f32[1, T] = %zero, %y: f32[1, T] = %one) : f32[1, T], f32[1, T] {
      %s = add %x, %y : f32[1, T]
      yield %s, %x
    }
    store %a to Y[0]
    store %b to Y[1]
  }
}
)");
  for (auto [n, a, b] : {std::array<double, 3>{0, 0, 1}, {1, 1, 0}, {10, 55, 34}}) {
    std::vector<double> Y = poisoned(2);
    EvalArgs args;
    args.sizes = {{"n", static_cast<int64_t>(n)}};
    args.tiles = {{"T", 1}};
    args.tensors = {{"Y", Y}};
    evaluate(k, args);
    EXPECT_EQ(Y[0], a) << "n = " << n;
    EXPECT_EQ(Y[1], b) << "n = " << n;
  }
}

// Round to nearest, ties to even, for each narrow format; overflow and underflow.
TEST(Evaluate, CastRounding) {
  auto p2 = [](int e) { return std::ldexp(1.0, e); };
  // bf16 keeps 8 significant bits: its ulp at 1 is 2^-7.
  EXPECT_EQ(round_to_dtype(1 + p2(-8), DType::BF16), 1.0);                  // tie, to even
  EXPECT_EQ(round_to_dtype(1 + 3 * p2(-8), DType::BF16), 1 + p2(-6));       // tie, to even
  EXPECT_EQ(round_to_dtype(1 + p2(-8) + p2(-30), DType::BF16), 1 + p2(-7)); // above the tie
  EXPECT_EQ(round_to_dtype(-(1 + p2(-8) + p2(-30)), DType::BF16), -(1 + p2(-7)));
  EXPECT_EQ(round_to_dtype(p2(-133), DType::BF16), p2(-133));               // smallest subnormal
  EXPECT_EQ(round_to_dtype(p2(-134), DType::BF16), 0.0);                    // tie with 0
  EXPECT_TRUE(std::isinf(round_to_dtype(3.4e38, DType::BF16)));
  // f16: 11 bits, max 65504, subnormals down to 2^-24.
  EXPECT_EQ(round_to_dtype(65519.0, DType::F16), 65504.0);
  EXPECT_TRUE(std::isinf(round_to_dtype(65520.0, DType::F16)));
  EXPECT_EQ(round_to_dtype(p2(-25), DType::F16), 0.0);
  EXPECT_EQ(round_to_dtype(3 * p2(-25), DType::F16), p2(-23));
  EXPECT_EQ(round_to_dtype(1 + p2(-11), DType::F16), 1.0);
  EXPECT_TRUE(std::isnan(round_to_dtype(NAN, DType::F16)));
  EXPECT_EQ(round_to_dtype(1.0 / 3, DType::F64), 1.0 / 3);
  // Against the hardware: f32 by conversion; bf16 from a float by the bit recipe.
  std::mt19937_64 rng(15);
  std::uniform_real_distribution<double> u(-40, 40);
  for (int i = 0; i < 100000; ++i) {
    double x = std::ldexp(u(rng) / 40, static_cast<int>(u(rng) * 3));
    ASSERT_EQ(round_to_dtype(x, DType::F32), static_cast<double>(static_cast<float>(x))) << x;
    float f = static_cast<float>(x);
    uint32_t bits = std::bit_cast<uint32_t>(f);
    bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
    ASSERT_EQ(round_to_dtype(f, DType::BF16), static_cast<double>(std::bit_cast<float>(bits))) << f;
  }
}

// The fp32 model (for calibrating tolerances) rounds every result and every mma step;
// the oracle does not.
TEST(Evaluate, Fp32ModelRoundsEachStep) {
  TileKernel k = parse(R"(
kernel tiny(sizes; tiles T; tensors Y: f32[2] strides(1) out; scalars) {
  parallel g = 1 {
    %one = const 1 : f32[1, 1]
    %eps = const 9.31322574615478515625e-10 : f32[1, 1]
    %y = add %one, %eps : f32[1, 1]
    store %y to Y[0]
    %a = const 1 : f32[1, T]
    %b = const 2.98023223876953125e-08 : f32[T, 1]
    %z = mma %a, %b, %one : f32[1, 1]
    store %z to Y[1]
  }
}
)");
  for (bool model : {false, true}) {
    std::vector<double> Y = poisoned(2);
    EvalArgs args;
    args.tiles = {{"T", 4}};
    args.tensors = {{"Y", Y}};
    args.fp32_model = model;
    evaluate(k, args);
    // 1 + 2^-30 is not a float. 1 + 4 * 2^-25 is, but each fma step of the model
    // rounds 1 + 2^-25 back to 1.
    EXPECT_EQ(Y[0], model ? 1.0 : 1 + std::ldexp(1.0, -30));
    EXPECT_EQ(Y[1], model ? 1.0 : 1 + std::ldexp(1.0, -23));
  }
}

TEST(Evaluate, RelativeErrorAndBound) {
  std::vector<double> want = {3, 4};
  EXPECT_EQ(relative_error(std::vector<double>{3, 4}, want), 0.0);
  EXPECT_DOUBLE_EQ(relative_error(std::vector<float>{3, 4.5f}, want), 0.1);
  EXPECT_EQ(relative_error(std::vector<float>{3, NAN}, want), INFINITY);
  EXPECT_EQ(relative_error(std::vector<float>{3, INFINITY}, want), INFINITY);
  EXPECT_EQ(relative_error(std::vector<double>{NAN, 4}, std::vector<double>{NAN, 4}), 0.0);
  EXPECT_EQ(relative_error(std::vector<double>{1, 4}, std::vector<double>{NAN, 4}), INFINITY);
  EXPECT_EQ(relative_error(std::vector<double>{0, 0.5}, std::vector<double>{0, 0}), INFINITY);
  EXPECT_EQ(relative_error(std::vector<double>{0, 0}, std::vector<double>{0, 0}), 0.0);
  // Below the floor, errors are absolute (measured against floor * sqrt(n)).
  EXPECT_DOUBLE_EQ(relative_error(std::vector<double>{0, 0.5}, std::vector<double>{0, 0}, 1),
                   0.5 / std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(relative_error(std::vector<float>{3, 4.5f}, want, 10), 0.5 / (10 * std::sqrt(2.0)));
  EXPECT_DOUBLE_EQ(relative_error(std::vector<float>{3, 4.5f}, want, 1), 0.1);
  error_of([&] { relative_error(std::vector<double>{1}, want); }, ErrorKind::InvalidArgument);
  EXPECT_DOUBLE_EQ(error_bound(DType::F32, DType::F32, 64), 32 * 8 * std::ldexp(1.0, -24));
  EXPECT_DOUBLE_EQ(error_bound(DType::F32, DType::BF16, 1), 32 * std::ldexp(1.0, -24) + std::ldexp(1.0, -7));
  EXPECT_LT(error_bound(DType::F64, DType::F64, 1000), 2e-13);
}

TEST(Evaluate, ArgumentErrors) {
  TileKernel k = parse(kGemm);
  std::vector<double> A(100), B(100), C(100);
  auto good = [&] {
    EvalArgs a;
    a.sizes = {{"M", 5}, {"N", 5}, {"K", 5}, {"lda", 5}, {"ldb", 5}, {"ldc", 5}};
    a.tiles = {{"BM", 2}, {"BN", 2}, {"BK", 2}};
    a.tensors = {{"A", A}, {"B", B}, {"C", C}};
    return a;
  };
  auto fails = [&](EvalArgs a) {
    return error_of([&] { evaluate(k, a); }, ErrorKind::InvalidArgument);
  };
  EXPECT_NO_THROW(evaluate(k, good()));
  EvalArgs a = good();
  a.sizes.erase("K");
  EXPECT_EQ(fails(a), "evaluate: size 'K' of kernel gemm is not given");
  a = good();
  a.sizes["Q"] = 1;
  EXPECT_EQ(fails(a), "evaluate: size 'Q' is given but kernel gemm has no such parameter");
  a = good();
  a.tiles.erase("BK");
  EXPECT_EQ(fails(a), "evaluate: tile 'BK' of kernel gemm is not given");
  a = good();
  a.tiles["BN"] = 0;
  EXPECT_EQ(fails(a), "evaluate: tile 'BN' is bound to 0; tiles are >= 1");
  a = good();
  a.scalars["alpha"] = 1;
  EXPECT_EQ(fails(a), "evaluate: scalar 'alpha' is given but kernel gemm has no such parameter");
  a = good();
  a.tensors.erase("B");
  EXPECT_EQ(fails(a), "evaluate: tensor 'B' of kernel gemm is not given");
  a = good();
  a.sizes["lda"] = 30;
  EXPECT_EQ(fails(a), "evaluate: tensor A of shape [5, 5] and strides (30, 1) needs 125 elements, "
                      "but its array has 100");
  // Extents, strides and overlaps: the shared launch check (src/runtime/tensor_check).
  auto names = [&](EvalArgs args, std::vector<std::string> parts) {
    std::string m = fails(std::move(args));
    for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << m << "\nlacks: " << p;
  };
  a = good();
  a.sizes["ldb"] = -1;
  names(a, {"'B'", "stride", "-1"});
  a = good();
  a.sizes["M"] = -2;
  names(a, {"'A'", "extent", "-2"});
  a = good();
  a.sizes["ldc"] = 3;  // rows of C overlap: C is written
  names(a, {"'C'", "overlap", "3"});
  a = good();
  a.sizes["ldc"] = 0;
  names(a, {"'C'", "stride", "0"});
  a = good();
  a.sizes["lda"] = 0;  // a broadcast view of an input is fine
  EXPECT_NO_THROW(evaluate(k, a));
  a = good();
  a.sizes["M"] = 0;  // an empty tensor needs no array at all
  a.tensors["A"] = std::span<double>();
  a.tensors["C"] = std::span<double>();
  EXPECT_NO_THROW(evaluate(k, a));
}

// The evaluator guards itself against kernels that were not verified.
TEST(Evaluate, UnverifiedKernelIsAVerifyError) {
  TileKernel k = parse_tile_kernel(R"(
kernel bad(sizes; tiles T; tensors Y: f32[8, 8] strides(8, 1) out; scalars) {
  parallel g = 1 {
    %a = const 1 : f32[T, T]
    %b = const 2 : f32[4, 4]
    %c = add %a, %b : f32[T, T]
    store %c to Y[0, 0]
  }
}
)");
  std::vector<double> Y(64);
  EvalArgs args;
  args.tiles = {{"T", 3}};
  args.tensors = {{"Y", Y}};
  EXPECT_EQ(error_of([&] { evaluate(k, args); }, ErrorKind::Verify),
            "evaluate: add: operand %b (4x4) does not broadcast to the result's 3x3");
}

}  // namespace
}  // namespace tessel
