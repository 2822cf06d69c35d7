// GroupIR: how one group of cooperating workers runs one instance of the grid.
// Memory is explicit: global buffers (the kernel's tensors; one alias class),
// shared staging buffers (fresh compiler-owned allocations, optionally versioned
// for pipelining) and private fragments (a logical tile spread over the workers).
// Synchronization is explicit: `fence` is a compiler-owned group barrier, identified
// by its op kind and id; `barrier` is a native one written by the user and is never
// removed. Every op reports its memory effects (group_effects.h).
//
// Control flow is structured (for, if) and uniform: conditions and loop bounds
// depend on sizes, group coordinates and loop variables, never on the worker.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/expr.h"
#include "ir/tile_ir.h"
#include "plan/plan.h"

namespace tessel {

enum class Space { Global, Shared, Private };
const char* space_name(Space s);

// Element (r, c) of a rows x cols buffer lives at:
//   RowMajor:  r * ld + c           (ld = cols for shared/private, the tensor's ld for global)
//   ColPanels: ((c / p) * rows + r) * p + c % p   (p-column panels, each k-major: packed B)
//   RowPanels: ((r / p) * cols + c) * p + r % p   (p-row panels, each k-major: packed A)
enum class Layout { RowMajor, ColPanels, RowPanels };
const char* layout_name(Layout l);

struct Buffer {
  int id = -1;
  std::string name;
  Space space = Space::Shared;
  DType dtype = DType::F32;
  int64_t rows = 0, cols = 0;  // shared/private: static extents; global: 0
  int tensor = -1;             // global: index into GroupProgram::tensors
  Layout layout = Layout::RowMajor;
  int64_t panel = 1;           // ColPanels / RowPanels width
  int versions = 1;            // shared: pipelined copies (slots) of the buffer
};

// A rows x cols window of a buffer whose top-left element is (row, col), in one
// version (null = version 0).
// Global buffers (tensors of any rank) are addressed through the two tensor
// dimensions the window spans: element (r, c) of the window lives at
//   data[offset + (row + r) * row_stride + (col + c) * col_stride]
// where `offset` (null = 0) holds the other dimensions' coordinates times their
// strides. row_stride and col_stride are required on global refs and null on
// shared and private ones (those use their layout). Bounds (GroupOp) are on the
// absolute row and col.
struct BufferRef {
  int buffer = -1;
  Expr version;
  Expr row, col;
  Expr offset, row_stride, col_stride;  // global only
};

enum class GroupOpKind {
  Copy,         // cooperative copy: dst window = src window (see GroupOp fields)
  AsyncCommit,  // closes the current group of async copies
  AsyncWait,    // waits until at most `pending` committed groups are in flight
  FragFill,     // frag = constant
  FragLoad,     // each worker: its part of frag = src window (guarded: outside -> `constant`)
  FragStore,    // each owner (frag_part): dst window = its part of frag (guarded: outside skipped)
  Mma,          // each worker: its part of acc += a (m x k) * b (k x n); a may be a
                //   private fragment holding, on each worker, exactly its rows of acc
  MmaWait,      // waits until at most `pending` of this worker's async mmas are in flight
  Elementwise,  // dst frag = op(operands), element by element (operands broadcast)
  Reduce,       // a reduction along one axis, in one of three modes (ReduceMode)
  Fence,        // compiler-owned group barrier
  Barrier,      // native group barrier written by the user: never removed
  Call,         // opaque call (a boundary for every analysis)
  For,          // for iv in [lo, hi): bodies[0]
  If,           // cond ? bodies[0] : bodies[1]
  // Transaction-counting mbarriers and the bulk tensor copy (TMA) that completes
  // on one; see "mbarriers" below.
  MbarInit,     // every slot of an mbarrier: phase 0, `mbar_count` arrivals per phase
  MbarArrive,   // one arrival per worker, or one by the first worker (`leader`)
  MbarExpectTx, // the first worker adds `mbar_count` bytes to the current phase's transactions
  MbarWait,     // every worker waits until the phase of parity `parity` has completed
  Tma,          // the first worker issues a global -> shared tile copy completing on `mbar`
  Roles,        // warp specialization: bodies[r] runs on the workers of roles[r], all roles at once
  // Every worker running (the group's, or a role's) has finished the ops before it;
  // then the group takes the next ticket of the u32 counter element dst[0, 0] (a
  // global window): tickets run 0 .. hi - 1, then 0 again. The ticket is symbol
  // `iv` for the ops after it in its body. A release, then an acquire: the group
  // that draws a later ticket of the same round sees the global stores of the
  // groups before it in the round. (cuda: a barrier of the running workers, one
  // atomic, a barrier; the sim runs the groups of a round in more than one order.)
  Ticket,
  // Every worker of every group of the cluster (see "clusters") has arrived: what
  // any of them did before happens before what any does after. Top level only.
  ClusterSync,
};
const char* group_op_name(GroupOpKind k);

// Elementwise ops. Operands broadcast by identity: a scalar or constant stretches
// over the fragment, and a fragment whose extent is 1 along a dimension stretches
// along it (a [R, 1] operand of a [R, C] destination: element (r, 0) serves row r).
// Cmp writes 1 or 0; Select is operands[0] != 0 ? operands[1] : operands[2]; Cast
// rounds to `dtype` (the fragment stays fp32, holding a value of that precision);
// Index has no operands and writes the element's row (axis 0) or column (axis 1)
// in the logical tile.
enum class EwOp {
  Add, Sub, Mul, Div, Max, Min,
  Exp, Exp2, Log, Neg, Abs, Sqrt, Rsqrt, Recip, Tanh,
  Cmp, Select, Cast, Index, Copy
};
const char* ew_op_name(EwOp op);
int ew_arity(EwOp op);  // operands: 2 binary, 1 unary/Cast/Copy, 3 Select, 0 Index

// Reduce, along `axis` of the source fragment (which has extent E there; the
// destination has extent 1 there), with `reduce` (sum, max, min):
//   Local:   each worker reduces its own part of the source into its part of the
//            destination. Exact when no other worker holds part of the same rows
//            (axis 1) or columns (axis 0); otherwise each worker holds a partial.
//   Partial: each worker reduces its own part and writes the partial into the shared
//            scratch window `dst` (R x S for axis 1, S x C for axis 0, S = the
//            workers along the axis): element (r, s) for the worker at position s
//            of the worker grid along the axis.
//   Combine: each worker reduces the S partials of its rows (or columns) in the
//            scratch window `src` into its part of the destination fragment.
// The lowering puts a fence between Partial and Combine, and the destination is
// replicated along the axis (see frag_part), so every worker ends with the result.
enum class ReduceMode { Local, Partial, Combine };
const char* reduce_mode_name(ReduceMode m);

// mbarriers (the text form: `mbarrier full[2]`): an array of `slots` barrier
// objects in shared memory, compiler-owned like staging, named by ops as NAME or
// NAME@SLOT. Each slot runs phases 0, 1, 2, ...; phase n completes when it has
// received the arrival count given at init and its transaction count (bytes
// announced by mbar.expect_tx minus bytes landed by tma copies) is back to 0, and
// the next phase starts at once. mbar.wait with parity P returns when the slot's
// current phase has parity != P, that is once the latest phase of parity P has
// completed (right after init, a wait on parity 1 returns at once). What a worker
// did before it arrived happens before whatever a waiter that saw that phase
// complete does next; a tma copy's data is visible to the waiters of the phase it
// completes on, and to no one before.
// Protocol: init by one worker, a fence before any other use; a tma copy's bytes
// announced by expect_tx in the phase it completes on; a stage read by consumers
// is released (they arrive on an "empty" barrier) before the next tma writes it.
//
// Clusters (GroupProgram::cluster > 1; cuda: thread-block clusters). The groups
// whose coordinates agree but along grid dimension cluster_dim, where they lie in
// [c * cluster, (c + 1) * cluster), run at the same time as one cluster; the group
// at coordinate x there is the cluster's rank x % cluster (the extent must be a
// multiple of cluster). Each group keeps its own shared memory and mbarriers; two
// ops reach into the other groups' (`cluster_wide`, inside roles only):
//   - a multicast tma lands its box at the same place in every group of the
//     cluster and counts its bytes on each group's slot of its mbarrier;
//   - a cluster mbar.arrive arrives on each group's slot of its mbarrier.
// A group must not use another's mbarriers before that group initialized them, or
// leave while another may still reach into it: cluster.sync orders both.
struct MBarrier {
  int id = -1;
  std::string name;
  int slots = 1;
};

// One role of a Roles op: workers [first, first + count) run its body, while the
// workers of the other roles run theirs at the same time; they meet only through
// mbarriers (a fence or barrier inside a role is refused: the other roles never
// reach it). Inside a role, "every worker" means the role's workers and "the first
// worker" (tma, expect_tx, a leader's arrival) its first. `regs`: the registers per
// thread the role asks for on entry (cuda: setmaxnreg, 24 to 256 in steps of 8;
// 0 = as launched).
struct WorkerRole {
  int first = 0, count = 1;
  int regs = 0;
};

// The wgmma atom: a warpgroup's accumulator part is whole 64-row tiles of n columns,
// n a multiple of this (wgmma takes multiples of 8; the staged store, 16-column
// pieces) up to 256.
inline constexpr int64_t kWgmmaColumns = 16;

// The columns a worker's accumulator part of a warp atom comes in multiples of: the
// atom's, but wgmma's (kWgmmaColumns).
inline int64_t mma_part_columns(AtomKind atom, int64_t atom_n) {
  return atom == AtomKind::Wgmma ? kWgmmaColumns : atom_n;
}

// cuda: the registers per thread a block of `threads` is launched with when it
// uses setmaxnreg (one block per multiprocessor: the 64K register file split
// evenly, in steps of 8, at most 255). Roles can only trade these: a role that
// asks for more than the share gets what the others gave back, and no more.
inline int cuda_launch_register_share(int threads) {
  return std::min(255, 65536 / std::max(1, threads)) / 8 * 8;
}

struct EwOperand {
  enum class Kind { Frag, Scalar, Const, Index } kind = Kind::Const;
  int frag = -1;       // Frag: private buffer id
  std::string scalar;  // Scalar: kernel scalar parameter
  double value = 0;    // Const
  Expr index;          // Index: the value of an index expression (sizes, coordinates, loop variables)
};

struct GroupOp {
  GroupOpKind kind = GroupOpKind::Fence;
  int id = -1;  // IR identity, unique in the program

  // Copy: rows x cols elements, dst(r, c) = src(r, c). Source elements at or beyond
  // src_bound (absolute row, col in the source buffer) read as `constant` (the
  // padding, 0 unless the load gave one); destination
  // elements at or beyond dst_bound are skipped. Null bounds = unguarded. Element e
  // (row-major order over the window) is done by worker (e / batch) % workers.
  // FragLoad / FragStore use `src` / `dst` with the bounds the same way.
  BufferRef src, dst;
  Expr src_row_bound, src_col_bound, dst_row_bound, dst_col_bound;
  int64_t rows = 0, cols = 0;
  int batch = 1;
  // Copy: issued now, lands by the AsyncWait that covers it. Mma: issued now; it
  // reads a and b and updates the accumulator until the MmaWait that covers it
  // (each async mma is one group), so nothing may write its operands or touch the
  // accumulator before that wait.
  bool async = false;
  int pending = 0;     // AsyncWait, MmaWait

  int frag = -1;       // FragFill/FragLoad/FragStore/Elementwise(dst)/Mma(acc)
  double constant = 0; // FragFill: the value; Copy, FragLoad: the padding
  BufferRef a, b;      // Mma operands (shared), windows m x k and k x n
  int64_t m = 0, n = 0, k = 0;
  // Mma: the part of the tile that holds data (null = all of it). Products with
  // k index >= k_valid are skipped: the lowering sets it only where the staged
  // operands hold zeros, so the sums are unchanged. Accumulator elements at row >=
  // m_valid or col >= n_valid may be left as they were: nothing stores them.
  Expr m_valid, n_valid, k_valid;

  EwOp ew = EwOp::Copy;
  std::vector<EwOperand> operands;  // Elementwise; Reduce Local/Partial: the source frag
  CmpOp cmp = CmpOp::EQ;            // Elementwise Cmp
  DType dtype = DType::F32;         // Elementwise Cast
  int axis = 0;                     // Elementwise Index; Reduce
  ReduceOp reduce = ReduceOp::Sum;  // Reduce
  ReduceMode reduce_mode = ReduceMode::Local;  // Reduce (Partial: dst, Combine: src + rows/cols)
  // FragLoad: the window is read transposed: fragment element (r, c) = window (c, r).
  bool transpose = false;

  std::string callee;  // Call

  // Mbar*, Tma: the mbarrier (index into GroupProgram::mbarriers) and its slot
  // (null = slot 0; MbarInit has none: it initializes every slot).
  int mbar = -1;
  Expr mbar_slot;
  int64_t mbar_count = 0;  // MbarInit: arrivals per phase; MbarExpectTx: bytes
  Expr parity;             // MbarWait: 0 or 1
  bool leader = false;     // MbarArrive: one arrival, by the first worker
  // Tma (multicast), MbarArrive: reaches every group of the cluster ("clusters").
  bool cluster_wide = false;
  std::vector<WorkerRole> roles;  // Roles: one per body
  // Tma: rows x cols elements from the global window `src` into the shared window
  // `dst`, issued by the first worker; source elements at or beyond the src bounds
  // (guard src) land as 0. It lands asynchronously and counts rows * cols * (the
  // destination's element bytes) transaction bytes on `mbar` (slot mbar_slot).

  std::string iv;      // For; Ticket: the ticket's symbol
  Expr lo, hi;         // For; Ticket: hi, the tickets of a round
  // For: from a `pipeline` nest (or the persistent loop over tiles), iterations may overlap
  bool pipelined = false;
  // For, pipelined (optional): the iterations of this loop that the group ran before
  // this execution's first (TileOp::stage_base); tma_pipeline numbers stages from it.
  Expr stage_base;
  Cond cond;           // If
  std::vector<std::vector<GroupOp>> bodies;  // For: 1, If: 2
};

struct GroupProgram {
  std::string name;
  std::vector<std::string> size_params;
  // Sizes the program was specialized for (specialize_sizes), in size_params' order:
  // their values are folded into the body, so a launch must give exactly these
  // (check_fixed_sizes, runtime/tensor_check.h). Text: `sizes M = 40, N, K`.
  std::vector<std::pair<std::string, int64_t>> fixed_sizes;
  std::vector<TensorParam> tensors;
  std::vector<ScalarParam> scalars;
  std::vector<LoopDim> grid;   // group coordinates (1 to 3 dims): one instance per point
  int workers = 1;
  int worker_rows = 1, worker_cols = 1;  // private fragments: worker grid
  int64_t atom_m = 1, atom_n = 1;        // mma register block (fragment parts are multiples)
  AtomKind atom = AtomKind::Fma;         // the instruction that realizes mma
  // Threads that run one worker together (32 for MmaSync: a worker is a CUDA warp
  // and its fragment part is spread over the lanes in the mma.sync layout; 128 for
  // Wgmma: a warpgroup, in the wgmma accumulator layout).
  int lanes = 1;
  int frag_buffers = 1;  // Plan::frag_buffers: register sets of the mma operand fragments
  // Groups per cluster along grid dimension cluster_dim (1: no clusters); see
  // "clusters" above.
  int cluster = 1;
  int cluster_dim = 0;
  std::vector<Buffer> buffers;
  std::vector<MBarrier> mbarriers;
  std::vector<GroupOp> body;
  int next_op_id = 0;

  int new_op_id() { return next_op_id++; }
  // An op of this kind with a fresh id, every other field at its default.
  GroupOp new_op(GroupOpKind kind) {
    GroupOp op;
    op.kind = kind;
    op.id = new_op_id();
    return op;
  }
  const Buffer& buffer(int id) const;
  int find_buffer(const std::string& name) const;  // -1 if none
  int find_mbarrier(const std::string& name) const;  // -1 if none
};

// The part of a private fragment (a rows x cols logical tile) that worker w holds:
// rows [row0, row0 + rows), cols [col0, col0 + cols) of the logical tile. A
// dimension of extent > 1 is split evenly over the worker grid along it; a
// dimension of extent 1 (a row or column vector, a reduction's result) is
// replicated: every worker along that grid axis holds the same element. `owner` is
// false for the replicas that are not the first along a replicated axis: they
// compute like the others, but only owners store (FragStore), so no element is
// written twice. Surplus workers (beyond the worker grid) hold nothing.
struct FragPart {
  int64_t row0, col0, rows, cols;
  bool owner = true;
};
FragPart frag_part(const GroupProgram& p, const Buffer& frag, int worker);
// Whether op kind k is one of the mbarrier ops or the tma copy.
bool is_mbarrier_op(GroupOpKind k);
// Bytes a tma copy counts on its mbarrier: rows * cols * element bytes of dst.
int64_t tma_bytes(const GroupProgram& p, const GroupOp& tma);

// Position of worker w in the worker grid: {row, col}; {-1, -1} for surplus workers.
std::pair<int, int> worker_position(const GroupProgram& p, int worker);

// Offset of element (r, c) in a shared or private buffer of one version, by layout.
int64_t layout_offset(const Buffer& b, int64_t r, int64_t c);

// Replaces every symbol for which `lookup` returns an expression, in every
// expression of `ops` and of the ops nested in them (expr_substitute: constants fold).
void substitute_symbols(std::vector<GroupOp>& ops, const std::function<Expr(const std::string&)>& lookup);

}  // namespace tessel
