// The GroupIR verifier: buffer ids and spaces fit each op (copy into shared or
// global, mma operands in shared, fragments private), windows fit static buffers,
// op ids are unique, symbols are defined, global windows carry strides (and only
// they), fragments divide over the worker grid (extent 1 is replicated) and mma
// accumulators' parts are multiples of the atom, elementwise operands broadcast to
// the destination with the op's arity, reductions have their shapes and scratch
// windows right, only frag.load reads transposed, and mbarrier ops and tma name a
// declared mbarrier with a slot below its slots, counts, bytes and parities in
// range, tma copies global -> shared with source guards only.
// Violations are user errors (ErrorKind::Verify) naming the op id.
//
// Resource bounds, with the numbers in the message: op ids below kMaxGroupOps;
// workers at most kMaxGroupWorkers and lanes at most kMaxGroupLanes; atom, buffer,
// copy and mma extents at most kMaxGroupExtent; each shared or private buffer at
// most kMaxGroupBufferBytes (all versions); a copy at most kMaxGroupCopyElements;
// loops whose bounds are constants at most kMaxStaticTripCount iterations, and
// constant grid extents at most kMaxStaticGridExtent. Every product is formed
// without overflow, so absurd numbers give these errors and nothing else.
// verify_group_limits adds what one target can hold (ErrorKind::Plan): see there.
#pragma once
#include <cstdint>

#include "ir/group_ir.h"
#include "plan/plan.h"

namespace tessel {

inline constexpr int kMaxGroupOps = 1 << 20;
inline constexpr int kMaxGroupWorkers = 1024;
inline constexpr int kMaxGroupLanes = 128;
inline constexpr int64_t kMaxGroupExtent = int64_t{1} << 22;
inline constexpr int64_t kMaxGroupBufferBytes = int64_t{1} << 30;
inline constexpr int64_t kMaxGroupCopyElements = int64_t{1} << 31;
inline constexpr int64_t kMaxStaticTripCount = int64_t{1} << 31;
inline constexpr int64_t kMaxStaticGridExtent = (int64_t{1} << 31) - 1;
// mbarriers: at most kMaxMbarriers of at most kMaxMbarrierSlots slots; arrival
// counts and transaction bytes below 2^20 (the hardware's count range); a tma box
// at most kMaxTmaBox elements along each dimension (the tensor map's box limit).
inline constexpr int kMaxMbarriers = 64;
inline constexpr int kMaxMbarrierSlots = 64;
inline constexpr int64_t kMaxMbarrierCount = (int64_t{1} << 20) - 1;
inline constexpr int64_t kMaxTmaBox = 256;
// Groups in a cluster (the cuda target's portable limit).
inline constexpr int kMaxCluster = 8;

// Per target, what one group may hold:
//   sim:  shared buffers (every version) at most kSimMaxSharedElements elements and
//         private fragments (every worker's part) at most kSimMaxFragmentElements:
//         the interpreter keeps each element, and shadow state per shared element.
//   cpu:  staging and fragments (every version, every worker's part) at most
//         kCpuMaxScratchBytes: one thread's scratch runs the whole group.
//   cuda: shared buffers (every version, before the emitter's padding) at most
//         kCudaMaxSharedBytes, the H200's shared memory per block (227 KiB; the
//         launch checks the device's own number too), and workers x lanes threads
//         at most kCudaMaxThreads.
inline constexpr int64_t kSimMaxSharedElements = int64_t{1} << 22;
inline constexpr int64_t kSimMaxFragmentElements = int64_t{1} << 24;
inline constexpr int64_t kCpuMaxScratchBytes = int64_t{1} << 30;
inline constexpr int64_t kCudaMaxSharedBytes = 227 * 1024;
inline constexpr int64_t kCudaMaxThreads = 1024;

void verify_group_program(const GroupProgram& program);
// The target's bounds above (ErrorKind::Plan, with the numbers). It checks the
// numbers it needs itself, as the verifier would (workers, worker grid, lanes, op
// ids: ErrorKind::Verify), so it may run on a program that was not verified; the
// other rules are the verifier's.
void verify_group_limits(const GroupProgram& program, TargetKind target);

}  // namespace tessel
