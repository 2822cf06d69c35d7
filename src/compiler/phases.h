// A kernel whose body holds several parallel nests runs them one after another:
// each nest is a phase, a launch of its own, and every group of a phase finishes
// before the next phase starts (the only synchronization between groups there is).
// Phases share nothing but tensors: a value defined in one nest is not visible in
// another.
#pragma once
#include <vector>

#include "ir/tile_ir.h"

namespace tessel {

// One kernel per parallel nest, in order, each with the kernel's parameters, its
// top-level scalar reads, and that nest. A kernel with one nest gives itself back.
std::vector<TileKernel> split_phases(const TileKernel& kernel);

}  // namespace tessel
