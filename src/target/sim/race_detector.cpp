#include "target/sim/race_detector.h"

#include <algorithm>
#include <functional>

#include "tessel/error.h"

namespace tessel {
namespace {

void index_ops(const std::vector<GroupOp>& ops, std::vector<const GroupOp*>& by_id) {
  for (const GroupOp& op : ops) {
    if (op.id >= 0) {
      if (op.id >= static_cast<int>(by_id.size())) by_id.resize(op.id + 1, nullptr);
      by_id[op.id] = &op;
    }
    for (const auto& body : op.bodies) index_ops(body, by_id);
  }
}

}  // namespace

RaceDetector::RaceDetector(const GroupProgram& program, const std::vector<TensorStorage>& tensors,
                           const std::vector<int64_t>& storage_elements, int max_races_recorded)
    : program_(program), tensors_(tensors), max_recorded_(max_races_recorded) {
  index_ops(program.body, ops_by_id_);
  shared_.resize(program.buffers.size());
  for (const Buffer& b : program.buffers)
    if (b.space == Space::Shared) shared_[b.id].resize(static_cast<size_t>(b.versions * b.rows * b.cols));
  for (int64_t elements : storage_elements) global_.push_back(GlobalShadow{elements, {}, -1, nullptr});
  clocked_ = !program.mbarriers.empty();
  if (clocked_) {
    int slots = 0;
    for (const MBarrier& b : program.mbarriers) {
      mbar_first_slot_.push_back(slots);
      slots += b.slots;
    }
    actors_ = program.workers + slots;
    clock_cells_.resize(program.buffers.size());
    for (const Buffer& b : program.buffers)
      if (b.space == Space::Shared) clock_cells_[b.id].resize(static_cast<size_t>(b.versions * b.rows * b.cols));
  }
}

RaceDetector::GlobalCell& RaceDetector::global_cell(int tensor, int64_t address) {
  const TensorStorage& at = tensors_[tensor];
  GlobalShadow& g = global_[at.storage];
  address += at.offset;
  TESSEL_ASSERT(address >= 0 && address < g.elements, "global shadow access outside the storage");
  int64_t page = address / kPageCells;
  if (page != g.last_page) {
    auto& cells = g.pages[page];
    if (!cells) cells = std::make_unique<GlobalCell[]>(kPageCells);
    g.last_page = page;
    g.last = cells.get();
  }
  return g.last[address % kPageCells];
}

void RaceDetector::begin_group(int group) {
  group_ = group;
  tickets_ = 0;
  acquired_.clear();
  ++epoch_;
  if (!clocked_) return;
  // Fresh clocks: every worker at 1 in its own component, so its first accesses are
  // covered by no one else's clock.
  clocks_.assign(program_.workers, zero_clock());
  for (int w = 0; w < program_.workers; ++w) clocks_[w][w] = 1;
}

void RaceDetector::new_interval(const std::vector<int>* workers) {
  ++epoch_;
  if (!clocked_) return;
  std::vector<int> everyone;
  if (!workers) {
    for (int w = 0; w < program_.workers; ++w) everyone.push_back(w);
    workers = &everyone;
  }
  Clock all = zero_clock();
  for (int w : *workers)
    for (int a = 0; a < actors_; ++a) all[a] = std::max(all[a], clocks_[w][a]);
  for (int w : *workers) {
    clocks_[w] = all;
    ++clocks_[w][w];
  }
}

void RaceDetector::ticket(int64_t counter, bool last) {
  auto& round = rounds_[counter];
  round.emplace_back(group_, ++tickets_);
  if (!last) return;
  for (const auto& [group, tickets] : round) acquired_[group] = std::max(acquired_[group], tickets);
  rounds_.erase(counter);
}

bool RaceDetector::released_to_me(int32_t group, uint32_t tickets) const {
  auto it = acquired_.find(group);
  return it != acquired_.end() && tickets < it->second;
}

// As check(), with the current group as the actor; an earlier access of another
// group that a ticket released to this one is no conflict. (A write after such a
// ticket is judged against the first two readers the record kept.)
RaceDetector::Prior RaceDetector::check_groups(GroupRecord& cell, int op, bool write) {
  auto conflicts = [&](int32_t actor, uint32_t tickets) {
    return actor >= 0 && actor != group_ && !released_to_me(actor, tickets);
  };
  Prior prior;
  if (conflicts(cell.writer, cell.writer_tickets)) prior = {cell.writer, cell.writer_op, true};
  if (write) {
    if (prior.actor >= 0) return prior;
    if (cell.writer == group_) {
      cell.writer_tickets = tickets_;
      return prior;
    }
    if (conflicts(cell.reader1, cell.reader1_tickets)) prior = {cell.reader1, cell.reader1_op, false};
    else if (conflicts(cell.reader2, cell.reader2_tickets)) prior = {cell.reader2, cell.reader2_op, false};
    cell.writer = group_;
    cell.writer_op = op;
    cell.writer_tickets = tickets_;
    return prior;
  }
  if (cell.reader1 < 0 || cell.reader1 == group_) {
    cell.reader1 = group_;
    if (cell.reader1_op < 0) cell.reader1_op = op;
    cell.reader1_tickets = tickets_;
  } else if (cell.reader2 < 0 || cell.reader2 == group_) {
    cell.reader2 = group_;
    if (cell.reader2_op < 0) cell.reader2_op = op;
    cell.reader2_tickets = tickets_;
  }
  return prior;
}

void RaceDetector::release(int worker, Clock* into) {
  Clock& c = clocks_[worker];
  for (int a = 0; a < actors_; ++a) (*into)[a] = std::max((*into)[a], c[a]);
  ++c[worker];
}

void RaceDetector::acquire(int worker, const Clock& from) {
  Clock& c = clocks_[worker];
  for (int a = 0; a < actors_; ++a) c[a] = std::max(c[a], from[a]);
}

RaceDetector::ClockCell& RaceDetector::clock_cell(int buffer, int64_t index) {
  ClockCell& cell = clock_cells_[buffer][index];
  if (cell.group != group_) {
    cell = ClockCell{};
    cell.group = group_;
  }
  return cell;
}

// Why an unordered pair is a race, by what the earlier access was.
const char* RaceDetector::clock_tail(int prior_op, const GroupOp& op) const {
  const GroupOp* prior =
      prior_op >= 0 && prior_op < static_cast<int>(ops_by_id_.size()) ? ops_by_id_[prior_op] : nullptr;
  if (prior && prior->kind == GroupOpKind::Tma)
    return "before waiting for the mbarrier phase that the copy completes";
  if (op.kind == GroupOpKind::Tma)
    return "before the reader released the stage (no arrival whose phase the issuer waited for, "
           "and no fence, orders the read before the copy)";
  return "with nothing ordering them (no fence or mbarrier phase between)";
}

void RaceDetector::clock_access(int buffer, const Site& site, int64_t index, int worker, const GroupOp& op,
                                bool write) {
  ClockCell& cell = clock_cell(buffer, index);
  if (cell.tma_op >= 0) {  // a tma copy is still writing it: nothing can be ordered with that
    Prior copy{cell.tma_worker, cell.tma_op, true};
    report(site, copy, "", "is in flight", worker, op, write, "worker",
           "before waiting for the mbarrier phase that the copy completes");
    return;
  }
  const Clock& c = clocks_[worker];
  Prior prior;
  if (cell.writer >= 0 && cell.writer != worker && cell.writer_clock > c[cell.writer])
    prior = {cell.writer_worker, cell.writer_op, true};
  if (write && prior.actor < 0)
    for (const ClockRead& r : cell.reads)
      if (r.actor != worker && r.clock > c[r.actor]) {
        prior = {r.actor, r.op, false};
        break;
      }
  if (prior.actor >= 0)
    report(site, prior, "", prior.write ? "writes" : "reads", worker, op, write, "worker",
           clock_tail(prior.op, op));
  if (write) {
    cell.writer = worker, cell.writer_worker = worker, cell.writer_op = op.id;
    cell.writer_clock = c[worker];
    cell.reads.clear();
    return;
  }
  for (ClockRead& r : cell.reads)
    if (r.actor == worker) {
      r.clock = c[worker], r.op = op.id;
      return;
    }
  cell.reads.push_back(ClockRead{worker, c[worker], op.id});
}

void RaceDetector::tma_issue(int buffer, int version, int64_t row, int64_t col, int64_t index, int issuer,
                             const GroupOp& op) {
  ClockCell& cell = clock_cell(buffer, index);
  if (cell.tma_op >= 0) {  // two copies in flight on one element
    report(Site{program_.buffers[buffer].name, version, row, col}, Prior{cell.tma_worker, cell.tma_op, true},
           "", "is in flight", issuer, op, true, "worker",
           "before waiting for the mbarrier phase that the copy completes");
    return;
  }
  cell.tma_op = op.id;
  cell.tma_worker = issuer;
}

void RaceDetector::tma_land(int buffer, int version, int64_t row, int64_t col, int64_t index, int issuer,
                            const GroupOp& op, const Clock& issued, int actor, uint32_t phase_clock) {
  ClockCell& cell = clock_cell(buffer, index);
  if (cell.tma_op == op.id) cell.tma_op = -1, cell.tma_worker = -1;
  Site site{program_.buffers[buffer].name, version, row, col};
  const SharedCell& sc = shared_[buffer][index];
  Prior prior;
  if (sc.async_readers > 0) {  // an async mma still reads the stage
    prior = {sc.async_reader, sc.async_reader_op, false};
    report(site, prior, "async ", "reads", issuer, op, true, "worker", until_wait(prior.op));
    prior = Prior{};
  } else {
    if (cell.writer >= 0 && cell.writer_clock > issued[cell.writer])
      prior = {cell.writer_worker, cell.writer_op, true};
    if (prior.actor < 0)
      for (const ClockRead& r : cell.reads)
        if (r.clock > issued[r.actor]) {
          prior = {r.actor, r.op, false};
          break;
        }
    if (prior.actor >= 0)
      report(site, prior, "", prior.write ? "writes" : "reads", issuer, op, true, "worker",
             clock_tail(prior.op, op));
  }
  cell.writer = actor, cell.writer_worker = issuer, cell.writer_op = op.id;
  cell.writer_clock = phase_clock;
  cell.reads.clear();
}

void RaceDetector::sync_race(int first_op, int first_worker, int second_op, int second_worker,
                             const std::string& on, const std::string& message) {
  ++result_.race_count;
  if (static_cast<int>(result_.races.size()) >= max_recorded_) return;
  Race race;
  race.first_op = first_op;
  race.second_op = second_op;
  race.first_worker = first_worker;
  race.second_worker = second_worker;
  race.buffer = on;
  race.message = message;
  result_.races.push_back(std::move(race));
}

// Records one access in `cell` and returns an earlier access by another actor that
// conflicts with it (actor -1 when none). Only the interval's first writer is kept:
// a later writer either is the same actor or races with it.
template <typename Cell>
RaceDetector::Prior RaceDetector::check(Cell& cell, int actor, int op, bool write) {
  Prior prior;
  if (write) {
    if (cell.writer >= 0) {
      if (cell.writer != actor) prior = {cell.writer, cell.writer_op, true};
      return prior;
    }
    if (cell.reader1 >= 0 && cell.reader1 != actor)
      prior = {cell.reader1, cell.reader1_op, false};
    else if (cell.reader2 >= 0 && cell.reader2 != actor)
      prior = {cell.reader2, cell.reader2_op, false};
    cell.writer = actor;
    cell.writer_op = op;
    return prior;
  }
  if (cell.writer >= 0 && cell.writer != actor) prior = {cell.writer, cell.writer_op, true};
  if (cell.reader1 < 0) {
    cell.reader1 = actor;
    cell.reader1_op = op;
  } else if (cell.reader1 != actor && cell.reader2 < 0) {
    cell.reader2 = actor;
    cell.reader2_op = op;
  }
  return prior;
}

void RaceDetector::shared_access(int buffer, int version, int64_t row, int64_t col, int64_t index,
                                 int worker, const GroupOp& op, bool write) {
  SharedCell& cell = shared_[buffer][index];
  Site site{program_.buffers[buffer].name, version, row, col};
  if (cell.async_instance != 0) {
    // Reported against the copy in flight; the interval record is left alone so
    // that one access is one race.
    Prior copy{cell.async_worker, cell.async_op, true};
    report(site, copy, "async ", "is in flight", worker, op, write, "worker",
           "before the async.wait that completes the copy");
    return;
  }
  if (write && cell.async_readers > 0) {
    Prior reader{cell.async_reader, cell.async_reader_op, false};
    report(site, reader, "async ", "reads", worker, op, write, "worker", until_wait(reader.op));
    return;
  }
  if (clocked_) return clock_access(buffer, site, index, worker, op, write);
  interval_access(cell, site, worker, op, write);
}

void RaceDetector::interval_access(SharedCell& cell, const Site& site, int worker, const GroupOp& op,
                                   bool write) {
  if (cell.epoch != epoch_) {
    SharedCell fresh;  // a new interval; what is in flight outlives it
    fresh.async_instance = cell.async_instance, fresh.async_worker = cell.async_worker;
    fresh.async_op = cell.async_op;
    fresh.async_readers = cell.async_readers, fresh.async_reader = cell.async_reader;
    fresh.async_reader_op = cell.async_reader_op;
    cell = fresh;
    cell.epoch = epoch_;
  }
  Prior prior = check(cell, worker, op.id, write);
  if (prior.actor >= 0) report_interval(site, prior, worker, op, write);
}

void RaceDetector::report_interval(const Site& site, const Prior& prior, int worker, const GroupOp& op,
                                   bool write) {
  // A read that an async op's wait recorded in this interval: say so (the op was
  // issued before some fence, which did not order it).
  const GroupOp* by =
      prior.op >= 0 && prior.op < static_cast<int>(ops_by_id_.size()) ? ops_by_id_[prior.op] : nullptr;
  bool async_read = !prior.write && by && by->async;
  report(site, prior, async_read ? "async " : "", prior.write ? "writes" : "reads", worker, op, write,
         "worker",
         async_read ? "with no fence between (its read lasts until its wait, in this interval)"
                    : "with no fence between");
}

void RaceDetector::async_issue(int buffer, int version, int64_t row, int64_t col, int64_t index,
                               int worker, const GroupOp& op, uint32_t instance) {
  shared_access(buffer, version, row, col, index, worker, op, true);
  SharedCell& cell = shared_[buffer][index];
  if (cell.async_instance != 0) return;  // already in flight (and reported): keep the first
  cell.async_instance = instance;
  cell.async_worker = worker;
  cell.async_op = op.id;
}

void RaceDetector::async_land(int buffer, int64_t index, uint32_t instance) {
  SharedCell& cell = shared_[buffer][index];
  if (cell.async_instance == instance) cell.async_instance = 0;
}

void RaceDetector::async_read_begin(int buffer, int version, int64_t row, int64_t col, int64_t index,
                                    int worker, const GroupOp& op) {
  shared_access(buffer, version, row, col, index, worker, op, false);
  SharedCell& cell = shared_[buffer][index];
  ++cell.async_readers;
  cell.async_reader = worker;
  cell.async_reader_op = op.id;
}

void RaceDetector::async_read_end(int buffer, int version, int64_t row, int64_t col, int64_t index,
                                  int worker, const GroupOp& op, bool record) {
  SharedCell& cell = shared_[buffer][index];
  if (cell.async_readers > 0) --cell.async_readers;
  // The read lasts until here: it belongs to this interval too. Only the interval
  // record: a copy in flight on the element was reported when it was issued.
  if (!record) return;
  Site site{program_.buffers[buffer].name, version, row, col};
  if (clocked_) return clock_access(buffer, site, index, worker, op, false);
  interval_access(cell, site, worker, op, false);
}

void RaceDetector::accumulator_race(int mma_op, int second_op, int worker, const std::string& fragment) {
  ++result_.race_count;
  if (static_cast<int>(result_.races.size()) >= max_recorded_) return;
  Race race;
  race.first_op = mma_op;
  race.second_op = second_op;
  race.first_worker = race.second_worker = worker;
  race.buffer = fragment;
  std::string who = " (worker " + std::to_string(worker) + ")";
  race.message = "race on " + fragment + ": async " + describe(mma_op) + who + " accumulates into it, " +
                 (second_op >= 0 ? describe(second_op) + who + " touches it before the mma.wait that completes the mma"
                                 : std::string("and no mma.wait completes it before the group ends"));
  result_.races.push_back(std::move(race));
}

void RaceDetector::never_waited(const GroupOp& copy, int worker) {
  ++result_.race_count;
  if (static_cast<int>(result_.races.size()) >= max_recorded_) return;
  Race race;
  race.first_op = copy.id;
  race.first_worker = worker;
  race.buffer = copy.dst.buffer >= 0 && copy.dst.buffer < static_cast<int>(program_.buffers.size())
                    ? program_.buffers[copy.dst.buffer].name
                    : "";
  race.message = "async " + describe(copy.id) +
                 (worker >= 0 ? " (worker " + std::to_string(worker) + ")" : std::string()) + " into " +
                 race.buffer + " is never waited for: no async.wait completes it before the group ends";
  result_.races.push_back(std::move(race));
}

void RaceDetector::global_access(int tensor, int64_t address, int64_t row, int64_t col,
                                 int worker, const GroupOp& op, bool write) {
  GlobalCell& cell = global_cell(tensor, address);
  Site site{program_.tensors[tensor].name, -1, row, col};
  if (write && cell.async_readers > 0) {  // an async copy still reads it
    Prior reader{cell.async_reader, cell.async_reader_op, false};
    report(site, reader, "async ", "reads", worker, op, write, "worker", until_wait(reader.op));
    return;
  }
  if (cell.epoch != epoch_) {  // a new interval (or group): the workers' record is stale
    cell.workers = Record{};
    cell.epoch = epoch_;
  }
  Prior inside = check(cell.workers, worker, op.id, write);
  if (inside.actor >= 0) report_interval(site, inside, worker, op, write);
  Prior prior = check_groups(cell, op.id, write);
  if (prior.actor < 0) return;
  report(site, prior, "", prior.write ? "writes" : "reads", group_, op, write, "group",
         "in different groups");
}

void RaceDetector::global_async_read_begin(int tensor, int64_t address, int64_t row, int64_t col,
                                           int worker, const GroupOp& op) {
  global_access(tensor, address, row, col, worker, op, false);
  GlobalCell& cell = global_cell(tensor, address);
  ++cell.async_readers;
  cell.async_reader = worker;
  cell.async_reader_op = op.id;
}

void RaceDetector::global_async_read_end(int tensor, int64_t address, int64_t row, int64_t col,
                                         int worker, const GroupOp& op, bool record) {
  GlobalCell& cell = global_cell(tensor, address);
  if (cell.async_readers > 0) --cell.async_readers;
  if (!record) return;
  // As async_read_end: the read belongs to the wait's interval too (workers only:
  // across groups it was recorded at issue).
  if (cell.epoch != epoch_) {
    cell.workers = Record{};
    cell.epoch = epoch_;
  }
  Prior inside = check(cell.workers, worker, op.id, false);
  if (inside.actor >= 0) report_interval(Site{program_.tensors[tensor].name, -1, row, col}, inside, worker, op, false);
}

// Message: "race on As[3, 5] (v0): copy #4 (worker 1) writes, mma #7 (worker 0)
// reads, with no fence between". Built only for the races that are kept.
void RaceDetector::report(const Site& site, const Prior& prior, const char* prior_prefix,
                          const char* prior_verb, int actor, const GroupOp& op, bool write,
                          const char* actor_word, const char* tail) {
  ++result_.race_count;
  if (static_cast<int>(result_.races.size()) >= max_recorded_) return;
  Race race;
  race.first_op = prior.op;
  race.second_op = op.id;
  race.first_worker = prior.actor;
  race.second_worker = actor;
  race.buffer = site.name;
  race.row = site.row;
  race.col = site.col;
  std::string where = "race on " + site.name + "[" + std::to_string(site.row) + ", " +
                      std::to_string(site.col) + "]";
  if (site.version >= 0) where += " (v" + std::to_string(site.version) + ")";
  auto who = [&](int a) { return std::string(" (") + actor_word + " " + std::to_string(a) + ") "; };
  race.message = where + ": " + prior_prefix + describe(prior.op) + who(prior.actor) + prior_verb +
                 ", " + describe(op.id) + who(actor) + (write ? "writes" : "reads") + ", " + tail;
  result_.races.push_back(std::move(race));
}

const char* RaceDetector::until_wait(int op_id) const {
  const GroupOp* op =
      op_id >= 0 && op_id < static_cast<int>(ops_by_id_.size()) ? ops_by_id_[op_id] : nullptr;
  return op && op->kind == GroupOpKind::Mma ? "before the mma.wait that completes the mma"
                                            : "before the async.wait that completes the copy";
}

std::string RaceDetector::describe(int op_id) const {
  const GroupOp* op =
      op_id >= 0 && op_id < static_cast<int>(ops_by_id_.size()) ? ops_by_id_[op_id] : nullptr;
  return std::string(op ? group_op_name(op->kind) : "op") + " #" + std::to_string(op_id);
}

}  // namespace tessel
