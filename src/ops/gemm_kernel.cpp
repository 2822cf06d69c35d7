#include "ops/gemm_kernel.h"

#include "dsl/dsl.h"

namespace tessel {

TileKernel gemm_kernel(DType ab) {
  KernelBuilder kb("gemm");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym lda = kb.size("lda"), ldb = kb.size("ldb"), ldc = kb.size("ldc");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", M, K, lda, Access::In);
  Tensor B = kb.tensor("B", K, N, ldb, Access::In);
  Tensor C = kb.tensor("C", M, N, ldc, Access::InOut);
  std::string alpha = kb.scalar("alpha"), beta = kb.scalar("beta");

  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile zero = kb.constant(0.0, BM, BN);
    Tile acc = kb.pipeline(ceil_div(K, BK), zero, [&](Sym k, Tile partial) {
      Tile a = kb.load(A, i * BM, k * BK, BM, BK);
      Tile b = kb.load(B, k * BK, j * BN, BK, BN);
      return kb.mma(a, b, partial);
    });
    Tile result = kb.mul(acc, kb.scalar_value(alpha));
    kb.if_(
        ScalarCond{beta, CmpOp::EQ, 0.0}, [&] { kb.store(C, i * BM, j * BN, result); },
        [&] {
          Tile c = kb.load(C, i * BM, j * BN, BM, BN);
          kb.store(C, i * BM, j * BN, kb.add(result, kb.mul(c, kb.scalar_value(beta))));
        });
  });
  TileKernel kernel = kb.finish();
  kernel.tensors[0].dtype = ab;  // A
  kernel.tensors[1].dtype = ab;  // B
  return kernel;
}

}  // namespace tessel
