// Lowering: TileIR + Plan -> GroupIR, one group's program for one grid point.
//
// - The kernel body is scalar parameters and one `parallel` nest; its dimensions
//   become the grid.
// - Tile parameters are bound structurally: the extents of each mma's operands
//   (a: BM x BK, b: BK x BN) name the parameters the plan's tile binds.
// - A tile loaded for an mma is staged: a fresh shared buffer, a cooperative copy
//   from the tensor (zero-filled outside it, so ragged K contributes nothing), laid
//   out for the atom (a: row-major, b: atom_n-wide column panels).
// - Every other tile is a private fragment spread over the workers: constants fill
//   it, loads and stores move it with guards for ragged edges, elementwise ops and
//   the mma atom update it in place. Loop-carried values keep one fragment.
// - Fences, conservatively: after every op that touches shared memory and after
//   every loop or branch that does; before a load of a tensor the group stored
//   earlier. The barrier planner removes the ones no dependence needs.
//
// Kernels outside this shape are user errors (ErrorKind::Unsupported or Plan) that
// name the op and its source line.
#pragma once
#include "ir/group_ir.h"
#include "ir/tile_ir.h"
#include "plan/plan.h"

namespace tessel {
GroupProgram lower_to_group(const TileKernel& kernel, const Plan& plan);
}  // namespace tessel
