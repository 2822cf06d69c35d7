// Lowering-like example programs shared by the pass tests and the sim tests.
#pragma once
#include "build.h"

namespace tessel::test {

// The seed's aligned GEMM: one group computes a 64x64 tile of C = A * B with a
// single-buffered K loop of 32-wide steps and copy batch 4:
//   frag.fill acc
//   for k in [0, ceildiv(K, 32)) { copy A -> As; fence; copy B -> Bs; fence; mma; fence }
//   frag.store acc -> C; fence
// Tensors: A (M x K), B (K x N), C (M x N); sizes M, N, K, lda, ldb, ldc.
// Workers form a wr x wc grid over the 64x64 fragment; surplus workers still copy.
inline GroupProgram aligned_gemm(int workers = 256, int wr = 16, int wc = 16) {
  Builder b(workers, wr, wc);
  GroupProgram& p = b.p;
  p.name = "gemm_64x64x32";
  p.size_params = {"M", "N", "K", "lda", "ldb", "ldc"};
  p.tensors = {matrix("A", "M", "K", "lda", Access::In), matrix("B", "K", "N", "ldb", Access::In),
               matrix("C", "M", "N", "ldc", Access::Out)};
  p.grid = {{"gm", ceil_div(s("M"), c(64))}, {"gn", ceil_div(s("N"), c(64))}};
  p.atom_m = 64 / wr;
  p.atom_n = 64 / wc;
  int ga = b.buffer(Buffer{-1, "A", Space::Global, DType::F32, 0, 0, 0});
  int gb = b.buffer(Buffer{-1, "B", Space::Global, DType::F32, 0, 0, 1});
  int gc = b.buffer(Buffer{-1, "C", Space::Global, DType::F32, 0, 0, 2});
  int as = b.shared("As", 64, 32);
  int bs = b.shared("Bs", 32, 64);
  int acc = b.frag("acc", 64, 64);
  Expr row0 = s("gm") * 64, col0 = s("gn") * 64, k0 = s("k") * 32;
  std::vector<GroupOp> body;
  body.push_back(b.copy(ref(ga, row0, k0), ref(as), 64, 32, 4));
  body.push_back(b.fence());
  body.push_back(b.copy(ref(gb, k0, col0), ref(bs), 32, 64, 4));
  body.push_back(b.fence());
  body.push_back(b.mma(acc, ref(as), ref(bs), 64, 64, 32));
  body.push_back(b.fence());
  p.body.push_back(b.fill(acc, 0));
  p.body.push_back(b.loop("k", c(0), ceil_div(s("K"), c(32)), std::move(body)));
  p.body.push_back(b.frag_store(acc, ref(gc, row0, col0)));
  p.body.push_back(b.fence());
  return with_global_strides(p);
}

// The ragged-output GEMM: as aligned_gemm, but the A and B copies read zero past
// M and N, and the tile goes out through shared memory with a guarded copy:
//   ... loop ...; fence; frag.store acc -> Cs; fence; copy Cs -> C (guarded); fence
inline GroupProgram ragged_gemm(int workers = 256, int wr = 16, int wc = 16) {
  GroupProgram p = aligned_gemm(workers, wr, wc);
  p.name = "gemm_64x64x32_ragged";
  Builder b(workers, wr, wc);
  b.p = p;
  std::vector<GroupOp>& body = b.p.body[1].bodies[0];
  body[0].src_row_bound = s("M");
  body[2].src_col_bound = s("N");
  int cs = b.shared("Cs", 64, 64);
  int acc = b.p.find_buffer("acc"), gc = b.p.find_buffer("C");
  GroupOp out = b.copy(ref(cs), ref(gc, s("gm") * 64, s("gn") * 64), 64, 64, 4);
  out.dst_row_bound = s("M");
  out.dst_col_bound = s("N");
  b.p.body.resize(2);
  b.p.body.push_back(b.fence());
  b.p.body.push_back(b.frag_store(acc, ref(cs)));
  b.p.body.push_back(b.fence());
  b.p.body.push_back(out);
  b.p.body.push_back(b.fence());
  return with_global_strides(b.p);
}

// A double-buffered K loop (versions 2): the prologue fills slot 0; iteration k
// prefetches slot (k + 1) % 2 while the mma reads slot k % 2. With
// `same_slot`, the prefetch writes slot k % 2 instead (a real conflict).
// Tensors: A (M x K), B (K x N) with K = 32 * (iterations + 1), C (M x N); 8x8x4 tiles.
inline GroupProgram double_buffered(bool same_slot, int workers = 4) {
  Builder b(workers, 2, 2);
  GroupProgram& p = b.p;
  p.name = "double_buffered";
  p.size_params = {"M", "N", "K", "T"};
  p.tensors = {matrix("A", "M", "K", "K", Access::In), matrix("B", "K", "N", "N", Access::In),
               matrix("C", "M", "N", "N", Access::Out)};
  p.grid = {{"g", c(1)}};
  int ga = b.buffer(Buffer{-1, "A", Space::Global, DType::F32, 0, 0, 0});
  int gb = b.buffer(Buffer{-1, "B", Space::Global, DType::F32, 0, 0, 1});
  int gc = b.buffer(Buffer{-1, "C", Space::Global, DType::F32, 0, 0, 2});
  int as = b.shared("As", 8, 4, 2);
  int bs = b.shared("Bs", 4, 8, 2);
  int acc = b.frag("acc", 8, 8);
  Expr cur = expr_mod(s("k"), c(2));
  Expr next = same_slot ? cur : expr_mod(s("k") + 1, c(2));
  Expr k1 = (s("k") + 1) * 4;
  p.body.push_back(b.fill(acc, 0));
  p.body.push_back(b.copy(ref(ga, 0, 0), ref(as, 0, 0, c(0)), 8, 4));
  p.body.push_back(b.fence());
  p.body.push_back(b.copy(ref(gb, 0, 0), ref(bs, 0, 0, c(0)), 4, 8));
  p.body.push_back(b.fence());
  std::vector<GroupOp> body;
  body.push_back(b.copy(ref(ga, c(0), k1), ref(as, c(0), c(0), next), 8, 4));
  body.push_back(b.fence());
  body.push_back(b.copy(ref(gb, k1, c(0)), ref(bs, c(0), c(0), next), 4, 8));
  body.push_back(b.fence());
  body.push_back(b.mma(acc, ref(as, c(0), c(0), cur), ref(bs, c(0), c(0), cur), 8, 8, 4));
  body.push_back(b.fence());
  p.body.push_back(b.loop("k", c(0), s("T"), std::move(body)));
  p.body.push_back(b.frag_store(acc, ref(gc, 0, 0)));
  p.body.push_back(b.fence());
  return with_global_strides(p);
}

}  // namespace tessel::test
