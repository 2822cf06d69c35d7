#include "lower/lower.h"

#include <functional>
#include <map>
#include <set>
#include <string>

#include "tessel/error.h"

namespace tessel {
namespace {

// How an mma consumes a value; a value may also have other consumers.
struct Consumers {
  bool mma_a = false, mma_b = false, other = false;
};

// What a TileIR value became in GroupIR.
struct Lowered {
  enum class Kind { Frag, Scalar, Const, Index, Staged, Direct } kind = Kind::Const;
  int buffer = -1;     // Frag: private buffer; Staged: shared buffer
  BufferRef window;    // Direct: the tensor window an mma reads in place (Plan::direct)
  Expr row_bound, col_bound;  // Direct: the tensor's extents along the window's rows and columns
  std::string scalar;  // Scalar
  double value = 0;    // Const
  Expr index;          // Index
  int frag = -1;       // Staged: the fragment read from it, once other ops need it
};

Lowered frag_value(int buffer) {
  Lowered l;
  l.kind = Lowered::Kind::Frag;
  l.buffer = buffer;
  return l;
}

Lowered scalar_value(const std::string& name) {
  Lowered l;
  l.kind = Lowered::Kind::Scalar;
  l.scalar = name;
  return l;
}

// The whole of a shared or private buffer, version 0.
BufferRef origin(int buffer) {
  BufferRef r;
  r.buffer = buffer;
  r.row = expr_const(0);
  r.col = expr_const(0);
  return r;
}

constexpr int64_t kMaxBufferElems = int64_t{1} << 22;

[[noreturn]] void fail(ErrorKind kind, const TileOp& op, const std::string& message) {
  std::string where = op.loc.to_string();
  user_error(kind, (where.empty() ? "" : where + ": ") + std::string(tile_op_name(op.kind)) +
                       ": " + message);
}

void walk(const Region& region, const std::function<void(const TileOp&)>& visit) {
  for (const TileOp& op : region.ops) {
    visit(op);
    for (const Region& r : op.regions) walk(r, visit);
  }
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

EwOp ew_of(TileOpKind k) {
  static const std::map<TileOpKind, EwOp> map = {
      {TileOpKind::Add, EwOp::Add},     {TileOpKind::Sub, EwOp::Sub},
      {TileOpKind::Mul, EwOp::Mul},     {TileOpKind::Div, EwOp::Div},
      {TileOpKind::Max, EwOp::Max},     {TileOpKind::Min, EwOp::Min},
      {TileOpKind::Exp, EwOp::Exp},     {TileOpKind::Exp2, EwOp::Exp2},
      {TileOpKind::Log, EwOp::Log},     {TileOpKind::Neg, EwOp::Neg},
      {TileOpKind::Abs, EwOp::Abs},     {TileOpKind::Sqrt, EwOp::Sqrt},
      {TileOpKind::Rsqrt, EwOp::Rsqrt}, {TileOpKind::Recip, EwOp::Recip},
      {TileOpKind::Tanh, EwOp::Tanh},   {TileOpKind::Cmp, EwOp::Cmp},
      {TileOpKind::Select, EwOp::Select}, {TileOpKind::Cast, EwOp::Cast},
      {TileOpKind::Broadcast, EwOp::Copy}, {TileOpKind::Index, EwOp::Index}};
  auto it = map.find(k);
  TESSEL_ASSERT(it != map.end(), "not an elementwise op");
  return it->second;
}

// 1 when 0 <= c < n, else 0, as an index expression: a coordinate outside its
// extent multiplies a window's bounds by zero.
Expr in_range(const Expr& c, const Expr& n) {
  Expr below = expr_min(expr_max(n - c, expr_const(0)), expr_const(1));
  Expr above = expr_min(expr_max(c + 1, expr_const(0)), expr_const(1));
  return below * above;
}

class Lowering {
 public:
  Lowering(const TileKernel& kernel, const Plan& plan) : k_(kernel), plan_(plan) {}

  GroupProgram run() {
    bind_tile_params();
    analyze_consumers();
    p_.name = k_.name;
    p_.size_params = k_.size_params;
    p_.tensors = k_.tensors;
    for (TensorParam& t : p_.tensors) {  // extents may name tile sizes: the plan's values
      for (Expr& e : t.shape) e = bind(e);
      for (Expr& e : t.strides) e = bind(e);
    }
    p_.scalars = k_.scalars;
    p_.workers = plan_.workers;
    p_.worker_rows = plan_.worker_rows;
    p_.worker_cols = plan_.worker_cols;
    p_.atom_m = plan_.atom_m;
    p_.atom_n = plan_.atom_n;
    p_.atom = plan_.atom;
    p_.lanes = atom_lanes(plan_.atom);
    p_.frag_buffers = plan_.frag_buffers;
    for (size_t t = 0; t < k_.tensors.size(); ++t) {
      Buffer b;
      b.id = static_cast<int>(p_.buffers.size());
      b.name = k_.tensors[t].name;
      b.space = Space::Global;
      b.dtype = k_.tensors[t].dtype;
      b.tensor = static_cast<int>(t);
      p_.buffers.push_back(b);
    }
    const TileOp* parallel = nullptr;
    for (const TileOp& op : k_.body.ops) {
      if (op.kind == TileOpKind::ScalarParam) {
        lowered_[op.results[0]] = scalar_value(op.param);
      } else if (op.kind == TileOpKind::Parallel && !parallel) {
        parallel = &op;
      } else {
        fail(ErrorKind::Unsupported, op,
             "a kernel body holds scalar parameters and one parallel nest");
      }
    }
    if (!parallel)
      user_error(ErrorKind::Unsupported, "kernel " + k_.name + " has no parallel nest");
    if (parallel->loops.empty() || parallel->loops.size() > kMaxGridRank)
      fail(ErrorKind::Unsupported, *parallel, "a parallel nest has 1 to 3 loops");
    for (const LoopDim& d : parallel->loops) p_.grid.push_back(LoopDim{d.iv, bind(d.extent)});
    lower_region(parallel->regions[0], p_.body);
    return p_;
  }

 private:
  // ---- tile parameters -------------------------------------------------------
  void bind_tile_params() {
    for (const auto& [name, value] : plan_.tiles) {
      bool declared = false;
      for (const std::string& t : k_.tile_params) declared |= t == name;
      if (!declared)
        user_error(ErrorKind::Plan, "the plan binds tile parameter " + name + ", which kernel " +
                                        k_.name + " does not declare (its tile parameters: " +
                                        join_names(k_.tile_params) + ")");
    }
    for (const std::string& t : k_.tile_params)
      if (!plan_.tiles.count(t))
        user_error(ErrorKind::Plan, "tile parameter " + t + " of kernel " + k_.name +
                                        " is not bound by the plan (it binds: " +
                                        join_names(bound_names()) + ")");
  }

  std::vector<std::string> bound_names() const {
    std::vector<std::string> names;
    for (const auto& [name, value] : plan_.tiles) names.push_back(name);
    return names;
  }

  Expr bind(const Expr& e) const {
    if (!e) return e;
    return expr_substitute(e, [&](const std::string& name) -> Expr {
      auto it = plan_.tiles.find(name);
      return it == plan_.tiles.end() ? nullptr : expr_const(it->second);
    });
  }

  int64_t static_extent(const TileOp& op, const Expr& e) const {
    int64_t v = 0;
    if (!expr_is_const(bind(e), &v) || v <= 0)
      fail(ErrorKind::Plan, op, "tile extent " + expr_to_string(e) +
                                    " must be a positive constant once the plan binds it");
    return v;
  }

  // ---- consumers ---------------------------------------------------------------
  // A load inside a pipelined loop is staged, so that the pipeline pass can issue it
  // iterations ahead; not when the loop body stores the same tensor, since a load
  // issued ahead would read it before an earlier iteration's store (feedback through
  // global memory). Such a load stays a plain fragment load, in program order.
  void analyze_consumers() {
    std::function<void(const Region&, bool, const std::set<std::string>&)> visit =
        [&](const Region& r, bool pipelined, const std::set<std::string>& stored) {
      for (const TileOp& op : r.ops) {
        if (op.kind == TileOpKind::Mma) {
          consumers_[op.operands[0]].mma_a = true;
          consumers_[op.operands[1]].mma_b = true;
          consumers_[op.operands[2]].other = true;
        } else {
          for (int v : op.operands) consumers_[v].other = true;
        }
        for (int v : op.operands) ++uses_[v];
        if (op.kind == TileOpKind::Load && pipelined && !stored.count(op.param))
          in_pipeline_.insert(op.results[0]);
        bool inner = pipelined || op.kind == TileOpKind::Pipeline;
        std::set<std::string> inner_stored = stored;
        if (op.kind == TileOpKind::Pipeline)
          for (const Region& sub : op.regions)
            walk(sub, [&](const TileOp& o) {
              if (o.kind == TileOpKind::Store) inner_stored.insert(o.param);
            });
        for (const Region& sub : op.regions) visit(sub, inner, inner_stored);
      }
    };
    visit(k_.body, false, {});
    // A loop's carried value is consumed by the loop body's uses of its argument.
  }

  // ---- buffers and ops ---------------------------------------------------------
  int tensor_buffer(const TileOp& op) const {
    int b = p_.find_buffer(op.param);
    if (b < 0 || p_.buffers[b].space != Space::Global)
      fail(ErrorKind::Verify, op, "unknown tensor " + op.param);
    return b;
  }

  const TensorParam& tensor_of(int buffer) const { return p_.tensors[p_.buffers[buffer].tensor]; }

  int new_buffer(const TileOp& op, const std::string& base, Space space, int64_t rows,
                 int64_t cols) {
    if (rows > kMaxBufferElems / cols)
      fail(ErrorKind::Plan, op, "a " + std::to_string(rows) + "x" + std::to_string(cols) +
                                    " tile does not fit: a buffer may hold at most " +
                                    std::to_string(kMaxBufferElems) + " elements");
    Buffer b;
    b.id = static_cast<int>(p_.buffers.size());
    b.name = base;
    for (int n = 1; p_.find_buffer(b.name) >= 0; ++n) b.name = base + std::to_string(n);
    b.space = space;
    b.rows = rows;
    b.cols = cols;
    p_.buffers.push_back(b);
    return b.id;
  }

  // A shared buffer for an mma's b operand: column panels of the atom's width, in
  // whole panels (a tile narrower than a multiple of the panel leaves columns past
  // its edge that nothing writes; the mma reads only its n columns of them).
  int new_b_panels(const TileOp& op, const std::string& base, int64_t rows, int64_t cols, DType dtype) {
    // The copy engine fills 128-byte lines (a 128-byte-swizzled box per panel), so
    // an fma atom's B staged by tma comes in panels of one line.
    const int64_t line = 128 / dtype_bytes(dtype);
    const int64_t panel = plan_.tma && plan_.atom == AtomKind::Fma ? line : plan_.atom_n;
    int s = new_buffer(op, base, Space::Shared, rows, (cols + panel - 1) / panel * panel);
    p_.buffers[s].layout = Layout::ColPanels;
    p_.buffers[s].panel = panel;
    return s;
  }

  // The b operand of an mma.sync, staged from a source whose rows are its unit
  // stride (a transposed view such as K^T): row panels of 8, so that 8 consecutive
  // rows of one column are 16 contiguous bytes (16-bit) both in the tensor and in
  // shared memory. The copy moves them as whole vectors (asynchronously when
  // pipelined) and the atom reads them with a plain ldmatrix; column panels would
  // need an element-by-element transpose on the way in.
  //
  // The wgmma atom reads an fp32 (tf32) b operand only K-major, so takes such a
  // source as one row panel as tall as the tile's k extent, each column's k values
  // one 128-byte line.
  bool wants_b_row_panels(const BufferRef& src, int64_t rows, DType dtype) const {
    int64_t unit = 0;
    const bool rows_unit = expr_is_const(src.row_stride, &unit) && unit == 1 &&
                           !(expr_is_const(src.col_stride, &unit) && unit == 1);
    if (plan_.atom == AtomKind::Wgmma) return rows_unit && dtype == DType::F32 && rows == 128 / dtype_bytes(dtype);
    return plan_.atom == AtomKind::MmaSync && rows % kBRowPanel == 0 && rows_unit;
  }
  static constexpr int64_t kBRowPanel = 8;
  int new_b_row_panels(const TileOp& op, const std::string& base, int64_t rows, int64_t cols) {
    int s = new_buffer(op, base, Space::Shared, rows, cols);
    p_.buffers[s].layout = Layout::RowPanels;
    p_.buffers[s].panel = plan_.atom == AtomKind::Wgmma ? rows : kBRowPanel;
    return s;
  }

  GroupOp new_op(GroupOpKind kind) {
    GroupOp g;
    g.kind = kind;
    g.id = p_.new_op_id();
    return g;
  }

  void fence(std::vector<GroupOp>& out) { out.push_back(new_op(GroupOpKind::Fence)); }

  // A private fragment: extents > 1 split evenly over the worker grid, extent 1
  // replicated (frag_part), so the grid must divide every extent > 1.
  // Fragments hold fp32 (bf16 and f16 tiles compute in it) or, for an f64 tile, f64.
  int new_frag_sized(const TileOp& op, int64_t rows, int64_t cols, DType dtype) {
    if ((rows > 1 && rows % plan_.worker_rows) || (cols > 1 && cols % plan_.worker_cols))
      fail(ErrorKind::Plan, op, "a " + std::to_string(rows) + "x" + std::to_string(cols) +
                                    " tile does not divide over the worker grid " +
                                    std::to_string(plan_.worker_rows) + "x" +
                                    std::to_string(plan_.worker_cols));
    int f = new_buffer(op, "f", Space::Private, rows, cols);
    p_.buffers[f].dtype = frag_dtype(dtype);
    return f;
  }
  static DType frag_dtype(DType tile) { return tile == DType::F64 ? DType::F64 : DType::F32; }

  // A computed scalar is a 1x1 fragment: replicated on every worker, it broadcasts
  // over any tile like a scalar parameter does.
  int new_frag(const TileOp& op, const TileType& type) {
    if (type.is_scalar()) return new_frag_sized(op, 1, 1, type.dtype);
    return new_frag_sized(op, static_extent(op, type.shape[0]), static_extent(op, type.shape[1]), type.dtype);
  }

  const Lowered& lowered(const TileOp& op, int value) const {
    auto it = lowered_.find(value);
    if (it == lowered_.end()) fail(ErrorKind::Verify, op, "use of an undefined value");
    return it->second;
  }

  EwOperand operand(const TileOp& op, int value) const {
    const Lowered& l = lowered(op, value);
    EwOperand o;
    switch (l.kind) {
      case Lowered::Kind::Frag: o.kind = EwOperand::Kind::Frag; o.frag = l.buffer; break;
      case Lowered::Kind::Scalar: o.kind = EwOperand::Kind::Scalar; o.scalar = l.scalar; break;
      case Lowered::Kind::Const: o.kind = EwOperand::Kind::Const; o.value = l.value; break;
      case Lowered::Kind::Index: o.kind = EwOperand::Kind::Index; o.index = l.index; break;
      case Lowered::Kind::Staged: o.kind = EwOperand::Kind::Frag; o.frag = staged_frag(op, value); break;
      case Lowered::Kind::Direct: TESSEL_ASSERT(false, "a tile read in place feeds only mmas"); break;
    }
    return o;
  }

  // The fragment of a staged tile that other ops read (lower_load made it).
  int staged_frag(const TileOp& op, int value) const {
    const Lowered& l = lowered(op, value);
    TESSEL_ASSERT(l.frag >= 0, "a staged tile read by a non-mma op has no fragment");
    return l.frag;
  }

  // The fragment holding `value`, materialized if it is a constant or scalar.
  int frag_of(const TileOp& op, int value, std::vector<GroupOp>& out, const TileType& type) {
    EwOperand o = operand(op, value);
    if (o.kind == EwOperand::Kind::Frag) return o.frag;
    int f = new_frag(op, type);
    GroupOp g = new_op(GroupOpKind::Elementwise);
    g.frag = f;
    g.ew = EwOp::Copy;
    g.operands = {o};
    out.push_back(g);
    return f;
  }

  void copy_frag(int dst, int src, std::vector<GroupOp>& out) {
    GroupOp g = new_op(GroupOpKind::Elementwise);
    g.frag = dst;
    g.ew = EwOp::Copy;
    EwOperand o;
    o.kind = EwOperand::Kind::Frag;
    o.frag = src;
    g.operands = {o};
    out.push_back(g);
  }

  // A fragment the op may update in place: a copy unless the value dies here (its
  // only use, defined in the region being lowered: a value from an enclosing region
  // is read again on the next trip of an outer loop).
  int owned_frag(const TileOp& op, int value, std::vector<GroupOp>& out) {
    const TileType& type = k_.values.at(value).type;
    int f = frag_of(op, value, out, type);
    auto def = defined_in_.find(value);
    bool dies = uses_[value] <= 1 && def != defined_in_.end() && def->second == region_;
    if (dies && lowered(op, value).kind == Lowered::Kind::Frag) return f;
    int copy = new_frag(op, type);
    copy_frag(copy, f, out);
    return copy;
  }

  // An elementwise op writes into an operand's fragment when that value dies here:
  // this op is its only use, and it was defined in the region being lowered (a
  // value from an enclosing region is read again on the next trip of a loop in
  // between). Each element is read before it is written, so aliasing is safe; an
  // operand that broadcasts is smaller than the result and never qualifies.
  int in_place_frag(const TileOp& op) const {
    const TileType& type = k_.values.at(op.results[0]).type;
    for (int v : op.operands) {
      auto it = lowered_.find(v);
      if (it == lowered_.end() || it->second.kind != Lowered::Kind::Frag) continue;
      auto use = uses_.find(v);
      auto def = defined_in_.find(v);
      if (use == uses_.end() || use->second != 1 || def == defined_in_.end() || def->second != region_)
        continue;
      const Buffer& f = p_.buffer(it->second.buffer);
      int64_t rows = type.is_scalar() ? 1 : static_extent(op, type.shape[0]);
      int64_t cols = type.is_scalar() ? 1 : static_extent(op, type.shape[1]);
      if (f.rows == rows && f.cols == cols && f.dtype == frag_dtype(type.dtype)) return f.id;
    }
    return -1;
  }

  static bool touches_shared(const GroupProgram& p, const GroupOp& g) {
    auto shared = [&](const BufferRef& r) {
      return r.buffer >= 0 && p.buffer(r.buffer).space == Space::Shared;
    };
    switch (g.kind) {
      case GroupOpKind::Copy: return shared(g.src) || shared(g.dst);
      case GroupOpKind::FragLoad: return shared(g.src);
      case GroupOpKind::FragStore: return shared(g.dst);
      case GroupOpKind::Reduce: return shared(g.src) || shared(g.dst);
      case GroupOpKind::Mma: return true;
      case GroupOpKind::For:
      case GroupOpKind::If:
        for (const auto& body : g.bodies)
          for (const GroupOp& inner : body)
            if (touches_shared(p, inner)) return true;
        return false;
      default: return false;
    }
  }

  // ---- regions -------------------------------------------------------------------
  void lower_region(const Region& region, std::vector<GroupOp>& out) {
    const Region* outer = region_;
    region_ = &region;
    for (int a : region.args) defined_in_[a] = &region;
    for (const TileOp& op : region.ops) {
      size_t first = out.size();
      lower_op(op, out);
      region_ = &region;  // nested regions set it while they lower
      for (int r : op.results) defined_in_[r] = &region;
      // Every op that touched shared memory is followed by a fence; ops that put one
      // in the middle (partial -> fence -> combine) still end with one.
      bool shared = false;
      for (size_t i = first; i < out.size(); ++i) shared |= touches_shared(p_, out[i]);
      if (shared && !(out.size() > first && out.back().kind == GroupOpKind::Fence)) fence(out);
    }
    region_ = outer;
  }

  void lower_op(const TileOp& op, std::vector<GroupOp>& out) {
    switch (op.kind) {
      case TileOpKind::ScalarParam:
        lowered_[op.results[0]] = scalar_value(op.param);
        return;
      case TileOpKind::Const: return lower_const(op, out);
      case TileOpKind::Load: return lower_load(op, out);
      case TileOpKind::Store: return lower_store(op, out);
      case TileOpKind::Mma: return lower_mma(op, out);
      case TileOpKind::Reduce: return lower_reduce(op, out);
      case TileOpKind::Transpose: return lower_transpose(op, out);
      case TileOpKind::Serial:
      case TileOpKind::Pipeline: return lower_loop(op, out);
      case TileOpKind::If: return lower_if(op, out);
      case TileOpKind::Barrier: out.push_back(new_op(GroupOpKind::Barrier)); return;
      case TileOpKind::Ticket: return lower_ticket(op, out);
      case TileOpKind::Parallel:
        fail(ErrorKind::Unsupported, op, "nested parallel nests are not supported");
      case TileOpKind::Yield: return;  // consumed by the enclosing op
      default: break;
    }
    TESSEL_ASSERT(is_elementwise(op.kind), "unhandled TileIR op kind");
    lower_elementwise(op, out);
  }

  void lower_const(const TileOp& op, std::vector<GroupOp>& out) {
    const TileType& type = k_.values.at(op.results[0]).type;
    Lowered l;
    if (op.index_value) {
      l.kind = Lowered::Kind::Index;
      l.index = bind(op.index_value);
    } else {
      l.kind = Lowered::Kind::Const;
      l.value = op.constant;
    }
    if (type.is_scalar()) {
      lowered_[op.results[0]] = l;
      return;
    }
    GroupOp g = new_op(GroupOpKind::Elementwise);
    g.frag = new_frag(op, type);
    if (l.kind == Lowered::Kind::Const) {
      g.kind = GroupOpKind::FragFill;
      g.constant = op.constant;
    } else {
      g.ew = EwOp::Copy;
      EwOperand o;
      o.kind = EwOperand::Kind::Index;
      o.index = l.index;
      g.operands = {o};
    }
    out.push_back(g);
    lowered_[op.results[0]] = frag_value(g.frag);
  }

  void lower_elementwise(const TileOp& op, std::vector<GroupOp>& out) {
    GroupOp g = new_op(GroupOpKind::Elementwise);
    g.ew = ew_of(op.kind);
    g.cmp = op.cmp;
    g.axis = op.axis;
    g.dtype = k_.values.at(op.results[0]).type.dtype;
    for (int v : op.operands) g.operands.push_back(operand(op, v));
    g.frag = in_place_frag(op);
    if (g.frag < 0) g.frag = new_frag(op, k_.values.at(op.results[0]).type);
    out.push_back(g);
    lowered_[op.results[0]] = frag_value(g.frag);
  }

  // The global window of a load or store: the two tensor dimensions the tile spans
  // give its position, strides and bounds; the other coordinates fold into the
  // offset and, when outside their extents, empty the bounds.
  struct GlobalWindow {
    BufferRef ref;
    Expr row_bound, col_bound;
  };
  // `rows`, `cols`: the window's static extents, where known (0: not); a dimension
  // the window provably lies inside, constant coordinate and extent, gets no bound.
  GlobalWindow global_window(const TileOp& op, int64_t rows = 0, int64_t cols = 0) const {
    int t = tensor_buffer(op);
    const TensorParam& tensor = tensor_of(t);
    if (static_cast<int>(op.coords.size()) != tensor.rank())
      fail(ErrorKind::Verify, op, "tensor " + tensor.name + " has rank " +
                                      std::to_string(tensor.rank()) + " but " +
                                      std::to_string(op.coords.size()) + " coordinates");
    GlobalWindow w;
    w.ref.buffer = t;
    w.ref.row = expr_const(0);
    w.ref.col = expr_const(0);
    w.ref.row_stride = expr_const(0);
    w.ref.col_stride = expr_const(0);
    w.row_bound = expr_const(1);
    w.col_bound = expr_const(1);
    Expr offset, valid;
    bool inside_rows = false, inside_cols = false;
    for (int d = 0; d < tensor.rank(); ++d) {
      Expr c = bind(op.coords[d]);
      if (d == op.dims[0] || d == op.dims[1]) {
        bool row = d == op.dims[0];
        (row ? w.ref.row : w.ref.col) = c;
        (row ? w.ref.row_stride : w.ref.col_stride) = tensor.strides[d];
        (row ? w.row_bound : w.col_bound) = tensor.shape[d];
        int64_t at = 0, size = 0;
        if (expr_is_const(c, &at) && expr_is_const(tensor.shape[d], &size) && at >= 0 &&
            at + (row ? rows : cols) <= size && (row ? rows : cols) > 0)
          (row ? inside_rows : inside_cols) = true;
        continue;
      }
      int64_t cv = -1;
      if (expr_is_const(c, &cv) && cv == 0) continue;
      offset = offset ? offset + c * tensor.strides[d] : c * tensor.strides[d];
      if (grid_spans(c, tensor.shape[d]) || clamped_into(c, tensor.shape[d])) continue;  // always inside
      valid = valid ? valid * in_range(c, tensor.shape[d]) : in_range(c, tensor.shape[d]);
    }
    w.ref.offset = offset;
    if (valid) {
      w.row_bound = w.row_bound * valid;
    } else {
      if (inside_rows) w.row_bound = nullptr;
      if (inside_cols) w.col_bound = nullptr;
    }
    return w;
  }

  // True when `c` is clamped into [0, extent): min(max(x, 0), extent - 1).
  static bool clamped_into(const Expr& c, const Expr& extent) {
    int64_t zero = -1;
    return c->kind == ExprKind::Min && c->lhs->kind == ExprKind::Max && expr_is_const(c->lhs->rhs, &zero) &&
           zero == 0 && expr_equal(c->rhs, extent - expr_const(1));
  }

  // True when `c` is a grid coordinate whose extent is `extent`: it lies in [0, extent).
  bool grid_spans(const Expr& c, const Expr& extent) const {
    if (!c || c->kind != ExprKind::Sym) return false;
    for (const LoopDim& d : p_.grid)
      if (d.iv == c->name && expr_equal(d.extent, extent)) return true;
    return false;
  }

  void lower_load(const TileOp& op, std::vector<GroupOp>& out) {
    int t = tensor_buffer(op);
    const TileType& type = k_.values.at(op.results[0]).type;
    const TensorParam& tensor = tensor_of(t);
    if (stored_.count(t)) fence(out);  // the group's own earlier stores must land first
    GlobalWindow w = global_window(op);
    const Consumers& c = consumers_[op.results[0]];
    bool staged = c.mma_a || c.mma_b || in_pipeline_.count(op.results[0]);
    int64_t rows = static_extent(op, type.shape[0]), cols = static_extent(op, type.shape[1]);
    if (!staged) {
      const GlobalWindow fw = global_window(op, rows, cols);
      GroupOp g = new_op(GroupOpKind::FragLoad);
      g.frag = new_frag_sized(op, rows, cols, type.dtype);
      g.src = fw.ref;
      g.src_row_bound = fw.row_bound;
      g.src_col_bound = fw.col_bound;
      g.constant = op.constant;
      out.push_back(g);
      loaded_[t].push_back(g);
      lowered_[op.results[0]] = frag_value(g.frag);
      return;
    }
    if (c.mma_a && c.mma_b)
      fail(ErrorKind::Unsupported, op, "one loaded tile feeds an mma as both its a and its b operand");
    int64_t unit = 0;
    if (plan_.direct && !c.other && op.constant == 0 && expr_is_const(w.ref.col_stride, &unit) && unit == 1) {
      // Plan::direct: the mma reads the tensor in place, only inside its extents
      // (the mma's valid part, lower_mma), which is what zero padding gives. Only a
      // tile with contiguous rows: another (a transposed view) is staged as before.
      Lowered l;
      l.kind = Lowered::Kind::Direct;
      l.window = w.ref;
      l.row_bound = w.row_bound;
      l.col_bound = w.col_bound;
      lowered_[op.results[0]] = l;
      read_in_place_.insert(t);
      return;
    }
    int s = !c.mma_b                         ? new_buffer(op, tensor.name + "s", Space::Shared, rows, cols)
            : wants_b_row_panels(w.ref, rows, tensor.dtype) ? new_b_row_panels(op, tensor.name + "s", rows, cols)
                                              : new_b_panels(op, tensor.name + "s", rows, cols, tensor.dtype);
    p_.buffers[s].dtype = tensor.dtype;  // staged as stored: the atom reads it
    GroupOp g = new_op(GroupOpKind::Copy);
    g.src = w.ref;
    g.dst = origin(s);
    g.src_row_bound = w.row_bound;
    g.src_col_bound = w.col_bound;
    g.constant = op.constant;
    g.rows = rows;
    g.cols = cols;
    g.batch = plan_.copy_batch;
    out.push_back(g);
    loaded_[t].push_back(g);
    staging_copy_[s] = g;
    Lowered l;
    l.kind = Lowered::Kind::Staged;
    l.buffer = s;
    if (c.other) {
      // Other consumers read the staged tile into a fragment once it has landed.
      fence(out);
      GroupOp f = new_op(GroupOpKind::FragLoad);
      f.frag = new_frag_sized(op, rows, cols, type.dtype);
      f.src = origin(s);
      out.push_back(f);
      l.frag = f.frag;
    }
    lowered_[op.results[0]] = l;
  }

  void lower_store(const TileOp& op, std::vector<GroupOp>& out) {
    const TileType& type = k_.values.at(op.operands[0]).type;
    int src = frag_of(op, op.operands[0], out, type);
    const bool scalar = type.is_scalar();
    GlobalWindow w = global_window(op, scalar ? 1 : static_extent(op, type.shape[0]),
                                   scalar ? 1 : static_extent(op, type.shape[1]));
    GroupOp g = new_op(GroupOpKind::FragStore);
    g.frag = src;
    g.dst = w.ref;
    g.dst_row_bound = w.row_bound;
    g.dst_col_bound = w.col_bound;
    // Another worker may still read (a replica of a vector, a tile of another shape
    // or place) what this store overwrites: a fence, unless every earlier access
    // of the tensor moved this very window with this fragment's distribution, so
    // that each element was read by the worker that now writes it.
    bool same_owner = true;
    for (const GroupOp& earlier : loaded_[w.ref.buffer]) same_owner &= same_elements_per_worker(earlier, g);
    if (!same_owner || stored_.count(w.ref.buffer) || read_in_place_.count(w.ref.buffer)) fence(out);
    out.push_back(g);
    stored_.insert(w.ref.buffer);
  }

  // True when `a` (a frag.load or a copy) and the frag.store `b` touch the same
  // global elements through the same worker: one window, one unreplicated fragment
  // shape (a copy spreads elements by its batch, not by fragment parts: never).
  bool same_elements_per_worker(const GroupOp& a, const GroupOp& b) const {
    if (a.kind != GroupOpKind::FragLoad) return false;
    const Buffer& fa = p_.buffer(a.frag);
    const Buffer& fb = p_.buffer(b.frag);
    bool replicated = (fb.rows == 1 && plan_.worker_rows > 1) || (fb.cols == 1 && plan_.worker_cols > 1);
    auto same = [](const Expr& x, const Expr& y) { return (!x && !y) || (x && y && expr_equal(x, y)); };
    return !replicated && fa.rows == fb.rows && fa.cols == fb.cols && same(a.src.row, b.dst.row) &&
           same(a.src.col, b.dst.col) && same(a.src.offset, b.dst.offset) &&
           same(a.src.row_stride, b.dst.row_stride) && same(a.src.col_stride, b.dst.col_stride);
  }

  // An mma operand: a staged load as it is; a computed tile stored into a fresh
  // shared buffer laid out for the atom, or, where the atom can take it from
  // registers (a_in_registers), the fragment itself.
  int mma_operand(const TileOp& op, int value, bool is_b, int acc, std::vector<GroupOp>& out) {
    const Lowered& l = lowered(op, value);
    if (l.kind == Lowered::Kind::Staged) return l.buffer;
    const TileType& type = k_.values.at(value).type;
    int f = frag_of(op, value, out, type);
    const Buffer& frag = p_.buffer(f);
    if (!is_b && f != acc && a_in_registers(frag, type.dtype) && type.dtype == staged_dtype(op, op.operands[1]))
      return f;
    int s = is_b ? new_b_panels(op, "Bs", frag.rows, frag.cols, type.dtype)
                 : new_buffer(op, "As", Space::Shared, frag.rows, frag.cols);
    // A tile cast to a 16-bit dtype is stored as one: the atom reads it like a
    // staged 16-bit operand (the store rounds, as the cast did).
    if (type.dtype == DType::BF16 || type.dtype == DType::F16) p_.buffers[s].dtype = type.dtype;
    GroupOp g = new_op(GroupOpKind::FragStore);
    g.frag = f;
    g.dst = origin(s);
    out.push_back(g);
    fence(out);
    return s;
  }

  // The dtype an mma operand is staged in: a loaded tile's tensor's, another's own.
  DType staged_dtype(const TileOp& op, int value) {
    const Lowered& l = lowered(op, value);
    if (l.kind == Lowered::Kind::Staged) return p_.buffer(l.buffer).dtype;
    return k_.values.at(value).type.dtype;
  }

  // mma.sync takes a computed 16-bit a operand from registers: the m16n8
  // accumulator layout of two adjacent 8-column tiles holds, per lane, what the
  // m16n8k16 a operand needs of one 16-wide k step, so no shared buffer, store or
  // fences are needed. A warp must hold whole rows of the operand (a worker grid
  // of one column) in whole 16 x 16 blocks, and b must be staged in the same dtype.
  bool a_in_registers(const Buffer& frag, DType dtype) const {
    return plan_.atom == AtomKind::MmaSync && plan_.worker_cols == 1 &&
           (dtype == DType::BF16 || dtype == DType::F16) && frag.cols % 16 == 0 &&
           frag.rows % plan_.worker_rows == 0 && (frag.rows / plan_.worker_rows) % 16 == 0;
  }

  void lower_mma(const TileOp& op, std::vector<GroupOp>& out) {
    int acc = owned_frag(op, op.operands[2], out);
    const Buffer& accb = p_.buffer(acc);
    // An extent of 1 is replicated, not split: every worker holds it whole.
    int64_t part_m = accb.rows > 1 ? accb.rows / plan_.worker_rows : accb.rows;
    int64_t part_n = accb.cols > 1 ? accb.cols / plan_.worker_cols : accb.cols;
    // The warp atoms need whole blocks; the fma atom takes any part (group_verify.cpp).
    const int64_t atom_n = mma_part_columns(plan_.atom, plan_.atom_n);
    if (plan_.atom != AtomKind::Fma && (part_m % plan_.atom_m || part_n % atom_n))
      fail(ErrorKind::Plan, op, "a worker's accumulator part " + std::to_string(part_m) + "x" +
                                    std::to_string(part_n) + " is not a multiple of the atom " +
                                    std::to_string(plan_.atom_m) + "x" + std::to_string(atom_n));
    const Lowered la = lowered(op, op.operands[0]), lb = lowered(op, op.operands[1]);
    const bool a_direct = la.kind == Lowered::Kind::Direct, b_direct = lb.kind == Lowered::Kind::Direct;
    if ((a_direct || b_direct) && plan_.target == TargetKind::Cuda)
      fail(ErrorKind::Plan, op, "mma operands read in place (plan direct) run on the cpu and sim targets");
    GroupOp g = new_op(GroupOpKind::Mma);
    g.frag = acc;
    g.a = a_direct ? la.window : origin(mma_operand(op, op.operands[0], false, acc, out));
    g.b = b_direct ? lb.window : origin(mma_operand(op, op.operands[1], true, acc, out));
    g.m = p_.buffer(acc).rows;
    g.k = static_extent(op, k_.values.at(op.operands[0]).type.shape[1]);
    g.n = p_.buffer(acc).cols;  // b's buffer may be wider: whole panels
    set_valid_extents(g);
    // A tensor read in place: only its valid part is read, in k too.
    auto extent = [](int64_t full, const Expr& bound, const Expr& origin) {
      return expr_min(expr_const(full), bound - origin);
    };
    Expr ka, kb;
    if (a_direct) {
      g.m_valid = extent(g.m, la.row_bound, la.window.row);
      ka = extent(g.k, la.col_bound, la.window.col);
    }
    if (b_direct) {
      g.n_valid = extent(g.n, lb.col_bound, lb.window.col);
      kb = extent(g.k, lb.row_bound, lb.window.row);
    }
    if (ka || kb) {
      Expr k = ka && kb && !expr_equal(ka, kb) ? expr_min(ka, kb) : (ka ? ka : kb);
      g.k_valid = g.k_valid && !expr_equal(g.k_valid, k) ? expr_min(g.k_valid, k) : k;
    }
    out.push_back(g);
    lowered_[op.results[0]] = frag_value(acc);
  }

  // Where the staging copies hit the tensors' edges with zero padding, the mma skips
  // what is only zeros: a ragged tile costs its data, not the whole tile. Rows of a
  // beyond the edge add nothing to the accumulator's rows (m_valid), columns of b
  // nothing to its columns (n_valid), and one zero-padded operand suffices for k.
  // Other padding takes part like data: the accumulator's rows and columns outside
  // the tensor are not stored, but a reduction or a transpose may read them.
  // Operands computed in the kernel hold data everywhere.
  void set_valid_extents(GroupOp& mma) const {
    auto extent = [](int64_t full, const Expr& bound, const Expr& origin) -> Expr {
      return bound ? expr_min(expr_const(full), bound - origin) : nullptr;
    };
    auto a = staging_copy_.find(mma.a.buffer);
    auto b = staging_copy_.find(mma.b.buffer);
    bool a_zero = a != staging_copy_.end() && a->second.constant == 0;
    bool b_zero = b != staging_copy_.end() && b->second.constant == 0;
    if (a_zero) mma.m_valid = extent(mma.m, a->second.src_row_bound, a->second.src.row);
    if (b_zero) mma.n_valid = extent(mma.n, b->second.src_col_bound, b->second.src.col);
    Expr ka = a_zero ? extent(mma.k, a->second.src_col_bound, a->second.src.col) : nullptr;
    Expr kb = b_zero ? extent(mma.k, b->second.src_row_bound, b->second.src.row) : nullptr;
    mma.k_valid = ka && kb && !expr_equal(ka, kb) ? expr_min(ka, kb) : (ka ? ka : kb);
  }

  void lower_reduce(const TileOp& op, std::vector<GroupOp>& out) {
    int src = frag_of(op, op.operands[0], out, k_.values.at(op.operands[0]).type);
    // By value: new buffers below may move p_.buffers.
    const int64_t src_rows = p_.buffer(src).rows, src_cols = p_.buffer(src).cols;
    int axis = op.axis;
    if (axis != 0 && axis != 1) fail(ErrorKind::Verify, op, "reduce axis must be 0 or 1");
    int64_t extent = axis == 1 ? src_cols : src_rows;
    int split = axis == 1 ? plan_.worker_cols : plan_.worker_rows;
    int dst = new_frag(op, k_.values.at(op.results[0]).type);
    lowered_[op.results[0]] = frag_value(dst);
    EwOperand o;
    o.kind = EwOperand::Kind::Frag;
    o.frag = src;
    GroupOp g = new_op(GroupOpKind::Reduce);
    g.reduce = op.reduce;
    g.axis = axis;
    if (extent == 1 || split == 1) {
      g.reduce_mode = ReduceMode::Local;
      g.frag = dst;
      g.operands = {o};
      out.push_back(g);
      return;
    }
    // Partials of the workers along the axis meet in scratch: R x S (axis 1) or
    // S x C (axis 0).
    int64_t rows = axis == 1 ? src_rows : split, cols = axis == 1 ? split : src_cols;
    int scratch = new_buffer(op, "Rs", Space::Shared, rows, cols);
    g.reduce_mode = ReduceMode::Partial;
    g.operands = {o};
    g.dst = origin(scratch);
    out.push_back(g);
    fence(out);
    GroupOp c = new_op(GroupOpKind::Reduce);
    c.reduce = op.reduce;
    c.axis = axis;
    c.reduce_mode = ReduceMode::Combine;
    c.frag = dst;
    c.src = origin(scratch);
    c.rows = rows;
    c.cols = cols;
    out.push_back(c);
  }

  void lower_transpose(const TileOp& op, std::vector<GroupOp>& out) {
    int src = frag_of(op, op.operands[0], out, k_.values.at(op.operands[0]).type);
    const Buffer& s = p_.buffer(src);
    int scratch = new_buffer(op, "Ts", Space::Shared, s.rows, s.cols);
    GroupOp st = new_op(GroupOpKind::FragStore);
    st.frag = src;
    st.dst = origin(scratch);
    out.push_back(st);
    fence(out);
    GroupOp ld = new_op(GroupOpKind::FragLoad);
    ld.frag = new_frag(op, k_.values.at(op.results[0]).type);
    ld.src = origin(scratch);
    ld.transpose = true;
    out.push_back(ld);
    lowered_[op.results[0]] = frag_value(ld.frag);
  }

  // Each carried value lives in one fragment for the whole loop.
  void lower_loop(const TileOp& op, std::vector<GroupOp>& out) {
    if (op.regions.size() != 1 || op.loops.size() != 1)
      fail(ErrorKind::Verify, op, "a loop has one dimension and one region");
    const Region& body = op.regions[0];
    size_t n = op.operands.size();
    bool yields = !body.ops.empty() && body.ops.back().kind == TileOpKind::Yield;
    if ((n > 0 && !yields) || (yields && body.ops.back().operands.size() != n) ||
        body.args.size() != n || op.results.size() != n)
      fail(ErrorKind::Verify, op, "a loop body ends with a yield of each carried value");
    std::vector<int> carried;
    for (size_t i = 0; i < n; ++i) {
      carried.push_back(owned_frag(op, op.operands[i], out));
      lowered_[body.args[i]] = frag_value(carried[i]);
    }
    // A body that stores a tensor it also loads reads its previous iteration's store.
    walk(body, [&](const TileOp& inner) {
      if (inner.kind == TileOpKind::Store) {
        bool loaded = false;
        walk(body, [&](const TileOp& o) {
          loaded |= o.kind == TileOpKind::Load && o.param == inner.param;
        });
        if (loaded) stored_.insert(tensor_buffer(inner));
      }
    });
    GroupOp loop = new_op(GroupOpKind::For);
    loop.iv = op.loops[0].iv;
    loop.lo = expr_const(0);
    loop.hi = bind(op.loops[0].extent);
    loop.pipelined = op.kind == TileOpKind::Pipeline;
    if (op.stage_base) loop.stage_base = bind(op.stage_base);
    loop.bodies.resize(1);
    lower_region(body, loop.bodies[0]);
    std::vector<GroupOp>& tail = loop.bodies[0];
    std::vector<int> next;
    for (size_t i = 0; i < n; ++i) {
      const TileOp& yield = body.ops.back();
      next.push_back(frag_of(op, yield.operands[i], tail, k_.values.at(yield.operands[i]).type));
    }
    // The yield is a parallel assignment: a next value that lives in another carried
    // fragment is saved before any carried fragment is overwritten.
    for (size_t i = 0; i < n; ++i) {
      if (next[i] == carried[i]) continue;
      for (size_t j = 0; j < n; ++j) {
        if (j != i && next[i] == carried[j]) {
          int tmp = new_frag(op, k_.values.at(body.ops.back().operands[i]).type);
          copy_frag(tmp, next[i], tail);
          next[i] = tmp;
          break;
        }
      }
    }
    for (size_t i = 0; i < n; ++i)
      if (next[i] != carried[i]) copy_frag(carried[i], next[i], tail);
    out.push_back(std::move(loop));
    for (size_t i = 0; i < n; ++i) lowered_[op.results[i]] = frag_value(carried[i]);
  }

  // The group's workers meet at a ticket, and it releases and acquires global
  // memory: the group's earlier stores need no fence before a later load.
  void lower_ticket(const TileOp& op, std::vector<GroupOp>& out) {
    GroupOp g = new_op(GroupOpKind::Ticket);
    g.dst = global_window(op).ref;
    g.iv = op.loops.at(0).iv;
    g.hi = bind(op.loops[0].extent);
    out.push_back(std::move(g));
    stored_.clear();
  }

  void lower_if(const TileOp& op, std::vector<GroupOp>& out) {
    GroupOp g = new_op(GroupOpKind::If);
    g.cond = op.cond;
    if (!g.cond.on_scalar) {
      g.cond.lhs = bind(g.cond.lhs);
      g.cond.rhs = bind(g.cond.rhs);
    }
    std::vector<int> results;
    for (int r : op.results) results.push_back(new_frag(op, k_.values.at(r).type));
    g.bodies.resize(2);
    // The branches exclude each other: a store in one is not earlier than a load
    // in the other. After the if, either may have run.
    std::set<int> stored_before = stored_, stored_after;
    for (int b = 0; b < 2; ++b) {
      stored_ = stored_before;
      lower_region(op.regions[b], g.bodies[b]);
      stored_after.insert(stored_.begin(), stored_.end());
      const auto& ops = op.regions[b].ops;
      if (!results.empty()) {
        if (ops.empty() || ops.back().kind != TileOpKind::Yield ||
            ops.back().operands.size() != results.size())
          fail(ErrorKind::Verify, op, "each branch ends with a yield of the if's results");
        const TileOp& yield = ops.back();
        for (size_t i = 0; i < results.size(); ++i) {
          int v = yield.operands[i];
          copy_frag(results[i], frag_of(op, v, g.bodies[b], k_.values.at(v).type), g.bodies[b]);
        }
      }
    }
    stored_ = stored_after;
    out.push_back(std::move(g));
    for (size_t i = 0; i < results.size(); ++i)
      lowered_[op.results[i]] = frag_value(results[i]);
  }

  const TileKernel& k_;
  const Plan& plan_;
  GroupProgram p_;
  std::map<int, Consumers> consumers_;
  std::set<int> in_pipeline_;  // values loaded inside a pipelined loop
  std::map<int, int> uses_;
  std::map<int, Lowered> lowered_;
  std::set<int> read_in_place_;  // tensors an mma reads in place (Plan::direct)
  std::map<int, GroupOp> staging_copy_;  // shared buffer -> the copy that fills it
  std::set<int> stored_;   // global buffers this group has stored
  std::map<int, std::vector<GroupOp>> loaded_;  // global buffer -> this group's loads of it
  std::map<int, const Region*> defined_in_;  // value -> the region whose op (or arg) defines it
  const Region* region_ = nullptr;           // the region being lowered
};

}  // namespace

GroupProgram lower_to_group(const TileKernel& kernel, const Plan& plan) {
  validate_plan(plan);
  return Lowering(kernel, plan).run();
}

}  // namespace tessel
