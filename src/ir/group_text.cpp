// Textual GroupIR. A header, the buffers, then one op per line with its id:
//
//   group gemm(sizes M, N, K; tensors A: f32[M, K] strides(lda, 1) in; scalars alpha: f32) {
//                     (a size the program is specialized for shows its value: `sizes M = 40, N`)
//     grid i = ceildiv(M, 64), j = ceildiv(N, 64)            (0 to 3 dimensions)
//     workers 4 grid 2x2 lanes 1
//     atom fma 4x16
//     cluster 2 along i                  (clusters of 2 groups along grid dimension i; only when > 1)
//     next_op_id 20                      (only when it is not one past the largest id)
//     buffer A: global f32 tensor A
//     buffer As: shared f32[64, 32] rowpanels panel 4 versions 2
//     copy #2 A[(i * 64), (k * 32)] strides(lda, 1) -> As@(k % 2)[0, 0] 64x32 batch 4 async guard src(M, K)
//     async.commit #3
//     async.wait #4 pending 0
//     fence #5
//     barrier #6
//     call #7 name
//     frag.fill #0 acc = 0
//     frag.load #8 old <- C[(i * 64), (j * 64)] strides(ldc, 1) guard src(M, N)
//     frag.load #8 x <- X[0, (j * 64)] strides(1, ldx) offset((b * sb)) transpose pad -inf guard src(M, N)
//     frag.store #9 C[(i * 64), (j * 64)] strides(ldc, 1) <- acc guard dst(M, N)
//     mma #10 acc += As@(k % 2)[0, 0] * Bs@(k % 2)[0, 0] 64x64x32 valid(_, _, min(32, (K - (k * 32))))
//     ew #11 acc = mul acc, $alpha, #((k * 16))  (operands: fragment, $scalar, constant, #(index))
//     ew #12 c = cmp.lt a, b          ew #13 y = cast.bf16 x          ew #14 j = index axis 1
//     reduce.sum #15 m = x axis 1                              (local)
//     reduce.max #16 Rs[0, 0] <- x axis 1 partial              (into shared scratch)
//     reduce.max #17 m <- Rs[0, 0] axis 1 combine 16x4         (from a 16x4 scratch window)
//     mbarrier full[2]                  (after the buffers: an mbarrier of 2 slots)
//     mbar.init #20 full count 1         (every slot; arrivals per phase)
//     mbar.arrive #21 empty@(k % 2)      (one arrival per worker; ` leader`: one, by worker 0)
//     mbar.arrive #27 empty@(k % 2) cluster   (on that slot in every group of the cluster)
//     mbar.expect_tx #22 full@(k % 2) bytes 16384
//     mbar.wait #23 full@(k % 2) parity ((k / 2) % 2)
//     tma #24 A[(i * 64), (k * 64)] strides(lda, 1) -> As@(k % 2)[0, 0] 64x64 mbar full@(k % 2) guard src(M, K)
//     tma #28 ... mbar full@(k % 2) multicast     (lands in every group of the cluster)
//     cluster.sync #29
//     roles #25 {                        (warp specialization: one body per role)
//       role workers 2 to 3 regs 40 {  ...  }
//       role workers 0 to 2 regs 232 {  ...  }
//     }
//     for #1 k = 0 to ceildiv(K, 32) pipelined {     (pipelined: from a pipeline nest)
//     if #12 param beta == 0 {  ...  } else {  ...  }
//     ticket #26 t = S on T[0, ((i * 8) + j)] strides(0, 1)   (symbol t: the ticket of S drawn)
//   }
//
// A window is BUFFER[@VERSION][ROW, COL], and on global buffers ` strides(RS, CS)` and,
// when there is one, ` offset(E)` follow; a guard bound or stride that is absent prints
// as _. A nonzero padding prints as ` pad V` (copy, frag.load).
#include "ir/group_text.h"

#include <algorithm>
#include <bit>
#include <climits>

#include "ir/text_cursor.h"
#include "tessel/error.h"

namespace tessel {
namespace {

constexpr GroupOpKind kAllKinds[] = {
    GroupOpKind::Copy,      GroupOpKind::AsyncCommit, GroupOpKind::AsyncWait,
    GroupOpKind::FragFill,  GroupOpKind::FragLoad,    GroupOpKind::FragStore,
    GroupOpKind::Mma,       GroupOpKind::Elementwise, GroupOpKind::Fence,
    GroupOpKind::Barrier,   GroupOpKind::Call,        GroupOpKind::For,
    GroupOpKind::If,        GroupOpKind::MmaWait,     GroupOpKind::Reduce,
    GroupOpKind::MbarInit,  GroupOpKind::MbarArrive,  GroupOpKind::MbarExpectTx,
    GroupOpKind::MbarWait,  GroupOpKind::Tma,         GroupOpKind::Roles,
    GroupOpKind::Ticket,    GroupOpKind::ClusterSync};
constexpr EwOp kAllEwOps[] = {
    EwOp::Add,  EwOp::Sub,  EwOp::Mul,   EwOp::Div,   EwOp::Max,  EwOp::Min,    EwOp::Exp,
    EwOp::Exp2, EwOp::Log,  EwOp::Neg,   EwOp::Abs,   EwOp::Sqrt, EwOp::Rsqrt,  EwOp::Recip,
    EwOp::Tanh, EwOp::Cmp,  EwOp::Select, EwOp::Cast, EwOp::Index, EwOp::Copy};
constexpr CmpOp kAllCmps[] = {CmpOp::EQ, CmpOp::NE, CmpOp::LT, CmpOp::LE, CmpOp::GT, CmpOp::GE};
constexpr DType kAllDTypes[] = {DType::F32, DType::BF16, DType::F16, DType::F64};
constexpr ReduceOp kAllReduces[] = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};
constexpr ReduceMode kAllReduceModes[] = {ReduceMode::Local, ReduceMode::Partial,
                                          ReduceMode::Combine};

// `cmp.lt`: the comparison as a word (cmp_op_name spells it as an operator).
const char* cmp_word(CmpOp op) {
  switch (op) {
    case CmpOp::EQ: return "eq";
    case CmpOp::NE: return "ne";
    case CmpOp::LT: return "lt";
    case CmpOp::LE: return "le";
    case CmpOp::GT: return "gt";
    case CmpOp::GE: return "ge";
  }
  return "?";
}

// Padding prints when it is not +0 (bit for bit, so -0 survives a round trip).
bool has_padding(double v) { return std::bit_cast<uint64_t>(v) != 0; }
constexpr Space kAllSpaces[] = {Space::Global, Space::Shared, Space::Private};
constexpr Layout kAllLayouts[] = {Layout::RowMajor, Layout::ColPanels, Layout::RowPanels};

bool has_guards(GroupOpKind k) {
  return k == GroupOpKind::Copy || k == GroupOpKind::FragLoad || k == GroupOpKind::FragStore ||
         k == GroupOpKind::Tma;
}

int max_op_id(const std::vector<GroupOp>& ops) {
  int m = -1;
  for (const GroupOp& op : ops) {
    m = std::max(m, op.id);
    for (const auto& body : op.bodies) m = std::max(m, max_op_id(body));
  }
  return m;
}

class Printer {
 public:
  explicit Printer(const GroupProgram& p) : p_(p) {}

  std::string run() {
    auto section = [](const char* label, const std::string& items) {
      return items.empty() ? std::string(label) : std::string(label) + " " + items;
    };
    // A fixed size shows its value: `sizes M = 40, N`.
    auto size_text = [&](const std::string& s) {
      for (const auto& [fixed, value] : p_.fixed_sizes)
        if (fixed == s) return s + " = " + std::to_string(value);
      return s;
    };
    out_ = "group " + p_.name + "(" + section("sizes", join(p_.size_params, size_text)) + "; " +
           section("tensors", join(p_.tensors, tensor_param_text)) + "; " +
           section("scalars", join(p_.scalars, scalar_param_text)) + ") {\n";
    out_ += "  " + section("grid", loops_text(p_.grid)) + "\n";
    out_ += "  workers " + std::to_string(p_.workers) + " grid " + std::to_string(p_.worker_rows) +
            "x" + std::to_string(p_.worker_cols) + " lanes " + std::to_string(p_.lanes) + "\n";
    out_ += std::string("  atom ") + atom_name(p_.atom) + " " + std::to_string(p_.atom_m) + "x" +
            std::to_string(p_.atom_n) + "\n";
    if (p_.frag_buffers != 1) out_ += "  frag_buffers " + std::to_string(p_.frag_buffers) + "\n";
    if (p_.cluster != 1) {
      const bool named = p_.cluster_dim >= 0 && p_.cluster_dim < static_cast<int>(p_.grid.size());
      out_ += "  cluster " + std::to_string(p_.cluster) + " along " +
              (named ? p_.grid[p_.cluster_dim].iv : "?") + "\n";
    }
    if (p_.next_op_id != max_op_id(p_.body) + 1)
      out_ += "  next_op_id " + std::to_string(p_.next_op_id) + "\n";
    for (const Buffer& b : p_.buffers) out_ += "  buffer " + buffer_text(b) + "\n";
    for (const MBarrier& b : p_.mbarriers)
      out_ += "  mbarrier " + b.name + "[" + std::to_string(b.slots) + "]\n";
    ops(p_.body, 1);
    out_ += "}\n";
    return out_;
  }

 private:
  // Global buffers are views of tensors: their shape, layout and versions are unused
  // (the verifier holds them at their defaults) and not printed.
  std::string buffer_text(const Buffer& b) const {
    std::string s = b.name + ": " + space_name(b.space) + " " + dtype_name(b.dtype);
    if (b.space == Space::Global) {
      bool known = b.tensor >= 0 && b.tensor < static_cast<int>(p_.tensors.size());
      return s + " tensor " + (known ? p_.tensors[b.tensor].name : "?" + std::to_string(b.tensor));
    }
    return s + "[" + std::to_string(b.rows) + ", " + std::to_string(b.cols) + "] " +
           layout_name(b.layout) + " panel " + std::to_string(b.panel) + " versions " +
           std::to_string(b.versions);
  }

  // A buffer id that does not index the program's buffers prints as ?ID, which the
  // parser rejects: the printer shows broken IR but never reads out of bounds.
  std::string buffer_name(int id) const {
    if (id < 0 || id >= static_cast<int>(p_.buffers.size())) return "?" + std::to_string(id);
    return p_.buffers[id].name;
  }

  // An mbarrier id that does not index the program's mbarriers prints as ?ID.
  std::string mbar_ref(const GroupOp& o) const {
    std::string s = o.mbar >= 0 && o.mbar < static_cast<int>(p_.mbarriers.size())
                        ? p_.mbarriers[o.mbar].name
                        : "?" + std::to_string(o.mbar);
    if (o.mbar_slot) s += "@" + expr_to_string(o.mbar_slot);
    return s;
  }

  std::string window(const BufferRef& r) const {
    std::string s = buffer_name(r.buffer);
    if (r.version) s += "@" + expr_to_string(r.version);
    s += "[" + expr_to_string(r.row) + ", " + expr_to_string(r.col) + "]";
    if (r.row_stride || r.col_stride)
      s += " strides(" + optional_expr(r.row_stride) + ", " + optional_expr(r.col_stride) + ")";
    if (r.offset) s += " offset(" + expr_to_string(r.offset) + ")";
    return s;
  }

  static std::string padding(const GroupOp& o) {
    return has_padding(o.constant) ? " pad " + double_to_text(o.constant) : "";
  }

  static std::string optional_expr(const Expr& e) { return e ? expr_to_string(e) : "_"; }

  static std::string guard(const char* side, const Expr& row, const Expr& col) {
    if (!row && !col) return "";
    auto bound = [](const Expr& e) { return e ? expr_to_string(e) : std::string("_"); };
    return std::string(" guard ") + side + "(" + bound(row) + ", " + bound(col) + ")";
  }

  std::string operand(const EwOperand& o) const {
    switch (o.kind) {
      case EwOperand::Kind::Frag: return buffer_name(o.frag);
      case EwOperand::Kind::Scalar: return "$" + o.scalar;
      case EwOperand::Kind::Const: return double_to_text(o.value);
      case EwOperand::Kind::Index: return "#(" + optional_expr(o.index) + ")";
    }
    return "?";
  }

  void op(const GroupOp& o, int depth) {
    std::string indent(2 * depth, ' ');
    out_ += indent + group_op_name(o.kind);
    if (o.kind == GroupOpKind::Reduce) out_ += std::string(".") + reduce_op_name(o.reduce);
    out_ += " #" + std::to_string(o.id);
    switch (o.kind) {
      case GroupOpKind::Copy:
        out_ += " " + window(o.src) + " -> " + window(o.dst) + " " + std::to_string(o.rows) + "x" +
                std::to_string(o.cols) + " batch " + std::to_string(o.batch) +
                (o.async ? " async" : "") + padding(o);
        break;
      case GroupOpKind::AsyncWait:
      case GroupOpKind::MmaWait: out_ += " pending " + std::to_string(o.pending); break;
      case GroupOpKind::FragFill:
        out_ += " " + buffer_name(o.frag) + " = " + double_to_text(o.constant);
        break;
      case GroupOpKind::FragLoad:
        out_ += " " + buffer_name(o.frag) + " <- " + window(o.src) +
                (o.transpose ? " transpose" : "") + padding(o);
        break;
      case GroupOpKind::FragStore: out_ += " " + window(o.dst) + " <- " + buffer_name(o.frag); break;
      case GroupOpKind::Mma:
        out_ += " " + buffer_name(o.frag) + " += " + window(o.a) + " * " + window(o.b) + " " +
                std::to_string(o.m) + "x" + std::to_string(o.n) + "x" + std::to_string(o.k);
        if (o.m_valid || o.n_valid || o.k_valid)
          out_ += " valid(" + optional_expr(o.m_valid) + ", " + optional_expr(o.n_valid) + ", " +
                  optional_expr(o.k_valid) + ")";
        if (o.async) out_ += " async";
        break;
      case GroupOpKind::Elementwise:
        out_ += " " + buffer_name(o.frag) + " = " + ew_op_name(o.ew);
        if (o.ew == EwOp::Cmp) out_ += std::string(".") + cmp_word(o.cmp);
        if (o.ew == EwOp::Cast) out_ += std::string(".") + dtype_name(o.dtype);
        if (o.ew == EwOp::Index) out_ += " axis " + std::to_string(o.axis);
        if (!o.operands.empty())
          out_ += " " + join(o.operands, [this](const EwOperand& x) { return operand(x); });
        break;
      case GroupOpKind::Reduce: {
        std::string source = o.operands.empty() ? "?" : operand(o.operands[0]);
        std::string axis = " axis " + std::to_string(o.axis);
        std::string size = std::to_string(o.rows) + "x" + std::to_string(o.cols);
        switch (o.reduce_mode) {
          case ReduceMode::Local: out_ += " " + buffer_name(o.frag) + " = " + source + axis; break;
          case ReduceMode::Partial:
            // The window's extent follows from the source and the worker grid.
            out_ += " " + window(o.dst) + " <- " + source + axis + " partial";
            if (o.rows || o.cols) out_ += " " + size;
            break;
          case ReduceMode::Combine:
            out_ += " " + buffer_name(o.frag) + " <- " + window(o.src) + axis + " combine " + size;
            break;
        }
        break;
      }
      case GroupOpKind::Call: out_ += " " + o.callee; break;
      case GroupOpKind::For:
        out_ += " " + o.iv + " = " + expr_to_string(o.lo) + " to " + expr_to_string(o.hi) +
                (o.pipelined ? " pipelined" : "");
        if (o.stage_base) out_ += " stages_from " + expr_to_string(o.stage_base);
        break;
      case GroupOpKind::If: out_ += " " + cond_text(o.cond); break;
      case GroupOpKind::Ticket: out_ += " " + o.iv + " = " + optional_expr(o.hi) + " on " + window(o.dst); break;
      case GroupOpKind::MbarInit:
        out_ += " " + mbar_ref(o) + " count " + std::to_string(o.mbar_count);
        break;
      case GroupOpKind::MbarArrive:
        out_ += " " + mbar_ref(o) + (o.leader ? " leader" : "") + (o.cluster_wide ? " cluster" : "");
        break;
      case GroupOpKind::MbarExpectTx:
        out_ += " " + mbar_ref(o) + " bytes " + std::to_string(o.mbar_count);
        break;
      case GroupOpKind::MbarWait: out_ += " " + mbar_ref(o) + " parity " + optional_expr(o.parity); break;
      case GroupOpKind::Tma:
        out_ += " " + window(o.src) + " -> " + window(o.dst) + " " + std::to_string(o.rows) + "x" +
                std::to_string(o.cols) + " mbar " + mbar_ref(o) + (o.cluster_wide ? " multicast" : "");
        break;
      default: break;
    }
    if (has_guards(o.kind))
      out_ += guard("src", o.src_row_bound, o.src_col_bound) +
              guard("dst", o.dst_row_bound, o.dst_col_bound);
    if (o.kind == GroupOpKind::Roles) {
      // A role without its body (or a body without its role) prints as ?, which the
      // parser rejects.
      out_ += " {\n";
      for (size_t i = 0; i < std::max(o.roles.size(), o.bodies.size()); ++i) {
        const WorkerRole* r = i < o.roles.size() ? &o.roles[i] : nullptr;
        out_ += indent + "  role workers " +
                (r ? std::to_string(r->first) + " to " + std::to_string(int64_t{r->first} + r->count) : "?") +
                (r && r->regs ? " regs " + std::to_string(r->regs) : "") + " {\n";
        if (i < o.bodies.size()) ops(o.bodies[i], depth + 2);
        else out_ += "?";
        out_ += indent + "  }\n";
      }
      out_ += indent + "}\n";
      return;
    }
    for (size_t i = 0; i < o.bodies.size(); ++i) {
      out_ += i ? " else {\n" : " {\n";
      ops(o.bodies[i], depth + 1);
      out_ += indent + "}";
    }
    out_ += "\n";
  }

  void ops(const std::vector<GroupOp>& list, int depth) {
    for (const GroupOp& o : list) op(o, depth);
  }

  const GroupProgram& p_;
  std::string out_;
};

class Parser {
 public:
  explicit Parser(const std::string& text) : in_(text) {}

  GroupProgram run() {
    in_.expect_word("group");
    p_.name = in_.word("a program name");
    in_.expect("(");
    in_.expect_word("sizes");
    in_.list([&] {
      p_.size_params.push_back(in_.word("a size parameter"));
      if (in_.accept("=")) p_.fixed_sizes.emplace_back(p_.size_params.back(), in_.integer("a fixed size"));
    });
    in_.expect(";");
    in_.expect_word("tensors");
    in_.list([&] { p_.tensors.push_back(in_.tensor_param()); });
    in_.expect(";");
    in_.expect_word("scalars");
    in_.list([&] { p_.scalars.push_back(in_.scalar_param()); });
    in_.expect(")");
    in_.expect("{");
    in_.expect_word("grid");
    if (!in_.peek_word("workers")) p_.grid = in_.loops();
    in_.expect_word("workers");
    p_.workers = small_int("a worker count");
    in_.expect_word("grid");
    p_.worker_rows = small_int("worker grid rows");
    in_.expect("x");
    p_.worker_cols = small_int("worker grid columns");
    in_.expect_word("lanes");
    p_.lanes = small_int("a lane count");
    in_.expect_word("atom");
    if (in_.accept_word(atom_name(AtomKind::MmaSync))) p_.atom = AtomKind::MmaSync;
    else if (in_.accept_word(atom_name(AtomKind::Wgmma))) p_.atom = AtomKind::Wgmma;
    else if (in_.accept_word(atom_name(AtomKind::Fma))) p_.atom = AtomKind::Fma;
    else in_.expected("an atom (fma, mma.sync, wgmma)");
    p_.atom_m = in_.integer("atom rows");
    in_.expect("x");
    p_.atom_n = in_.integer("atom columns");
    if (in_.accept_word("frag_buffers")) p_.frag_buffers = small_int("a fragment buffer count");
    if (in_.accept_word("cluster")) {
      p_.cluster = small_int("a cluster size");
      in_.expect_word("along");
      std::string iv = in_.word("a grid dimension");
      p_.cluster_dim = -1;
      for (size_t d = 0; d < p_.grid.size(); ++d)
        if (p_.grid[d].iv == iv) p_.cluster_dim = static_cast<int>(d);
      if (p_.cluster_dim < 0) in_.error("cluster along '" + iv + "', which is not a grid dimension");
    }
    bool explicit_next = in_.accept_word("next_op_id");
    if (explicit_next) p_.next_op_id = small_int("the next op id");
    while (in_.accept_word("buffer")) buffer();
    while (in_.accept_word("mbarrier")) mbarrier();
    ops(p_.body, 0);
    in_.expect("}");
    if (!in_.at_end()) in_.expected("end of input");
    // One past the largest id, as a 64-bit sum: an id of INT_MAX leaves next_op_id at
    // INT_MAX, which the verifier refuses.
    if (!explicit_next)
      p_.next_op_id = static_cast<int>(std::min<int64_t>(int64_t{max_op_id(p_.body)} + 1, INT_MAX));
    return std::move(p_);
  }

 private:
  int small_int(const char* what) {
    in_.skip_blanks();
    size_t where = in_.position();
    int64_t v = in_.integer(what);
    if (v < INT_MIN || v > INT_MAX) in_.error_at(where, std::string(what) + " does not fit in 32 bits");
    return static_cast<int>(v);
  }

  void buffer() {
    Buffer b;
    b.id = static_cast<int>(p_.buffers.size());
    in_.skip_blanks();
    size_t where = in_.position();
    b.name = in_.word("a buffer name");
    if (p_.find_buffer(b.name) >= 0) in_.error_at(where, "buffer " + b.name + " is declared twice");
    in_.expect(":");
    std::string space = in_.word("a memory space");
    bool known = false;
    for (Space s : kAllSpaces)
      if (space == space_name(s)) {
        b.space = s;
        known = true;
      }
    if (!known) in_.error_at(where, "unknown memory space '" + space + "'");
    b.dtype = in_.dtype();
    if (b.space == Space::Global) {
      in_.expect_word("tensor");
      b.tensor = tensor_index();
    } else {
      in_.expect("[");
      b.rows = in_.integer("a row count");
      in_.expect(",");
      b.cols = in_.integer("a column count");
      in_.expect("]");
      std::string layout = in_.word("a layout (row, colpanels, rowpanels)");
      known = false;
      for (Layout l : kAllLayouts)
        if (layout == layout_name(l)) {
          b.layout = l;
          known = true;
        }
      if (!known) in_.expected("a layout (row, colpanels, rowpanels)");
      in_.expect_word("panel");
      b.panel = in_.integer("a panel width");
      in_.expect_word("versions");
      b.versions = small_int("a version count");
    }
    p_.buffers.push_back(b);
  }

  void mbarrier() {
    MBarrier b;
    b.id = static_cast<int>(p_.mbarriers.size());
    in_.skip_blanks();
    size_t where = in_.position();
    b.name = in_.word("an mbarrier name");
    if (p_.find_mbarrier(b.name) >= 0 || p_.find_buffer(b.name) >= 0)
      in_.error_at(where, "mbarrier " + b.name + " is declared twice (or names a buffer)");
    in_.expect("[");
    b.slots = small_int("a slot count");
    in_.expect("]");
    p_.mbarriers.push_back(b);
  }

  // NAME or NAME@SLOT (no slot for `init`, which covers every slot).
  void mbar_ref(GroupOp& o, bool slot) {
    in_.skip_blanks();
    size_t where = in_.position();
    std::string name = in_.word("an mbarrier name");
    o.mbar = p_.find_mbarrier(name);
    if (o.mbar < 0) in_.error_at(where, "unknown mbarrier " + name);
    if (slot && in_.accept("@")) o.mbar_slot = in_.expr();
  }

  int tensor_index() {
    in_.skip_blanks();
    size_t where = in_.position();
    std::string name = in_.word("a tensor name");
    for (size_t i = 0; i < p_.tensors.size(); ++i)
      if (p_.tensors[i].name == name) return static_cast<int>(i);
    in_.error_at(where, "unknown tensor " + name);
  }

  int buffer_ref() {
    in_.skip_blanks();
    size_t where = in_.position();
    std::string name = in_.word("a buffer name");
    int id = p_.find_buffer(name);
    if (id < 0) in_.error_at(where, "unknown buffer " + name);
    return id;
  }

  BufferRef window() { return window_of(buffer_ref()); }

  // The rest of a window after its buffer name.
  BufferRef window_of(int buffer) {
    BufferRef r;
    r.buffer = buffer;
    if (in_.accept("@")) r.version = in_.expr();
    in_.expect("[");
    r.row = in_.expr();
    in_.expect(",");
    r.col = in_.expr();
    in_.expect("]");
    if (in_.accept_word("strides")) {
      in_.expect("(");
      r.row_stride = bound();
      in_.expect(",");
      r.col_stride = bound();
      in_.expect(")");
    }
    if (in_.accept_word("offset")) {
      in_.expect("(");
      r.offset = in_.expr();
      in_.expect(")");
    }
    return r;
  }

  void padding(GroupOp& o) {
    if (in_.accept_word("pad")) o.constant = in_.real("a padding value");
  }

  void extent(int64_t* rows, int64_t* cols) {
    *rows = in_.integer("a row count");
    in_.expect("x");
    *cols = in_.integer("a column count");
  }

  int axis() {
    in_.expect_word("axis");
    return small_int("an axis");
  }

  // After `reduce.OP #ID`: one of the three forms (group_text.h).
  void reduce(GroupOp& o) {
    int first = buffer_ref();
    if (in_.peek('@') || in_.peek('[')) {
      o.reduce_mode = ReduceMode::Partial;
      o.dst = window_of(first);
      in_.expect("<-");
      o.operands.push_back(operand());
      o.axis = axis();
      in_.expect_word("partial");
      if (!in_.at_line_end() && !in_.peek('}')) extent(&o.rows, &o.cols);
      return;
    }
    o.frag = first;
    if (in_.accept("=")) {
      o.reduce_mode = ReduceMode::Local;
      o.operands.push_back(operand());
      o.axis = axis();
      return;
    }
    in_.expect("<-");
    o.reduce_mode = ReduceMode::Combine;
    o.src = window();
    o.axis = axis();
    in_.expect_word("combine");
    extent(&o.rows, &o.cols);
  }

  // `add`, `cmp.lt`, `cast.bf16`: the op, then the suffix that some take.
  void ew_name(GroupOp& o) {
    in_.skip_blanks();
    size_t at = in_.position();
    std::string name = in_.word("an elementwise operation");
    std::string base = name.substr(0, name.find('.'));
    std::string suffix = name.size() > base.size() ? name.substr(base.size() + 1) : "";
    bool known = false;
    for (EwOp e : kAllEwOps)
      if (base == ew_op_name(e)) {
        o.ew = e;
        known = true;
      }
    if (!known) in_.error_at(at, "unknown elementwise operation '" + name + "'");
    bool suffixed = o.ew == EwOp::Cmp || o.ew == EwOp::Cast;
    if (suffixed == suffix.empty() || name.back() == '.')
      in_.error_at(at, suffixed ? "'" + name + "' needs a suffix: " + base +
                                      (o.ew == EwOp::Cmp ? ".eq|ne|lt|le|gt|ge" : ".f32|bf16|f16|f64")
                                : "'" + base + "' takes no suffix, found '" + name + "'");
    known = false;
    if (o.ew == EwOp::Cmp)
      for (CmpOp c : kAllCmps)
        if (suffix == cmp_word(c)) o.cmp = c, known = true;
    if (o.ew == EwOp::Cast)
      for (DType t : kAllDTypes)
        if (suffix == dtype_name(t)) o.dtype = t, known = true;
    if (suffixed && !known) in_.error_at(at, "unknown suffix '" + suffix + "' in '" + name + "'");
    if (o.ew == EwOp::Index) o.axis = axis();
  }

  Expr bound() { return in_.accept_word("_") ? nullptr : in_.expr(); }

  void guards(GroupOp& o) {
    while (in_.accept_word("guard")) {
      bool src = in_.accept_word("src");
      if (!src && !in_.accept_word("dst")) in_.expected("'src' or 'dst'");
      in_.expect("(");
      (src ? o.src_row_bound : o.dst_row_bound) = bound();
      in_.expect(",");
      (src ? o.src_col_bound : o.dst_col_bound) = bound();
      in_.expect(")");
    }
  }

  EwOperand operand() {
    EwOperand x;
    if (in_.accept("$")) {
      x.kind = EwOperand::Kind::Scalar;
      x.scalar = in_.word("a scalar parameter name");
    } else if (in_.accept("#")) {
      x.kind = EwOperand::Kind::Index;
      in_.expect("(");
      x.index = in_.expr();
      in_.expect(")");
    } else if (in_.peek_number()) {
      x.kind = EwOperand::Kind::Const;
      x.value = in_.real("a constant");
    } else {
      x.kind = EwOperand::Kind::Frag;
      x.frag = buffer_ref();
    }
    return x;
  }

  void ops(std::vector<GroupOp>& list, int depth) {
    if (depth > TextCursor::kMaxDepth)
      in_.error("bodies nested more than " + std::to_string(TextCursor::kMaxDepth) + " deep");
    while (!in_.peek('}')) {
      if (in_.at_end()) in_.expected("'}'");
      list.push_back(op(depth));
    }
  }

  GroupOp op(int depth) {
    GroupOp o;
    in_.skip_blanks();
    size_t where = in_.position();
    std::string kind = in_.word("an operation");
    bool known = false;
    for (GroupOpKind k : kAllKinds)
      if (kind == group_op_name(k)) {
        o.kind = k;
        known = true;
      }
    // reduce.sum, reduce.max, reduce.min
    for (ReduceOp r : kAllReduces)
      if (kind == std::string(group_op_name(GroupOpKind::Reduce)) + "." + reduce_op_name(r)) {
        o.kind = GroupOpKind::Reduce;
        o.reduce = r;
        known = true;
      }
    if (kind == group_op_name(GroupOpKind::Reduce)) known = false;  // needs its operation
    if (!known) in_.error_at(where, "unknown operation '" + kind + "'");
    in_.expect("#");
    o.id = small_int("an op id");
    switch (o.kind) {
      case GroupOpKind::Copy:
        o.src = window();
        in_.expect("->");
        o.dst = window();
        o.rows = in_.integer("a row count");
        in_.expect("x");
        o.cols = in_.integer("a column count");
        in_.expect_word("batch");
        o.batch = small_int("a batch size");
        o.async = in_.accept_word("async");
        padding(o);
        break;
      case GroupOpKind::AsyncWait:
      case GroupOpKind::MmaWait:
        in_.expect_word("pending");
        o.pending = small_int("a pending count");
        break;
      case GroupOpKind::FragFill:
        o.frag = buffer_ref();
        in_.expect("=");
        o.constant = in_.real("a constant");
        break;
      case GroupOpKind::FragLoad:
        o.frag = buffer_ref();
        in_.expect("<-");
        o.src = window();
        o.transpose = in_.accept_word("transpose");
        padding(o);
        break;
      case GroupOpKind::FragStore:
        o.dst = window();
        in_.expect("<-");
        o.frag = buffer_ref();
        break;
      case GroupOpKind::Mma:
        o.frag = buffer_ref();
        in_.expect("+=");
        o.a = window();
        in_.expect("*");
        o.b = window();
        o.m = in_.integer("m");
        in_.expect("x");
        o.n = in_.integer("n");
        in_.expect("x");
        o.k = in_.integer("k");
        if (in_.accept_word("valid")) {
          in_.expect("(");
          o.m_valid = bound();
          in_.expect(",");
          o.n_valid = bound();
          in_.expect(",");
          o.k_valid = bound();
          in_.expect(")");
        }
        o.async = in_.accept_word("async");
        break;
      case GroupOpKind::Elementwise: {
        o.frag = buffer_ref();
        in_.expect("=");
        ew_name(o);
        // Operands end their line: the next line starts with an op name.
        if (!in_.at_line_end()) {
          do o.operands.push_back(operand());
          while (in_.accept(","));
        }
        break;
      }
      case GroupOpKind::Reduce: reduce(o); break;
      case GroupOpKind::Call: o.callee = in_.word("a callee name"); break;
      case GroupOpKind::For:
        o.iv = in_.word("an induction variable");
        in_.expect("=");
        o.lo = in_.expr();
        in_.expect_word("to");
        o.hi = in_.expr();
        o.pipelined = in_.accept_word("pipelined");
        if (in_.accept_word("stages_from")) o.stage_base = in_.expr();
        o.bodies.resize(1);
        break;
      case GroupOpKind::If:
        o.cond = in_.cond();
        o.bodies.resize(2);
        break;
      case GroupOpKind::Ticket:
        o.iv = in_.word("a ticket symbol");
        in_.expect("=");
        o.hi = in_.expr();
        in_.expect_word("on");
        o.dst = window();
        break;
      case GroupOpKind::MbarInit:
        mbar_ref(o, false);
        in_.expect_word("count");
        o.mbar_count = in_.integer("an arrival count");
        break;
      case GroupOpKind::MbarArrive:
        mbar_ref(o, true);
        o.leader = in_.accept_word("leader");
        o.cluster_wide = in_.accept_word("cluster");
        break;
      case GroupOpKind::MbarExpectTx:
        mbar_ref(o, true);
        in_.expect_word("bytes");
        o.mbar_count = in_.integer("a transaction byte count");
        break;
      case GroupOpKind::MbarWait:
        mbar_ref(o, true);
        in_.expect_word("parity");
        o.parity = in_.expr();
        break;
      case GroupOpKind::Tma:
        o.src = window();
        in_.expect("->");
        o.dst = window();
        extent(&o.rows, &o.cols);
        in_.expect_word("mbar");
        mbar_ref(o, true);
        o.cluster_wide = in_.accept_word("multicast");
        break;
      case GroupOpKind::Roles:
        if (depth + 1 > TextCursor::kMaxDepth)
          in_.error("bodies nested more than " + std::to_string(TextCursor::kMaxDepth) + " deep");
        in_.expect("{");
        while (in_.accept_word("role")) {
          WorkerRole r;
          in_.expect_word("workers");
          r.first = small_int("a first worker");
          in_.expect_word("to");
          int end = small_int("a worker bound");
          r.count = static_cast<int>(std::clamp<int64_t>(int64_t{end} - r.first, INT_MIN, INT_MAX));
          if (in_.accept_word("regs")) r.regs = small_int("a register count");
          o.roles.push_back(r);
          o.bodies.emplace_back();
          in_.expect("{");
          ops(o.bodies.back(), depth + 2);
          in_.expect("}");
        }
        in_.expect("}");
        return o;
      default: break;
    }
    if (has_guards(o.kind)) guards(o);
    for (size_t i = 0; i < o.bodies.size(); ++i) {
      if (i) in_.expect_word("else");
      in_.expect("{");
      ops(o.bodies[i], depth + 1);
      in_.expect("}");
    }
    return o;
  }

  TextCursor in_;
  GroupProgram p_;
};

}  // namespace

std::string print_group_program(const GroupProgram& program) { return Printer(program).run(); }

GroupProgram parse_group_program(const std::string& text) { return Parser(text).run(); }

}  // namespace tessel
