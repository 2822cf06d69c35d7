// The kernel library, written in the DSL (src/dsl/dsl.h). Each kernel is also a
// text file in kernels/ (tests check that the two compute the same thing). None of
// them is known to the compiler by name: they are ordinary kernels.
//
// Tile parameters: BM, BN, BK for the GEMMs; BR (rows) and BC (columns) for the row
// and column kernels. Sizes are named as in the text files.
#pragma once
#include "ir/tile_ir.h"

namespace tessel {

// Y = softmax(X) along each row (numerically stable: online max and sum, then a
// second pass that writes). X, Y: [M, N] with strides (ldx, 1), (ldy, 1).
TileKernel softmax_kernel(DType dtype = DType::F32);

// Y = (X - mean) * rsqrt(var + eps) * gamma + beta over each row of X [M, N]
// (biased variance, two passes); gamma, beta: [N]; scalar eps.
TileKernel layernorm_kernel(DType dtype = DType::F32);

// S[r] = sum_c X[r, c] (row_sum, S: [M]) and S[c] = sum_r X[r, c] (col_sum, S: [N]).
TileKernel row_sum_kernel();
TileKernel col_sum_kernel();

// C = A + b with b: [M] broadcast along each row's columns (a column vector).
TileKernel add_broadcast_kernel();

// C = A * B with A: [M, K] strides (sam, sak), B: [K, N] strides (sbk, sbn), C:
// [M, N] strides (ldc, 1): a transposed A or B is a launch with swapped strides.
TileKernel gemm_strided_kernel();

// C[b] = A[b] * B[b] for b < batch: rank-3 tensors with free strides (a batch
// stride of 0 shares an operand across the batch); a 3-D grid.
TileKernel batched_gemm_kernel();

// C = act(A * B + bias), the bias broadcast along rows ([N], one value per column)
// or along columns ([M], one per row).
enum class BiasAlong { Rows, Cols };
enum class Activation { None, Relu, Gelu };  // gelu: the tanh approximation
TileKernel gemm_epilogue_kernel(BiasAlong bias, Activation act);

// Fused attention (FlashAttention-style forward, online softmax; src/ops/attention.cpp,
// docs/attention.md): O = softmax(Q K^T * scale + mask) V per batch and query head.
// Q, O: [B, Hq, Sq, D], K, V: [B, Hkv, Skv, D] (grouped-query attention: query head h
// reads K/V head h / (Hq / Hkv); Hq a multiple of Hkv), strides (s?b, s?h, s?s, 1);
// scalar scale. Tile parameters BM (query rows), BN (keys a step), BD >= D. Causal
// is top-left aligned (query r sees keys c <= r, as PyTorch's is_causal); the key
// blocks right of the diagonal are skipped. Kernel names: attention, attention_causal.
// dtype: Q, K, V as f32, bf16 or f16 (then the names end in _bf16, _f16); O and all
// arithmetic stay f32, and the probabilities are rounded to dtype before they
// multiply V (the cuda target runs 16-bit inputs on the mma.sync atom).
enum class AttentionMask { None, Causal };
TileKernel attention_kernel(AttentionMask mask = AttentionMask::None, DType dtype = DType::F32);

}  // namespace tessel
