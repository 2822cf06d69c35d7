#include "plan/cost_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <sstream>

#include "check/checked_run.h"
#include "plan/machine.h"
#include "tessel/error.h"

namespace tessel {

const std::array<const char*, kNumFeatures> kFeatureNames = {
    "launch",    "pool",     "waves",        "flops_1",  "flops_64",  "flops_256", "flops_384", "flops_big",
    "mma_blocks", "bytes_in", "bytes_out",   "bytes_shared", "ew_elems", "ew_elems_odd", "transcend", "fences",
    "loop_iters", "mma_acc",  "ew_rows", "ew_elems_l2", "gl_access", "bytes_sm",
    "sync_sm",   "gl_trips", "chain_elems", "live_sm"};

int feature_index(const std::string& name) {
  for (int i = 0; i < kNumFeatures; ++i)
    if (name == kFeatureNames[i]) return i;
  return -1;
}

namespace {

enum F { kLaunch, kPool, kWaves, kFlops1, kFlops64, kFlops256, kFlops384, kFlopsBig, kMmaBlocks, kBytesIn,
         kBytesOut, kBytesShared, kEw, kEwOdd, kTranscend, kFences, kLoopIters, kMmaAcc, kEwRows, kEwL2, kGlAccess,
         kBytesSm, kSyncSm, kGlTrips, kChainElems, kLiveSm };

bool pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// The flops feature of an atom: by its register block's area (atom_m * atom_n), since
// a block too large for the register file spills (measured: 16x32 ran up to 6x
// slower than 12x32 on this cpu at some shapes).
int flops_feature(const GroupProgram& p) {
  if (p.atom != AtomKind::Fma) return kFlops384;  // cuda mma atoms: one class
  int64_t area = p.atom_m * p.atom_n;
  return area <= 1 ? kFlops1 : area <= 64 ? kFlops64 : area <= 256 ? kFlops256 : area <= 384 ? kFlops384 : kFlopsBig;
}

using Env = std::map<std::string, int64_t>;

int64_t eval_or(const Expr& e, const Env& env, int64_t fallback) {
  if (!e) return fallback;
  try {
    return expr_eval(e, [&](const std::string& name, int64_t* v) {
      auto it = env.find(name);
      if (it == env.end()) return false;
      *v = it->second;
      return true;
    });
  } catch (const Error&) {
    return fallback;
  }
}

bool transcendental(EwOp op) {
  switch (op) {
    case EwOp::Exp: case EwOp::Exp2: case EwOp::Log: case EwOp::Sqrt: case EwOp::Rsqrt:
    case EwOp::Tanh: case EwOp::Div: case EwOp::Recip:
      return true;
    default:
      return false;
  }
}

// An mma's extent that holds data (GroupOp::m_valid and friends) at the loop
// variables in `env`, within [0, full]; the full extent where there is no bound.
double valid_extent(int64_t full, const Expr& valid, const Env& env) {
  return static_cast<double>(std::clamp<int64_t>(eval_or(valid, env, full), 0, full));
}

// Calls `body(weight)` once per class of iteration of a loop of `trips` iterations
// from `lo` with `iv` bound in `env`: the first trips - 1 at their midpoint, weight
// trips - 1, and the last alone, weight 1. The last tile of a ceildiv loop is the
// ragged one, so work that depends on a tile's valid extent is counted exactly for
// a one-level tiling; a causal bound still counts about half.
template <typename Body>
void each_iteration_class(Env& env, const std::string& iv, int64_t lo, int64_t trips, Body&& body) {
  auto saved = env.find(iv) == env.end() ? std::optional<int64_t>() : env[iv];
  if (trips > 1) {
    env[iv] = lo + (trips - 2) / 2;
    body(static_cast<double>(trips - 1));
  }
  if (trips > 0) {
    env[iv] = lo + trips - 1;
    body(1.0);
  }
  if (saved) env[iv] = *saved; else env.erase(iv);
}

// cuda: the registers of one thread's part of fragment `f`, as the emitter
// allocates them (cuda_emit.cpp, regs: a part's elements over the worker's lanes;
// a row or column vector is replicated along the worker grid).
int64_t fragment_registers(const GroupProgram& p, const Buffer& f) {
  const bool rep_r = f.rows == 1 && p.lanes != 128, rep_c = f.cols == 1 && p.lanes != 128;
  const int64_t pr = rep_r ? 1 : f.rows / std::max(1, p.worker_rows);
  const int64_t pc = rep_c ? 1 : f.cols / std::max(1, p.worker_cols);
  if (p.lanes == 32 && (rep_r || rep_c)) return rep_r && rep_c ? 1 : rep_c ? std::max<int64_t>(1, pr / 8) : std::max<int64_t>(1, pc / 4);
  return std::max<int64_t>(1, pr * pc / std::max(1, p.lanes));
}

bool global_ref(const GroupProgram& p, const BufferRef& r) {
  return r.buffer >= 0 && p.buffer(r.buffer).space == Space::Global;
}

// cuda: a copy's global memory instructions (the whole group's). The emitter moves
// 16-byte vectors where every global window's rows start on 16 bytes at this shape
// (unit column stride; row stride, column and offset multiples of the vector), an
// async copy of rows on 4 bytes in 4-byte pieces, and anything else element by
// element (a bf16 matrix of odd row length: 8 loads where an aligned one takes 1).
double copy_accesses(const GroupProgram& p, const GroupOp& op, const Env& env) {
  if (op.kind == GroupOpKind::Tma) return 1;  // one instruction, by one thread
  const int64_t eb = dtype_bytes(p.buffer(op.dst.buffer).dtype);
  const double n = static_cast<double>(op.rows) * static_cast<double>(op.cols);
  auto aligned = [&](int64_t bytes) {
    const int64_t v = bytes / eb;
    if (v < 1 || op.cols % v != 0) return false;
    for (const BufferRef* r : {&op.src, &op.dst}) {
      if (!global_ref(p, *r)) continue;
      if (eval_or(r->col_stride, env, -1) != 1) return false;
      const int64_t stride = eval_or(r->row_stride, env, -1), col = eval_or(r->col, env, -1);
      if (stride < 0 || col < 0 || stride % v != 0 || col % v != 0 || eval_or(r->offset, env, 0) % v != 0) return false;
    }
    return true;
  };
  if (aligned(16)) return n * static_cast<double>(eb) / 16;
  if (op.async && aligned(4)) return n * static_cast<double>(eb) / 4;
  return n;
}

// cuda: the round trips a thread of a copy moved element by element (copy_accesses'
// last path) waits for in a rolled loop. The emitter loads a thread's share in
// batches of up to 8 (emit_scalar_copy): a share of one batch is straight-line code
// whose loads the compiler schedules among the neighbouring ops', a larger share a
// rolled loop whose every trip waits for its loads before its stores. 0 for one
// batch, else the trips. The second H200 run's calibration runs (bf16 matrix
// product, docs/planner.md): a k step whose copies each fit one batch cost ~1.6 us
// at BK 64 (32x32 tile, 256 threads, rows off 16 bytes), one whose copies took two
// batches each ~4.3 us at BK 128, twice the depth.
// `accesses`: copy_accesses of the op.
double copy_trips(const GroupProgram& p, const GroupOp& op, double accesses) {
  if (op.kind != GroupOpKind::Copy || !global_ref(p, op.src)) return 0;
  const double n = static_cast<double>(op.rows) * static_cast<double>(op.cols);
  if (accesses != n) return 0;  // vectors or 4-byte pieces: unrolled
  const int64_t threads = std::max<int64_t>(1, int64_t{p.workers} * p.lanes);
  const int64_t share = (op.rows * op.cols + threads - 1) / threads, batches = (share + 7) / 8;
  return batches > 1 ? static_cast<double>(batches) : 0;
}

// cuda: the elements one thread of the group copies from global memory in `op`, its
// share of the copy (tma: none, one instruction moves the tile). Summed over the k
// steps of the slowest group and times the waves, this is a block's serial chain of
// copies. The fourth H200 run's worst matrix-product picks were small grids (18
// blocks: BK 512 with 4 warps predicted 5.12 us, ran 9.22, against 6.02 for
// 32x32x128 with 8), and measured / predicted grew with a block's k steps (0.95 at
// one, 1.21 at 9 or more).
double copy_chain_elems(const GroupProgram& p, const GroupOp& op) {
  if (op.kind != GroupOpKind::Copy || !global_ref(p, op.src)) return 0;
  const int64_t threads = std::max<int64_t>(1, int64_t{p.workers} * p.lanes);
  return static_cast<double>(op.rows) * static_cast<double>(op.cols) / static_cast<double>(threads);
}

// cuda: the elements a thread holds of fragment `f` beyond 8 (its registers, as the
// emitter allocates them). The fifth H200 run's row kernel: a thread's row part of 16
// elements in one pass (a 2048-wide tile over 128 threads, 604 rows) ran 9.53 us,
// predicted 6.41, where 8 elements a pass (1024-wide tiles, two passes) ran 7.07,
// predicted 6.98; measured / predicted stayed near 1 at 8 and fewer (the threshold is
// measured: offline, beyond 8 or 12 fixed that pick, beyond 4 or 16 did not). Counted
// per op that reads or writes the fragment, times the threads of every group, per
// multiprocessor (program_features), like bytes_sm: on grids too small to fill the
// machine such parts ran at or below their prediction, so the cost looks like a
// shared one of the multiprocessor's, not a thread's latency (not measured further).
double excess_elems(const GroupProgram& p, int f) {
  if (f < 0 || p.buffer(f).space != Space::Private) return 0;
  return static_cast<double>(std::max<int64_t>(0, fragment_registers(p, p.buffer(f)) - 8));
}

// cuda: how many turns a group's warps take on the multiprocessor's 4 schedulers
// (each issues one warp's instruction a cycle): 1 up to 4 warps, 2 at 8. Work counted
// per worker is issued at once by the warps of a turn, so a worker's share is paid
// once a turn. The sixth H200 run's matrix products: 8-warp tiles ran 1.12-1.23x their
// prediction (median), 4-warp tiles 0.96-1.02x; small grids of long k took 8 warps
// 1.4x slower than the 4-warp tile the model ranked behind them (docs/planner.md).
double issue_turns(const GroupProgram& p) {
  const CudaMultiprocessor sm;
  const double warps = std::ceil(static_cast<double>(int64_t{p.workers} * p.lanes) / 32.0);
  return std::max(1.0, warps / sm.schedulers);
}

// Tile-sized areas an elementwise chain keeps in the L1 data cache (count_l2).
constexpr double kL1Tiles = 5;

// One group's work, each op weighted by how often it runs (`times`). `skips_invalid`:
// the target's mma skips the rows, columns and k steps of a ragged tile that hold no
// data (the cpu's micro-kernel loops run to mv, nv, kv), so an mma counts its valid
// part; elsewhere whole tiles.
void count(const GroupProgram& p, const std::vector<GroupOp>& ops, Env& env, double times,
           bool skips_invalid, const MachineShape& machine, bool cuda, Features& f) {
  auto elems = [&](int buffer) {
    const Buffer& b = p.buffer(buffer);
    return static_cast<double>(b.rows) * static_cast<double>(b.cols);
  };
  // Elementwise work on a fragment whose rows end in a part of a vector (its columns
  // not a multiple of the cpu's vector lanes): each row's tail is a masked vector.
  // Held-out row-kernel runs with 12- and 24-column tiles ran 1.12-1.20x their
  // prediction, 48, 96 and 192 at 0.94-1.03 (sixteenth session, docs/planner.md).
  // Where no lanes are modelled (cuda, sim): extents not both powers of two, the
  // eleventh session's rule (48- or 96-column tiles 2-3x slower per element on the cpu
  // then).
  auto ew_feature = [&](int buffer) {
    const Buffer& b = p.buffer(buffer);
    if (machine.cpu_lanes > 0) return b.cols % machine.cpu_lanes != 0 ? kEwOdd : kEw;
    return pow2(b.rows) && pow2(b.cols) ? kEw : kEwOdd;
  };
  auto bytes_of = [&](int buffer) { return static_cast<double>(dtype_bytes(p.buffer(buffer).dtype)); };
  // Elementwise work on a fragment of which five (measured) overflow the L1 data
  // cache: an op chain touches its operands and results and the global rows loaded
  // and stored, each the tile's size (a row kernel's: three tile-sized fragments and
  // its input's and output's rows). With two (an operand and its result) the feature
  // caught 32 KiB tiles and larger, 12-25% slower than predicted (eleventh session);
  // held-out row-kernel picks then still took 16 KiB tiles where 8 KiB ones with the
  // same columns ran 5-12% faster (sixteenth session, docs/planner.md; 4 and 6 did
  // almost as well).
  auto count_l2 = [&](int buffer, double e) {
    if (machine.l1_bytes > 0 && kL1Tiles * elems(buffer) * bytes_of(buffer) > static_cast<double>(machine.l1_bytes))
      f[kEwL2] += times * e;
  };
  auto is_global = [&](const BufferRef& r) { return r.buffer >= 0 && p.buffer(r.buffer).space == Space::Global; };
  for (const GroupOp& op : ops) {
    switch (op.kind) {
      case GroupOpKind::Copy:
      case GroupOpKind::Tma: {
        double b = static_cast<double>(op.rows) * static_cast<double>(op.cols) * bytes_of(op.dst.buffer);
        f[is_global(op.src) ? kBytesIn : is_global(op.dst) ? kBytesOut : kBytesShared] += times * b;
        if (cuda && (is_global(op.src) || is_global(op.dst))) {
          const double accesses = copy_accesses(p, op, env);
          f[kGlAccess] += times * accesses;
          f[kGlTrips] += times * copy_trips(p, op, accesses);
          f[kChainElems] += times * copy_chain_elems(p, op);
        }
        break;
      }
      case GroupOpKind::FragLoad:
        f[is_global(op.src) ? kBytesIn : kBytesShared] += times * elems(op.frag) * bytes_of(op.src.buffer);
        if (cuda && is_global(op.src)) f[kGlAccess] += times * elems(op.frag) * bytes_of(op.src.buffer) / 16;
        if (cuda) f[kLiveSm] += times * excess_elems(p, op.frag);
        break;
      case GroupOpKind::FragStore:
        f[is_global(op.dst) ? kBytesOut : kBytesShared] += times * elems(op.frag) * bytes_of(op.dst.buffer);
        if (cuda && is_global(op.dst)) f[kGlAccess] += times * elems(op.frag) * bytes_of(op.dst.buffer) / 16;
        if (cuda) f[kLiveSm] += times * excess_elems(p, op.frag);
        break;
      case GroupOpKind::Mma: {
        double m = op.m, n = op.n, k = op.k;
        if (skips_invalid) {
          m = valid_extent(op.m, op.m_valid, env);
          n = valid_extent(op.n, op.n_valid, env);
          k = valid_extent(op.k, op.k_valid, env);
        }
        f[flops_feature(p)] += times * 2.0 * m * n * k;
        f[kMmaBlocks] += times * std::ceil(m / p.atom_m) * std::ceil(n / p.atom_n);
        // Each register-block call loads its accumulator block, adds and stores it
        // back, whatever its k: a short k step (small k tile) pays that per flop.
        f[kMmaAcc] += times * m * n;
        break;
      }
      case GroupOpKind::FragFill:
      case GroupOpKind::Elementwise: {
        double e = elems(op.frag);
        f[ew_feature(op.frag)] += times * e;
        // A row of an elementwise op is one inner loop (its set-up and its partial
        // vector): narrow tiles pay it per few elements.
        f[kEwRows] += times * p.buffer(op.frag).rows;
        count_l2(op.frag, e);
        if (op.kind == GroupOpKind::Elementwise && transcendental(op.ew)) f[kTranscend] += times * e;
        if (cuda && op.kind == GroupOpKind::Elementwise) f[kLiveSm] += times * excess_elems(p, op.frag);
        break;
      }
      case GroupOpKind::Reduce: {
        int src = !op.operands.empty() && op.operands[0].frag >= 0 ? op.operands[0].frag : op.frag;
        double e = op.reduce_mode == ReduceMode::Combine ? double(op.rows) * double(op.cols) : elems(src);
        f[src >= 0 ? ew_feature(src) : kEw] += times * e;
        if (src >= 0) count_l2(src, e);
        if (cuda) f[kLiveSm] += times * excess_elems(p, src);
        f[kEwRows] += times * (op.reduce_mode == ReduceMode::Combine ? double(op.rows)
                                                                      : src >= 0 ? double(p.buffer(src).rows) : 1.0);
        break;
      }
      case GroupOpKind::Fence:
      case GroupOpKind::Barrier:
      case GroupOpKind::MbarWait:
        f[kFences] += times;
        break;
      case GroupOpKind::For: {
        int64_t lo = eval_or(op.lo, env, 0), hi = eval_or(op.hi, env, lo + 1);
        int64_t trips = std::max<int64_t>(0, hi - lo);
        f[kLoopIters] += times * trips;
        each_iteration_class(env, op.iv, lo, trips,
                             [&](double w) { count(p, op.bodies[0], env, times * w, skips_invalid, machine, cuda, f); });
        break;
      }
      case GroupOpKind::If:
        for (const auto& body : op.bodies) count(p, body, env, times * 0.5, skips_invalid, machine, cuda, f);
        break;
      case GroupOpKind::Roles:
        for (const auto& body : op.bodies) count(p, body, env, times, skips_invalid, machine, cuda, f);
        break;
      default:
        break;
    }
  }
}

}  // namespace

int64_t registers_per_thread(const GroupProgram& p) {
  int64_t frags = 0, largest = 0;
  for (const Buffer& b : p.buffers)
    if (b.space == Space::Private) {
      frags += fragment_registers(p, b);
      largest = std::max(largest, fragment_registers(p, b));
    }
  // The emitter's launch bounds (cuda_emit.cpp): two blocks a multiprocessor where
  // the largest fragment is small, so ptxas keeps a thread within 65536 / (2 x
  // threads) registers; else one block, 255 at most.
  const int64_t threads = int64_t{p.workers} * p.lanes;
  const int64_t two_block = p.atom == AtomKind::Fma && p.frag_buffers == 1 ? 64 : 63;
  const int64_t cap = threads <= 256 && largest <= two_block ? std::min<int64_t>(255, 65536 / (2 * threads) / 8 * 8) : 255;
  // Warp-level mma atoms: the operands of every k step of a tile, the unrolled copies'
  // addresses and the accumulators are live together, and ptxas took 0.55-1.0 of the
  // cap (135 bf16 candidates of the first H200 run: 70-128 registers at 256 threads,
  // 106-255 at 128), where the fragments alone would say 36-96: 3/4 of the cap.
  if (p.atom != AtomKind::Fma) return std::min<int64_t>(255, std::max<int64_t>(32 + frags, cap * 3 / 4));
  return std::clamp<int64_t>(32 + frags, 16, cap);
}

int64_t resident_groups(const GroupProgram& p) {
  const CudaMultiprocessor sm;
  const int64_t threads = std::max<int64_t>(1, int64_t{p.workers} * p.lanes);
  int64_t shared = 0;
  for (const Buffer& b : p.buffers)
    if (b.space == Space::Shared) shared += b.rows * b.cols * dtype_bytes(b.dtype) * std::max(1, b.versions);
  const int64_t warps = (threads + 31) / 32;
  const int64_t warp_registers = (registers_per_thread(p) * 32 + sm.register_unit - 1) / sm.register_unit * sm.register_unit;
  int64_t n = std::min(sm.blocks, sm.threads / threads);
  n = std::min(n, sm.shared_bytes / (shared + sm.block_reserved_shared));
  n = std::min(n, sm.registers / (warp_registers * warps));
  return std::max<int64_t>(1, n);
}

MachineShape machine_shape(TargetKind target, int threads) {
  MachineShape m;
  if (target == TargetKind::Cpu) {
    m.slots = std::max(1, threads);
    m.l1_bytes = cpu_l1d_bytes();
    m.cpu_lanes = cpu_vector_lanes();
  }
  // One group per multiprocessor at a time (a stated proxy; plan/machine.h).
  if (target == TargetKind::Cuda) {
    m.slots = static_cast<int>(cuda_multiprocessors());
    m.occupancy = true;
  }
  return m;
}

Features program_features(const LegalCandidate& candidate, const std::map<std::string, int64_t>& sizes,
                          const MachineShape& machine) {
  Features total{};
  const bool skips_invalid = candidate.plan.target == TargetKind::Cpu;
  const bool cuda = candidate.plan.target == TargetKind::Cuda;
  for (const GroupProgram& p : candidate.phases) {
    Env env(sizes.begin(), sizes.end());
    default_strides(p.tensors, env);  // the strides a launch without them gets (alignment)
    std::vector<int64_t> extents;
    double groups = 1;
    for (const LoopDim& d : p.grid) {
      extents.push_back(std::max<int64_t>(1, eval_or(d.extent, env, 1)));
      groups *= static_cast<double>(extents.back());
    }
    // A group's average work: the grid's edge groups (ragged tiles) apart from the
    // interior ones, dimension by dimension as for loops.
    Features group{};
    std::function<void(size_t, double)> over_grid = [&](size_t dim, double weight) {
      if (dim == p.grid.size()) {
        count(p, p.body, env, weight / groups, skips_invalid, machine, cuda, group);
        return;
      }
      each_iteration_class(env, p.grid[dim].iv, 0, extents[dim],
                           [&](double w) { over_grid(dim + 1, weight * w); });
    };
    over_grid(0, 1.0);
    // All groups' global bytes over the multiprocessors: the bandwidth bound, whatever
    // the waves.
    if (cuda) total[kBytesSm] += (group[kBytesIn] + group[kBytesOut]) * groups / machine.slots;
    // All groups' threads' barrier waits over the multiprocessors, a full one's threads
    // as the unit: a barrier waits for the group's slowest round trip, and a round trip
    // takes longer the more threads a multiprocessor holds. A row kernel on the H200
    // (the second run, docs/planner.md): at 87 rows a barrier fewer saved ~0.25 us, at
    // 717 rows of 1426 (held out) ~0.7 us: 256 threads a row with 12 barriers ran
    // 10.9 us, 128 threads with 6 ran 6.7.
    if (cuda)
      total[kSyncSm] += group[kFences] * groups * static_cast<double>(int64_t{p.workers} * p.lanes) /
                        (machine.slots * static_cast<double>(CudaMultiprocessor{}.threads));
    // All groups' threads' elements held beyond 8 (excess_elems, per op), over the
    // multiprocessors, a full one's threads as the unit (not per worker, not times the
    // waves).
    if (cuda)
      total[kLiveSm] += group[kLiveSm] * groups * static_cast<double>(int64_t{p.workers} * p.lanes) /
                        (machine.slots * static_cast<double>(CudaMultiprocessor{}.threads));
    // On cuda the groups of a wave run at once, and the wave lasts as long as its
    // slowest: a group's work is the most that a group at the first or the last
    // coordinate of each grid dimension does (feature by feature). A persistent grid's
    // first groups walk one more tile than the middle one (161 tiles on 132 groups: 2
    // against 1), and a causal bound's last group does the most.
    if (cuda) {
      Features slowest{};
      std::function<void(size_t)> corners = [&](size_t dim) {
        if (dim == p.grid.size()) {
          Features one{};
          count(p, p.body, env, 1.0, skips_invalid, machine, cuda, one);
          for (int i = 0; i < kNumFeatures; ++i) slowest[i] = std::max(slowest[i], one[i]);
          return;
        }
        const std::string& iv = p.grid[dim].iv;
        auto saved = env.find(iv) == env.end() ? std::optional<int64_t>() : env[iv];
        for (int64_t at : {int64_t{0}, extents[dim] - 1}) {
          env[iv] = at;
          corners(dim + 1);
          if (extents[dim] == 1) break;
        }
        if (saved) env[iv] = *saved; else env.erase(iv);
      };
      corners(0);
      group = slowest;
    }
    group[kLiveSm] = 0;  // counted over the multiprocessors above, not per wave
    // Workers of a cuda group run at once, up to a warp on each of the
    // multiprocessor's schedulers: a worker issues its share, and a group of more
    // than 4 warps takes its turns (issue_turns).
    if (cuda) {
      const double share = issue_turns(p) / std::max(1, p.workers);
      for (int i : {kFlops1, kFlops64, kFlops256, kFlops384, kFlopsBig, kMmaBlocks, kBytesIn, kBytesOut, kBytesShared, kEw, kEwOdd, kTranscend, kMmaAcc, kEwRows, kEwL2, kGlAccess})
        group[i] *= share;
    }
    // Groups resident on a multiprocessor together run at once (their latencies
    // overlap): a wave is the multiprocessors times that many.
    const double slots = machine.slots * (machine.occupancy ? static_cast<double>(resident_groups(p)) : 1.0);
    double waves = std::ceil(groups / slots);
    for (int i = 0; i < kNumFeatures; ++i) total[i] += waves * group[i];
    total[kLaunch] += 1;
    if (groups > 1) total[kPool] += 1;  // a one-group grid runs inline, without the thread pool
    total[kWaves] += waves;
  }
  return total;
}

Calibration fallback_calibration(TargetKind target, int threads) {
  Calibration c;
  c.target = target;
  c.threads = threads;
  c.machine = "fallback (no calibration)";
  c.fitted_on = "rough constants in plan/cost_model.cpp";
  // us per unit. cpu: one core at ~20-40 GFLOP/s with a register block, ~2 without;
  // a grid of more than one group pays the thread pool's hand-off;
  // ~8 GB/s from memory, ~40 GB/s from cache; 2 elementwise elements per ns; an
  // accumulator element's load, add and store ~0.1 ns (a vector of 16 per ~2 ns);
  // ~2 ns to set up a row of an elementwise op.
  std::array<double, kNumFeatures> cpu = {2,       3,       0.5,      1 / 2e3,  1 / 20e3, 1 / 40e3, 1 / 40e3, 1 / 10e3, 0.005,
                                          1 / 8e3, 1 / 8e3, 1 / 40e3, 1 / 2e3, 1 / 1e3,  1 / 2e2,  0.0,      0.005,
                                          1 / 10e3, 0.002,   1 / 10e3, 0,        0,       0,       0,       0,       0};
  // cuda, per worker (thread for fma; a warp's share for the mma atoms). The features
  // added since the eleventh session (mma_acc to live_sm) have no rough cuda
  // number: 0 until a calibration fits them.
  std::array<double, kNumFeatures> cuda = {5,       0,       2,       1 / 3e3, 1 / 3e3, 1 / 3e3, 1 / 2e5, 1 / 3e3, 0.0001,
                                           1 / 2e3, 1 / 2e3, 1 / 2e4, 1 / 2e3, 1 / 2e3, 1 / 5e2, 0.01,    0.001,
                                           0,       0,       0,       0,       0,       0,       0,       0,       0};
  c.coef = target == TargetKind::Cuda ? cuda : cpu;
  if (target == TargetKind::Sim)
    for (double& x : c.coef) x *= 100;  // the interpreter: only the order matters
  return c;
}

std::array<double, kNumFeatures> predict_terms(const Calibration& c, const Features& f) {
  std::array<double, kNumFeatures> t{};
  for (int i = 0; i < kNumFeatures; ++i) t[i] = c.coef[i] * f[i];
  return t;
}

double predict_us(const Calibration& c, const Features& f) {
  double s = 0;
  for (double t : predict_terms(c, f)) s += t;
  return s;
}

namespace {

// Non-negative least squares on relative error, each run's squared error weighted
// by `weight` (rows scaled by sqrt(weight) / us, columns to unit norm).
std::array<double, kNumFeatures> weighted_nnls(const std::vector<Sample>& samples, const std::vector<double>& weight) {
  const int n = kNumFeatures;
  std::array<double, kNumFeatures> scale{};
  for (size_t r = 0; r < samples.size(); ++r)
    for (int j = 0; j < n; ++j) {
      double z = samples[r].features[j] / samples[r].us;
      scale[j] += weight[r] * z * z;
    }
  for (double& x : scale) x = x > 0 ? std::sqrt(x) : 0;
  std::vector<double> a(n * n, 0), b(n, 0);
  for (size_t r = 0; r < samples.size(); ++r) {
    const Sample& s = samples[r];
    const double w = std::sqrt(weight[r]);
    std::array<double, kNumFeatures> z{};
    for (int j = 0; j < n; ++j) z[j] = scale[j] > 0 ? w * s.features[j] / s.us / scale[j] : 0;
    for (int i = 0; i < n; ++i) {
      b[i] += w * z[i];
      for (int j = 0; j < n; ++j) a[i * n + j] += z[i] * z[j];
    }
  }
  for (int i = 0; i < n; ++i) a[i * n + i] += 1e-9;  // a column no sample excites stays 0
  // Coordinate descent on the normal equations with the bound c >= 0 (converges for a
  // positive semi-definite system).
  std::vector<double> x(n, 0);
  for (int sweep = 0; sweep < 20000; ++sweep) {
    double moved = 0;
    for (int i = 0; i < n; ++i) {
      if (a[i * n + i] <= 1e-9 + 1e-15) continue;
      double r = b[i];
      for (int j = 0; j < n; ++j) r -= a[i * n + j] * x[j];
      double next = std::max(0.0, x[i] + r / a[i * n + i]);
      moved = std::max(moved, std::abs(next - x[i]));
      x[i] = next;
    }
    if (moved < 1e-12) break;
  }
  std::array<double, kNumFeatures> coef{};
  for (int j = 0; j < n; ++j) coef[j] = scale[j] > 0 ? x[j] / scale[j] : 0;
  return coef;
}

}  // namespace

Calibration fit_calibration(const std::vector<Sample>& samples, TargetKind target, int threads) {
  if (samples.size() < 2)
    user_error(ErrorKind::InvalidArgument,
               "calibration needs at least 2 measured runs, got " + std::to_string(samples.size()));
  Calibration c;
  c.target = target;
  c.threads = threads;
  c.samples = static_cast<int>(samples.size());
  auto rel_err = [&](const Sample& s) { return std::abs(predict_us(c, s.features) - s.us) / s.us; };
  // A robust fit (Huber's weights, iteratively reweighted): a run predicted more than
  // kHuber off counts as if its error grew linearly beyond that, not squared. The
  // runs include random candidates far from the best, a few of them 1.5-2x off any
  // linear model (a single-warp tile, a synchronous copy of wide tiles); by squares
  // they pulled the coefficients that order the best candidates (a cuda bf16 matrix product,
  // the first H200 run refitted: held-out worst pick 1.34 -> 1.22 among the measured).
  constexpr double kHuber = 0.1;
  std::vector<double> weight(samples.size(), 1.0);
  for (int round = 0; round < 10; ++round) {
    c.coef = weighted_nnls(samples, weight);
    for (size_t r = 0; r < samples.size(); ++r) {
      const double e = rel_err(samples[r]);
      weight[r] = e <= kHuber ? 1.0 : kHuber / e;
    }
  }
  std::vector<double> rel;
  for (const Sample& s : samples) rel.push_back(rel_err(s));
  std::nth_element(rel.begin(), rel.begin() + rel.size() / 2, rel.end());
  c.fit_median_rel_err = rel[rel.size() / 2];
  return c;
}

std::string print_calibration(const Calibration& c) {
  std::ostringstream s;
  s.precision(17);
  s << "tessel-calibration 1\n"
    << "target " << target_name(c.target) << "\n"
    << "threads " << c.threads << "\n"
    << "machine " << c.machine << "\n"
    << "fitted_on " << c.fitted_on << "\n"
    << "samples " << c.samples << "\n"
    << "fit_median_rel_err " << c.fit_median_rel_err << "\n";
  for (int i = 0; i < kNumFeatures; ++i) s << "coef " << kFeatureNames[i] << " " << c.coef[i] << "\n";
  return s.str();
}

Calibration parse_calibration(const std::string& text, const std::string& where) {
  auto bad = [&](const std::string& m) { user_error(ErrorKind::InvalidArgument, where + ": " + m); };
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "tessel-calibration 1")
    bad("not a tessel calibration file (version 1): the first line is '" + line.substr(0, 40) + "'");
  Calibration c;
  std::array<bool, kNumFeatures> seen{};
  auto number = [&](const std::string& key, const std::string& v) {
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !std::isfinite(d)) bad(key + ": '" + v + "' is not a finite number");
    return d;
  };
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    std::string key = line.substr(0, sp), rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "target") c.target = parse_target(rest);
    else if (key == "threads") c.threads = static_cast<int>(number(key, rest));
    else if (key == "machine") c.machine = rest;
    else if (key == "fitted_on") c.fitted_on = rest;
    else if (key == "samples") c.samples = static_cast<int>(number(key, rest));
    else if (key == "fit_median_rel_err") c.fit_median_rel_err = number(key, rest);
    else if (key == "coef") {
      size_t sp2 = rest.find(' ');
      std::string name = rest.substr(0, sp2);
      auto it = std::find_if(kFeatureNames.begin(), kFeatureNames.end(),
                             [&](const char* f) { return name == f; });
      if (it == kFeatureNames.end() || sp2 == std::string::npos) bad("unknown coefficient '" + name + "'");
      double v = number("coef " + name, rest.substr(sp2 + 1));
      if (v < 0) bad("coefficient " + name + " is negative");
      c.coef[it - kFeatureNames.begin()] = v;
      seen[it - kFeatureNames.begin()] = true;
    } else {
      bad("unknown key '" + key + "'");
    }
  }
  for (int i = 0; i < kNumFeatures; ++i)
    if (!seen[i]) bad(std::string("no coefficient for ") + kFeatureNames[i]);
  return c;
}

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = i + 1; j < a.size() && j < b.size(); ++j) {
      double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) ++ties_a;
      else if (db == 0) ++ties_b;
      else if ((da > 0) == (db > 0)) ++concordant;
      else ++discordant;
    }
  double denom = std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  return denom > 0 ? (concordant - discordant) / denom : 0;
}

}  // namespace tessel
