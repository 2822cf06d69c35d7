// The GroupIR verifier: buffer ids and spaces fit each op (copy into shared or
// global, mma operands in shared, fragments private), windows fit static buffers,
// op ids are unique, symbols are defined, global windows carry strides (and only
// they), fragments divide over the worker grid (extent 1 is replicated) and mma
// accumulators' parts are multiples of the atom, elementwise operands broadcast to
// the destination with the op's arity, reductions have their shapes and scratch
// windows right, and only frag.load reads transposed.
// Violations are user errors (ErrorKind::Verify) naming the op id.
#pragma once
#include "ir/group_ir.h"

namespace tessel {
void verify_group_program(const GroupProgram& program);
}  // namespace tessel
