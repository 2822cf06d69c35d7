// Walks the program in order with the induction variables in scope; the first
// violation is reported, naming the op by id. Windows are checked against static
// buffers only where their offsets are constants: symbolic offsets into shared or
// private buffers are left to the simulator's bounds checks.
#include "ir/group_verify.h"

#include <algorithm>
#include <set>
#include <string>

#include "tessel/error.h"

namespace tessel {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

// a * b, or -1 when either is negative or the product passes `limit`.
int64_t bounded_product(int64_t a, int64_t b, int64_t limit) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > limit) return -1;
  return r;
}

// The program-wide numbers every later check multiplies: workers, the worker grid,
// lanes. Shared by the verifier and verify_group_limits.
void check_workers(const GroupProgram& p, ErrorKind kind) {
  if (p.workers < 1 || p.workers > kMaxGroupWorkers)
    user_error(kind, "workers " + num(p.workers) + " out of range [1, " + num(kMaxGroupWorkers) + "]");
  if (p.worker_rows < 1 || p.worker_cols < 1 || int64_t{p.worker_rows} * p.worker_cols > p.workers)
    user_error(kind, "worker grid " + num(p.worker_rows) + "x" + num(p.worker_cols) + " does not fit " +
                         num(p.workers) + " workers");
  if (p.lanes < 1 || p.lanes > kMaxGroupLanes)
    user_error(kind, "lanes " + num(p.lanes) + " out of range [1, " + num(kMaxGroupLanes) + "]");
}

// Elements of a shared or private buffer, every version: -1 past kMaxGroupBufferBytes.
int64_t buffer_elements(const Buffer& b) {
  int64_t n = bounded_product(b.rows, b.cols, kMaxGroupBufferBytes);
  if (n >= 0) n = bounded_product(n, std::max(1, b.versions), kMaxGroupBufferBytes);
  if (n >= 0 && bounded_product(n, dtype_bytes(b.dtype), kMaxGroupBufferBytes) < 0) n = -1;
  return n;
}

class Verifier {
 public:
  explicit Verifier(const GroupProgram& p) : p_(p) {}

  void run() {
    check_workers(p_, ErrorKind::Verify);
    if (p_.atom_m < 1 || p_.atom_n < 1 || p_.atom_m > kMaxGroupExtent || p_.atom_n > kMaxGroupExtent)
      program_error("atom " + num(p_.atom_m) + "x" + num(p_.atom_n) + ": each extent in [1, " +
                    num(kMaxGroupExtent) + "]");
    if (p_.next_op_id < 0 || p_.next_op_id > kMaxGroupOps)
      program_error("next_op_id " + num(p_.next_op_id) + " out of range [0, " + num(kMaxGroupOps) +
                    "]: a program has at most " + num(kMaxGroupOps) + " op ids");
    if (p_.frag_buffers != 1 && p_.frag_buffers != 2)
      program_error("frag_buffers " + std::to_string(p_.frag_buffers) + ": 1 or 2");
    size_t next_size = 0;  // fixed sizes follow size_params' order, each once
    for (const auto& [name, value] : p_.fixed_sizes) {
      while (next_size < p_.size_params.size() && p_.size_params[next_size] != name) ++next_size;
      if (next_size == p_.size_params.size())
        program_error("fixed size " + name + " is not a size parameter, or is out of the parameters' order");
      ++next_size;
      if (value < 0) program_error("fixed size " + name + " = " + num(value) + " is negative");
    }
    if (p_.grid.size() > static_cast<size_t>(kMaxGridRank))
      program_error("grid has " + std::to_string(p_.grid.size()) + " dimensions; at most " +
                    std::to_string(kMaxGridRank));
    for (const LoopDim& d : p_.grid) {
      if (!d.extent) program_error("grid dimension " + d.iv + " has no extent");
      int64_t extent = 0;
      if (expr_is_const(d.extent, &extent) && extent > kMaxStaticGridExtent)
        program_error("grid dimension " + d.iv + " has extent " + num(extent) + "; at most " +
                      num(kMaxStaticGridExtent));
      expr_symbols(d.extent, [&](const std::string& s) {
        if (!std::count(p_.size_params.begin(), p_.size_params.end(), s))
          program_error("grid extent " + expr_to_string(d.extent) + " uses '" + s +
                        "', which is not a size parameter");
      });
    }
    for (size_t i = 0; i < p_.buffers.size(); ++i) buffer(p_.buffers[i], static_cast<int>(i));
    if (p_.mbarriers.size() > static_cast<size_t>(kMaxMbarriers))
      program_error(num(static_cast<int64_t>(p_.mbarriers.size())) + " mbarriers; at most " +
                    num(kMaxMbarriers));
    for (size_t i = 0; i < p_.mbarriers.size(); ++i) {
      const MBarrier& b = p_.mbarriers[i];
      std::string name = "mbarrier " + b.name + ": ";
      if (b.id != static_cast<int>(i))
        program_error(name + "id " + num(b.id) + " but entry " + num(static_cast<int64_t>(i)));
      if (b.name.empty() || p_.find_mbarrier(b.name) != b.id || p_.find_buffer(b.name) >= 0)
        program_error(name + "names must be non-empty, unique and not a buffer's");
      if (b.slots < 1 || b.slots > kMaxMbarrierSlots)
        program_error(name + num(b.slots) + " slots; each mbarrier has 1 to " + num(kMaxMbarrierSlots));
    }
    if (p_.cluster != 1 && (p_.cluster < 2 || p_.cluster > kMaxCluster))
      program_error("cluster " + num(p_.cluster) + ": 1 (none) or 2 to " + num(kMaxCluster) + " groups");
    if (p_.cluster != 1 && (p_.cluster_dim < 0 || p_.cluster_dim >= static_cast<int>(p_.grid.size())))
      program_error("cluster along grid dimension " + num(p_.cluster_dim) + " of " +
                    num(static_cast<int64_t>(p_.grid.size())));
    for (const LoopDim& d : p_.grid) ivs_.push_back(d.iv);
    ops(p_.body);
  }

 private:
  [[noreturn]] static void program_error(const std::string& message) {
    user_error(ErrorKind::Verify, message);
  }

  [[noreturn]] void fail(const GroupOp& op, const std::string& message) const {
    user_error(ErrorKind::Verify,
               "op #" + std::to_string(op.id) + " (" + group_op_name(op.kind) + "): " + message);
  }

  void buffer(const Buffer& b, int index) {
    std::string name = "buffer " + b.name + ": ";
    if (b.id != index)
      program_error(name + "id " + std::to_string(b.id) + " but entry " + std::to_string(index));
    if (b.name.empty() || p_.find_buffer(b.name) != b.id)
      program_error(name + "names must be non-empty and unique");
    if (b.space == Space::Global) {
      if (b.tensor < 0 || b.tensor >= static_cast<int>(p_.tensors.size()))
        program_error(name + "global buffer names tensor " + std::to_string(b.tensor) + " of " +
                      std::to_string(p_.tensors.size()));
      if (b.rows || b.cols || b.layout != Layout::RowMajor || b.panel != 1 || b.versions != 1)
        program_error(name + "a global buffer takes its shape and layout from its tensor");
      return;
    }
    if (b.tensor != -1) program_error(name + "only global buffers name a tensor");
    if (b.rows < 1 || b.cols < 1 || b.rows > kMaxGroupExtent || b.cols > kMaxGroupExtent)
      program_error(name + "extents " + std::to_string(b.rows) + "x" + std::to_string(b.cols) +
                    ": each must be in [1, " + num(kMaxGroupExtent) + "]");
    if (b.versions < 1 || (b.space == Space::Private && b.versions != 1))
      program_error(name + std::to_string(b.versions) +
                    " versions; shared buffers have 1 or more, private ones 1");
    if (buffer_elements(b) < 0)
      program_error(name + shape(b) + " " + dtype_name(b.dtype) + " x " + num(b.versions) +
                    " versions is more than " + num(kMaxGroupBufferBytes) + " bytes");
    if (b.layout == Layout::RowMajor && b.panel != 1)
      program_error(name + "a row-major buffer has panel 1, not " + std::to_string(b.panel));
    int64_t across = b.layout == Layout::ColPanels ? b.cols : b.rows;
    if (b.layout != Layout::RowMajor && (b.panel < 1 || across % b.panel != 0))
      program_error(name + std::string(layout_name(b.layout)) + " panel " + std::to_string(b.panel) +
                    " does not divide " + std::to_string(across));
    // An extent of 1 is replicated over its grid axis (frag_part); others split evenly.
    if (b.space == Space::Private && ((b.rows > 1 && b.rows % p_.worker_rows) ||
                                      (b.cols > 1 && b.cols % p_.worker_cols)))
      program_error(name + "fragment " + std::to_string(b.rows) + "x" + std::to_string(b.cols) +
                    " does not divide over the " + std::to_string(p_.worker_rows) + "x" +
                    std::to_string(p_.worker_cols) + " worker grid");
  }

  static std::string shape(const Buffer& b) {
    return std::to_string(b.rows) + "x" + std::to_string(b.cols);
  }
  static std::string shape(int64_t rows, int64_t cols) {
    return std::to_string(rows) + "x" + std::to_string(cols);
  }

  void expr(const GroupOp& op, const Expr& e, const char* what) {
    if (!e) fail(op, std::string(what) + " is missing");
    expr_symbols(e, [&](const std::string& s) {
      if (!std::count(p_.size_params.begin(), p_.size_params.end(), s) &&
          !std::count(ivs_.begin(), ivs_.end(), s))
        fail(op, "unknown symbol '" + s + "' in " + what + " " + expr_to_string(e));
    });
  }

  const Buffer& buffer_of(const GroupOp& op, int id, const char* what) const {
    if (id < 0 || id >= static_cast<int>(p_.buffers.size()))
      fail(op, std::string(what) + " names buffer id " + std::to_string(id) + " of " +
                   std::to_string(p_.buffers.size()));
    return p_.buffers[id];
  }

  const Buffer& fragment(const GroupOp& op, int id, const char* what) const {
    const Buffer& b = buffer_of(op, id, what);
    if (b.space != Space::Private)
      fail(op, std::string(what) + " " + b.name + " is " + space_name(b.space) + ", not private");
    return b;
  }

  // A rows x cols window; `spaces` lists the memory it may live in.
  const Buffer& window(const GroupOp& op, const BufferRef& r, int64_t rows, int64_t cols,
                       const char* what, std::initializer_list<Space> spaces) {
    const Buffer& b = buffer_of(op, r.buffer, what);
    if (std::find(spaces.begin(), spaces.end(), b.space) == spaces.end())
      fail(op, std::string(what) + " " + b.name + " may not be in " + space_name(b.space) + " memory");
    expr(op, r.row, "a window row");
    expr(op, r.col, "a window column");
    // Global windows are addressed through the tensor's strides; others by layout.
    if (b.space == Space::Global) {
      if (!r.row_stride || !r.col_stride)
        fail(op, std::string(what) + " " + b.name + " is global and needs strides(row, col)");
      expr(op, r.row_stride, "a row stride");
      expr(op, r.col_stride, "a column stride");
      if (r.offset) expr(op, r.offset, "an offset");
    } else if (r.row_stride || r.col_stride || r.offset) {
      fail(op, std::string(what) + " " + b.name + " is " + space_name(b.space) +
                   ": strides and offsets belong to global windows only");
    }
    if (r.version) {
      expr(op, r.version, "a version");
      int64_t v = 0;
      if (b.space != Space::Shared) fail(op, std::string(what) + " " + b.name + " has no versions");
      if (expr_is_const(r.version, &v) && (v < 0 || v >= b.versions))
        fail(op, std::string(what) + " " + b.name + " version " + std::to_string(v) + " is not below " +
                     std::to_string(b.versions));
    }
    int64_t row = 0, col = 0;
    if (b.space != Space::Global && expr_is_const(r.row, &row) && expr_is_const(r.col, &col) &&
        (row < 0 || col < 0 || static_cast<__int128>(row) + rows > b.rows ||
         static_cast<__int128>(col) + cols > b.cols))
      fail(op, std::string(what) + " window " + std::to_string(rows) + "x" + std::to_string(cols) +
                   " at (" + std::to_string(row) + ", " + std::to_string(col) + ") does not fit " +
                   b.name + " " + std::to_string(b.rows) + "x" + std::to_string(b.cols));
    return b;
  }

  void bounds(const GroupOp& op) {
    for (const Expr* e : {&op.src_row_bound, &op.src_col_bound, &op.dst_row_bound, &op.dst_col_bound})
      if (*e) expr(op, *e, "a guard bound");
  }

  void op(const GroupOp& op) {
    if (op.id < 0 || op.id >= p_.next_op_id)
      fail(op, "id is not in [0, next_op_id = " + std::to_string(p_.next_op_id) + ")");
    if (!ids_.insert(op.id).second) fail(op, "id is used by an earlier op too");
    bool guarded = op.kind == GroupOpKind::Copy || op.kind == GroupOpKind::FragLoad ||
                   op.kind == GroupOpKind::FragStore || op.kind == GroupOpKind::Tma;
    if (guarded) bounds(op);
    if (!is_mbarrier_op(op.kind) && (op.mbar != -1 || op.mbar_slot || op.mbar_count != 0))
      fail(op, "only mbarrier ops and tma name an mbarrier");
    if (op.kind != GroupOpKind::MbarWait && op.parity) fail(op, "only mbar.wait takes a parity");
    if (op.kind != GroupOpKind::MbarArrive && op.leader) fail(op, "only mbar.arrive takes 'leader'");
    if (op.cluster_wide) {
      if (op.kind != GroupOpKind::MbarArrive && op.kind != GroupOpKind::Tma)
        fail(op, "only tma (multicast) and mbar.arrive reach the cluster");
      if (p_.cluster == 1) fail(op, "reaches the cluster in a program without clusters");
      // The sim runs the code outside roles group by group (group_ir.h, "clusters").
      if (!in_role_) fail(op, "reaches the cluster outside a role");
    }
    if (op.kind == GroupOpKind::ClusterSync) {
      if (p_.cluster == 1) fail(op, "a cluster.sync in a program without clusters");
      if (depth_ != 0) fail(op, "a cluster.sync inside a body: only at the top level");
    }
    if (is_mbarrier_op(op.kind)) mbarrier_op(op);
    if (op.kind != GroupOpKind::Roles && !op.roles.empty()) fail(op, "only roles ops have roles");
    if (in_role_ && (op.kind == GroupOpKind::Fence || op.kind == GroupOpKind::Barrier ||
                     op.kind == GroupOpKind::Copy || op.kind == GroupOpKind::AsyncCommit ||
                     op.kind == GroupOpKind::AsyncWait || op.kind == GroupOpKind::Reduce ||
                     op.kind == GroupOpKind::Call || op.kind == GroupOpKind::Roles))
      fail(op, std::string("a ") + group_op_name(op.kind) +
                   " inside a role (roles meet only through mbarriers; copies and reductions inside roles "
                   "are not supported yet)");
    if (op.kind == GroupOpKind::Roles) roles(op);
    if (op.transpose && op.kind != GroupOpKind::FragLoad)
      fail(op, "only frag.load reads transposed");
    if (op.kind != GroupOpKind::Copy && op.kind != GroupOpKind::FragLoad &&
        op.kind != GroupOpKind::FragFill && op.constant != 0)
      fail(op, "only frag.fill, copy and frag.load take a constant (padding)");
    switch (op.kind) {
      case GroupOpKind::Copy:
        if (op.rows < 1 || op.cols < 1 || op.batch < 1)
          fail(op, "copy of " + std::to_string(op.rows) + "x" + std::to_string(op.cols) +
                       " in batches of " + std::to_string(op.batch) + ": all must be positive");
        if (bounded_product(op.rows, op.cols, kMaxGroupCopyElements) < 0)
          fail(op, "copy of " + shape(op.rows, op.cols) + " is more than " +
                       num(kMaxGroupCopyElements) + " elements");
        window(op, op.src, op.rows, op.cols, "source", {Space::Global, Space::Shared});
        window(op, op.dst, op.rows, op.cols, "destination", {Space::Global, Space::Shared});
        break;
      case GroupOpKind::AsyncWait:
      case GroupOpKind::MmaWait:
        if (op.pending < 0) fail(op, "pending count " + std::to_string(op.pending) + " is negative");
        break;
      case GroupOpKind::FragFill: fragment(op, op.frag, "fragment"); break;
      case GroupOpKind::FragLoad: {
        const Buffer& f = fragment(op, op.frag, "fragment");
        // Transposed, fragment (r, c) is window (c, r): the window is cols x rows.
        window(op, op.src, op.transpose ? f.cols : f.rows, op.transpose ? f.rows : f.cols,
               "source", {Space::Global, Space::Shared});
        break;
      }
      case GroupOpKind::FragStore: {
        const Buffer& f = fragment(op, op.frag, "fragment");
        window(op, op.dst, f.rows, f.cols, "destination", {Space::Global, Space::Shared});
        break;
      }
      case GroupOpKind::Mma: {
        if (op.m < 1 || op.n < 1 || op.k < 1 || op.m > kMaxGroupExtent || op.n > kMaxGroupExtent ||
            op.k > kMaxGroupExtent)
          fail(op, "extents " + std::to_string(op.m) + "x" + std::to_string(op.n) + "x" +
                       std::to_string(op.k) + ": each must be in [1, " + num(kMaxGroupExtent) + "]");
        const Buffer& acc = fragment(op, op.frag, "accumulator");
        if (acc.rows != op.m || acc.cols != op.n)
          fail(op, "accumulator " + acc.name + " is " + std::to_string(acc.rows) + "x" +
                       std::to_string(acc.cols) + ", not " + std::to_string(op.m) + "x" +
                       std::to_string(op.n));
        // The atom is the register block of an mma. The warp atoms (mma.sync, wgmma)
        // cover a worker's part in whole blocks; the fma atom's block is where the
        // cpu kernel is fastest, and it takes leftover rows and columns with edge
        // kernels (cuda's fma threads take any part), so any part goes.
        FragPart part = frag_part(p_, acc, 0);
        const int64_t atom_n = mma_part_columns(p_.atom, p_.atom_n);
        if (p_.atom != AtomKind::Fma && (part.rows % p_.atom_m || part.cols % atom_n))
          fail(op, "accumulator " + acc.name + " " + shape(acc) + " over a " +
                       shape(p_.worker_rows, p_.worker_cols) + " worker grid gives parts of " +
                       shape(part.rows, part.cols) + ", not multiples of the atom " +
                       shape(p_.atom_m, atom_n));
        // A tensor read in place (Plan::direct) is read only inside the valid part,
        // which therefore must be given.
        const Buffer& a = window(op, op.a, op.m, op.k, "operand a", {Space::Shared, Space::Global, Space::Private});
        if (a.space == Space::Private) {
          // From registers: each worker multiplies its own rows of a (its part of
          // the accumulator's rows), so a is whole, not split along k, and not acc.
          int64_t row = -1, col = -1;
          FragPart pa = frag_part(p_, a, 0);
          if (a.id == acc.id || a.rows != op.m || a.cols != op.k || !expr_is_const(op.a.row, &row) ||
              !expr_is_const(op.a.col, &col) || row != 0 || col != 0 || pa.rows != part.rows || pa.cols != op.k)
            fail(op, "operand a " + a.name + " " + shape(a) + " is a fragment: it must be the whole m x k = " +
                         shape(op.m, op.k) + " operand, held by each worker for its own rows of the accumulator " +
                         acc.name + " (a worker grid of one column)");
        }
        const Buffer& b = window(op, op.b, op.k, op.n, "operand b", {Space::Shared, Space::Global});
        if (a.space == Space::Global && !(op.m_valid && op.k_valid))
          fail(op, "operand a " + a.name + " is global: the mma needs valid(m, n, k) with m and k bounded");
        if (b.space == Space::Global && !(op.n_valid && op.k_valid))
          fail(op, "operand b " + b.name + " is global: the mma needs valid(m, n, k) with n and k bounded");
        break;
      }
      case GroupOpKind::Elementwise: {
        const Buffer& dst = fragment(op, op.frag, "destination");
        size_t want = static_cast<size_t>(ew_arity(op.ew));
        if (op.operands.size() != want)
          fail(op, std::string(ew_op_name(op.ew)) + " takes " + std::to_string(want) +
                       " operands, not " + std::to_string(op.operands.size()));
        for (const EwOperand& x : op.operands) {
          if (x.kind == EwOperand::Kind::Frag) {
            const Buffer& f = fragment(op, x.frag, "operand");
            // Broadcast by identity: each extent equals the destination's or is 1.
            if ((f.rows != dst.rows && f.rows != 1) || (f.cols != dst.cols && f.cols != 1))
              fail(op, "operand " + f.name + " is " + shape(f) + " and does not broadcast to " +
                           dst.name + " " + shape(dst) + " (each extent must match or be 1)");
          } else if (x.kind == EwOperand::Kind::Scalar && !has_scalar(x.scalar)) {
            fail(op, "unknown scalar parameter '" + x.scalar + "'");
          } else if (x.kind == EwOperand::Kind::Index) {
            expr(op, x.index, "an index operand");
          }
        }
        if (op.ew == EwOp::Index && op.axis != 0 && op.axis != 1)
          fail(op, "index axis " + std::to_string(op.axis) + ": 0 (row) or 1 (column)");
        break;
      }
      case GroupOpKind::Reduce: reduce(op); break;
      case GroupOpKind::Call:
        if (op.callee.empty()) fail(op, "call without a callee");
        break;
      case GroupOpKind::For:
        if (op.iv.empty()) fail(op, "for without an induction variable");
        expr(op, op.lo, "the lower bound");
        expr(op, op.hi, "the upper bound");
        if (op.stage_base) expr(op, op.stage_base, "the stage base");
        if (int64_t lo = 0, hi = 0; expr_is_const(op.lo, &lo) && expr_is_const(op.hi, &hi) &&
                                    static_cast<__int128>(hi) - lo > kMaxStaticTripCount)
          fail(op, "runs " + std::to_string(static_cast<__int128>(hi) - lo > INT64_MAX ? INT64_MAX : hi - lo) +
                       " iterations (" + num(lo) + " to " + num(hi) + "); at most " +
                       num(kMaxStaticTripCount));
        break;
      case GroupOpKind::If:
        if (op.cond.on_scalar && !has_scalar(op.cond.scalar))
          fail(op, "condition on unknown scalar parameter '" + op.cond.scalar + "'");
        if (!op.cond.on_scalar) {
          expr(op, op.cond.lhs, "the condition");
          expr(op, op.cond.rhs, "the condition");
        }
        break;
      case GroupOpKind::Ticket: {
        const Buffer& b = window(op, op.dst, 1, 1, "counter", {Space::Global});
        if (b.dtype != DType::U32 || p_.tensors.at(b.tensor).access != Access::InOut)
          fail(op, "counter " + b.name + " is " + dtype_name(b.dtype) + ", " +
                       access_name(p_.tensors.at(b.tensor).access) + "; a ticket's counter is u32, inout");
        if (op.iv.empty()) fail(op, "ticket without a symbol");
        if (std::count(ivs_.begin(), ivs_.end(), op.iv)) fail(op, "symbol '" + op.iv + "' is already bound");
        expr(op, op.hi, "the count of tickets");
        break;
      }
      default: break;
    }
    size_t want_bodies = op.kind == GroupOpKind::For ? 1 : op.kind == GroupOpKind::If ? 2
                         : op.kind == GroupOpKind::Roles ? op.roles.size() : 0;
    if (op.bodies.size() != want_bodies)
      fail(op, "has " + std::to_string(op.bodies.size()) + " bodies, not " +
                   std::to_string(want_bodies));
    if (op.kind == GroupOpKind::For) ivs_.push_back(op.iv);
    if (op.kind == GroupOpKind::Roles) in_role_ = true;
    ++depth_;
    for (const auto& body : op.bodies) ops(body);
    --depth_;
    if (op.kind == GroupOpKind::Roles) in_role_ = false;
    if (op.kind == GroupOpKind::For) ivs_.pop_back();
  }

  // Roles (group_ir.h, WorkerRole): disjoint ranges of the program's workers.
  void roles(const GroupOp& op) {
    if (op.roles.empty()) fail(op, "has no roles");
    std::vector<bool> taken(p_.workers, false);
    for (const WorkerRole& r : op.roles) {
      std::string which = "role workers " + num(r.first) + " to " + num(int64_t{r.first} + r.count);
      if (r.first < 0 || r.count < 1 || int64_t{r.first} + r.count > p_.workers)
        fail(op, which + ": not a non-empty range of the " + num(p_.workers) + " workers");
      for (int w = r.first; w < r.first + r.count; ++w) {
        if (taken[w]) fail(op, which + ": worker " + num(w) + " is in two roles");
        taken[w] = true;
      }
      if (r.regs != 0 && (r.regs < 24 || r.regs > 256 || r.regs % 8))
        fail(op, which + ": regs " + num(r.regs) + " (24 to 256, a multiple of 8, or none)");
    }
  }

  // mbar.init / arrive / expect_tx / wait and tma (group_ir.h, "mbarriers").
  void mbarrier_op(const GroupOp& op) {
    if (op.mbar < 0 || op.mbar >= static_cast<int>(p_.mbarriers.size()))
      fail(op, "names mbarrier id " + num(op.mbar) + " of " +
                   num(static_cast<int64_t>(p_.mbarriers.size())));
    const MBarrier& b = p_.mbarriers[op.mbar];
    if (op.kind == GroupOpKind::MbarInit) {
      if (op.mbar_slot) fail(op, "mbar.init initializes every slot of " + b.name + " and takes no slot");
      if (op.mbar_count < 1 || op.mbar_count > kMaxMbarrierCount)
        fail(op, "arrival count " + num(op.mbar_count) + " out of range [1, " + num(kMaxMbarrierCount) + "]");
    } else if (op.mbar_slot) {
      expr(op, op.mbar_slot, "an mbarrier slot");
      int64_t v = 0;
      if (expr_is_const(op.mbar_slot, &v) && (v < 0 || v >= b.slots))
        fail(op, "slot " + num(v) + " of " + b.name + " is not below its " + num(b.slots) + " slots");
    }
    switch (op.kind) {
      case GroupOpKind::MbarExpectTx:
        if (op.mbar_count < 1 || op.mbar_count > kMaxMbarrierCount)
          fail(op, "transaction bytes " + num(op.mbar_count) + " out of range [1, " +
                       num(kMaxMbarrierCount) + "]");
        break;
      case GroupOpKind::MbarArrive:
      case GroupOpKind::MbarInit:
        break;
      case GroupOpKind::MbarWait: {
        expr(op, op.parity, "the parity");
        int64_t v = 0;
        if (expr_is_const(op.parity, &v) && v != 0 && v != 1)
          fail(op, "parity " + num(v) + " is not 0 or 1");
        break;
      }
      case GroupOpKind::Tma: {
        if (op.mbar_count != 0) fail(op, "a tma copy counts its own bytes");
        if (op.rows < 1 || op.cols < 1 || op.rows > kMaxTmaBox || op.cols > kMaxTmaBox)
          fail(op, "box " + shape(op.rows, op.cols) + ": each extent in [1, " + num(kMaxTmaBox) + "]");
        if (op.dst_row_bound || op.dst_col_bound)
          fail(op, "a tma copy writes its whole box: only source guards (the tensor's edge, zero fill)");
        window(op, op.src, op.rows, op.cols, "source", {Space::Global});
        const Buffer& dst = window(op, op.dst, op.rows, op.cols, "destination", {Space::Shared});
        // Targets move column panels in boxes of whole panels (cuda: one a panel).
        if (dst.layout == Layout::ColPanels && op.cols % dst.panel)
          fail(op, "box " + shape(op.rows, op.cols) + " into panels of " + num(dst.panel) +
                       " columns: whole panels only");
        if (op.rows * op.cols * dtype_bytes(dst.dtype) > kMaxMbarrierCount)
          fail(op, "box " + shape(op.rows, op.cols) + " of " + dtype_name(dst.dtype) + " is more than " +
                       num(kMaxMbarrierCount) + " transaction bytes");
        break;
      }
      default: break;
    }
  }

  // The three modes (group_ir.h, ReduceMode). S = the workers along the axis.
  void reduce(const GroupOp& op) {
    if (op.axis != 0 && op.axis != 1)
      fail(op, "axis " + std::to_string(op.axis) + ": 0 (rows) or 1 (columns)");
    const int s = op.axis == 1 ? p_.worker_cols : p_.worker_rows;
    const char* along = op.axis == 1 ? "columns" : "rows";
    // The scratch window of S partials for an R x C tile: R x S (axis 1) or S x C.
    auto scratch = [&](int64_t rows, int64_t cols) {
      return op.axis == 1 ? std::pair<int64_t, int64_t>{rows, s} : std::pair<int64_t, int64_t>{s, cols};
    };
    const Buffer* source = nullptr;
    if (op.reduce_mode != ReduceMode::Combine) {
      if (op.operands.size() != 1 || op.operands[0].kind != EwOperand::Kind::Frag)
        fail(op, std::string(reduce_mode_name(op.reduce_mode)) +
                     " reduce takes one operand, a fragment");
      source = &fragment(op, op.operands[0].frag, "source");
    } else if (!op.operands.empty()) {
      fail(op, "combine reduce reads its scratch window, not operands");
    }
    auto check_destination = [&](const Buffer& dst, int64_t rows, int64_t cols, const char* from) {
      int64_t kept = op.axis == 1 ? rows : cols, dst_kept = op.axis == 1 ? dst.rows : dst.cols;
      int64_t reduced = op.axis == 1 ? dst.cols : dst.rows;
      if (reduced != 1 || kept != dst_kept)
        fail(op, "destination " + dst.name + " is " + shape(dst) + ", not " +
                     (op.axis == 1 ? shape(rows, 1) : shape(1, cols)) + " (" + from + " " +
                     shape(rows, cols) + " reduced along axis " + std::to_string(op.axis) + ")");
    };
    switch (op.reduce_mode) {
      case ReduceMode::Local:
        if (op.src.buffer != -1 || op.dst.buffer != -1)
          fail(op, "local reduce takes no scratch window");
        check_destination(fragment(op, op.frag, "destination"), source->rows, source->cols,
                          "source");
        break;
      case ReduceMode::Partial: {
        if (op.frag != -1 || op.src.buffer != -1)
          fail(op, "partial reduce writes its scratch window only");
        int64_t extent = op.axis == 1 ? source->cols : source->rows;
        if (extent == 1 && s > 1)
          fail(op, "source " + source->name + " has extent 1 along axis " +
                       std::to_string(op.axis) + ", replicated over the " + std::to_string(s) +
                       " workers along it: a partial would count it " + std::to_string(s) +
                       " times (use a local reduce)");
        auto [rows, cols] = scratch(source->rows, source->cols);
        if ((op.rows || op.cols) && (op.rows != rows || op.cols != cols))
          fail(op, "scratch window is " + shape(op.rows, op.cols) + " but " + source->name + " " +
                       shape(*source) + " over " + std::to_string(s) + " worker " + along +
                       " needs " + shape(rows, cols));
        window(op, op.dst, rows, cols, "scratch", {Space::Shared});
        break;
      }
      case ReduceMode::Combine: {
        if (op.dst.buffer != -1) fail(op, "combine reduce reads its scratch window only");
        const Buffer& dst = fragment(op, op.frag, "destination");
        auto [rows, cols] = scratch(dst.rows, dst.cols);
        if (op.rows != rows || op.cols != cols)
          fail(op, "scratch window is " + shape(op.rows, op.cols) + " but " + dst.name + " " +
                       shape(dst) + " over " + std::to_string(s) + " worker " + along + " needs " +
                       shape(rows, cols));
        check_destination(dst, op.axis == 1 ? dst.rows : s, op.axis == 1 ? s : dst.cols,
                          "scratch");
        window(op, op.src, rows, cols, "scratch", {Space::Shared});
        break;
      }
    }
  }

  bool has_scalar(const std::string& name) const {
    return std::any_of(p_.scalars.begin(), p_.scalars.end(),
                       [&](const ScalarParam& s) { return s.name == name; });
  }

  void ops(const std::vector<GroupOp>& list) {
    const size_t mark = ivs_.size();  // a ticket's symbol ends with its body
    for (const GroupOp& o : list) {
      op(o);
      if (o.kind == GroupOpKind::Ticket) ivs_.push_back(o.iv);
    }
    ivs_.resize(mark);
  }

  const GroupProgram& p_;
  std::vector<std::string> ivs_;  // grid coordinates, open for loops, tickets drawn
  bool in_role_ = false;          // inside a body of a roles op
  int depth_ = 0;                 // bodies open around the op
  std::set<int> ids_;
};

}  // namespace

void verify_group_program(const GroupProgram& program) { Verifier(program).run(); }

namespace {
// Op ids index tables (the sim's race detector keeps one entry per id).
void check_op_ids(const GroupProgram& p, const std::vector<GroupOp>& ops) {
  for (const GroupOp& op : ops) {
    if (op.id < -1 || op.id >= kMaxGroupOps)
      user_error(ErrorKind::Verify, "op #" + num(op.id) + " (" + group_op_name(op.kind) +
                                        "): id out of range [0, " + num(kMaxGroupOps) + ")");
    for (const auto& body : op.bodies) check_op_ids(p, body);
  }
}
}  // namespace

void verify_group_limits(const GroupProgram& p, TargetKind target) {
  // The numbers every sum below multiplies, as the verifier checks them.
  check_workers(p, ErrorKind::Verify);
  check_op_ids(p, p.body);
  const std::string who = "program " + p.name + " on the " + target_name(target) + " target: ";
  int64_t shared_elements = 0, shared_bytes = 0, fragment_elements = 0, fragment_bytes = 0;
  bool over = false;  // some sum passed 2^62
  constexpr int64_t kHuge = int64_t{1} << 62;
  for (const Buffer& b : p.buffers) {
    if (b.space == Space::Global) continue;
    int64_t n = b.rows >= 1 && b.cols >= 1 && b.versions >= 1 ? buffer_elements(b) : -1;
    if (n < 0)
      user_error(ErrorKind::Plan, who + "buffer " + b.name + " " + num(b.rows) + "x" + num(b.cols) +
                                      " x " + num(b.versions) + " versions is not a buffer of at most " +
                                      num(kMaxGroupBufferBytes) + " bytes");
    if (b.space == Space::Shared) {
      shared_elements += n;
      shared_bytes += n * dtype_bytes(b.dtype);
    } else {
      // Every worker's part; surplus workers hold none, replicas repeat theirs.
      FragPart part = frag_part(p, b, 0);
      int64_t parts = bounded_product(bounded_product(part.rows, part.cols, kHuge), p.workers, kHuge);
      over |= parts < 0;
      fragment_elements += parts;
      fragment_bytes += parts * (b.dtype == DType::F64 ? 8 : 4);
    }
    over |= shared_bytes > kHuge || fragment_bytes > kHuge;
    if (over) break;
  }
  auto refuse = [&](const std::string& what, int64_t have, int64_t limit, const char* unit) {
    user_error(ErrorKind::Plan, who + what + " " + (over ? std::string("more than 2^62") : num(have)) +
                                    " " + unit + "; at most " + num(limit));
  };
  switch (target) {
    case TargetKind::Sim:
      if (over || shared_elements > kSimMaxSharedElements)
        refuse("shared buffers (every version) hold", shared_elements, kSimMaxSharedElements, "elements");
      if (fragment_elements > kSimMaxFragmentElements)
        refuse("fragments (every worker's part) hold", fragment_elements, kSimMaxFragmentElements,
               "elements");
      break;
    case TargetKind::Cpu:
      if (over || shared_bytes + fragment_bytes > kCpuMaxScratchBytes)
        refuse("staging buffers and fragments need", shared_bytes + fragment_bytes,
               kCpuMaxScratchBytes, "bytes of scratch per group");
      break;
    case TargetKind::Cuda:
      if (over || shared_bytes > kCudaMaxSharedBytes)
        refuse("shared buffers need", shared_bytes, kCudaMaxSharedBytes,
               "bytes of shared memory per block (227 KiB on the H200)");
      if (int64_t{p.workers} * p.lanes > kCudaMaxThreads)
        refuse("workers x lanes = " + num(p.workers) + " x " + num(p.lanes) + " =",
               int64_t{p.workers} * p.lanes, kCudaMaxThreads, "threads per block");
      break;
  }
}

}  // namespace tessel
