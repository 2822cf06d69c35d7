#include <cmath>

#include "dsl/dsl.h"
#include "ops/library.h"

namespace tessel {

TileKernel softmax_kernel(DType dtype) {
  KernelBuilder kb("softmax");
  Sym M = kb.size("M"), N = kb.size("N"), ldx = kb.size("ldx"), ldy = kb.size("ldy");
  Sym BR = kb.tile("BR"), BC = kb.tile("BC");
  Tensor X = kb.tensor("X", {M, N}, {ldx, 1}, Access::In, dtype);
  Tensor Y = kb.tensor("Y", {M, N}, {ldy, 1}, Access::Out, dtype);
  kb.parallel(ceil_div(M, BR), [&](Sym i) {
    Tile m0 = kb.constant(-INFINITY, BR, 1), l0 = kb.constant(0, BR, 1);
    // Pass 1: a running max m and a running sum l of exp(x - m); when the max grows,
    // the sum so far is rescaled. Columns past N read as -inf and add nothing.
    std::vector<Tile> ml = kb.serial(ceil_div(N, BC), {m0, l0}, [&](Sym k, std::vector<Tile> c) {
      Tile x = kb.load(X, {i * BR, k * BC}, BR, BC, -INFINITY);
      Tile m_new = kb.max(c[0], kb.reduce_max(x, 1));
      Tile rescale = kb.exp(kb.sub(c[0], m_new));
      Tile block_sum = kb.reduce_sum(kb.exp(kb.sub(x, m_new)), 1);
      return std::vector<Tile>{m_new, kb.add(kb.mul(c[1], rescale), block_sum)};
    });
    // Pass 2: write exp(x - m) / l.
    kb.serial(ceil_div(N, BC), {}, [&](Sym k, std::vector<Tile>) {
      Tile x = kb.load(X, {i * BR, k * BC}, BR, BC);
      kb.store(Y, {i * BR, k * BC}, kb.div(kb.exp(kb.sub(x, ml[0])), ml[1]));
      return std::vector<Tile>{};
    });
  });
  return kb.finish();
}

}  // namespace tessel
