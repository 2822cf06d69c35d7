// pipeline: software pipelining of the loops that came from `pipeline` nests.
// In: GroupIR as lowered (each such loop's body: staging copies global -> shared,
// each followed by a fence, and the ops that read the staged buffers: mmas,
// frag.loads, anything). Every staging copy of the body is pipelined, wherever it
// stands: one after some consumers moves to the top when nothing before it
// touches its buffer or writes global memory. Out: the same arithmetic in the
// same order, with the copies for iteration k + W - 1 issued while iteration k
// computes.
//
// With window W, for a loop k in [lo, hi):
//   - every staged buffer gets W versions; iteration k reads version (k - lo) % W;
//   - a prologue before the loop copies iterations lo .. lo + W - 2 into versions
//     0 .. W - 2 (lo .. lo + W - 3 with asynchronous consumers, below), then a fence;
//   - sync copies, body:  copy(k + W - 1) -> version (k - lo + W - 1) % W; fence; ...;
//                         consumers(k); fence
//     (barrier planning then leaves one fence per iteration: the copies and the
//     consumers touch different versions);
//   - async copies, body: wait until iteration k's copies landed (W - 2 groups may
//     stay in flight); fence; issue copy(k + W - 1); commit; consumers(k)
//     and after the loop a wait for everything, so nothing lands later.
//   - async copies with asynchronous consumers (the wgmma atom): the mmas become
//     async (each one group, completed by an mma.wait) and come first, the copies
//     after them, so the copies issue while the tensor cores work. From W = 3 on,
//     one mma stays in flight across the fence (mma.wait pending 1 before it) and
//     the copies run W - 2 tiles ahead, so that the version they refill was read
//     two iterations ago; with W = 2, mma.wait pending 0 and one tile ahead.
//     After the loop: mma.wait pending 0, then the copies' wait.
//   - W = 1 with sync copies changes nothing.
// Copies past the end of the loop (short loops, the last W - 1 iterations, W - 2
// with asynchronous consumers) are
// issued anyway, into a version no consumer reads, with a destination row bound
// that is 0 past the end: they move nothing and read nothing. This keeps the body
// free of branches, which would be boundaries for barrier planning. The drain is
// therefore implicit. docs/pipelining.md has the golden IR and the measurements.
//
// Loops whose body does not have that shape (no staging copy, a copy that cannot
// move up, a consumer that writes a staged buffer, a nested loop or branch, an
// async op or a call) are left unchanged and counted.
#pragma once
#include <string>

#include "ir/group_ir.h"

namespace tessel {

struct PipelineOptions {
  int window = 1;      // --window W
  bool async = false;  // --copy async
  bool async_consumers = false;  // the atom runs asynchronously (wgmma): issue copies after it
};

struct PipelineStats {
  int loops_pipelined = 0;
  int loops_skipped = 0;  // pipeline loops whose body does not have the staged shape
  std::string skipped_reason;
};

PipelineStats pipeline_loops(GroupProgram& program, const PipelineOptions& options);

}  // namespace tessel
