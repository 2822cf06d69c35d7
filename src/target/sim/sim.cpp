// The sim interpreter: runs every group of the grid, one after another, each with
// program.workers simulated workers. An op that workers share (copy, fragment ops,
// mma, elementwise) runs worker by worker in an order shuffled per op, so that a
// program whose result depends on that order shows it; every shared and global
// access goes through the race detector. Fragments hold fp32 values (a Cast
// rounds them to a narrower type's values); global tensors are read as float.
#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <numeric>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/group_verify.h"
#include "runtime/tensor_check.h"
#include "target/sim/float_round.h"
#include "target/sim/race_detector.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel {
namespace {

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
// The sim interprets every element: work it could never finish is refused up front.
constexpr int64_t kSimMaxGroups = int64_t{1} << 24;       // groups per launch
constexpr int64_t kSimMaxIterations = int64_t{1} << 28;   // loop iterations per launch
const float kPoison = std::numeric_limits<float>::quiet_NaN();

struct Tensor {
  float* data = nullptr;
  int64_t elements = 0;  // what `data` holds (tensor_check)
};

// A BufferRef with its expressions evaluated (offset and strides: global only).
struct Window {
  const Buffer* buffer = nullptr;
  int version = 0;
  int64_t row = 0, col = 0;
  int64_t offset = 0, row_stride = 0, col_stride = 0;
};

// An element written by an async copy that has not landed yet, and the source
// element the copy reads until then (none where the source was padding).
struct PendingWrite {
  const GroupOp* op;
  int worker;
  uint32_t instance;
  int buffer, version;
  int64_t row, col, index;
  float value;
  enum class From { Padding, Shared, Global } from = From::Padding;
  int src = -1;  // Shared: buffer id; Global: tensor index
  int src_version = 0;
  int64_t src_row = 0, src_col = 0, src_index = 0;  // Global: src_index is the address
};

// The async copies of one commit group (AsyncCommit closes it): each element they
// write, and each copy issued, element or not (for the never-waited check).
struct CommitGroup {
  std::vector<PendingWrite> writes;
  std::vector<std::pair<const GroupOp*, int>> copies;  // op, a worker that issued part (-1: none)
};

int64_t size_arg(const LaunchArgs& args, const std::string& name, const std::string& what) {
  auto it = args.sizes.find(name);
  if (it == args.sizes.end())
    user_error(ErrorKind::InvalidArgument, "missing size parameter '" + name + "'" + what);
  if (it->second < 0)
    user_error(ErrorKind::InvalidArgument, "size parameter '" + name + "' is negative (" +
                                               std::to_string(it->second) + ")");
  return it->second;
}

std::vector<Tensor> validate_args(const GroupProgram& p, const LaunchArgs& args) {
  for (const std::string& s : p.size_params) size_arg(args, s, "");
  check_fixed_sizes(p.name, p.fixed_sizes, args.sizes);
  for (const ScalarParam& s : p.scalars)
    if (!args.scalars.count(s.name))
      user_error(ErrorKind::InvalidArgument, "missing scalar parameter '" + s.name + "'");
  std::vector<Tensor> tensors;
  std::vector<TensorSpan> spans;
  for (const TensorParam& t : p.tensors) {
    auto it = args.tensors.find(t.name);
    if (it == args.tensors.end())
      user_error(ErrorKind::InvalidArgument, "missing tensor '" + t.name + "'");
    if (it->second == nullptr)
      user_error(ErrorKind::InvalidArgument, "tensor '" + t.name + "' is a null pointer");
    TensorLayout layout = check_tensor(t, args.sizes);
    tensors.push_back(Tensor{it->second, layout.elements});
    // The sim stores every tensor as float, whatever its dtype.
    spans.push_back({&t, reinterpret_cast<uintptr_t>(it->second), std::move(layout), sizeof(float)});
  }
  check_tensor_overlap(spans);
  return tensors;
}

// The race detector's global storages: tensors whose memory overlaps (which the
// launch check lets through only where the kernel declares it, or where neither is
// written) share one, so a race between them is a race on one element.
struct Storages {
  std::vector<TensorStorage> tensors;  // by tensor
  std::vector<int64_t> elements;       // by storage
};

Storages place_tensors(const GroupProgram& p, const std::vector<Tensor>& tensors) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto start = [&](size_t t) { return reinterpret_cast<uintptr_t>(tensors[t].data); };
  auto end = [&](size_t t) { return start(t) + static_cast<uintptr_t>(tensors[t].elements) * sizeof(float); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return start(a) < start(b); });
  Storages s;
  s.tensors.resize(tensors.size());
  size_t first = 0;           // the tensor that starts the current storage
  uintptr_t storage_end = 0;  // 0: no storage started yet
  size_t current = 0;         // its index
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t t = order[i];
    if (tensors[t].elements == 0) {  // never touched: a storage of its own
      s.tensors[t] = TensorStorage{static_cast<int>(s.elements.size()), 0};
      s.elements.push_back(0);
      continue;
    }
    if (storage_end == 0 || start(t) >= storage_end) {
      first = t;
      storage_end = start(t);
      current = s.elements.size();
      s.elements.push_back(0);
    }
    const uintptr_t from_base = start(t) - start(first);
    if (from_base % sizeof(float) != 0)
      user_error(ErrorKind::Unsupported, "the sim cannot judge tensors '" + p.tensors[first].name + "' and '" +
                                             p.tensors[t].name +
                                             "': they overlap at addresses that are not a whole element apart");
    s.tensors[t] = TensorStorage{static_cast<int>(current), static_cast<int64_t>(from_base / sizeof(float))};
    storage_end = std::max(storage_end, end(t));
    s.elements[current] = static_cast<int64_t>((storage_end - start(first)) / sizeof(float));
  }
  return s;
}

std::string op_name(const GroupOp& op) {
  return std::string(group_op_name(op.kind)) + " #" + std::to_string(op.id);
}

class Interpreter {
 public:
  Interpreter(const GroupProgram& program, const LaunchArgs& args, const SimOptions& options)
      : p_(program),
        args_(args),
        tensors_(validate_args(program, args)),
        storage_(place_tensors(program, tensors_)),
        ranks_(std::max(1, program.cluster)),
        workers_(program.workers * ranks_),
        view_(cluster_view(program)),
        detector_(view_, storage_.tensors, storage_.elements, options.max_races_recorded),
        rng_(options.seed) {
    TESSEL_ASSERT(p_.workers >= 1, "a group program needs at least one worker");
    all_workers_.resize(workers_);
    mma_groups_.resize(workers_);
    std::iota(all_workers_.begin(), all_workers_.end(), 0);
    rank_workers_.resize(ranks_);
    for (int q = 0; q < ranks_; ++q)
      for (int w = 0; w < p_.workers; ++w) rank_workers_[q].push_back(q * p_.workers + w);
    rank_scopes_.resize(ranks_);
    for (const auto& [name, value] : args.sizes) main_scope_.emplace_back(name, value);
    lookup_ = [this](const std::string& name, int64_t* value) {
      for (auto it = scope_->rbegin(); it != scope_->rend(); ++it) {
        if (it->first != name) continue;
        *value = it->second;
        return true;
      }
      return false;
    };
    for (const MBarrier& b : p_.mbarriers) {
      mbar_first_.push_back(static_cast<int>(slots_.size()));
      slots_.resize(slots_.size() + ranks_ * b.slots);
    }
    shared_.resize(p_.buffers.size());
    frags_.resize(p_.buffers.size());
    parts_.resize(p_.buffers.size());
    for (const Buffer& b : p_.buffers) {
      if (b.space == Space::Shared) shared_[b.id].resize(ranks_ * b.versions * b.rows * b.cols);
      if (b.space != Space::Private) continue;
      for (int w = 0; w < workers_; ++w) parts_[b.id].push_back(frag_part(p_, b, w % p_.workers));
      const FragPart& part = parts_[b.id][0];
      frags_[b.id].resize(workers_ * part.rows * part.cols);
    }
  }

  // The race detector sees a cluster as one group of every rank's workers (rank
  // r's worker w is r * workers + w), whose shared buffers and mbarriers have one
  // set of versions and slots per rank, rank-major.
  static GroupProgram cluster_view(const GroupProgram& p) {
    GroupProgram v = p;
    const int ranks = std::max(1, p.cluster);
    v.workers *= ranks;
    for (Buffer& b : v.buffers)
      if (b.space == Space::Shared) b.versions *= ranks;
    for (MBarrier& b : v.mbarriers) b.slots *= ranks;
    return v;
  }

  SimResult run() {
    std::vector<int64_t> extent;
    for (const LoopDim& d : p_.grid) extent.push_back(eval(d.extent));
    for (int64_t e : extent)
      if (e <= 0) return detector_.result();
    __int128 groups = 1;
    std::string shape;
    for (int64_t e : extent) {
      groups = std::min<__int128>(groups * e, __int128{1} << 64);
      shape += (shape.empty() ? "" : " x ") + std::to_string(e);
    }
    if (groups > kSimMaxGroups)
      user_error(ErrorKind::Unsupported, "program " + p_.name + ": the grid " + shape +
                                             " has more groups than the sim runs in one launch (" +
                                             std::to_string(kSimMaxGroups) + ")");
    // Group g is grid point g, the last dimension fastest. Groups run in that order,
    // unless the program takes tickets: then in an order the seed shuffles, since
    // which group draws which ticket is up to the hardware.
    std::vector<int> order;
    if (takes_tickets(p_.body)) {
      if (ranks_ > 1)
        user_error(ErrorKind::Unsupported, "program " + p_.name + ": the sim runs no tickets in clusters");
      order.resize(static_cast<size_t>(groups));
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng_);
    }
    // A cluster's groups run together: clusters stand in for groups, the cluster
    // dimension counting clusters; rank q of cluster c there is group c * ranks + q.
    if (ranks_ > 1) {
      const LoopDim& d = p_.grid.at(p_.cluster_dim);
      if (extent[p_.cluster_dim] % ranks_)
        user_error(ErrorKind::Runtime, "program " + p_.name + ": grid dimension " + d.iv + " has extent " +
                                           std::to_string(extent[p_.cluster_dim]) + ", not a multiple of its cluster " +
                                           std::to_string(ranks_));
      extent[p_.cluster_dim] /= ranks_;
      groups /= ranks_;
    }
    for (int64_t g = 0; g < static_cast<int64_t>(groups); ++g) {
      const int group = order.empty() ? static_cast<int>(g) : order[g];
      for (int q = 0; q < ranks_; ++q) {
        rank_scopes_[q] = main_scope_;
        int64_t rest = group;
        for (size_t d = extent.size(); d-- > 0; rest /= extent[d]) {
          int64_t x = rest % extent[d];
          if (static_cast<int>(d) == p_.cluster_dim && ranks_ > 1) x = x * ranks_ + q;
          rank_scopes_[q].emplace_back(p_.grid[d].iv, x);
        }
      }
      try {
        run_group(group);
      } catch (const Deadlock& d) {
        // After races: reported as one more, and the launch stops here.
        detector_.sync_race(d.op, d.worker, -1, -1, d.on, d.message);
        return detector_.result();
      }
    }
    return detector_.result();
  }

 private:

  static bool takes_tickets(const std::vector<GroupOp>& ops) {
    for (const GroupOp& op : ops) {
      if (op.kind == GroupOpKind::Ticket) return true;
      for (const auto& body : op.bodies)
        if (takes_tickets(body)) return true;
    }
    return false;
  }

  void run_group(int group) {
    detector_.begin_group(group);
    // Fresh memory is poison, so a program that reads what it never wrote shows it.
    for (auto& s : shared_) std::fill(s.begin(), s.end(), kPoison);
    for (auto& f : frags_) std::fill(f.begin(), f.end(), kPoison);
    for (Slot& st : slots_) st = Slot{};
    remote_.clear();
    run_top(p_.body);
    enter_rank(0);
    order_ = &all_workers_;
    end_mbarriers();
    // Copies never waited for are reported, one race per copy issued; they still
    // land, so the group's results stay complete.
    committed_.push_back(std::move(open_));
    open_ = CommitGroup{};
    for (CommitGroup& g : committed_) {
      for (const auto& [op, worker] : g.copies) detector_.never_waited(*op, worker);
      for (const PendingWrite& pw : g.writes) {
        detector_.async_land(pw.buffer, pw.index, pw.instance);
        end_source_read(pw, false);
        shared_[pw.buffer][pw.index] = pw.value;
      }
    }
    committed_.clear();
    for (int w = 0; w < workers_; ++w)
      for (const InFlightMma& m : mma_groups_[w]) detector_.accumulator_race(m.op, -1, w, p_.buffer(m.frag).name);
    GroupOp end_of_group;
    end_of_group.pending = 0;
    mma_wait(end_of_group);
  }

  void enter_rank(int q) {
    rank_ = q;
    scope_ = &rank_scopes_[q];
    order_ = &rank_workers_[q];
    leader_ = q * p_.workers;
  }

  // The group's body; in a cluster, the ops between cluster.syncs and roles run
  // rank by rank (they reach no other rank: group_verify), a cluster.sync joins
  // every rank's workers, and roles run every rank's roles together.
  void run_top(const std::vector<GroupOp>& ops) {
    enter_rank(0);
    if (ranks_ == 1) return run_ops(ops);
    for (size_t i = 0; i < ops.size();) {
      size_t j = i;
      while (j < ops.size() && ops[j].kind != GroupOpKind::ClusterSync && ops[j].kind != GroupOpKind::Roles) ++j;
      for (int q = 0; q < ranks_; ++q) {
        enter_rank(q);
        for (size_t k = i; k < j; ++k) run_op(ops[k]);
      }
      if (j == ops.size()) break;
      ++progress_;
      if (ops[j].kind == GroupOpKind::ClusterSync) detector_.new_interval();
      else run_roles(ops[j]);
      i = j + 1;
    }
    check_remote_exits();
  }

  // A rank's group leaves at the end of the body: an arrival another rank made
  // on its mbarriers must happen before that (cuda: the shared memory it reaches
  // is gone once the block exits), which takes a cluster.sync after it.
  void check_remote_exits() {
    for (const RemoteArrival& a : remote_)
      for (int v : rank_workers_[a.to])
        if (detector_.clock(v)[a.worker] < a.clock) {
          detector_.sync_race(a.op->id, a.worker, -1, v, p_.mbarriers[a.mbar].name,
                              op_name(*a.op) + " (worker " + std::to_string(a.worker) + ") arrives on " +
                                  slot_name(a.mbar, a.slot) + ", whose group may have left by then (worker " +
                                  std::to_string(v) + " has not seen the arrival): no cluster.sync after it");
          break;
        }
  }

  // An async mma owns its accumulator until its mma.wait: an op that touches that
  // fragment before then reads or writes registers the mma is still writing.
  void check_accumulators(const GroupOp& op) {
    std::vector<int> frags;
    if (op.kind == GroupOpKind::FragFill || op.kind == GroupOpKind::FragLoad ||
        op.kind == GroupOpKind::FragStore || op.kind == GroupOpKind::Elementwise ||
        op.kind == GroupOpKind::Reduce)
      frags.push_back(op.frag);
    if (op.kind == GroupOpKind::Elementwise || op.kind == GroupOpKind::Reduce)
      for (const EwOperand& o : op.operands)
        if (o.kind == EwOperand::Kind::Frag) frags.push_back(o.frag);
    for (int w : *order_)  // registers are the worker's own
      for (const InFlightMma& m : mma_groups_[w])
        if (std::find(frags.begin(), frags.end(), m.frag) != frags.end()) {
          detector_.accumulator_race(m.op, op.id, w, p_.buffer(m.frag).name);
          break;
        }
  }

  void run_ops(const std::vector<GroupOp>& ops) {
    const size_t mark = scope_->size();  // a ticket's symbol ends with its body
    for (const GroupOp& op : ops) run_op(op);
    scope_->resize(mark);
  }

  void run_op(const GroupOp& op) {
    ++progress_;
    check_accumulators(op);
    switch (op.kind) {
      case GroupOpKind::Copy: return copy(op);
      case GroupOpKind::AsyncCommit:
        committed_.push_back(std::move(open_));
        open_ = CommitGroup{};
        return;
      case GroupOpKind::AsyncWait: return async_wait(op);
      case GroupOpKind::FragFill:
        private_buffer(op.frag, op);
        for (int w : shuffled()) {
          float* f = frag(op.frag, w);
          std::fill(f, f + part_elements(op.frag, w), static_cast<float>(op.constant));
        }
        return;
      case GroupOpKind::FragLoad: return frag_load(op);
      case GroupOpKind::FragStore: return frag_store(op);
      case GroupOpKind::Mma: return mma(op);
      case GroupOpKind::MmaWait: return mma_wait(op);
      case GroupOpKind::Elementwise: return elementwise(op);
      case GroupOpKind::Reduce: return reduce(op);
      case GroupOpKind::Fence:
      case GroupOpKind::Barrier: return detector_.new_interval(order_);  // the group's workers
      case GroupOpKind::ClusterSync:
        TESSEL_ASSERT(false, "cluster.sync below the top level (the verifier refuses it)");
        return;
      case GroupOpKind::Call:
        user_error(ErrorKind::Unsupported, "the sim cannot run " + op_name(op) + " to '" +
                                               op.callee + "'");
      case GroupOpKind::For: {
        int64_t lo = eval(op.lo), hi = eval(op.hi);
        __int128 trips = std::max<__int128>(0, static_cast<__int128>(hi) - lo);
        if (trips > kSimMaxIterations - iterations_)
          user_error(ErrorKind::Unsupported,
                     op_name(op) + " runs from " + std::to_string(lo) + " to " + std::to_string(hi) +
                         ": more loop iterations than the sim runs in one launch (" +
                         std::to_string(kSimMaxIterations) + ", " + std::to_string(iterations_) +
                         " run so far)");
        iterations_ += static_cast<int64_t>(trips);
        scope_->emplace_back(op.iv, lo);
        for (int64_t i = lo; i < hi; ++i) {
          scope_->back().second = i;
          run_ops(op.bodies.at(0));
        }
        scope_->pop_back();
        return;
      }
      case GroupOpKind::If:
        if (holds(op.cond)) return run_ops(op.bodies.at(0));
        if (op.bodies.size() > 1) run_ops(op.bodies[1]);
        return;
      case GroupOpKind::MbarInit: return mbar_init(op);
      case GroupOpKind::MbarArrive: return mbar_arrive(op);
      case GroupOpKind::MbarExpectTx: {
        Slot& s = slot(op, leader_, rank_);
        s.tx += op.mbar_count;
        return;
      }
      case GroupOpKind::MbarWait: return mbar_wait(op);
      case GroupOpKind::Tma: return tma(op);
      case GroupOpKind::Roles:
        if (ranks_ > 1)
          user_error(ErrorKind::Unsupported, op_name(op) + ": the sim runs a cluster's roles from the top level only");
        return run_roles(op);
      case GroupOpKind::Ticket: return ticket(op);
    }
  }

  // --- mbarriers and tma (group_ir.h, "mbarriers") ----------------------------
  // Every slot of every mbarrier, in order: its phase and what the phase still
  // expects. A tma copy reads its source at issue and lands (writes its
  // destination, counts its bytes) only when a wait needs its phase, or at the end
  // of the group: the latest moment the hardware may take.

  struct TmaElement {
    int buffer, version;
    int64_t row, col, index;
    float value;
  };
  struct InFlightTma {
    const GroupOp* op;
    int issuer;
    RaceDetector::Clock issued;
    int64_t bytes;
    std::vector<TmaElement> elements;
  };
  struct Slot {
    bool initialized = false;
    int init_op = -1, init_worker = -1;
    uint32_t init_clock = 0;
    int64_t count = 0, phase = 0, pending = 0, tx = 0;
    RaceDetector::Clock arrived, completed;  // joins of this phase's arrivals, of the last completed one
    std::deque<InFlightTma> in_flight;
  };

  // Slots are numbered rank-major: slot s of rank q is q * slots + s (the
  // detector's numbering too: cluster_view).
  std::string slot_name(int mbar, int64_t s) const {
    const MBarrier& b = p_.mbarriers[mbar];
    return b.name + "@" + std::to_string(s % b.slots) +
           (ranks_ > 1 ? " of rank " + std::to_string(s / b.slots) : "");
  }

  // The slot an op names in rank `rank`'s group, used by `worker`: initialized, and
  // the init ordered before.
  Slot& slot(const GroupOp& op, int worker, int rank) {
    const MBarrier& b = p_.mbarriers.at(op.mbar);
    int64_t s = op.mbar_slot ? eval(op.mbar_slot) : 0;
    if (s < 0 || s >= b.slots)
      user_error(ErrorKind::Runtime, op_name(op) + ": slot " + std::to_string(s) + " of " + b.name +
                                         " is outside [0, " + std::to_string(b.slots) + ")");
    s += int64_t{rank} * b.slots;
    Slot& st = slots_[mbar_first_[op.mbar] + s];
    if (!st.initialized)
      user_error(ErrorKind::Runtime, op_name(op) + " uses " + slot_name(op.mbar, s) +
                                         " before any mbar.init initializes it");
    if (worker != st.init_worker && detector_.clock(worker)[st.init_worker] < st.init_clock)
      detector_.sync_race(st.init_op, st.init_worker, op.id, worker, b.name,
                          "race on mbarrier " + slot_name(op.mbar, s) + ": mbar.init #" +
                              std::to_string(st.init_op) + " (worker " + std::to_string(st.init_worker) +
                              ") initializes it, " + op_name(op) + " (worker " + std::to_string(worker) +
                              ") uses it with no " + (rank == rank_ ? "fence" : "cluster.sync") + " between");
    cur_slot_ = s;
    return st;
  }

  void mbar_init(const GroupOp& op) {
    const MBarrier& b = p_.mbarriers.at(op.mbar);
    for (int s = rank_ * b.slots; s < (rank_ + 1) * b.slots; ++s) {
      Slot& st = slots_[mbar_first_[op.mbar] + s];
      for (const InFlightTma& t : st.in_flight)
        user_error(ErrorKind::Runtime, op_name(op) + " initializes " + slot_name(op.mbar, s) + " while " +
                                           op_name(*t.op) + " is still in flight on it");
      st = Slot{};
      st.initialized = true;
      st.init_op = op.id;
      st.init_worker = leader_;
      st.init_clock = detector_.clock(leader_)[leader_];
      st.count = st.pending = op.mbar_count;
      st.arrived = st.completed = detector_.zero_clock();
    }
  }

  // Completes the slot's phase when it has every arrival and no transaction left.
  void try_complete(Slot& st, int mbar, int64_t s) {
    if (st.pending != 0 || st.tx != 0) return;
    st.completed = st.arrived;
    ++st.phase;
    st.completed[detector_.slot_actor(mbar, static_cast<int>(s))] = static_cast<uint32_t>(st.phase);
    st.arrived = detector_.zero_clock();
    st.pending = st.count;
  }

  // A cluster arrival arrives on the slot in every rank's group.
  void mbar_arrive(const GroupOp& op) {
    std::vector<int> who = op.leader ? std::vector<int>{leader_} : shuffled();
    std::vector<std::pair<int, int>> arrivals;  // (worker, rank)
    for (int w : who)
      for (int q = 0; q < (op.cluster_wide ? ranks_ : 1); ++q) arrivals.emplace_back(w, op.cluster_wide ? q : rank_);
    for (auto [w, q] : arrivals) {
      Slot* st = &slot(op, w, q);
      const int64_t s = cur_slot_;
      if (q != rank_) remote_.push_back({&op, w, q, op.mbar, s, detector_.clock(w)[w]});
      // One arrival too many for the phase: the hardware's count would wrap. It is
      // reported (it follows some other slip, which the races before it show) and
      // left out.
      if (st->pending == 0) {
        detector_.sync_race(op.id, w, -1, -1, p_.mbarriers[op.mbar].name,
                            op_name(op) + " (worker " + std::to_string(w) + ") arrives on phase " +
                                std::to_string(st->phase) + " of " + slot_name(op.mbar, s) +
                                ", which already has its " + std::to_string(st->count) +
                                " arrivals (mbar.init count) and waits only for " + std::to_string(st->tx) +
                                " transaction bytes: the arrival is left out");
        continue;
      }
      detector_.release(w, &st->arrived);
      --st->pending;
      try_complete(*st, op.mbar, s);
    }
  }

  // Lands the oldest copy in flight on the slot: its data, its bytes.
  void land(Slot& st, int mbar, int64_t s) {
    ++progress_;
    InFlightTma t = std::move(st.in_flight.front());
    st.in_flight.pop_front();
    int actor = detector_.slot_actor(mbar, static_cast<int>(s));
    for (const TmaElement& e : t.elements) {
      detector_.tma_land(e.buffer, e.version, e.row, e.col, e.index, t.issuer, *t.op, t.issued, actor,
                         static_cast<uint32_t>(st.phase + 1));
      shared_[e.buffer][e.index] = e.value;
    }
    st.tx -= t.bytes;
    try_complete(st, mbar, s);
  }

  // Every worker: returns once the latest phase of the given parity has completed,
  // and sees what that phase carries. A phase that nothing left can complete (in
  // a program whose workers all run every op, that is the wait itself) is a
  // deadlock: an error, not a hang.
  void mbar_wait(const GroupOp& op) {
    for (int w : shuffled()) {
      Slot& st = slot(op, w, rank_);
      int64_t s = cur_slot_;
      int64_t parity = eval(op.parity);
      if (parity != 0 && parity != 1)
        user_error(ErrorKind::Runtime, op_name(op) + ": parity " + std::to_string(parity) + " is not 0 or 1");
      for (;;) {
        while (st.phase % 2 == parity && !st.in_flight.empty()) land(st, op.mbar, s);
        if (st.phase % 2 != parity) break;
        std::string why = op_name(op) + " (worker " + std::to_string(w) + ") waits on " + slot_name(op.mbar, s) +
                          " for phase " + std::to_string(st.phase) + " (parity " + std::to_string(parity) +
                          "): " + std::to_string(st.pending) + " of " + std::to_string(st.count) +
                          " arrivals and " + std::to_string(st.tx) + " transaction bytes outstanding";
        // Every worker runs this op: nothing else can run that would complete it.
        if (!roles_)
          deadlock(op.id, w, p_.mbarriers[op.mbar].name,
                   "deadlock: " + why + ", which can never complete: no copy in flight on it");
        block(why, op.id, w, p_.mbarriers[op.mbar].name);  // the other roles may complete it
      }
      detector_.acquire(w, st.completed);
    }
  }

  // --- roles (warp specialization) ---------------------------------------------
  // Each role of a roles op runs its body on a thread of its own, but only one runs
  // at a time (the baton): a role runs until it ends or blocks in an mbar.wait, and
  // the scheduler then hands the baton to the next role, round after round. A round
  // in which no role ran an op or landed a copy is a deadlock: an error naming
  // every blocked wait. The order is fixed, so runs are deterministic.
  struct RoleRun {
    int rank = 0;
    std::vector<int> workers;
    std::vector<std::pair<std::string, int64_t>> scope;
    std::thread thread;
    bool done = false;
    std::string blocked_on;  // the wait it is blocked in, or ""
    int blocked_op = -1, blocked_worker = -1;
    std::string blocked_mbar;
    std::exception_ptr error;
  };
  struct RoleAbort {};  // unwinds a role's thread when the roles op is abandoned

  void run_roles(const GroupOp& op) {
    TESSEL_ASSERT(!roles_, "nested roles (the verifier refuses them)");
    // Every rank's roles at once: run q * roles + r is role r of rank q.
    std::vector<RoleRun> runs(ranks_ * op.roles.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      const WorkerRole& role = op.roles[i % op.roles.size()];
      runs[i].rank = static_cast<int>(i / op.roles.size());
      for (int w = role.first; w < role.first + role.count; ++w)
        runs[i].workers.push_back(runs[i].rank * p_.workers + w);
      runs[i].scope = ranks_ == 1 ? *scope_ : rank_scopes_[runs[i].rank];
    }
    std::vector<int>* saved_order = order_;
    Scope* saved_scope = scope_;
    const int saved_leader = leader_, saved_rank = rank_;
    roles_ = &runs;
    std::exception_ptr failure;
    for (size_t r = 0; r < runs.size() && !failure; ++r) {
      try {
        runs[r].thread = std::thread([this, &op, r] {
          role_main(op.bodies.at(r % op.roles.size()), static_cast<int>(r));
        });
      } catch (...) {  // no thread to be had: the roles started so far are unwound below
        failure = std::current_exception();
        for (size_t q = r; q < runs.size(); ++q) runs[q].done = true;
      }
    }
    std::string deadlock, blocked_on;
    int blocked_op = -1, blocked_worker = -1;
    while (!failure) {
      bool live = false, moved = false;
      for (size_t r = 0; r < runs.size() && !failure; ++r) {
        if (runs[r].done) continue;
        live = true;
        uint64_t before = progress_;
        hand_baton(static_cast<int>(r));
        if (runs[r].error) failure = runs[r].error;
        if (progress_ != before || runs[r].done) moved = true;
      }
      if (failure || !live) break;
      if (!moved) {
        for (const RoleRun& run : runs)
          if (!run.done) {
            deadlock += (deadlock.empty() ? "" : "; ") + run.blocked_on;
            if (blocked_op < 0) blocked_op = run.blocked_op, blocked_worker = run.blocked_worker,
                                blocked_on = run.blocked_mbar;
          }
        break;
      }
    }
    abort_roles_ = true;
    for (size_t r = 0; r < runs.size(); ++r)
      if (!runs[r].done) hand_baton(static_cast<int>(r));
    for (RoleRun& run : runs)
      if (run.thread.joinable()) run.thread.join();
    abort_roles_ = false;
    roles_ = nullptr;
    current_role_ = -1;
    order_ = saved_order;
    scope_ = saved_scope;
    leader_ = saved_leader;
    rank_ = saved_rank;
    if (failure) std::rethrow_exception(failure);
    if (!deadlock.empty())
      this->deadlock(blocked_op, blocked_worker, blocked_on, "deadlock: every role is blocked: " + deadlock);
  }

  // A wait that can never complete. In a run without races it is an error (Runtime);
  // after races, which are then its likely cause, it is reported as one more (first
  // op: the wait) and the launch stops (Deadlock, caught in run()).
  struct Deadlock {
    int op, worker;
    std::string on, message;
  };
  [[noreturn]] void deadlock(int op, int worker, const std::string& on, const std::string& message) {
    if (detector_.result().race_count == 0) user_error(ErrorKind::Runtime, message);
    throw Deadlock{op, worker, on, message + " (after the races before it; the launch stops here)"};
  }

  // Scheduler: lets role r run until it blocks or ends.
  void hand_baton(int r) {
    std::unique_lock<std::mutex> lock(baton_mutex_);
    baton_ = r;
    baton_cv_.notify_all();
    baton_cv_.wait(lock, [&] { return baton_ == -1; });
  }
  // Role r's thread: waits for the baton, then runs as the role.
  void take_baton(int r) {
    {
      std::unique_lock<std::mutex> lock(baton_mutex_);
      baton_cv_.wait(lock, [&] { return baton_ == r; });
    }
    if (abort_roles_) throw RoleAbort{};
    RoleRun& run = (*roles_)[r];
    order_ = &run.workers;
    scope_ = &run.scope;
    leader_ = run.workers.front();
    rank_ = run.rank;
    current_role_ = r;
  }
  void give_baton() {
    std::lock_guard<std::mutex> lock(baton_mutex_);
    baton_ = -1;
    baton_cv_.notify_all();
  }
  void role_main(const std::vector<GroupOp>& body, int r) {
    RoleRun& run = (*roles_)[r];
    try {
      take_baton(r);
      run_ops(body);
    } catch (const RoleAbort&) {
    } catch (...) {
      run.error = std::current_exception();
    }
    run.done = true;
    give_baton();
  }
  // Inside a role: this wait cannot complete yet; the other roles run meanwhile.
  void block(const std::string& why, int op, int worker, const std::string& mbar) {
    const int r = current_role_;
    (*roles_)[r].blocked_on = why;
    (*roles_)[r].blocked_op = op, (*roles_)[r].blocked_worker = worker, (*roles_)[r].blocked_mbar = mbar;
    give_baton();
    take_baton(r);
    (*roles_)[r].blocked_on.clear();
  }

  // Issued by the first worker: the source is read now, the destination written when the
  // copy lands (land()). A multicast copy lands in every rank's group, on its slot there.
  void tma(const GroupOp& op) {
    const int issuer = leader_;
    Window src = resolve(op.src, op), dst = resolve(op.dst, op);
    int64_t src_rows = bound(op.src_row_bound), src_cols = bound(op.src_col_bound);
    std::vector<float> values;
    values.reserve(op.rows * op.cols);
    for (int64_t i = 0; i < op.rows; ++i)
      for (int64_t j = 0; j < op.cols; ++j) {
        int64_t sr = src.row + i, sc = src.col + j;
        values.push_back(sr < src_rows && sc < src_cols ? read(src, sr, sc, issuer, op) : 0.0f);
      }
    const RaceDetector::Clock issued = detector_.clock(issuer);
    for (int q = 0; q < (op.cluster_wide ? ranks_ : 1); ++q) {
      const int rank = op.cluster_wide ? q : rank_;
      Slot& st = slot(op, issuer, rank);
      InFlightTma t{&op, issuer, issued, tma_bytes(p_, op), {}};
      t.elements.reserve(op.rows * op.cols);
      for (int64_t i = 0; i < op.rows; ++i)
        for (int64_t j = 0; j < op.cols; ++j) {
          int64_t dr = dst.row + i, dc = dst.col + j;
          int64_t index = shared_index(dst, dr, dc, op, true, rank);
          detector_.tma_issue(dst.buffer->id, dst.version, dr, dc, index, issuer, op);
          t.elements.push_back(TmaElement{dst.buffer->id, dst.version, dr, dc, index, values[i * op.cols + j]});
        }
      st.in_flight.push_back(std::move(t));
    }
    detector_.tick(issuer);  // what the issuer does next is not ordered before the copy
  }

  // The group's end: copies still in flight never landed for anyone; they land now
  // (so the results stay complete), each reported once.
  void end_mbarriers() {
    for (size_t m = 0; m < p_.mbarriers.size(); ++m)
      for (int s = 0; s < ranks_ * p_.mbarriers[m].slots; ++s) {
        Slot& st = slots_[mbar_first_[m] + s];
        while (!st.in_flight.empty()) {
          const GroupOp& op = *st.in_flight.front().op;
          const int issuer = st.in_flight.front().issuer;
          detector_.sync_race(op.id, issuer, -1, -1, p_.mbarriers[m].name,
                              "tma " + std::string("#") + std::to_string(op.id) + " (worker " +
                                  std::to_string(issuer) + ") on " +
                                  slot_name(static_cast<int>(m), s) +
                                  " never lands for anyone: no mbar.wait needs its phase before the group ends");
          land(st, static_cast<int>(m), s);
        }
        st = Slot{};
      }
  }

  // --- expressions -------------------------------------------------------------

  int64_t eval(const Expr& e) { return expr_eval(e, lookup_); }
  int64_t bound(const Expr& e) { return e ? eval(e) : kUnbounded; }

  bool holds(const Cond& c) {
    if (!c.on_scalar) return cmp_holds(c.op, double(eval(c.lhs)), double(eval(c.rhs)));
    auto it = args_.scalars.find(c.scalar);
    if (it == args_.scalars.end())
      user_error(ErrorKind::InvalidArgument, "missing scalar parameter '" + c.scalar + "'");
    return cmp_holds(c.op, it->second, c.value);
  }

  const std::vector<int>& shuffled() {
    std::shuffle(order_->begin(), order_->end(), rng_);
    return *order_;
  }

  // --- memory ------------------------------------------------------------------

  Window resolve(const BufferRef& ref, const GroupOp& op) {
    const Buffer& b = p_.buffer(ref.buffer);
    int64_t version = ref.version ? eval(ref.version) : 0;
    Window w{&b, 0, eval(ref.row), eval(ref.col)};
    // No buffer reaches this far, and window coordinates plus an op's extents (at
    // most 2^31, the verifier's bounds) stay inside 64 bits below it.
    constexpr int64_t kFar = int64_t{1} << 62;
    if (w.row < -kFar || w.row > kFar || w.col < -kFar || w.col > kFar)
      user_error(ErrorKind::Runtime, op_name(op) + ": window of " + b.name + " at (" +
                                         std::to_string(w.row) + ", " + std::to_string(w.col) +
                                         ") lies beyond any buffer (2^62)");
    if (b.space == Space::Global) {
      if (!ref.row_stride || !ref.col_stride)
        user_error(ErrorKind::Verify, op_name(op) + ": global window " + b.name + " has no strides");
      w.offset = ref.offset ? eval(ref.offset) : 0;
      w.row_stride = eval(ref.row_stride);
      w.col_stride = eval(ref.col_stride);
    }
    int versions = b.space == Space::Shared ? b.versions : 1;
    if (version < 0 || version >= versions)
      user_error(ErrorKind::Runtime, op_name(op) + ": version " + std::to_string(version) +
                                         " of " + b.name + " is outside [0, " +
                                         std::to_string(versions) + ")");
    w.version = static_cast<int>(version);
    if (b.space == Space::Private)
      user_error(ErrorKind::Verify, op_name(op) + ": " + b.name + " is a private fragment, " +
                                        "not a shared or global buffer");
    return w;
  }

  [[noreturn]] void outside(const GroupOp& op, const Buffer& b, int64_t r, int64_t c, bool write,
                            int64_t rows, int64_t cols) {
    user_error(ErrorKind::Runtime, op_name(op) + (write ? " writes " : " reads ") + b.name + "[" +
                                       std::to_string(r) + ", " + std::to_string(c) +
                                       "] outside its " + std::to_string(rows) + " x " +
                                       std::to_string(cols) + " extent");
  }

  // Offset of shared element (r, c) in the buffer's storage (all versions, of every
  // rank: rank-major), in the group of rank `rank` (-1: the running one).
  int64_t shared_index(const Window& w, int64_t r, int64_t c, const GroupOp& op, bool write, int rank = -1) {
    const Buffer& b = *w.buffer;
    if (r < 0 || c < 0 || r >= b.rows || c >= b.cols) outside(op, b, r, c, write, b.rows, b.cols);
    const int64_t version = int64_t{rank < 0 ? rank_ : rank} * b.versions + w.version;
    return version * b.rows * b.cols + layout_offset(b, r, c);
  }

  // Element (r, c), absolute: data[offset + r * row_stride + c * col_stride], which
  // must lie inside what the pointer holds (tensor_check's element count).
  // `address_out` set: an async copy's source read, in flight until its wait.
  float* global_element(const Window& w, int64_t r, int64_t c, int worker, const GroupOp& op,
                        bool write, int64_t* address_out = nullptr) {
    const int64_t address = global_address(w, r, c, op, write);
    if (address_out) {
      *address_out = address;
      detector_.global_async_read_begin(w.buffer->tensor, address, r, c, worker, op);
    } else {
      detector_.global_access(w.buffer->tensor, address, r, c, worker, op, write);
    }
    return tensors_[w.buffer->tensor].data + address;
  }

  // The element's offset in its tensor's memory, which must be inside it.
  int64_t global_address(const Window& w, int64_t r, int64_t c, const GroupOp& op, bool write) {
    const Tensor& t = tensors_[w.buffer->tensor];
    __int128 address = static_cast<__int128>(w.offset) + static_cast<__int128>(r) * w.row_stride +
                       static_cast<__int128>(c) * w.col_stride;
    if (r < 0 || c < 0 || address < 0 || address >= t.elements)
      user_error(ErrorKind::Runtime,
                 op_name(op) + (write ? " writes " : " reads ") + w.buffer->name + "[" +
                     std::to_string(r) + ", " + std::to_string(c) + "] at element " +
                     (address < 0 ? "-" : "") +
                     std::to_string(static_cast<uint64_t>(address < 0 ? -address : address)) +
                     " (offset " + std::to_string(w.offset) + ", strides " +
                     std::to_string(w.row_stride) + ", " + std::to_string(w.col_stride) +
                     "), outside the tensor's " + std::to_string(t.elements) + " elements");
    return static_cast<int64_t>(address);
  }

  // The running workers meet (their accesses so far are ordered before the rest);
  // then the group takes the counter element's next ticket, an atomic step that
  // releases and acquires (RaceDetector::ticket), and binds it for the ops after.
  void ticket(const GroupOp& op) {
    detector_.new_interval(order_);
    Window w = resolve(op.dst, op);
    const int64_t address = global_address(w, w.row, w.col, op, true);
    const int64_t count = eval(op.hi);
    uint32_t next;
    std::memcpy(&next, tensors_[w.buffer->tensor].data + address, 4);  // a u32 tensor
    if (count < 1 || next >= count)
      user_error(ErrorKind::Runtime, op_name(op) + ": counter " + w.buffer->name + " element " +
                                         std::to_string(address) + " holds " + std::to_string(next) +
                                         ", not a ticket of [0, " + std::to_string(count) + ")");
    const uint32_t after = next + 1 == count ? 0 : next + 1;
    std::memcpy(tensors_[w.buffer->tensor].data + address, &after, 4);
    const TensorStorage& at = storage_.tensors[w.buffer->tensor];
    detector_.ticket((int64_t{at.storage} << 40) + at.offset + address, after == 0);
    scope_->emplace_back(op.iv, next);
  }

  // Element (r, c), absolute in the buffer.
  float read(const Window& w, int64_t r, int64_t c, int worker, const GroupOp& op) {
    if (w.buffer->space == Space::Global) return *global_element(w, r, c, worker, op, false);
    int64_t i = shared_index(w, r, c, op, false);
    detector_.shared_access(w.buffer->id, w.version, r, c, i, worker, op, false);
    return shared_[w.buffer->id][i];
  }

  void write(const Window& w, int64_t r, int64_t c, float value, int worker, const GroupOp& op) {
    if (w.buffer->space == Space::Global) {
      *global_element(w, r, c, worker, op, true) = value;
      return;
    }
    int64_t i = shared_index(w, r, c, op, true);
    detector_.shared_access(w.buffer->id, w.version, r, c, i, worker, op, true);
    shared_[w.buffer->id][i] = value;
  }

  const Buffer& private_buffer(int id, const GroupOp& op) {
    const Buffer& b = p_.buffer(id);
    if (b.space != Space::Private)
      user_error(ErrorKind::Verify, op_name(op) + ": " + b.name + " is not a private fragment");
    return b;
  }
  // Every worker's part has the same size, except surplus workers, who own nothing.
  int64_t part_size(int frag) const { return parts_[frag][0].rows * parts_[frag][0].cols; }
  int64_t part_elements(int frag, int worker) const {
    return parts_[frag][worker].rows * parts_[frag][worker].cols;
  }
  float* frag(int id, int worker) { return frags_[id].data() + worker * part_size(id); }

  // --- ops ---------------------------------------------------------------------

  void copy(const GroupOp& op) {
    Window src = resolve(op.src, op), dst = resolve(op.dst, op);
    int64_t src_rows = bound(op.src_row_bound), src_cols = bound(op.src_col_bound);
    int64_t dst_rows = bound(op.dst_row_bound), dst_cols = bound(op.dst_col_bound);
    if (op.async && dst.buffer->space != Space::Shared)
      user_error(ErrorKind::Verify, op_name(op) + ": an async copy must write shared memory");
    TESSEL_ASSERT(op.batch >= 1, "copy batch must be positive");
    if (op.async && ranks_ > 1)
      user_error(ErrorKind::Unsupported, op_name(op) + ": the sim runs no async copies in clusters");
    int64_t total = op.rows * op.cols, batch = op.batch, stride = batch * p_.workers;
    uint32_t instance = op.async ? ++async_instances_ : 0;
    int issuer = -1;  // async: the first worker that issued an element
    for (int w : shuffled())
      for (int64_t start = (w % p_.workers) * batch; start < total; start += stride)
        for (int64_t e = start; e < std::min(total, start + batch); ++e) {
          int64_t i = e / op.cols, j = e % op.cols;
          int64_t dr = dst.row + i, dc = dst.col + j, sr = src.row + i, sc = src.col + j;
          if (dr >= dst_rows || dc >= dst_cols) continue;
          bool padding = !(sr < src_rows && sc < src_cols);
          if (!op.async) {
            write(dst, dr, dc, padding ? static_cast<float>(op.constant) : read(src, sr, sc, w, op), w, op);
            continue;
          }
          // Async: the source is read until the async.wait that completes the copy.
          PendingWrite pw{&op, w, instance, dst.buffer->id, dst.version, dr, dc, 0,
                          static_cast<float>(op.constant)};
          if (!padding) pw.value = async_source_read(src, sr, sc, w, op, &pw);
          pw.index = shared_index(dst, dr, dc, op, true);
          detector_.async_issue(dst.buffer->id, dst.version, dr, dc, pw.index, w, op, instance);
          open_.writes.push_back(pw);
          if (issuer < 0) issuer = w;
        }
    if (op.async) open_.copies.emplace_back(&op, issuer);
  }

  // An async copy's read of source element (r, c): recorded now and kept in flight.
  float async_source_read(const Window& src, int64_t r, int64_t c, int w, const GroupOp& op,
                          PendingWrite* pw) {
    pw->src_row = r, pw->src_col = c, pw->src_version = src.version;
    if (src.buffer->space == Space::Global) {
      pw->from = PendingWrite::From::Global;
      pw->src = src.buffer->tensor;
      return *global_element(src, r, c, w, op, false, &pw->src_index);
    }
    pw->from = PendingWrite::From::Shared;
    pw->src = src.buffer->id;
    pw->src_index = shared_index(src, r, c, op, false);
    detector_.async_read_begin(pw->src, src.version, r, c, pw->src_index, w, op);
    return shared_[pw->src][pw->src_index];
  }

  // The copy's source read ends (at its wait: recorded there too, unless the group
  // is ending).
  void end_source_read(const PendingWrite& pw, bool record) {
    if (pw.from == PendingWrite::From::Shared)
      detector_.async_read_end(pw.src, pw.src_version, pw.src_row, pw.src_col, pw.src_index, pw.worker,
                               *pw.op, record);
    else if (pw.from == PendingWrite::From::Global)
      detector_.global_async_read_end(pw.src, pw.src_index, pw.src_row, pw.src_col, pw.worker, *pw.op,
                                      record);
  }

  // Retires the oldest committed groups until at most `pending` are in flight. The
  // data lands now: a write by the issuing worker in the current interval.
  void async_wait(const GroupOp& op) {
    TESSEL_ASSERT(op.pending >= 0, "async.wait pending must be non-negative");
    while (committed_.size() > static_cast<size_t>(op.pending)) {
      for (const PendingWrite& pw : committed_.front().writes) {
        detector_.async_land(pw.buffer, pw.index, pw.instance);
        detector_.shared_access(pw.buffer, pw.version, pw.row, pw.col, pw.index, pw.worker, *pw.op,
                                true);
        end_source_read(pw, true);
        shared_[pw.buffer][pw.index] = pw.value;
      }
      committed_.pop_front();
    }
  }

  // Transposed, fragment element (r, c) is window element (c, r).
  void frag_load(const GroupOp& op) {
    private_buffer(op.frag, op);
    Window src = resolve(op.src, op);
    int64_t rows = bound(op.src_row_bound), cols = bound(op.src_col_bound);
    const float pad = static_cast<float>(op.constant);
    for (int w : shuffled()) {
      const FragPart& part = parts_[op.frag][w];
      float* f = frag(op.frag, w);
      for (int64_t i = 0; i < part.rows; ++i)
        for (int64_t j = 0; j < part.cols; ++j) {
          int64_t fr = part.row0 + i, fc = part.col0 + j;
          int64_t r = src.row + (op.transpose ? fc : fr), c = src.col + (op.transpose ? fr : fc);
          f[i * part.cols + j] = r < rows && c < cols ? read(src, r, c, w, op) : pad;
        }
    }
  }

  // Only owners store: a replicated element is written once.
  void frag_store(const GroupOp& op) {
    private_buffer(op.frag, op);
    Window dst = resolve(op.dst, op);
    int64_t rows = bound(op.dst_row_bound), cols = bound(op.dst_col_bound);
    for (int w : shuffled()) {
      const FragPart& part = parts_[op.frag][w];
      if (!part.owner) continue;
      const float* f = frag(op.frag, w);
      for (int64_t i = 0; i < part.rows; ++i)
        for (int64_t j = 0; j < part.cols; ++j) {
          int64_t r = dst.row + part.row0 + i, c = dst.col + part.col0 + j;
          if (r < rows && c < cols) write(dst, r, c, f[i * part.cols + j], w, op);
        }
    }
  }

  // Each worker gathers the rows of a and the columns of b its part needs (one
  // recorded read per element), then accumulates in float, k in order, one
  // multiply and one add per step: the same arithmetic for every schedule of the
  // same k, so pipelined and plain programs agree bit for bit.
  void mma(const GroupOp& op) {
    private_buffer(op.frag, op);
    // An a operand in registers (a private fragment) is each worker's own rows.
    const bool a_private = p_.buffer(op.a.buffer).space == Space::Private;
    if (a_private) private_buffer(op.a.buffer, op);
    Window a = a_private ? Window{} : resolve(op.a, op), b = resolve(op.b, op);
    const int64_t k = op.k;
    const int64_t m_valid = op.m_valid ? eval(op.m_valid) : op.m;
    const int64_t n_valid = op.n_valid ? eval(op.n_valid) : op.n;
    const int64_t k_valid = op.k_valid ? eval(op.k_valid) : op.k;
    for (int w : shuffled()) {
      const FragPart& part = parts_[op.frag][w];
      if (part.rows == 0 || part.cols == 0) continue;
      a_.resize(part.rows * k);
      b_.resize(k * part.cols);
      if (op.async) mma_groups_[w].push_back(InFlightMma{op.frag, op.id, &op, {}});
      auto get = [&](const Window& x, int64_t r, int64_t c) {
        if (!op.async || x.buffer->space != Space::Shared) return read(x, r, c, w, op);
        int64_t i = shared_index(x, r, c, op, false);
        detector_.async_read_begin(x.buffer->id, x.version, r, c, i, w, op);
        mma_groups_[w].back().reads.push_back({x.buffer->id, x.version, r, c, i});
        return shared_[x.buffer->id][i];
      };
      // A tensor read in place (Plan::direct) is read only inside the valid part.
      const bool a_global = !a_private && a.buffer->space == Space::Global, b_global = b.buffer->space == Space::Global;
      const int64_t rows_read = a_global ? std::min(part.rows, m_valid - part.row0) : part.rows;
      const int64_t cols_read = b_global ? std::min(part.cols, n_valid - part.col0) : part.cols;
      const int64_t ka_read = a_global ? std::min(k, k_valid) : k, kb_read = b_global ? std::min(k, k_valid) : k;
      if (a_private) {
        const FragPart& pa = parts_[op.a.buffer][w];
        TESSEL_ASSERT(pa.row0 == part.row0 && pa.rows == part.rows && pa.cols == k, "register operand a is not the worker's rows");
        const float* fa = frag(op.a.buffer, w);
        std::copy(fa, fa + part.rows * k, a_.begin());
      } else {
        for (int64_t i = 0; i < rows_read; ++i)
          for (int64_t kk = 0; kk < ka_read; ++kk)
            a_[i * k + kk] = get(a, a.row + part.row0 + i, a.col + kk);
      }
      for (int64_t kk = 0; kk < kb_read; ++kk)
        for (int64_t j = 0; j < cols_read; ++j)
          b_[kk * part.cols + j] = get(b, b.row + kk, b.col + part.col0 + j);
      float* acc = frag(op.frag, w);
      // Elements outside the valid part are left as they were (GroupOp::m_valid).
      for (int64_t i = 0; i < std::min(part.rows, m_valid - part.row0); ++i)
        for (int64_t j = 0; j < std::min(part.cols, n_valid - part.col0); ++j) {
          float sum = acc[i * part.cols + j];
          for (int64_t kk = 0; kk < std::min(k, k_valid); ++kk) {
            float product = a_[i * k + kk] * b_[kk * part.cols + j];
            sum = sum + product;
          }
          acc[i * part.cols + j] = sum;
        }
    }
  }

  // Completes each worker's oldest async mmas until at most `pending` are in
  // flight: their operand reads end here, in this interval (so a fence before the
  // wait does not order them). (The sum itself was formed at issue; the detector
  // is what tells whether the operands stayed put until here.)
  void mma_wait(const GroupOp& op) {
    TESSEL_ASSERT(op.pending >= 0, "mma.wait pending must be non-negative");
    for (int w : *order_) {
      auto& groups = mma_groups_[w];
      while (groups.size() > static_cast<size_t>(op.pending)) {
        const InFlightMma& m = groups.front();
        for (const SharedRead& r : m.reads)
          detector_.async_read_end(r.buffer, r.version, r.row, r.col, r.index, w, *m.mma);
        groups.pop_front();
      }
    }
  }

  // Max and min propagate NaN, so that a poisoned element stays visible.
  static float max_of(float x, float y) { return std::isnan(x) || x > y ? x : y; }
  static float min_of(float x, float y) { return std::isnan(x) || x < y ? x : y; }

  static float apply(const GroupOp& op, const float* v) {
    const float x = v[0], y = v[1];
    switch (op.ew) {
      case EwOp::Add: return x + y;
      case EwOp::Sub: return x - y;
      case EwOp::Mul: return x * y;
      case EwOp::Div: return x / y;
      case EwOp::Max: return max_of(x, y);
      case EwOp::Min: return min_of(x, y);
      case EwOp::Exp: return std::exp(x);
      case EwOp::Exp2: return std::exp2(x);
      case EwOp::Log: return std::log(x);
      case EwOp::Neg: return -x;
      case EwOp::Abs: return std::fabs(x);
      case EwOp::Sqrt: return std::sqrt(x);
      case EwOp::Rsqrt: return 1.0f / std::sqrt(x);
      case EwOp::Recip: return 1.0f / x;
      case EwOp::Tanh: return std::tanh(x);
      case EwOp::Cmp: return cmp_holds(op.cmp, x, y) ? 1.0f : 0.0f;
      case EwOp::Select: return x != 0 ? y : v[2];
      case EwOp::Cast: return round_to(op.dtype, x);
      case EwOp::Copy: return x;
      case EwOp::Index: break;  // no operands: elementwise() writes the position
    }
    TESSEL_ASSERT(false, "apply() of an op without operands");
    return x;
  }

  // Operands broadcast: a fragment of extent 1 along a dimension serves every
  // element along it (its part there is the replicated element 0), others have
  // the destination's extent and so the same part.
  void elementwise(const GroupOp& op) {
    const Buffer& dst = private_buffer(op.frag, op);
    const size_t arity = static_cast<size_t>(ew_arity(op.ew));
    if (op.operands.size() != arity)
      user_error(ErrorKind::Verify, op_name(op) + ": " + ew_op_name(op.ew) + " takes " +
                                        std::to_string(arity) + " operands, not " +
                                        std::to_string(op.operands.size()));
    // Scalars, constants and index values are resolved once; fragments per worker.
    float value[3] = {0, 0, 0};
    const Buffer* operand_frag[3] = {nullptr, nullptr, nullptr};
    for (size_t n = 0; n < arity; ++n) {
      const EwOperand& o = op.operands[n];
      switch (o.kind) {
        case EwOperand::Kind::Const: value[n] = static_cast<float>(o.value); break;
        case EwOperand::Kind::Scalar: value[n] = static_cast<float>(scalar(o.scalar)); break;
        case EwOperand::Kind::Index: value[n] = static_cast<float>(eval(o.index)); break;
        case EwOperand::Kind::Frag: {
          const Buffer& f = private_buffer(o.frag, op);
          if ((f.rows != dst.rows && f.rows != 1) || (f.cols != dst.cols && f.cols != 1))
            user_error(ErrorKind::Verify, op_name(op) + ": operand " + f.name + " " +
                                              std::to_string(f.rows) + " x " + std::to_string(f.cols) +
                                              " does not broadcast to " + dst.name + " " +
                                              std::to_string(dst.rows) + " x " +
                                              std::to_string(dst.cols));
          operand_frag[n] = &f;
          break;
        }
      }
    }
    if (op.ew == EwOp::Index && op.axis != 0 && op.axis != 1)
      user_error(ErrorKind::Verify, op_name(op) + ": index axis " + std::to_string(op.axis));
    for (int w : shuffled()) {
      const FragPart& part = parts_[op.frag][w];
      const float* in[3] = {nullptr, nullptr, nullptr};
      int64_t row_step[3] = {0, 0, 0}, col_step[3] = {0, 0, 0}, width[3] = {0, 0, 0};
      for (size_t n = 0; n < arity; ++n) {
        if (!operand_frag[n]) continue;
        const Buffer& f = *operand_frag[n];
        in[n] = frag(f.id, w);
        width[n] = parts_[f.id][w].cols;
        row_step[n] = f.rows == 1 && dst.rows != 1 ? 0 : 1;
        col_step[n] = f.cols == 1 && dst.cols != 1 ? 0 : 1;
      }
      float* out = frag(op.frag, w);
      for (int64_t i = 0; i < part.rows; ++i)
        for (int64_t j = 0; j < part.cols; ++j) {
          float v[3] = {0, 0, 0};
          for (size_t n = 0; n < arity; ++n)
            v[n] = in[n] ? in[n][i * row_step[n] * width[n] + j * col_step[n]] : value[n];
          out[i * part.cols + j] =
              op.ew == EwOp::Index ? static_cast<float>(op.axis == 0 ? part.row0 + i : part.col0 + j)
                                   : apply(op, v);
        }
    }
  }

  double scalar(const std::string& name) const {
    auto it = args_.scalars.find(name);
    if (it == args_.scalars.end())
      user_error(ErrorKind::InvalidArgument, "missing scalar parameter '" + name + "'");
    return it->second;
  }

  static float reduce_step(ReduceOp r, float acc, float x) {
    switch (r) {
      case ReduceOp::Sum: return acc + x;
      case ReduceOp::Max: return max_of(acc, x);
      case ReduceOp::Min: return min_of(acc, x);
    }
    return acc;
  }

  // The three modes of group_ir.h's ReduceMode. Along axis 1 a worker reduces each
  // row of its part (axis 0: each column), in order, from the identity.
  void reduce(const GroupOp& op) {
    if (op.axis != 0 && op.axis != 1)
      user_error(ErrorKind::Verify, op_name(op) + ": axis " + std::to_string(op.axis));
    const bool rows = op.axis == 1;  // one result per row of the part
    const float identity = static_cast<float>(reduce_identity(op.reduce));
    // Reduces line `l` of worker w's part of `source` (a row when `rows`).
    auto line = [&](int source, int w, int64_t l) {
      const FragPart& sp = parts_[source][w];
      const float* s = frag(source, w);
      float acc = identity;
      for (int64_t k = 0; k < (rows ? sp.cols : sp.rows); ++k)
        acc = reduce_step(op.reduce, acc, rows ? s[l * sp.cols + k] : s[k * sp.cols + l]);
      return acc;
    };
    if (op.reduce_mode != ReduceMode::Combine &&
        (op.operands.size() != 1 || op.operands[0].kind != EwOperand::Kind::Frag))
      user_error(ErrorKind::Verify, op_name(op) + ": the source must be one fragment");
    switch (op.reduce_mode) {
      case ReduceMode::Local: {
        int source = op.operands[0].frag;
        const Buffer& s = private_buffer(source, op);
        const Buffer& d = private_buffer(op.frag, op);
        if ((rows ? d.rows != s.rows || d.cols != 1 : d.cols != s.cols || d.rows != 1))
          user_error(ErrorKind::Verify, op_name(op) + ": " + d.name + " is not " + s.name +
                                            " reduced along axis " + std::to_string(op.axis));
        for (int w : shuffled()) {
          const FragPart& dp = parts_[op.frag][w];
          float* out = frag(op.frag, w);
          for (int64_t l = 0; l < (rows ? dp.rows : dp.cols); ++l)
            out[rows ? l * dp.cols : l] = line(source, w, l);
        }
        return;
      }
      case ReduceMode::Partial: {
        int source = op.operands[0].frag;
        private_buffer(source, op);
        Window scratch = resolve(op.dst, op);
        for (int w : shuffled()) {
          const FragPart& sp = parts_[source][w];
          if (!sp.owner) continue;  // a replica: its owner writes the same partial
          auto [wr, wc] = worker_position(p_, w);
          int64_t s = rows ? wc : wr;
          for (int64_t l = 0; l < (rows ? sp.rows : sp.cols); ++l) {
            float partial = line(source, w, l);
            if (rows) write(scratch, scratch.row + sp.row0 + l, scratch.col + s, partial, w, op);
            else write(scratch, scratch.row + s, scratch.col + sp.col0 + l, partial, w, op);
          }
        }
        return;
      }
      case ReduceMode::Combine: {
        private_buffer(op.frag, op);
        Window scratch = resolve(op.src, op);
        const int workers_along = rows ? p_.worker_cols : p_.worker_rows;
        for (int w : shuffled()) {
          const FragPart& dp = parts_[op.frag][w];
          float* out = frag(op.frag, w);
          for (int64_t l = 0; l < (rows ? dp.rows : dp.cols); ++l) {
            float acc = identity;
            for (int64_t s = 0; s < workers_along; ++s)
              acc = reduce_step(op.reduce, acc,
                                rows ? read(scratch, scratch.row + dp.row0 + l, scratch.col + s, w, op)
                                     : read(scratch, scratch.row + s, scratch.col + dp.col0 + l, w, op));
            out[rows ? l * dp.cols : l] = acc;
          }
        }
        return;
      }
    }
  }

  const GroupProgram& p_;
  const LaunchArgs& args_;
  std::vector<Tensor> tensors_;
  Storages storage_;
  const int ranks_;    // groups in a cluster (1: no clusters)
  const int workers_;  // every rank's workers: rank q's worker w is q * p_.workers + w
  GroupProgram view_;  // the program as the detector sees a cluster (cluster_view)
  RaceDetector detector_;
  std::mt19937_64 rng_;
  using Scope = std::vector<std::pair<std::string, int64_t>>;  // innermost last
  std::vector<int> all_workers_;
  Scope main_scope_;   // the size parameters
  // Per rank of the running cluster: its workers, and its scope (sizes, then the
  // group's coordinates).
  std::vector<std::vector<int>> rank_workers_;
  std::vector<Scope> rank_scopes_;
  int rank_ = 0;       // the rank whose ops run (its shared memory, its mbarriers)
  // An arrival on another rank's mbarrier: `worker`'s own clock component then.
  struct RemoteArrival {
    const GroupOp* op;
    int worker, to, mbar;
    int64_t slot;
    uint32_t clock;
  };
  std::vector<RemoteArrival> remote_;
  // The workers that run the current op (all, or a role's) and the symbols in
  // scope: each role of a roles op has its own.
  std::vector<int>* order_ = &all_workers_;
  Scope* scope_ = &main_scope_;
  int leader_ = 0;  // the first worker of the workers running (tma, expect_tx, leader arrivals)
  // A roles op in progress (run_roles): its roles, the one holding the baton.
  std::vector<RoleRun>* roles_ = nullptr;
  int current_role_ = -1;
  std::mutex baton_mutex_;
  std::condition_variable baton_cv_;
  int baton_ = -1;             // the role that may run; -1: the scheduler
  bool abort_roles_ = false;   // set: a role given the baton unwinds (RoleAbort)
  uint64_t progress_ = 0;      // ops run and copies landed
  SymbolLookup lookup_;
  std::vector<std::vector<float>> shared_;   // by buffer id: versions x layout
  std::vector<std::vector<float>> frags_;    // by buffer id: workers x part, row-major
  std::vector<std::vector<FragPart>> parts_; // by buffer id, by worker
  std::vector<float> a_, b_;                 // mma gather scratch
  CommitGroup open_;                         // async copies not committed yet
  // Per worker: async mmas in flight, oldest first: the accumulator each writes and
  // the shared elements it reads.
  struct SharedRead {
    int buffer, version;
    int64_t row, col, index;
  };
  struct InFlightMma {
    int frag, op;
    const GroupOp* mma;
    std::vector<SharedRead> reads;
  };
  std::vector<std::deque<InFlightMma>> mma_groups_;
  std::deque<CommitGroup> committed_;
  std::vector<Slot> slots_;       // every mbarrier's slots, in order
  std::vector<int> mbar_first_;   // by mbarrier id: its first slot in slots_
  int64_t cur_slot_ = 0;          // the slot index slot() resolved last
  uint32_t async_instances_ = 0;
  int64_t iterations_ = 0;  // loop iterations run in this launch (kSimMaxIterations)
};

}  // namespace

SimResult run_sim(const GroupProgram& program, const LaunchArgs& args, const SimOptions& options) {
  // The program is verified and what the interpreter allocates bounded first, so
  // running out of memory is our bug; still, the caller gets an Error.
  verify_group_program(program);
  verify_group_limits(program, TargetKind::Sim);
  try {
    return Interpreter(program, args, options).run();
  } catch (const std::bad_alloc&) {
    user_error(ErrorKind::Runtime, "the sim ran out of memory running program " + program.name);
  } catch (const std::length_error& e) {
    user_error(ErrorKind::Runtime, "the sim ran out of memory running program " + program.name +
                                       " (" + e.what() + ")");
  }
}

}  // namespace tessel
