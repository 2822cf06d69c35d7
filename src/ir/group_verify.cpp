// Walks the program in order with the induction variables in scope; the first
// violation is reported, naming the op by id. Windows are checked against static
// buffers only where their offsets are constants: symbolic offsets into shared or
// private buffers are left to the simulator's bounds checks.
#include "ir/group_verify.h"

#include <algorithm>
#include <set>

#include "tessel/error.h"

namespace tessel {
namespace {

class Verifier {
 public:
  explicit Verifier(const GroupProgram& p) : p_(p) {}

  void run() {
    if (p_.workers < 1 || p_.worker_rows < 1 || p_.worker_cols < 1 ||
        int64_t{p_.worker_rows} * p_.worker_cols > p_.workers)
      program_error("worker grid " + std::to_string(p_.worker_rows) + "x" +
                    std::to_string(p_.worker_cols) + " does not fit " + std::to_string(p_.workers) +
                    " workers");
    if (p_.atom_m < 1 || p_.atom_n < 1 || p_.lanes < 1)
      program_error("atom " + std::to_string(p_.atom_m) + "x" + std::to_string(p_.atom_n) +
                    " with " + std::to_string(p_.lanes) + " lanes: all must be positive");
    if (p_.frag_buffers != 1 && p_.frag_buffers != 2)
      program_error("frag_buffers " + std::to_string(p_.frag_buffers) + ": 1 or 2");
    if (p_.grid.size() > static_cast<size_t>(kMaxGridRank))
      program_error("grid has " + std::to_string(p_.grid.size()) + " dimensions; at most " +
                    std::to_string(kMaxGridRank));
    for (const LoopDim& d : p_.grid) {
      if (!d.extent) program_error("grid dimension " + d.iv + " has no extent");
      expr_symbols(d.extent, [&](const std::string& s) {
        if (!std::count(p_.size_params.begin(), p_.size_params.end(), s))
          program_error("grid extent " + expr_to_string(d.extent) + " uses '" + s +
                        "', which is not a size parameter");
      });
    }
    for (size_t i = 0; i < p_.buffers.size(); ++i) buffer(p_.buffers[i], static_cast<int>(i));
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
    if (b.rows < 1 || b.cols < 1)
      program_error(name + "extents " + std::to_string(b.rows) + "x" + std::to_string(b.cols) +
                    " must be positive");
    if (b.versions < 1 || (b.space == Space::Private && b.versions != 1))
      program_error(name + std::to_string(b.versions) +
                    " versions; shared buffers have 1 or more, private ones 1");
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
        (row < 0 || col < 0 || row + rows > b.rows || col + cols > b.cols))
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
                   op.kind == GroupOpKind::FragStore;
    if (guarded) bounds(op);
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
        if (op.m < 1 || op.n < 1 || op.k < 1)
          fail(op, "extents " + std::to_string(op.m) + "x" + std::to_string(op.n) + "x" +
                       std::to_string(op.k) + " must be positive");
        const Buffer& acc = fragment(op, op.frag, "accumulator");
        if (acc.rows != op.m || acc.cols != op.n)
          fail(op, "accumulator " + acc.name + " is " + std::to_string(acc.rows) + "x" +
                       std::to_string(acc.cols) + ", not " + std::to_string(op.m) + "x" +
                       std::to_string(op.n));
        // The atom is the register block of an mma: each worker's part is a multiple.
        FragPart part = frag_part(p_, acc, 0);
        if (part.rows % p_.atom_m || part.cols % p_.atom_n)
          fail(op, "accumulator " + acc.name + " " + shape(acc) + " over a " +
                       shape(p_.worker_rows, p_.worker_cols) + " worker grid gives parts of " +
                       shape(part.rows, part.cols) + ", not multiples of the atom " +
                       shape(p_.atom_m, p_.atom_n));
        window(op, op.a, op.m, op.k, "operand a", {Space::Shared});
        window(op, op.b, op.k, op.n, "operand b", {Space::Shared});
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
        break;
      case GroupOpKind::If:
        if (op.cond.on_scalar && !has_scalar(op.cond.scalar))
          fail(op, "condition on unknown scalar parameter '" + op.cond.scalar + "'");
        if (!op.cond.on_scalar) {
          expr(op, op.cond.lhs, "the condition");
          expr(op, op.cond.rhs, "the condition");
        }
        break;
      default: break;
    }
    size_t want_bodies = op.kind == GroupOpKind::For ? 1 : op.kind == GroupOpKind::If ? 2 : 0;
    if (op.bodies.size() != want_bodies)
      fail(op, "has " + std::to_string(op.bodies.size()) + " bodies, not " +
                   std::to_string(want_bodies));
    if (op.kind == GroupOpKind::For) ivs_.push_back(op.iv);
    for (const auto& body : op.bodies) ops(body);
    if (op.kind == GroupOpKind::For) ivs_.pop_back();
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
    for (const GroupOp& o : list) op(o);
  }

  const GroupProgram& p_;
  std::vector<std::string> ivs_;  // grid coordinates and open for loops
  std::set<int> ids_;
};

}  // namespace

void verify_group_program(const GroupProgram& program) { Verifier(program).run(); }

}  // namespace tessel
