#include "dsl/dsl.h"
#include "ops/library.h"

namespace tessel {

TileKernel row_sum_kernel() {
  KernelBuilder kb("row_sum");
  Sym M = kb.size("M"), N = kb.size("N"), ldx = kb.size("ldx");
  Sym BR = kb.tile("BR"), BC = kb.tile("BC");
  Tensor X = kb.tensor("X", {M, N}, {ldx, 1}, Access::In);
  Tensor S = kb.tensor("S", {M}, {1}, Access::Out);
  kb.parallel(ceil_div(M, BR), [&](Sym i) {
    Tile sum = kb.serial(ceil_div(N, BC), kb.constant(0, BR, 1), [&](Sym k, Tile s) {
      return kb.add(s, kb.reduce_sum(kb.load(X, {i * BR, k * BC}, BR, BC), 1));
    });
    kb.store(S, {i * BR}, {0, -1}, sum);  // a column [BR, 1] into the rank-1 S
  });
  return kb.finish();
}

TileKernel col_sum_kernel() {
  KernelBuilder kb("col_sum");
  Sym M = kb.size("M"), N = kb.size("N"), ldx = kb.size("ldx");
  Sym BR = kb.tile("BR"), BC = kb.tile("BC");
  Tensor X = kb.tensor("X", {M, N}, {ldx, 1}, Access::In);
  Tensor S = kb.tensor("S", {N}, {1}, Access::Out);
  kb.parallel(ceil_div(N, BC), [&](Sym j) {
    Tile sum = kb.serial(ceil_div(M, BR), kb.constant(0, 1, BC), [&](Sym k, Tile s) {
      return kb.add(s, kb.reduce_sum(kb.load(X, {k * BR, j * BC}, BR, BC), 0));
    });
    kb.store(S, {j * BC}, sum);  // a row [1, BC]: the default for rank 1
  });
  return kb.finish();
}

TileKernel add_broadcast_kernel() {
  KernelBuilder kb("add_broadcast");
  Sym M = kb.size("M"), N = kb.size("N"), lda = kb.size("lda"), ldc = kb.size("ldc");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN");
  Tensor A = kb.tensor("A", {M, N}, {lda, 1}, Access::In);
  Tensor b = kb.tensor("b", {M}, {1}, Access::In);
  Tensor C = kb.tensor("C", {M, N}, {ldc, 1}, Access::Out);
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile a = kb.load(A, {i * BM, j * BN}, BM, BN);
    Tile col = kb.load(b, {i * BM}, {0, -1}, BM, 1);
    kb.store(C, {i * BM, j * BN}, kb.add(a, col));
  });
  return kb.finish();
}

}  // namespace tessel
