// GEMM written in the DSL: C = alpha * A * B + beta * C, fp32, row-major with
// leading dimensions. Sizes M, N, K, lda, ldb, ldc and scalars alpha, beta are
// launch parameters; BM, BN, BK are tile parameters a Plan binds. When beta == 0
// the kernel never reads C.
#pragma once
#include "ir/tile_ir.h"

namespace tessel {
TileKernel gemm_kernel();
}  // namespace tessel
