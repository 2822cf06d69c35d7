// A bound cpu launch of one phase and one group, taken apart for a caller that
// runs it many times on one shape and cannot afford BoundLaunch::run's layers
// (PreparedGemm at small shapes, where they were a sixth of a 32^3 call): the
// emitted group function and the launch's sizes. The caller passes its own tensor
// and scalar arrays, in the kernel's parameter order, and checks what
// BoundLaunch::run would have checked: non-null pointers of the bound layouts, and
// no overlap between a written tensor and another (e.g. by running through the
// BoundLaunch whenever a pointer changes).
#pragma once
#include <cstdint>
#include <optional>

#include "target/cpu/cpu_jit.h"
#include "tessel/tessel.h"

namespace tessel {

struct BoundCpuGroup {
  CpuGroupEntry entry;
  const int64_t* sizes = nullptr;  // lives as long as the BoundLaunch
};

// The launch's one cpu group, or nullopt where it is not that (another target, more
// than one phase or group, or a phase whose parameters are not the kernel's in order).
std::optional<BoundCpuGroup> bound_cpu_group(const BoundLaunch& launch);

}  // namespace tessel
