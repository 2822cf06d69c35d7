// The `cpu` emitter: GroupIR -> one header-free C++ translation unit (GCC vector
// extensions for SIMD; no #include, so it compiles in tens of milliseconds).
//
// Entry points of the emitted unit:
//   extern "C" void tessel_group(const int64_t* sizes, const double* scalars,
//                                float* const* tensors, const int64_t* group,
//                                float* scratch);
//   extern "C" int64_t tessel_scratch_floats(void);
// `sizes` follows GroupProgram::size_params, `scalars` GroupProgram::scalars,
// `tensors` GroupProgram::tensors, `group` the coordinates of GroupProgram::grid.
// `scratch` holds every shared buffer (all versions) and every worker's fragments:
// one group runs on one thread, which runs the workers' parts of each barrier
// interval one after another, so a fence needs no instruction. The CPU has no copy
// engine: async copies complete when issued, and async.commit / async.wait emit
// nothing. Opaque calls are rejected (ErrorKind::Unsupported), as are non-f32
// tensors. Copies run as whole windows (the workers' shares are disjoint, so the
// order does not matter); a window wholly in bounds takes an unguarded fast path
// (row memcpy, or panel-wide runs when packing ColPanels), an edge window one
// shared guarded helper. Mma uses the micro-kernel of cpu_microkernel.h.
#pragma once
#include <string>

#include "ir/group_ir.h"

namespace tessel {
std::string emit_cpu(const GroupProgram& program);
}  // namespace tessel
