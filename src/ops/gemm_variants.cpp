// GEMMs beyond the plain one (gemm_kernel.cpp): strided (any transposition), batched,
// and with a fused epilogue. Each accumulates a BM x BN tile over K in a pipelined
// loop; loads past the edges read 0, so ragged K adds nothing.
#include "dsl/dsl.h"
#include "ops/library.h"

namespace tessel {
namespace {

// acc = sum over k of A-tile(k) * B-tile(k), the tiles given by the callbacks.
Tile accumulate(KernelBuilder& kb, Sym K, Sym BM, Sym BN, Sym BK,
                const std::function<Tile(Sym)>& a, const std::function<Tile(Sym)>& b) {
  return kb.pipeline(ceil_div(K, BK), kb.constant(0, BM, BN),
                     [&](Sym k, Tile c) { return kb.mma(a(k), b(k), c); });
}

}  // namespace

TileKernel gemm_strided_kernel() {
  KernelBuilder kb("gemm_strided");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym sam = kb.size("sam"), sak = kb.size("sak"), sbk = kb.size("sbk"), sbn = kb.size("sbn");
  Sym ldc = kb.size("ldc");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", {M, K}, {sam, sak}, Access::In);
  Tensor B = kb.tensor("B", {K, N}, {sbk, sbn}, Access::In);
  Tensor C = kb.tensor("C", {M, N}, {ldc, 1}, Access::Out);
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile acc = accumulate(
        kb, K, BM, BN, BK, [&](Sym k) { return kb.load(A, {i * BM, k * BK}, BM, BK); },
        [&](Sym k) { return kb.load(B, {k * BK, j * BN}, BK, BN); });
    kb.store(C, {i * BM, j * BN}, acc);
  });
  return kb.finish();
}

TileKernel batched_gemm_kernel() {
  KernelBuilder kb("batched_gemm");
  Sym batch = kb.size("batch"), M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym sa = kb.size("sa"), lda = kb.size("lda"), sb = kb.size("sb"), ldb = kb.size("ldb");
  Sym sc = kb.size("sc"), ldc = kb.size("ldc");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", {batch, M, K}, {sa, lda, 1}, Access::In);
  Tensor B = kb.tensor("B", {batch, K, N}, {sb, ldb, 1}, Access::In);
  Tensor C = kb.tensor("C", {batch, M, N}, {sc, ldc, 1}, Access::Out);
  kb.parallel(batch, ceil_div(M, BM), ceil_div(N, BN), [&](Sym b, Sym i, Sym j) {
    Tile acc = accumulate(
        kb, K, BM, BN, BK, [&](Sym k) { return kb.load(A, {b, i * BM, k * BK}, BM, BK); },
        [&](Sym k) { return kb.load(B, {b, k * BK, j * BN}, BK, BN); });
    kb.store(C, {b, i * BM, j * BN}, acc);
  });
  return kb.finish();
}

TileKernel gemm_epilogue_kernel(BiasAlong along, Activation act) {
  KernelBuilder kb("gemm_epilogue");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym lda = kb.size("lda"), ldb = kb.size("ldb"), ldc = kb.size("ldc");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", {M, K}, {lda, 1}, Access::In);
  Tensor B = kb.tensor("B", {K, N}, {ldb, 1}, Access::In);
  Tensor bias = kb.tensor("bias", {along == BiasAlong::Rows ? N : M}, {1}, Access::In);
  Tensor C = kb.tensor("C", {M, N}, {ldc, 1}, Access::Out);
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile acc = accumulate(
        kb, K, BM, BN, BK, [&](Sym k) { return kb.load(A, {i * BM, k * BK}, BM, BK); },
        [&](Sym k) { return kb.load(B, {k * BK, j * BN}, BK, BN); });
    // [1, BN] (one value per column) or [BM, 1] (one per row): the add broadcasts it.
    Tile b = along == BiasAlong::Rows ? kb.load(bias, {j * BN}, 1, BN)
                                      : kb.load(bias, {i * BM}, {0, -1}, BM, 1);
    Tile x = kb.add(acc, b);
    if (act == Activation::Relu) x = kb.max(x, kb.constant(0));
    if (act == Activation::Gelu) {
      // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
      Tile inner = kb.add(x, kb.mul(kb.mul(kb.mul(x, x), x), kb.constant(0.044715)));
      Tile t = kb.tanh(kb.mul(inner, kb.constant(0.7978845608028654)));
      x = kb.mul(kb.mul(x, kb.add(t, kb.constant(1))), kb.constant(0.5));
    }
    kb.store(C, {i * BM, j * BN}, x);
  });
  return kb.finish();
}

}  // namespace tessel
