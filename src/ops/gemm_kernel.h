// GEMM written in the DSL: C = alpha * A * B + beta * C, row-major with
// leading dimensions. Sizes M, N, K, lda, ldb, ldc and scalars alpha, beta are
// launch parameters; BM, BN, BK are tile parameters a Plan binds. When beta == 0
// the kernel never reads C. A and B are stored as `ab` (f32, bf16 or f16); C and
// all arithmetic are fp32.
#pragma once
#include "ir/tile_ir.h"

namespace tessel {
TileKernel gemm_kernel(DType ab = DType::F32);

// Split-K, for shapes with too few output tiles to fill the device: K is cut into
// S slices of KS (size parameters; KS a multiple of BK, S x KS >= K), and slice s
// of output tile (i, j) writes its fp32 partial product to P[s] (S x M x N, strides
// sps, ldp, 1). Loads past K read 0, so the last slice may overhang.
TileKernel gemm_split_k_kernel(DType ab);

// C = alpha * (P[0] + P[1] + ... + P[S-1]) + beta * C, summed in that order for
// every element (deterministic, whatever the plan); C is not read when beta == 0.
TileKernel split_k_sum_kernel();
}  // namespace tessel
