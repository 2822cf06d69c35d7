// The TileIR verifier. Each violation is a user error (ErrorKind::Verify) whose
// message starts with the user's source location ("gemm.cpp:42: ") when known and
// names the problem: use of an undefined value, operand shape mismatch in mma or an
// elementwise op, a load/store of an unknown tensor, a store to an `in` tensor,
// loads/stores of a non-2-D tile, yields whose count or types differ from the
// enclosing op's results, an unknown symbol in an index expression, nests of the
// wrong arity.
#pragma once
#include "ir/tile_ir.h"

namespace tessel {
void verify_tile_kernel(const TileKernel& kernel);
}  // namespace tessel
