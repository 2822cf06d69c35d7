// Shadow state of the sim's race detector (the rule is in sim.h).
//
// Shared memory: each element of each buffer version keeps the barrier interval
// in which it was last touched (an epoch number), the first writer of that interval
// and up to two distinct readers. A new interval is one increment of the epoch, so
// a fence costs nothing per element: state from an older epoch reads as empty.
// Two readers suffice: a writer w conflicts with some reader other than w exactly
// when one of the first two distinct readers differs from w. The outcome (race or
// not) therefore does not depend on the order in which workers run.
//
// Async copies: an element written by an issued, not yet completed, async copy is
// marked in flight; any access to it until the copy lands is a race with the copy.
// Async reads (an async mma's operands until its mma.wait, an async copy's source
// until the async.wait that completes the copy; shared or global): the element
// counts its readers in flight, and a write to it by anyone, the reader included,
// until the wait is a race whatever fences lie between. The wait is where the read
// ends, so it is recorded again there, as a read by the issuing worker in the
// wait's interval: another worker that writes the element after the wait with no
// fence between races with it (a fence before the wait orders nothing).
//
// Global memory: the same writer / two-reader record, over the whole launch, with
// groups in place of workers, one record per element of storage (its address), so
// strided and offset windows of one tensor meet where they overlap, and so do two
// tensors the launch puts on one storage (an overlap the kernel declares).
// Within a group, a second record per element works like shared memory's: two
// workers touching one element in one interval, one writing, race (so a
// replicated fragment stored by more than its owner shows).
//
// Programs that declare mbarriers: shared memory is judged by happens-before with
// vector clocks instead of intervals (point-to-point sync has no interval). A
// clock has one component per worker and one per mbarrier slot (the phases of
// that slot that have completed). A worker's own component advances when it
// releases (arrives, passes a fence, issues a tma copy). A fence joins every
// worker's clock. An arrival joins the worker's clock into its phase; a completed
// phase carries that join, plus its slot's component; a wait that sees the phase
// complete joins it into the waiter. Each shared element keeps its last write
// (actor, clock, op) and its reads since (one per worker): an access races with
// the write, or a write with a read, that its worker's clock does not cover. A
// tma copy's elements are in flight from issue to landing (any access meanwhile is
// a race with the copy); at landing they are written by the slot's component at
// the phase the copy completes on, judged against the issuer's clock at issue.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/group_ir.h"
#include "target/sim/sim.h"

namespace tessel {

// Where a tensor's elements live in the detector's global shadow: element a of
// the tensor is element offset + a of storage `storage`. Tensors whose memory
// overlaps share a storage.
struct TensorStorage {
  int storage = 0;
  int64_t offset = 0;
};

class RaceDetector {
 public:
  // `tensors[t]` places program.tensors[t]; `storage_elements[s]` = the elements
  // storage s spans for this launch.
  RaceDetector(const GroupProgram& program, const std::vector<TensorStorage>& tensors,
               const std::vector<int64_t>& storage_elements, int max_races_recorded);

  // Starts a group: its shared memory is fresh, so no earlier access counts.
  void begin_group(int group);
  // A fence or barrier: every worker has passed it; a new interval starts (and,
  // with clocks, every worker's clock becomes the join of all). `workers` given
  // (a role's barrier, at a ticket): the join of theirs only, for them.
  void new_interval(const std::vector<int>* workers = nullptr);

  // The current group takes a ticket of counter element `counter` (a storage
  // address): its global accesses so far are released to the round; `last` (it
  // drew the round's last ticket): it acquires every release of the round, whose
  // accesses are then ordered before its own from here on.
  void ticket(int64_t counter, bool last);

  // --- vector clocks (programs with mbarriers; see the header) -----------------
  using Clock = std::vector<uint32_t>;
  bool clocked() const { return clocked_; }
  // The clock component of slot `slot` of mbarrier `mbar`.
  int slot_actor(int mbar, int slot) const { return program_.workers + mbar_first_slot_[mbar] + slot; }
  Clock zero_clock() const { return Clock(actors_, 0); }
  const Clock& clock(int worker) const { return clocks_[worker]; }
  // `into` joins the worker's clock; then the worker's own component advances.
  void release(int worker, Clock* into);
  void acquire(int worker, const Clock& from);
  void tick(int worker) { ++clocks_[worker][worker]; }
  // A tma copy's element: in flight from its issue (by `issuer`) until it lands.
  void tma_issue(int buffer, int version, int64_t row, int64_t col, int64_t index, int issuer,
                 const GroupOp& op);
  // It lands: written by clock component `actor` at `phase_clock` (the count of
  // completed phases once the phase it completes on completes), ordered after what
  // the issuer's clock `issued` covered when it was issued.
  void tma_land(int buffer, int version, int64_t row, int64_t col, int64_t index, int issuer,
                const GroupOp& op, const Clock& issued, int actor, uint32_t phase_clock);
  // A race that is not on a memory element (an mbarrier used unordered after its
  // init, a tma copy that never lands): counted, and kept with `message`.
  void sync_race(int first_op, int first_worker, int second_op, int second_worker,
                 const std::string& on, const std::string& message);

  // One access by `worker` of element (row, col) of version `version` of shared
  // buffer `buffer`; `index` is its offset in the buffer's storage (all versions).
  void shared_access(int buffer, int version, int64_t row, int64_t col, int64_t index, int worker,
                     const GroupOp& op, bool write);
  // Marks / clears an element as written by an async copy that is in flight.
  // Marking also counts as a write in the current interval (the copy writes over
  // its whole span). Clearing only clears the mark of the same copy instance.
  void async_issue(int buffer, int version, int64_t row, int64_t col, int64_t index, int worker,
                   const GroupOp& op, uint32_t instance);
  void async_land(int buffer, int64_t index, uint32_t instance);
  // An async read of a shared element (an async mma's operand, an async copy's
  // source): recorded as a read now, and in flight until async_read_end (the wait
  // that completes the op), which records it again as a read in the current
  // interval; `record` false (the group is ending) only ends it.
  void async_read_begin(int buffer, int version, int64_t row, int64_t col, int64_t index, int worker,
                        const GroupOp& op);
  void async_read_end(int buffer, int version, int64_t row, int64_t col, int64_t index, int worker,
                      const GroupOp& op, bool record = true);
  // A race that is not on a memory element: an async mma's accumulator touched by
  // `second_op` before its mma.wait (second_op -1: still in flight at group end).
  void accumulator_race(int mma_op, int second_op, int worker, const std::string& fragment);
  // An async copy still in flight (issued, not completed by any async.wait) when the
  // group ends; `worker` is one that issued part of it (-1: the copy had no element).
  void never_waited(const GroupOp& copy, int worker);

  // One access by `worker` of the current group of the element at `address` in
  // tensor `tensor`, which the op names as window element (row, col) (for the message).
  void global_access(int tensor, int64_t address, int64_t row, int64_t col, int worker,
                     const GroupOp& op, bool write);
  // The async read of a global element (an async copy's source): as async_read_*.
  void global_async_read_begin(int tensor, int64_t address, int64_t row, int64_t col, int worker,
                               const GroupOp& op);
  void global_async_read_end(int tensor, int64_t address, int64_t row, int64_t col, int worker,
                             const GroupOp& op, bool record = true);

  SimResult result() const { return result_; }

 private:
  struct SharedCell {
    uint32_t epoch = 0;
    int32_t writer = -1, writer_op = -1;
    int32_t reader1 = -1, reader1_op = -1;
    int32_t reader2 = -1, reader2_op = -1;
    uint32_t async_instance = 0;  // 0: not in flight
    int32_t async_worker = -1, async_op = -1;
    int32_t async_readers = 0;    // async reads in flight (mma operands, copy sources)
    int32_t async_reader = -1, async_reader_op = -1;  // the latest of them
  };
  struct Record {
    int32_t writer = -1, writer_op = -1;
    int32_t reader1 = -1, reader1_op = -1;
    int32_t reader2 = -1, reader2_op = -1;
  };
  // Global memory's record across groups: each access also keeps the tickets its
  // group had taken before it (a ticket releases the accesses before it).
  struct GroupRecord : Record {
    uint32_t writer_tickets = 0, reader1_tickets = 0, reader2_tickets = 0;
  };
  // Happens-before shadow of one shared element (clocked programs).
  struct ClockRead {
    int32_t actor = -1;
    uint32_t clock = 0;
    int32_t op = -1;
  };
  struct ClockCell {
    int32_t group = -1;  // cells of an earlier group read as empty
    int32_t writer = -1, writer_worker = -1, writer_op = -1;  // writer: a clock component
    uint32_t writer_clock = 0;
    int32_t tma_op = -1, tma_worker = -1;  // a tma copy in flight on it
    std::vector<ClockRead> reads;          // since the write, the latest per worker
  };
  struct GlobalCell : GroupRecord {  // groups, over the launch
    uint32_t epoch = 0;
    Record workers;  // workers of the current group, in interval `epoch`
    int32_t async_readers = 0;  // async copy source reads of the current group in flight
    int32_t async_reader = -1, async_reader_op = -1;
  };
  // An access already recorded that conflicts with the current one.
  struct Prior {
    int32_t actor = -1, op = -1;
    bool write = false;
  };

  template <typename Cell>
  static Prior check(Cell& cell, int actor, int op, bool write);
  // check() across groups, where an access another group released to a ticket
  // this group acquired is ordered before this group's.
  Prior check_groups(GroupRecord& cell, int op, bool write);
  bool released_to_me(int32_t group, uint32_t tickets) const;
  // The element a race is on; version -1 for global memory.
  struct Site {
    const std::string& name;
    int version;
    int64_t row, col;
  };

  void report(const Site& site, const Prior& prior, const char* prior_prefix,
              const char* prior_verb, int actor, const GroupOp& op, bool write,
              const char* actor_word, const char* tail);
  std::string describe(int op_id) const;
  ClockCell& clock_cell(int buffer, int64_t index);
  void clock_access(int buffer, const Site& site, int64_t index, int worker, const GroupOp& op, bool write);
  const char* clock_tail(int prior_op, const GroupOp& op) const;

  // The tail of a race with an async read in flight: which wait ends the read.
  const char* until_wait(int op_id) const;
  // Records an access by `worker` in the current interval of a shared element's record.
  void interval_access(SharedCell& cell, const Site& site, int worker, const GroupOp& op, bool write);
  // Reports a conflict within one interval ("... with no fence between").
  void report_interval(const Site& site, const Prior& prior, int worker, const GroupOp& op, bool write);

  const GroupProgram& program_;
  std::vector<const GroupOp*> ops_by_id_;
  std::vector<std::vector<SharedCell>> shared_;  // by buffer id (empty unless shared)
  // Global shadow, by storage: pages of cells, made on first touch, so a
  // storage's size costs nothing until its elements are accessed.
  static constexpr int64_t kPageCells = 1024;
  struct GlobalShadow {
    int64_t elements = 0;
    std::unordered_map<int64_t, std::unique_ptr<GlobalCell[]>> pages;
    int64_t last_page = -1;
    GlobalCell* last = nullptr;
  };
  GlobalCell& global_cell(int tensor, int64_t address);
  std::vector<GlobalShadow> global_;     // by storage
  std::vector<TensorStorage> tensors_;   // by tensor
  bool clocked_ = false;
  int actors_ = 0;                      // workers + mbarrier slots
  std::vector<int> mbar_first_slot_;    // by mbarrier id
  std::vector<Clock> clocks_;           // by worker
  std::vector<std::vector<ClockCell>> clock_cells_;  // by buffer id (shared only)
  uint32_t epoch_ = 0;
  int group_ = 0;
  // Tickets: those the current group has taken; for each group whose releases it
  // acquired, how many of that group's tickets (its accesses before them are
  // ordered before this group's); each counter's open round (group, tickets).
  uint32_t tickets_ = 0;
  std::unordered_map<int32_t, uint32_t> acquired_;
  std::unordered_map<int64_t, std::vector<std::pair<int32_t, uint32_t>>> rounds_;
  int max_recorded_;
  SimResult result_;
};

}  // namespace tessel
