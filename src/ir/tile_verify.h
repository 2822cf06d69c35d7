// The TileIR verifier. Each violation is a user error (ErrorKind::Verify) whose
// message starts with the user's source location ("gemm.cpp:42: ") when known and
// names the problem: tensors of rank outside 1..4 or without one stride per extent,
// use of an undefined value, mma shapes that do not chain, elementwise operands that
// do not broadcast, reduce/index axes other than 0 and 1, transposes and broadcasts
// whose result shape is wrong, a load/store of an unknown tensor, with a coordinate
// count other than the tensor's rank or with bad `dims`, a store to an `in` tensor,
// yields whose count or types differ from the enclosing op's results, an unknown
// symbol in an index expression (coordinates, extents, strides, loop bounds), nests of
// the wrong arity (parallel: 1 to 3 loops).
#pragma once
#include "ir/tile_ir.h"

namespace tessel {
void verify_tile_kernel(const TileKernel& kernel);
}  // namespace tessel
