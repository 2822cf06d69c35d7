// GroupIR text of Z (C x R) = X^T (X: R x C, row-major) over a grid of tile x tile
// blocks, with `load` (a frag.load #0 of z: a transposed view of X, or a transpose
// of a plain window) and a guarded store: the sim and cpu transpose tests.
#pragma once
#include <cstdint>
#include <string>

namespace tessel::test {

inline std::string transpose_program(int64_t tile, int worker_rows, int worker_cols, const std::string& load) {
  const std::string t = std::to_string(tile), w = std::to_string(worker_rows * worker_cols);
  return "group transpose(sizes R, C; tensors X: f32[R, C] strides(C, 1) in, Z: f32[C, R] strides(R, 1) out; "
         "scalars) {\n"
         "  grid i = ceildiv(C, " + t + "), j = ceildiv(R, " + t + ")\n"
         "  workers " + w + " grid " + std::to_string(worker_rows) + "x" + std::to_string(worker_cols) + " lanes 1\n"
         "  atom fma 1x1\n"
         "  buffer X: global f32 tensor X\n"
         "  buffer Z: global f32 tensor Z\n"
         "  buffer z: private f32[" + t + ", " + t + "] row panel 1 versions 1\n"
         "  " + load + "\n"
         "  frag.store #1 Z[(i * " + t + "), (j * " + t + ")] strides(R, 1) <- z guard dst(C, R)\n"
         "}\n";
}

}  // namespace tessel::test
