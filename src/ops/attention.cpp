// Fused attention, FlashAttention-style forward pass, written in the DSL like any
// user kernel (docs/attention.md walks it through the compiler):
//
//   O[b, h] = softmax(Q[b, h] K[b, h / (Hq / Hkv)]^T * scale + mask) V[b, h / (Hq / Hkv)]
//
// One group owns BM query rows of one (batch, head): it keeps its Q tile, walks the
// keys and values in blocks of BN and carries the running row max m, the running
// row sum l of exp(s - m) and the unnormalized output o; when the max grows, l and o
// are rescaled by exp(m_old - m_new). One division by l at the end.
//
// Precision: Q, K and V are `dtype` (f32, bf16 or f16); every value computed from
// them is f32 (scores, the softmax statistics, the accumulator), and O is f32. With
// 16-bit inputs the probabilities p are rounded to that dtype (a cast) before they
// multiply V, so that both operands of the second mma have the inputs' dtype (the
// tensor-core atoms take two operands of one 16-bit type); the row sum l adds the
// unrounded p.
#include <cmath>

#include "dsl/dsl.h"
#include "ops/library.h"
#include "tessel/error.h"

namespace tessel {

TileKernel attention_kernel(AttentionMask mask, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16)
    user_error(ErrorKind::InvalidArgument, std::string("attention: inputs of dtype ") + dtype_name(dtype) +
                                               " (f32, bf16 or f16)");
  bool causal = mask == AttentionMask::Causal;
  std::string name = causal ? "attention_causal" : "attention";
  if (dtype != DType::F32) name += std::string("_") + dtype_name(dtype);
  KernelBuilder kb(name);
  Sym B = kb.size("B"), Hq = kb.size("Hq"), Hkv = kb.size("Hkv");
  Sym Sq = kb.size("Sq"), Skv = kb.size("Skv"), D = kb.size("D");
  // Strides of the batch, head and sequence dimensions; head_dim is contiguous.
  Sym sqb = kb.size("sqb"), sqh = kb.size("sqh"), sqs = kb.size("sqs");
  Sym skb = kb.size("skb"), skh = kb.size("skh"), sks = kb.size("sks");
  Sym svb = kb.size("svb"), svh = kb.size("svh"), svs = kb.size("svs");
  Sym sob = kb.size("sob"), soh = kb.size("soh"), sos = kb.size("sos");
  // BM query rows and BN keys a step; BD spans the whole head_dim (BD >= D).
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BD = kb.tile("BD");
  Tensor Q = kb.tensor("Q", {B, Hq, Sq, D}, {sqb, sqh, sqs, 1}, Access::In, dtype);
  Tensor K = kb.tensor("K", {B, Hkv, Skv, D}, {skb, skh, sks, 1}, Access::In, dtype);
  Tensor V = kb.tensor("V", {B, Hkv, Skv, D}, {svb, svh, svs, 1}, Access::In, dtype);
  Tensor O = kb.tensor("O", {B, Hq, Sq, D}, {sob, soh, sos, 1}, Access::Out);
  std::string scale = kb.scalar("scale");
  kb.parallel(B, Hq, ceil_div(Sq, BM), [&](Sym b, Sym h, Sym i) {
    // Grouped-query attention: Hq / Hkv query heads share one K/V head.
    Sym hk = h / (Hq / Hkv);
    // Scores are kept in base-2 units: s * scale * log2(e), so that exp(x) is exp2 of
    // them (one instruction on GPUs) and the scale is one multiply a score.
    Tile sc = kb.mul(kb.scalar_value(scale), kb.constant(M_LOG2E));
    // Rows past Sq and columns past D read 0: they add nothing to Q K^T.
    Tile q = kb.load(Q, {b, h, i * BM, 0}, BM, BD);
    Tile m0 = kb.constant(-INFINITY, BM, 1), l0 = kb.constant(0, BM, 1);
    Tile o0 = kb.constant(0, BM, BD);
    // Causal (top-left aligned: key c is seen by query r when c <= r): the blocks
    // right of the diagonal are never visited, so the walk ends at the block that
    // holds key (i + 1) * BM - 1.
    Sym kv_blocks = causal ? ceil_div(min(Skv, (i + 1) * BM), BN) : ceil_div(Skv, BN);
    // The blocks that every row of the tile sees whole (inside Skv and, causal, left
    // of the tile's first query) skip the mask: a branch on the block index, the
    // same for the whole group.
    Sym whole_blocks = causal ? min(Skv / BN, (i * BM + 1) / BN) : Skv / BN;
    std::vector<Tile> mlo = kb.pipeline(kv_blocks, {m0, l0, o0}, [&](Sym k, std::vector<Tile> c) {
      // K^T: rows along head_dim (dimension 3), columns along the keys (dimension 2).
      Tile kt = kb.load(K, {b, hk, k * BN, 0}, {3, 2}, BD, BN);
      Tile s = kb.mul(kb.mma(q, kt, kb.constant(0, BM, BN)), sc);
      // Keys past Skv (and, causal, after the query's own position) get -inf.
      s = kb.if_else(
          k, CmpOp::LT, whole_blocks, [&] { return std::vector<Tile>{s}; },
          [&] {
            Tile key = kb.add(kb.index(1, 1, BN), kb.index_value(k * BN));
            Tile keep = kb.cmp(CmpOp::LT, key, kb.index_value(Skv));
            if (causal) {
              Tile query = kb.add(kb.index(0, BM, 1), kb.index_value(i * BM));
              keep = kb.mul(keep, kb.cmp(CmpOp::LE, key, query));
            }
            return std::vector<Tile>{kb.select(keep, s, kb.constant(-INFINITY))};
          })[0];
      // Online softmax: every row sees key 0 in block 0, so m is finite from there on.
      Tile m_new = kb.max(c[0], kb.reduce_max(s, 1));
      Tile rescale = kb.exp2(kb.sub(c[0], m_new));
      Tile p = kb.exp2(kb.sub(s, m_new));
      Tile l_new = kb.add(kb.mul(c[1], rescale), kb.reduce_sum(p, 1));
      // Keys past Skv read 0 from V (and have p = 0).
      Tile v = kb.load(V, {b, hk, k * BN, 0}, BN, BD);
      Tile pv = dtype == DType::F32 ? p : kb.cast(p, dtype);
      Tile o_new = kb.mma(pv, v, kb.mul(c[2], rescale));
      return std::vector<Tile>{m_new, l_new, o_new};
    });
    kb.store(O, {b, h, i * BM, 0}, kb.div(mlo[2], mlo[1]));
  });
  return kb.finish();
}

}  // namespace tessel
