// Memory effects of GroupIR ops, the ground every analysis stands on.
// Granularity is the buffer version: an effect names a buffer and, for shared
// buffers, the version expression it touches (null = every version, for ops whose
// version is unknown). All global buffers form one alias class, whatever their
// strides and offsets. Per op: copy reads src and writes dst; frag.load reads src
// (transposed or not: the same elements); frag.store writes dst (its owners' parts);
// mma reads a and b; reduce partial writes its scratch window dst, reduce combine
// reads its scratch window src; ew, reduce local and frag.fill touch only fragments;
// tma reads src and writes dst (whenever it lands: the mbarrier ops, which have no
// effects of their own, order it; analyses that cannot see them, like the barrier
// planner, treat them as unknown).
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
