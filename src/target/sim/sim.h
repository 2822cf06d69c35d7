// The `sim` target: an interpreter of GroupIR with N simulated workers and a race
// detector. Slow and exact; the judge of every pass in the tests.
//
// A race, per barrier interval (the stretch between two fences or barriers that
// every worker passes): two accesses to one element of a shared buffer by different
// workers, at least one a write. Shadow state per element records the interval's
// writer and readers, so detection does not depend on the order in which the
// simulator runs workers (which it shuffles anyway). An async copy writes its
// destination over the whole span from issue to the AsyncWait that completes it;
// any access in that span by another worker, or any read by the issuing worker, is
// a race. It reads its source over the same span: a write to the source in that
// span by any worker is a race, fences or not. An async mma reads its operands
// over the span from issue to the mma.wait that completes it: a write to them in
// that span by any worker is a race, and so is any other op touching its
// accumulator, or the group ending first. The wait is where such a read ends, so
// it also counts as a read by the issuing worker in the wait's interval: a fence
// before the wait orders nothing after it. An async copy that no async.wait
// completes before the group ends is reported too (one race per copy issued).
// Global memory: two different groups touching one element (one address of
// storage: tensors the launch puts on overlapping memory are judged as one), at
// least one writing, is a race; so is, within a group, two
// workers doing so in one barrier interval (a store by one worker and a copy of
// the same elements by another, or a replicated fragment stored by a replica as
// well as its owner).
//
// mbarriers and tma copies (group_ir.h, "mbarriers"): a program that declares
// mbarriers is judged by happens-before (race_detector.h: vector clocks) on shared
// memory. A tma copy reads its source at issue and lands when a wait needs the
// phase it completes on (or at the group's end, reported: it never landed for
// anyone); any access to its destination in between is a race with it, and so is
// landing on elements read by a worker whose release the issuer had not seen (an
// overwrite before the stage was released). A wait whose phase nothing can complete
// is a deadlock: ErrorKind::Runtime naming the wait, or, after races, one more race
// that ends the launch. Roles (warp specialization) run one at a time, each until
// it ends or blocks in a wait, in a fixed order; a round in which none moves is a
// deadlock.
//
// run_sim verifies the program (group_verify.h) and checks it against the sim's
// limits (verify_group_limits: what its buffers hold) first. Launch arguments are checked next
// (runtime/tensor_check.h): shapes and strides evaluated, negative ones refused,
// and tensors that overlap in memory where either is written refused unless the
// kernel declares the pair (check_tensor_overlap); every global access must land
// inside the elements that check says the pointer holds.
// Only tessel::Error leaves run_sim for bad input (running out of memory, too).
// Work the sim could never finish is refused (ErrorKind::Unsupported, with the
// numbers): a grid of more than 2^24 groups, more than 2^28 loop iterations in one
// launch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/group_ir.h"
#include "runtime/launch_args.h"

namespace tessel {

struct Race {
  int first_op = -1, second_op = -1;  // op ids of the two conflicting accesses
  int first_worker = -1, second_worker = -1;  // groups, for global races
  std::string buffer;
  int64_t row = 0, col = 0;
  std::string message;  // "race on As[3, 5]: copy #4 (worker 1) writes, mma #7 (worker 0) reads, no fence between"
};

struct SimOptions {
  uint64_t seed = 1;            // worker order shuffling
  int max_races_recorded = 16;  // all are counted; this many are kept
};

struct SimResult {
  int64_t race_count = 0;
  std::vector<Race> races;
};

// Runs every group of the program. Validates args (missing size/scalar/tensor,
// null tensor, a tensor layout tensor_check refuses, overlapping written tensors:
// user errors, ErrorKind::InvalidArgument).
SimResult run_sim(const GroupProgram& program, const LaunchArgs& args,
                  const SimOptions& options = {});

}  // namespace tessel
