// The GroupIR verifier: buffer ids and spaces fit each op (copy into shared or
// global, mma operands in shared, fragments private), windows fit static buffers,
// op ids are unique, symbols are defined, fragment parts are multiples of the atom.
// Violations are user errors (ErrorKind::Verify) naming the op id.
#pragma once
#include "ir/group_ir.h"

namespace tessel {
void verify_group_program(const GroupProgram& program);
}  // namespace tessel
