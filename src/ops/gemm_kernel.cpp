#include "ops/gemm_kernel.h"

#include "dsl/dsl.h"

namespace tessel {
namespace {

// C = alpha * result + beta * C; C is read only when beta != 0 (form: which
// values of beta the kernel serves, gemm_kernel.h).
void store_scaled(KernelBuilder& kb, const Tensor& C, Sym row, Sym col, Sym rows, Sym cols, Tile result,
                  const std::string& alpha, const std::string& beta, GemmBeta form = GemmBeta::Any) {
  result = kb.mul(result, kb.scalar_value(alpha));
  auto plain = [&] { kb.store(C, row, col, result); };
  if (form == GemmBeta::Zero) return plain();
  kb.if_(ScalarCond{beta, CmpOp::EQ, 0.0}, plain, [&] {
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

TileKernel gemm_kernel(DType ab, bool b_transposed, GemmBeta beta_form) {
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
    store_scaled(kb, C, i * BM, j * BN, BM, BN, acc, alpha, beta, beta_form);
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

// Stream-K sums a shared tile in parts of this many columns (the last one what is
// left), at most this many parts (BN up to 256).
constexpr int kStreamKSumColumns = 64, kStreamKSumParts = 4;

TileKernel gemm_stream_k_kernel(DType ab) {
  KernelBuilder kb("gemm_stream_k");
  Sym M = kb.size("M"), N = kb.size("N"), K = kb.size("K");
  Sym lda = kb.size("lda"), ldb = kb.size("ldb"), ldc = kb.size("ldc");
  Sym G = kb.size("G"), W = kb.size("W"), L = kb.size("L"), Q = kb.size("Q"), TB = kb.size("TB");
  Sym PS = kb.size("PS"), sps = kb.size("sps"), ldp = kb.size("ldp");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN"), BK = kb.tile("BK");
  Tensor A = kb.tensor("A", M, K, lda, Access::In);
  Tensor B = kb.tensor("B", K, N, ldb, Access::In);
  Tensor C = kb.tensor("C", M, N, ldc, Access::InOut);
  // Slots of whole tiles: the lowering sees every window of P inside it (with the
  // slot clamped into [0, PS)), so P's loads and stores need no bounds, which in a
  // sum's loads cost registers and spilled.
  Tensor P = kb.tensor("P", {PS, BM, BN}, {sps, ldp, 1}, Access::InOut);
  Tensor T = kb.tensor("T", {Q}, {1}, Access::InOut, DType::U32);
  std::string alpha = kb.scalar("alpha"), beta = kb.scalar("beta");
  // Tiles are ordered in bands of TB tile rows, column by column inside a band (as
  // persistent_tiles orders them). The first W x G run whole, tile w x G + g in group
  // g's segment w; the rest, KT k steps each, share their S steps: group g runs
  // steps [a, b), step u being step u % KT of tile D + u / KT.
  Sym TM = ceil_div(M, BM), TN = ceil_div(N, BN), KT = ceil_div(K, BK);
  Sym D = W * G, S = (TM * TN - D) * KT;
  kb.parallel(G, [&](Sym g) {
    Sym a = g * L, b = min(a + L, S), first = a / KT;
    // W whole tiles, then one segment a tile the range meets; independent of each
    // other (other tiles, other slots), like the tiles of a persistent loop.
    kb.pipeline(W + max(ceil_div(b, KT) - first, 0), {}, [&](Sym s, std::vector<Tile>) -> std::vector<Tile> {
      Sym shared = min(max(s - W + 1, 0), 1);  // 1 in the shared steps' segments
      Sym at = first + s - W;                  // there, the tile among the last ones
      Sym tile = (1 - shared) * (s * G + g) + shared * (D + at);
      Sym k0 = shared * max(a - at * KT, 0), k1 = KT - shared * (KT - min(b - at * KT, KT));
      Sym band_row = tile / (TB * TN) * TB, within = tile % (TB * TN);
      Sym band_rows = min(TM - band_row, TB), i = band_row + within % band_rows, j = within / band_rows;
      // The steps before this segment's first: those of the group's earlier segments.
      Sym earlier = (1 - shared) * s * KT + shared * (W * KT + at * KT + k0 - a);
      Tile acc = kb.pipeline(k1 - k0, earlier, kb.constant(0.0, BM, BN), [&](Sym k, Tile partial) {
        Tile x = kb.load(A, i * BM, (k0 + k) * BK, BM, BK);
        Tile y = kb.load(B, (k0 + k) * BK, j * BN, BK, BN);
        return kb.mma(x, y, partial);
      });
      kb.if_(
          k1 - k0, CmpOp::EQ, KT, [&] { store_scaled(kb, C, i * BM, j * BN, BM, BN, acc, alpha, beta); },
          [&] {
            // Group h keeps the partial of its first shared tile in slot 2h, of its
            // last in 2h + 1. The tile's groups are g0 .. g1; the last to arrive sums
            // them in that order.
            auto slot = [&](Sym h) { return min(max(h * 2 + min(at - h * L / KT, 1), 0), PS - 1); };
            kb.store(P, {slot(g), 0, 0}, acc);
            Sym g0 = at * KT / L, count = ((at + 1) * KT - 1) / L - g0 + 1;
            Sym ticket = kb.ticket(T, at, count);
            // At most 64 columns at a time: ptxas issues a sum's loads ahead of their
            // adds, and a whole tile's sum beside them spilled.
            kb.if_(ticket, CmpOp::EQ, count - 1, [&] {
              for (int part = 0; part < kStreamKSumParts; ++part) {
                // (A part past BN never runs; its 16 columns only keep it a valid tile.)
                Sym col = min(BN, kStreamKSumColumns) * part;
                Sym cols = max(min(BN - col, kStreamKSumColumns), 16);
                kb.if_(col, CmpOp::LT, BN, [&] {
                  Tile sum = kb.serial(count, kb.constant(0.0, BM, cols), [&](Sym u, Tile partials) {
                    return kb.add(partials, kb.load(P, {slot(g0 + u), 0, col}, BM, cols));
                  });
                  store_scaled(kb, C, i * BM, j * BN + col, BM, cols, sum, alpha, beta);
                });
              }
            });
          });
      return {};
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
