// Memory effects of GroupIR ops, the ground every analysis stands on.
// Granularity is the buffer version: an effect names a buffer and, for shared
// buffers, the version expression it touches (null = every version, for ops whose
// version is unknown). All global buffers form one alias class.
#pragma once
#include <vector>

#include "ir/group_ir.h"

namespace tessel {

struct MemEffect {
  int buffer = -1;
  Space space = Space::Shared;
  Expr version;  // null: all versions
  bool write = false;
};

// Effects on shared and global memory of one op, not counting nested bodies.
// Private fragments are per worker and never shared, so they are not reported.
std::vector<MemEffect> op_effects(const GroupProgram& program, const GroupOp& op);

// Whether two effects may touch the same memory with at least one write.
bool effects_conflict(const MemEffect& a, const MemEffect& b);

}  // namespace tessel
