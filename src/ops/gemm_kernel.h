// GEMM written in the DSL: C = alpha * A * B + beta * C, row-major with
// leading dimensions. Sizes M, N, K, lda, ldb, ldc and scalars alpha, beta are
// launch parameters; BM, BN, BK are tile parameters a Plan binds. When beta == 0
// the kernel never reads C. A and B are stored as `ab` (f32, bf16 or f16); C and
// all arithmetic are fp32.
#pragma once
#include "ir/tile_ir.h"

namespace tessel {
// Which values of beta a kernel serves. Any: the kernel branches on beta == 0.
// Zero: it stores alpha A B without reading C (beta unused): one path of the
// epilogue instead of two, which NVRTC compiles in about 0.6 of the time
// (docs/cuda.md, forty-fourth session). (A form for beta != 0 alone put alpha A B
// and beta C in one basic block, where nvcc fused either product into the sum:
// results then differed in the last bit from one kernel form to another.)
enum class GemmBeta { Any, Zero };

// b_transposed: B is stored N x K row-major (element (k, n) at n * ldb + k), the
// layout tf32 wgmma reads B in (K-major); the kernel is named gemm_bt.
TileKernel gemm_kernel(DType ab = DType::F32, bool b_transposed = false, GemmBeta beta_form = GemmBeta::Any);

// Split-K, for shapes with too few output tiles to fill the device: K is cut into
// S slices of KS (size parameters; KS a multiple of BK, S x KS >= K), and slice s
// of output tile (i, j) writes its fp32 partial product to P[s] (S x M x N, strides
// sps, ldp, 1). Loads past K read 0, so the last slice may overhang.
TileKernel gemm_split_k_kernel(DType ab);

// Y = X^T: X [R, C] strides (ldx, 1), Y [C, R] strides (ldy, 1), in BR x BC tiles
// turned through shared memory, so that both sides read and write whole rows.
TileKernel transpose_kernel();

// C = alpha * (P[0] + P[1] + ... + P[S-1]) + beta * C, summed in that order for
// every element (deterministic, whatever the plan); C is not read when beta == 0.
TileKernel split_k_sum_kernel();

// Split-K in one kernel: each slice stores its partial product as
// gemm_split_k_kernel does, then takes a ticket of its output tile's counter
// (T[i * ceil(N / BN) + j], u32, Q >= the tiles, zero at launch, left zero); the
// slice that draws the last of S sums P[0] + ... + P[S-1] in that order and stores
// C as split_k_sum_kernel does. The result does not depend on which slice is last.
// The front door runs the two kernels above instead: on the H200 this one was
// slower (docs/cuda.md, twenty-fourth session): its sums run on one block a tile.
TileKernel gemm_split_k_fused_kernel(DType ab);

// Stream-K after W data-parallel waves, on G groups. Output tiles are ordered in
// bands of TB tile rows, column by column inside a band. Group g first runs tiles
// w x G + g, w < W, whole; the remaining tiles' k steps (KT = ceil(K / BK) a tile) are
// cut into ranges of L consecutive steps, one a group, so that every group has about
// the same work whatever the tile count. A tile whose steps lie in one range is
// stored as gemm_kernel stores it; a tile that ranges share is summed through P (PS
// >= 2G slots of BM x BN, strides sps, ldp, 1): each of its groups stores its partial
// product, group h in slot 2h for its first shared tile and 2h + 1 for its last, then
// takes a ticket of T[the tile's place among the shared ones] (u32, Q >= those tiles,
// zero at launch, left zero); the last sums the tile's slots in group order and
// stores C. The result does not depend on which group is last.
TileKernel gemm_stream_k_kernel(DType ab);
}  // namespace tessel
