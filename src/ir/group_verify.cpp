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
    if (b.space == Space::Private) {
      if (b.rows % p_.worker_rows || b.cols % p_.worker_cols ||
          (b.rows / p_.worker_rows) % p_.atom_m || (b.cols / p_.worker_cols) % p_.atom_n)
        program_error(name + "fragment " + std::to_string(b.rows) + "x" + std::to_string(b.cols) +
                      " over a " + std::to_string(p_.worker_rows) + "x" +
                      std::to_string(p_.worker_cols) + " worker grid gives parts that are not " +
                      "multiples of the atom " + std::to_string(p_.atom_m) + "x" +
                      std::to_string(p_.atom_n));
    }
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
        window(op, op.src, f.rows, f.cols, "source", {Space::Global, Space::Shared});
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
        window(op, op.a, op.m, op.k, "operand a", {Space::Shared});
        window(op, op.b, op.k, op.n, "operand b", {Space::Shared});
        break;
      }
      case GroupOpKind::Elementwise: {
        const Buffer& dst = fragment(op, op.frag, "destination");
        size_t want = (op.ew == EwOp::Exp || op.ew == EwOp::Neg || op.ew == EwOp::Copy) ? 1 : 2;
        if (op.operands.size() != want)
          fail(op, std::string(ew_op_name(op.ew)) + " takes " + std::to_string(want) +
                       " operands, not " + std::to_string(op.operands.size()));
        for (const EwOperand& x : op.operands) {
          if (x.kind == EwOperand::Kind::Frag) {
            const Buffer& f = fragment(op, x.frag, "operand");
            if (f.rows != dst.rows || f.cols != dst.cols)
              fail(op, "operand " + f.name + " is " + std::to_string(f.rows) + "x" +
                           std::to_string(f.cols) + " but " + dst.name + " is " +
                           std::to_string(dst.rows) + "x" + std::to_string(dst.cols));
          } else if (x.kind == EwOperand::Kind::Scalar && !has_scalar(x.scalar)) {
            fail(op, "unknown scalar parameter '" + x.scalar + "'");
          }
        }
        break;
      }
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
