#include "compiler/phases.h"

namespace tessel {

std::vector<TileKernel> split_phases(const TileKernel& kernel) {
  int nests = 0;
  for (const TileOp& op : kernel.body.ops) nests += op.kind == TileOpKind::Parallel;
  if (nests <= 1) return {kernel};
  std::vector<TileKernel> phases;
  for (const TileOp& op : kernel.body.ops) {
    if (op.kind != TileOpKind::Parallel) continue;
    TileKernel phase = kernel;
    phase.name = kernel.name + "_phase" + std::to_string(phases.size());
    phase.body.ops.clear();
    // Ops outside the nests (scalar parameter reads, constants) go to every phase;
    // the lowering refuses what it cannot place there, as for a one-nest kernel.
    for (const TileOp& other : kernel.body.ops)
      if (other.kind != TileOpKind::Parallel || &other == &op) phase.body.ops.push_back(other);
    phases.push_back(std::move(phase));
  }
  return phases;
}

}  // namespace tessel
