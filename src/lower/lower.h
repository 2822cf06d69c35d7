// Lowering: TileIR + Plan -> GroupIR, one group's program for one grid point.
// It knows ops by their kind and values by who consumes them, never by a name.
//
// - The kernel body is scalar parameters and one `parallel` nest (1 to 3 loops);
//   its loops become the grid. (A kernel with several nests is split into phases
//   first, one lowering each: src/compiler/phases.h.) Serial and pipeline nests inside it (any number, one
//   after another: phases) become `for` loops carrying any number of values.
// - Tile parameters are bound by name from Plan::tiles; a name the kernel does not
//   declare, or a tile parameter the plan leaves unbound, is a Plan error naming it.
// - Where a value lives is decided by its consumers:
//   * a tile loaded for an mma, or loaded inside a pipelined loop, is staged: a fresh
//     shared buffer filled by a cooperative copy (padding outside the tensor), laid
//     out for the atom when an mma reads it (a: row-major, b: atom_n-wide column
//     panels). Other consumers read it into a fragment (frag.load from shared);
//   * every other tile is a private fragment spread over the worker grid (extent-1
//     dimensions replicated: see frag_part); loads and stores move it with guards
//     for ragged edges, elementwise ops update it, in place when an operand dies;
//   * a computed tile that feeds an mma is stored into a fresh shared buffer first;
//   * a reduction is local when no other worker holds part of its rows (columns);
//     otherwise each worker writes a partial to shared scratch, and after a fence
//     every worker combines them;
//   * a transpose goes through shared scratch (store, fence, transposed load).
// - A tensor's view: the two tensor dimensions a tile spans give the global window's
//   strides; the other coordinates fold into its offset, and a coordinate outside
//   its extent empties the window's bounds (nothing is read or written). A grid
//   coordinate over exactly that extent is always inside and adds no such term.
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
