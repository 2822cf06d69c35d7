// GEMM written in the DSL: C = alpha * A * B + beta * C, row-major with
// leading dimensions. Sizes M, N, K, lda, ldb, ldc and scalars alpha, beta are
// launch parameters; BM, BN, BK are tile parameters a Plan binds. When beta == 0
// the kernel never reads C. A and B are stored as `ab` (f32, bf16 or f16); C and
// all arithmetic are fp32.
#pragma once
#include "ir/tile_ir.h"

namespace tessel {
TileKernel gemm_kernel(DType ab = DType::F32);
}  // namespace tessel
