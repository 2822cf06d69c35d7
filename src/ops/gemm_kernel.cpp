#include "ops/gemm_kernel.h"

#include "dsl/dsl.h"

namespace tessel {
namespace {

// C = alpha * result + beta * C; C is read only when beta != 0.
void store_scaled(KernelBuilder& kb, const Tensor& C, Sym row, Sym col, Sym rows, Sym cols, Tile result,
                  const std::string& alpha, const std::string& beta) {
  result = kb.mul(result, kb.scalar_value(alpha));
  kb.if_(
      ScalarCond{beta, CmpOp::EQ, 0.0}, [&] { kb.store(C, row, col, result); },
      [&] {
        Tile c = kb.load(C, row, col, rows, cols);
        kb.store(C, row, col, kb.add(result, kb.mul(c, kb.scalar_value(beta))));
      });
}

// Split-K's slice s of output tile (i, j): A[i, slice s] * B[slice s, j] into P[s].
void store_slice(KernelBuilder& kb, const Tensor& A, const Tensor& B, const Tensor& P, Sym s, Sym i, Sym j, Sym KS,
                 Sym BM, Sym BN, Sym BK) {
  Tile acc = kb.pipeline(ceil_div(KS, BK), kb.constant(0.0, BM, BN), [&](Sym k, Tile partial) {
    Tile a = kb.load(A, i * BM, s * KS + k * BK, BM, BK);
    Tile b = kb.load(B, s * KS + k * BK, j * BN, BK, BN);
    return kb.mma(a, b, partial);
  });
  kb.store(P, {s, i * BM, j * BN}, acc);
}

}  // namespace

TileKernel gemm_kernel(DType ab, bool b_transposed) {
  KernelBuilder kb(b_transposed ? "gemm_bt" : "gemm");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym lda = kb.size("lda"), ldb = kb.size("ldb"), ldc = kb.size("ldc");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", M, K, lda, Access::In);
  Tensor B = b_transposed ? kb.tensor("B", {K, N}, {1, ldb}, Access::In) : kb.tensor("B", K, N, ldb, Access::In);
  Tensor C = kb.tensor("C", M, N, ldc, Access::InOut);
  std::string alpha = kb.scalar("alpha"), beta = kb.scalar("beta");

  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile zero = kb.constant(0.0, BM, BN);
    Tile acc = kb.pipeline(ceil_div(K, BK), zero, [&](Sym k, Tile partial) {
      Tile a = kb.load(A, i * BM, k * BK, BM, BK);
      Tile b = kb.load(B, k * BK, j * BN, BK, BN);
      return kb.mma(a, b, partial);
    });
    store_scaled(kb, C, i * BM, j * BN, BM, BN, acc, alpha, beta);
  });
  TileKernel kernel = kb.finish();
  kernel.tensors[0].dtype = ab;  // A
  kernel.tensors[1].dtype = ab;  // B
  return kernel;
}

TileKernel gemm_split_k_kernel(DType ab) {
  KernelBuilder kb("gemm_split_k");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym lda = kb.size("lda"), ldb = kb.size("ldb");
  Sym S = kb.size("S"), KS = kb.size("KS"), sps = kb.size("sps"), ldp = kb.size("ldp");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", M, K, lda, Access::In);
  Tensor B = kb.tensor("B", K, N, ldb, Access::In);
  Tensor P = kb.tensor("P", {S, M, N}, {sps, ldp, 1}, Access::Out);
  kb.parallel(S, ceil_div(M, BM), ceil_div(N, BN), [&](Sym s, Sym i, Sym j) {
    store_slice(kb, A, B, P, s, i, j, KS, BM, BN, BK);
  });
  TileKernel kernel = kb.finish();
  kernel.tensors[0].dtype = ab;  // A
  kernel.tensors[1].dtype = ab;  // B
  return kernel;
}

TileKernel gemm_split_k_fused_kernel(DType ab) {
  KernelBuilder kb("gemm_split_k_fused");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym lda = kb.size("lda"), ldb = kb.size("ldb"), ldc = kb.size("ldc");
  Sym S = kb.size("S"), KS = kb.size("KS"), sps = kb.size("sps"), ldp = kb.size("ldp"), Q = kb.size("Q");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", M, K, lda, Access::In);
  Tensor B = kb.tensor("B", K, N, ldb, Access::In);
  Tensor C = kb.tensor("C", M, N, ldc, Access::InOut);
  Tensor P = kb.tensor("P", {S, M, N}, {sps, ldp, 1}, Access::InOut);
  Tensor T = kb.tensor("T", {Q}, {1}, Access::InOut, DType::U32);
  std::string alpha = kb.scalar("alpha"), beta = kb.scalar("beta");
  kb.parallel(S, ceil_div(M, BM), ceil_div(N, BN), [&](Sym s, Sym i, Sym j) {
    store_slice(kb, A, B, P, s, i, j, KS, BM, BN, BK);
    Sym ticket = kb.ticket(T, i * ceil_div(N, BN) + j, S);
    kb.if_(ticket, CmpOp::EQ, S - 1, [&] {
      Tile sum = kb.serial(S, kb.constant(0.0, BM, BN), [&](Sym u, Tile partial) {
        return kb.add(partial, kb.load(P, {u, i * BM, j * BN}, BM, BN));
      });
      store_scaled(kb, C, i * BM, j * BN, BM, BN, sum, alpha, beta);
    });
  });
  TileKernel kernel = kb.finish();
  kernel.tensors[0].dtype = ab;  // A
  kernel.tensors[1].dtype = ab;  // B
  return kernel;
}

TileKernel transpose_kernel() {
  KernelBuilder kb("transpose");
  Sym R = kb.size("R"), C = kb.size("C"), ldx = kb.size("ldx"), ldy = kb.size("ldy");
  Sym BR = kb.tile("BR"), BC = kb.tile("BC");
  Tensor X = kb.tensor("X", R, C, ldx, Access::In);
  Tensor Y = kb.tensor("Y", C, R, ldy, Access::Out);
  kb.parallel(ceil_div(R, BR), ceil_div(C, BC), [&](Sym i, Sym j) {
    kb.store(Y, j * BC, i * BR, kb.transpose(kb.load(X, i * BR, j * BC, BR, BC)));
  });
  return kb.finish();
}

TileKernel split_k_sum_kernel() {
  KernelBuilder kb("split_k_sum");
  Sym M = kb.size("M"), N = kb.size("N"), ldc = kb.size("ldc");
  Sym S = kb.size("S"), sps = kb.size("sps"), ldp = kb.size("ldp");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN");
  Tensor P = kb.tensor("P", {S, M, N}, {sps, ldp, 1}, Access::In);
  Tensor C = kb.tensor("C", M, N, ldc, Access::InOut);
  std::string alpha = kb.scalar("alpha"), beta = kb.scalar("beta");
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile sum = kb.serial(S, kb.constant(0.0, BM, BN), [&](Sym s, Tile partial) {
      return kb.add(partial, kb.load(P, {s, i * BM, j * BN}, BM, BN));
    });
    store_scaled(kb, C, i * BM, j * BN, BM, BN, sum, alpha, beta);
  });
  return kb.finish();
}

}  // namespace tessel
