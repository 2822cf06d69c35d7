// plan_barriers: removes compiler fences that separate no dependence.
// In: any GroupIR. Out: the same program with a subset of its Fence ops removed;
// nothing else changes (no op moves, no op is added, ids are kept).
//
// The rule, applied to each sequential region (an op list: the program body, each
// for body, each if branch) on its own:
//  - Walk the ops in order, accumulating the memory effects (group_effects.h) of
//    every op since the last retained fence. Effects are compared at buffer-version
//    granularity; all global buffers are one alias class.
//  - A Fence is a compiler fence: its kind is Fence (each keeps its op id). When an
//    op has a RAW, WAR or WAW dependence on an accumulated op that lies before the
//    most recent pending fence, that fence is kept and the accumulation restarts
//    with the ops after it. The comparison is against everything accumulated, not
//    the neighbouring op: `write X; fence; unrelated; fence; read X` keeps a cut.
//    Choosing the latest fence that separates the pair is the fewest fences
//    (interval stabbing); a pending fence dropped when the next fence arrives is
//    never needed, because that later fence can cut any later dependence as well.
//  - Barrier (native, user-written) is never removed. It synchronizes, so it ends
//    the accumulation: the pending fence before it is dropped unless a dependence
//    already kept it.
//  - Boundaries: Call, AsyncCommit, AsyncWait, For and If (and any op kind the
//    planner does not analyze) have an unknown effect that conflicts with every
//    access, unknown ones included; an If whose branches only compute in registers
//    (frag.fill and ew ops, recursively) has none. So the pending fence before such an op is
//    kept when any memory effect lies between the last retained fence and it,
//    and the last fence between such an op and the next op with a memory effect
//    is kept. Ops without shared or global effects (frag.fill, ew) are ignored.
//    Fences never move across loops or branches: a for/if body is planned as its
//    own region, and the enclosing region sees only the unknown effect.
//  - Region entry: a body starts with the accesses that may precede it with no
//    retained fence between: those accumulated in the enclosing region before the
//    for/if and, for a for body, the body's own accesses after its last fence or
//    barrier (the previous iteration, across the back edge). So a fence at the top
//    of a loop body is kept when something after it depends on them. In a for
//    body, an entry access whose version names the loop variable counts as
//    touching every version: the variable had another value when it happened.
//  - The last Fence op of each region is always kept: the loop back edge and the
//    enclosing region consume it.
// A program that is race free before the pass is race free after it: every kept
// interval joins original intervals that no dependence crosses. Ops with effects
// that are not separated by any fence in the input are left as they were.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/group_ir.h"

namespace tessel {

// Precise mode (`precise`, off by default) refines three of the rules above, each
// only where the conservative rule kept a fence that no dependence needs:
//  - a for or if is not an unknown effect but seen through its planned bodies:
//    accesses before it meet what runs before the bodies' first fence or barrier,
//    accesses after it what runs after their last (all of a body without one);
//    the accesses before it stay accumulated (a loop may run no iteration);
//  - the last fence of a loop body is kept only when the accesses after the last
//    other retained fence conflict with the next iteration's accesses before its
//    first retained fence (the whole body when none stays) or with the enclosing
//    region's accesses after the loop up to its next fence or barrier (there must
//    be one, or the program's end; that fence then sees the loop's tail). An
//    async.wait right after a loop whose body waits for all copies (pending 0)
//    before issuing its own lands only the last iteration's copies, with their
//    versions. The program's last fence goes when nothing after it needs it
//    (nothing runs after the group). A branch's last fence is kept by rule;
//  - async.commit touches no memory; async.wait (mma.wait) is where the copies
//    (async mmas) it completes end their writes and reads: the effects of every
//    async copy (mma) of the program, any version;
//  - global accesses conflict only on one tensor: every launch refuses tensor
//    arguments that overlap where either is written (runtime/tensor_check.h).
// tests/kernels removes each fence that precise planning keeps in a library kernel
// with two chained mmas and a loop-carried running max and sum, and the sim
// reports a race each time; random kernels with random plans stay race free with it.
struct BarrierPlanOptions {
  bool coalesce = true;  // false: the program is left unchanged (--no-coalesce-barriers)
  bool precise = false;  // the refinements above
};

struct BarrierStats {
  int static_before = 0, static_after = 0;  // Fence ops in the program
  int loop_before = 0, loop_after = 0;      // of those, inside some for body
  // Fences executed by one group, as a polynomial in the trip counts L0, L1, ...
  // (and, for branches, C0, C1, ... = 1 when the branch is taken): "3*L0 + 1".
  std::string dynamic_before, dynamic_after;
  std::vector<std::string> legend;  // "L0 = ceildiv(K, 32)" (hi - lo of the loop)
  std::vector<int> removed;         // op ids of the removed fences
};

// Plans the fences of `program` in place and reports what changed.
BarrierStats plan_barriers(GroupProgram& program, const BarrierPlanOptions& options = {});

// Fences one group executes for the given sizes, by walking the program (loop
// variables are bound while walking; `sizes` must bind every other symbol that a
// loop bound or branch condition uses, including group coordinates and, for a
// branch on a scalar parameter, that scalar's value).
int64_t count_fences_executed(const GroupProgram& program, const SymbolLookup& sizes);

// For `tessel explain`: the statistics, one per line.
std::string print_barrier_stats(const BarrierStats& stats);

}  // namespace tessel
