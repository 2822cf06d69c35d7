#include "blas_kernel.h"

#include "dsl/dsl.h"

namespace tessel {

TileKernel blas_gemm_kernel(DType dt, bool trans_a, bool trans_b) {
  KernelBuilder kb(std::string("blas_gemm_") + (trans_a ? "t" : "n") + (trans_b ? "t" : "n"));
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym lda = kb.size("lda"), ldb = kb.size("ldb"), ldc = kb.size("ldc");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Sym one(1);
  Tensor A = kb.tensor("A", {M, K}, trans_a ? std::vector<Sym>{one, lda} : std::vector<Sym>{lda, one},
                       Access::In, dt);
  Tensor B = kb.tensor("B", {K, N}, trans_b ? std::vector<Sym>{one, ldb} : std::vector<Sym>{ldb, one},
                       Access::In, dt);
  Tensor C = kb.tensor("C", {M, N}, {ldc, one}, Access::InOut, dt);
  std::string alpha = kb.scalar("alpha", dt), beta = kb.scalar("beta", dt);
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile zero = kb.constant(0.0, BM, BN);
    if (dt != DType::F32) zero = kb.cast(zero, dt);
    Tile acc = kb.pipeline(ceil_div(K, BK), zero, [&](Sym k, Tile partial) {
      Tile a = kb.load(A, {i * BM, k * BK}, BM, BK);
      Tile b = kb.load(B, {k * BK, j * BN}, BK, BN);
      return kb.mma(a, b, partial);
    });
    Tile result = kb.mul(acc, kb.scalar_value(alpha));
    kb.if_(
        ScalarCond{beta, CmpOp::EQ, 0.0}, [&] { kb.store(C, {i * BM, j * BN}, result); },
        [&] {
          Tile c = kb.load(C, {i * BM, j * BN}, BM, BN);
          kb.store(C, {i * BM, j * BN}, kb.add(result, kb.mul(c, kb.scalar_value(beta))));
        });
  });
  return kb.finish();
}

}  // namespace tessel
