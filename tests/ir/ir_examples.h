// Hand-built GEMM-like programs shared by the IR tests, plus structural comparisons
// that do not go through the printer.
#pragma once
#include <string>

#include "ir/group_ir.h"
#include "ir/tile_ir.h"

namespace tessel::test {

// C = alpha * A * B (+ beta * C), BM x BN tiles, a pipelined k loop.
TileKernel gemm_tile_kernel();
// The same GEMM for one group: 64x64x32 tiles, double-buffered staging, 4 workers.
GroupProgram gemm_group_program();

// Reads tests/ir/data/<name>.
std::string read_data(const std::string& name);

void expect_same_kernel(const TileKernel& a, const TileKernel& b);
void expect_same_program(const GroupProgram& a, const GroupProgram& b);

}  // namespace tessel::test
