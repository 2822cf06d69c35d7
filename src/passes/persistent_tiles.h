// persistent_tiles: a persistent grid (Plan::persistent, Plan::tile_band). The
// program's grid of T tiles becomes a 1-D grid of G = min(T, persistent) groups;
// group g runs the whole former body once per tile t = g + s * G (s = 0, 1, ...
// while t < T), in a loop marked pipelined (its iterations are independent: each
// owns another tile) and closed by a fence (what one tile leaves in shared memory
// is ordered before the next one's accesses).
// Tile t is decoded in grouped order over the last two grid dimensions (R tile
// rows, C tile columns; any dimensions before them vary slowest): bands of B =
// tile_band rows, walked column by column, each column's B (or fewer, in the last
// band) rows one after another, so that the groups running at one time share rows of
// A and columns of B in L2. Every expression that named a grid coordinate names
// the decoded one instead. Runs right after lowering, so that the pipeline passes
// see the tile loop around their loops (tma_pipeline counts stages across tiles).
#pragma once
#include <string>

#include "ir/group_ir.h"

namespace tessel {

struct PersistentOptions {
  int groups = 0;  // G's upper bound (0: the pass does nothing)
  int band = 8;    // B
};

struct PersistentStats {
  bool applied = false;
};

PersistentStats persistent_tiles(GroupProgram& program, const PersistentOptions& options);

}  // namespace tessel
