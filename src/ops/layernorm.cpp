#include "dsl/dsl.h"
#include "ops/library.h"

namespace tessel {

TileKernel layernorm_kernel(DType dtype) {
  KernelBuilder kb("layernorm");
  Sym M = kb.size("M"), N = kb.size("N"), ldx = kb.size("ldx"), ldy = kb.size("ldy");
  Sym BR = kb.tile("BR"), BC = kb.tile("BC");
  Tensor X = kb.tensor("X", {M, N}, {ldx, 1}, Access::In, dtype);
  Tensor gamma = kb.tensor("gamma", {N}, {1}, Access::In, dtype);
  Tensor beta = kb.tensor("beta", {N}, {1}, Access::In, dtype);
  Tensor Y = kb.tensor("Y", {M, N}, {ldy, 1}, Access::Out, dtype);
  std::string eps_name = kb.scalar("eps");
  kb.parallel(ceil_div(M, BR), [&](Sym i) {
    Tile n = kb.index_value(N), eps = kb.scalar_value(eps_name);
    Tile inv_n = kb.recip(n);
    Tile zero_col = kb.constant(0, BR, 1), zero = kb.constant(0);
    // Pass 1: the mean. Columns past N read as 0 and add nothing.
    Tile sum = kb.serial(ceil_div(N, BC), zero_col, [&](Sym k, Tile s) {
      return kb.add(s, kb.reduce_sum(kb.load(X, {i * BR, k * BC}, BR, BC), 1));
    });
    Tile mean = kb.mul(sum, inv_n);
    // Pass 2: the sum of squared deviations; padded columns are masked by comparing
    // each column's absolute index (its index in the tile plus k * BC) with N.
    Tile tile_col = kb.index(1, 1, BC);
    Tile sq_sum = kb.serial(ceil_div(N, BC), zero_col, [&](Sym k, Tile v) {
      Tile dev = kb.sub(kb.load(X, {i * BR, k * BC}, BR, BC), mean);
      Tile col = kb.add(tile_col, kb.index_value(k * BC));
      Tile masked = kb.select(kb.cmp(CmpOp::LT, col, n), kb.mul(dev, dev), zero);
      return kb.add(v, kb.reduce_sum(masked, 1));
    });
    Tile rstd = kb.rsqrt(kb.add(kb.mul(sq_sum, inv_n), eps));
    // Pass 3: normalize, scale by gamma, shift by beta ([1, BC] rows, broadcast).
    kb.serial(ceil_div(N, BC), {}, [&](Sym k, std::vector<Tile>) {
      Tile x = kb.load(X, {i * BR, k * BC}, BR, BC);
      Tile g = kb.load(gamma, {k * BC}, 1, BC), b = kb.load(beta, {k * BC}, 1, BC);
      kb.store(Y, {i * BR, k * BC}, kb.add(kb.mul(kb.mul(kb.sub(x, mean), rstd), g), b));
      return std::vector<Tile>{};
    });
  });
  return kb.finish();
}

}  // namespace tessel
