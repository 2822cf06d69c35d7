// Checks the kernel's parameters, then walks its body once, in order, keeping the
// values and induction variables in scope; the first violation is reported. Shapes are
// symbolic, so they are compared structurally (expr_equal): [BM, BK] and [BM, (BK * 1)]
// would differ, but the builders fold such forms away. Broadcasting follows the same
// rule: an extent stretches only when it is the constant 1.
#include "ir/tile_verify.h"

#include <algorithm>

#include "tessel/error.h"

namespace tessel {
namespace {

std::string shape_text(const TileType& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + expr_to_string(t.shape[i]);
  return s + "]";
}

std::string type_text(const TileType& t) {
  return std::string(dtype_name(t.dtype)) + (t.is_scalar() ? "" : shape_text(t));
}

bool same_shape(const TileType& a, const TileType& b) {
  if (a.shape.size() != b.shape.size()) return false;
  for (size_t i = 0; i < a.shape.size(); ++i)
    if (!expr_equal(a.shape[i], b.shape[i])) return false;
  return true;
}

bool same_type(const TileType& a, const TileType& b) { return a.dtype == b.dtype && same_shape(a, b); }

bool is_one(const Expr& e) {
  int64_t v = 0;
  return expr_is_const(e, &v) && v == 1;
}

// The broadcast of two shapes (scalars are {}), or false when some extent pair is
// neither equal nor has a side that is 1.
bool broadcast_shapes(const std::vector<Expr>& a, const std::vector<Expr>& b,
                      std::vector<Expr>* out) {
  if (a.empty() || b.empty()) {
    *out = a.empty() ? b : a;
    return true;
  }
  if (a.size() != b.size()) return false;
  out->clear();
  for (size_t i = 0; i < a.size(); ++i) {
    if (expr_equal(a[i], b[i]) || is_one(b[i])) out->push_back(a[i]);
    else if (is_one(a[i])) out->push_back(b[i]);
    else return false;
  }
  return true;
}

std::string shape_text(const std::vector<Expr>& shape) { return shape_text(TileType{DType::F32, shape}); }

bool valid_dtype(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16 || t == DType::F64;
}

class Verifier {
 public:
  explicit Verifier(const TileKernel& k)
      : k_(k), in_scope_(k.values.size(), false), defined_(k.values.size(), false) {}

  void run() {
    for (size_t i = 0; i < k_.values.size(); ++i)
      if (k_.values[i].id != static_cast<int>(i))
        user_error(ErrorKind::Verify, "value %" + k_.values[i].name + " has id " +
                                          std::to_string(k_.values[i].id) + " but is entry " +
                                          std::to_string(i) + " of the kernel's values");
    params();
    region(k_.body, nullptr);
  }

 private:
  [[noreturn]] void fail(const TileOp& op, const std::string& message) const {
    std::string where = op.loc.to_string();
    user_error(ErrorKind::Verify, (where.empty() ? "" : where + ": ") + message);
  }

  const Value& value(const TileOp& op, int id) const {
    if (id < 0 || id >= static_cast<int>(k_.values.size()))
      fail(op, std::string(tile_op_name(op.kind)) + " refers to value id " + std::to_string(id) +
                   ", but the kernel has " + std::to_string(k_.values.size()) + " values");
    return k_.values[id];
  }

  const TileType& use(const TileOp& op, int id) {
    const Value& v = value(op, id);
    if (!in_scope_[id])
      fail(op, std::string(tile_op_name(op.kind)) + " uses %" + v.name +
                   ", which is not defined before it in an enclosing region");
    return v.type;
  }

  void define(const TileOp& op, int id) {
    const Value& v = value(op, id);
    if (defined_[id]) fail(op, "value %" + v.name + " is defined twice");
    if (!v.type.is_scalar() && v.type.shape.size() != 2)
      fail(op, "value %" + v.name + " has rank " + std::to_string(v.type.shape.size()) +
                   "; tiles are 2-D");
    for (const Expr& e : v.type.shape) expr(op, e, "the shape of %" + v.name);
    defined_[id] = in_scope_[id] = true;
    scope_.push_back(id);
  }

  void expr(const TileOp& op, const Expr& e, const std::string& what) {
    if (!e) fail(op, std::string(tile_op_name(op.kind)) + ": " + what + " is missing");
    expr_symbols(e, [&](const std::string& s) {
      bool known = std::count(k_.size_params.begin(), k_.size_params.end(), s) ||
                   std::count(k_.tile_params.begin(), k_.tile_params.end(), s) ||
                   std::count(ivs_.begin(), ivs_.end(), s);
      if (!known)
        fail(op, std::string(tile_op_name(op.kind)) + ": unknown symbol '" + s + "' in " + what +
                     " " + expr_to_string(e));
    });
  }

  // Tensor and scalar declarations: ranks, strides, symbols, unique names.
  void params() {
    std::vector<std::string> names;
    auto unique = [&](const std::string& name, const char* what) {
      if (std::count(names.begin(), names.end(), name))
        user_error(ErrorKind::Verify, std::string(what) + " '" + name +
                                          "' is declared twice among the kernel's parameters");
      names.push_back(name);
    };
    for (const TensorParam& t : k_.tensors) {
      unique(t.name, "tensor");
      if (t.rank() < 1 || t.rank() > kMaxTensorRank)
        user_error(ErrorKind::Verify, "tensor " + t.name + " has rank " + std::to_string(t.rank()) +
                                          "; ranks 1 to " + std::to_string(kMaxTensorRank) +
                                          " are supported");
      if (t.strides.size() != t.shape.size())
        user_error(ErrorKind::Verify, "tensor " + t.name + " has " + std::to_string(t.rank()) +
                                          " extents but " + std::to_string(t.strides.size()) +
                                          " strides; it needs one stride per extent");
      if (!valid_dtype(t.dtype) && t.dtype != DType::U32)
        user_error(ErrorKind::Verify, "tensor " + t.name + " has an invalid dtype");
      for (size_t d = 0; d < t.shape.size(); ++d) {
        size_expr(t, t.shape[d], "the extent of dimension " + std::to_string(d));
        size_expr(t, t.strides[d], "the stride of dimension " + std::to_string(d));
      }
      for (const std::string& other : t.may_overlap)
        if (other == t.name || !k_.find_tensor(other))
          user_error(ErrorKind::Verify, "tensor " + t.name + " declares an overlap with '" + other + "', " +
                                            (other == t.name ? "itself" : "which is not a tensor of the kernel"));
    }
    for (const ScalarParam& s : k_.scalars) {
      unique(s.name, "scalar");
      if (!valid_dtype(s.dtype))
        user_error(ErrorKind::Verify, "scalar " + s.name + " has an invalid dtype");
    }
  }

  // Tensor extents and strides are bound at launch: only size parameters and tile
  // sizes (the plan's constants) may appear.
  void size_expr(const TensorParam& t, const Expr& e, const std::string& what) {
    if (!e) user_error(ErrorKind::Verify, "tensor " + t.name + ": " + what + " is missing");
    expr_symbols(e, [&](const std::string& s) {
      if (!std::count(k_.size_params.begin(), k_.size_params.end(), s) &&
          !std::count(k_.tile_params.begin(), k_.tile_params.end(), s))
        user_error(ErrorKind::Verify, "tensor " + t.name + ": unknown size or tile parameter '" + s +
                                          "' in " + what + " " + expr_to_string(e));
    });
  }

  void arity(const TileOp& op, size_t operands, size_t results) const {
    if (op.operands.size() != operands || op.results.size() != results)
      fail(op, std::string(tile_op_name(op.kind)) + " takes " + std::to_string(operands) +
                   " operands and gives " + std::to_string(results) + " results, not " +
                   std::to_string(op.operands.size()) + " and " + std::to_string(op.results.size()));
  }

  // Load/Store: the tensor, its coordinates, the dims the tile spans, the tile.
  const TensorParam& tensor(const TileOp& op, const TileType& tile) {
    const char* name = tile_op_name(op.kind);
    const TensorParam* t = k_.find_tensor(op.param);
    if (!t) fail(op, std::string(name) + " of unknown tensor '" + op.param + "'");
    if (t->dtype == DType::U32)
      fail(op, std::string(name) + " of tensor " + op.param + ", which is u32: a counter that only tickets use");
    if (tile.shape.size() != 2)
      fail(op, std::string(name) + " of a " + (tile.is_scalar() ? "scalar" : "non-2-D tile") +
                   " " + type_text(tile) + " from tensor " + op.param + "; only 2-D tiles move");
    int rank = t->rank();
    if (static_cast<int>(op.coords.size()) != rank)
      fail(op, std::string(name) + " of tensor " + op.param + " at " +
                   std::to_string(op.coords.size()) + " coordinates; its rank is " +
                   std::to_string(rank) + ", so it needs " + std::to_string(rank));
    for (const Expr& c : op.coords) expr(op, c, "a coordinate");
    std::string dims =
        "dims(" + std::to_string(op.dims[0]) + ", " + std::to_string(op.dims[1]) + ")";
    for (int d : op.dims) {
      bool unit = d == -1 && rank == 1;
      if (!unit && (d < 0 || d >= rank))
        fail(op, std::string(name) + " of tensor " + op.param + " with " + dims + ": dimension " +
                     std::to_string(d) + " is not one of the tensor's 0.." +
                     std::to_string(rank - 1) + (rank == 1 ? " (or -1, a unit axis)" : ""));
    }
    if (op.dims[0] == op.dims[1])
      fail(op, std::string(name) + " of tensor " + op.param + " with " + dims +
                   ": the tile's rows and columns must span different dimensions");
    for (int i = 0; i < 2; ++i)
      if (op.dims[i] == -1 && !is_one(tile.shape[i]))
        fail(op, std::string(name) + " of tensor " + op.param + " with " + dims + ": the tile's " +
                     (i ? "columns run" : "rows run") +
                     " along a unit axis, so its extent must be 1, not " +
                     expr_to_string(tile.shape[i]));
    return *t;
  }

  // Yield types against the enclosing op's results (and, for loops, carried values).
  void check_yield(const TileOp& yield, const TileOp* parent) {
    std::vector<int> expected;
    if (parent) expected = parent->results;
    if (yield.operands.size() != expected.size())
      fail(yield, "yield passes " + std::to_string(yield.operands.size()) + " values but " +
                      (parent ? std::string("the enclosing ") + tile_op_name(parent->kind) + " has "
                              : std::string("the kernel body has ")) +
                      std::to_string(expected.size()) + " results");
    for (size_t i = 0; i < expected.size(); ++i) {
      const TileType& got = use(yield, yield.operands[i]);
      const TileType& want = value(*parent, expected[i]).type;
      if (!same_type(got, want))
        fail(yield, "yield value " + std::to_string(i) + " has type " + type_text(got) +
                        " but the enclosing " + tile_op_name(parent->kind) + " result has " +
                        type_text(want));
    }
  }

  // `parent` is the op that owns the region (null for the kernel body).
  void region(const Region& r, const TileOp* parent) {
    size_t scope_mark = scope_.size(), iv_mark = ivs_.size();
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const TileOp& op = r.ops[i];
      if (op.kind == TileOpKind::Yield) {
        if (i + 1 != r.ops.size()) fail(op, "yield must be the last op of its region");
        check_yield(op, parent);
      } else if (op.kind == TileOpKind::Ticket) {
        ticket(op);
      } else {
        this->op(op);
      }
    }
    bool needs_yield = parent && !parent->results.empty();
    if (needs_yield && (r.ops.empty() || r.ops.back().kind != TileOpKind::Yield))
      fail(*parent, std::string(tile_op_name(parent->kind)) + " has " +
                        std::to_string(parent->results.size()) +
                        " results but a region of it does not end with a yield");
    for (size_t i = scope_mark; i < scope_.size(); ++i) in_scope_[scope_[i]] = false;
    scope_.resize(scope_mark);
    ivs_.resize(iv_mark);  // a ticket's symbol ends with its region
  }

  // Operands broadcast (scalars everywhere, extent-1 dims along the other's extent);
  // the result has the broadcast shape.
  void elementwise(const TileOp& op, size_t n) {
    arity(op, n, 1);
    std::vector<Expr> shape;
    bool first = true;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const TileType& t = use(op, op.operands[i]);
      if (!t.is_scalar() && t.shape.size() != 2)
        fail(op, std::string(tile_op_name(op.kind)) + " operand " + type_text(t) +
                     " is not a 2-D tile");
      std::vector<Expr> next;
      if (!first && !broadcast_shapes(shape, t.shape, &next))
        fail(op, std::string(tile_op_name(op.kind)) + " operand shapes " + shape_text(shape) +
                     " and " + shape_text(t) + " do not broadcast: each extent must be equal or 1");
      shape = first ? t.shape : next;
      first = false;
    }
    result(op, shape);
  }

  // Select: the condition broadcasts to the shape of the two values.
  void select(const TileOp& op) {
    arity(op, 3, 1);
    const TileType& c = use(op, op.operands[0]);
    const TileType &a = use(op, op.operands[1]), &b = use(op, op.operands[2]);
    for (const TileType* t : {&c, &a, &b})
      if (!t->is_scalar() && t->shape.size() != 2)
        fail(op, "select operand " + type_text(*t) + " is not a 2-D tile");
    std::vector<Expr> values, shape;
    if (!broadcast_shapes(a.shape, b.shape, &values))
      fail(op, "select value shapes " + shape_text(a) + " and " + shape_text(b) +
                   " do not broadcast: each extent must be equal or 1");
    if (!broadcast_shapes(values, c.shape, &shape))
      fail(op, "select condition shape " + shape_text(c) +
                   " does not broadcast to the values' shape " + shape_text(values));
    result(op, shape);
  }

  // The result of an op whose shape follows from its operands: it must be `shape`.
  void result(const TileOp& op, const std::vector<Expr>& shape) {
    define(op, op.results[0]);
    const TileType& r = k_.values[op.results[0]].type;
    if (!same_shape(r, TileType{r.dtype, shape}))
      fail(op, std::string(tile_op_name(op.kind)) + " result type " + type_text(r) +
                   " does not match its operands' shape " +
                   (shape.empty() ? std::string("(scalar)") : shape_text(shape)));
  }

  const TileType& tile_operand(const TileOp& op, int id) {
    const TileType& t = use(op, id);
    if (t.shape.size() != 2)
      fail(op, std::string(tile_op_name(op.kind)) + " operand " + type_text(t) +
                   " is not a 2-D tile");
    return t;
  }

  void axis(const TileOp& op) {
    if (op.axis != 0 && op.axis != 1)
      fail(op, std::string(tile_op_name(op.kind)) + " axis " + std::to_string(op.axis) +
                   " is neither 0 (rows) nor 1 (columns)");
  }

  void reduce(const TileOp& op) {
    arity(op, 1, 1);
    axis(op);
    const TileType& x = tile_operand(op, op.operands[0]);
    std::vector<Expr> shape = x.shape;
    shape[op.axis] = expr_const(1);
    define(op, op.results[0]);
    const TileType& r = k_.values[op.results[0]].type;
    if (!same_shape(r, TileType{r.dtype, shape}))
      fail(op, std::string("reduce.") + reduce_op_name(op.reduce) + " of " + shape_text(x) +
                   " along axis " + std::to_string(op.axis) + " gives " + shape_text(shape) +
                   ", not " + type_text(r));
  }

  void index(const TileOp& op) {
    arity(op, 0, 1);
    axis(op);
    define(op, op.results[0]);
    const TileType& r = k_.values[op.results[0]].type;
    if (r.shape.size() != 2) fail(op, "index result " + type_text(r) + " is not a 2-D tile");
  }

  void transpose(const TileOp& op) {
    arity(op, 1, 1);
    const TileType& x = tile_operand(op, op.operands[0]);
    define(op, op.results[0]);
    const TileType& r = k_.values[op.results[0]].type;
    TileType swapped{r.dtype, {x.shape[1], x.shape[0]}};
    if (!same_shape(r, swapped))
      fail(op, "transpose of " + shape_text(x) + " gives " + shape_text(swapped) + ", not " +
                   type_text(r));
  }

  void broadcast(const TileOp& op) {
    arity(op, 1, 1);
    const TileType& x = use(op, op.operands[0]);
    define(op, op.results[0]);
    const TileType& r = k_.values[op.results[0]].type;
    std::vector<Expr> shape;
    if (r.is_scalar() && !x.is_scalar())
      fail(op, "broadcast of the tile " + type_text(x) + " to a scalar");
    if (!x.is_scalar() && x.shape.size() != 2)
      fail(op, "broadcast operand " + type_text(x) + " is not a 2-D tile");
    if (!broadcast_shapes(x.shape, r.shape, &shape) || !same_shape(r, TileType{r.dtype, shape}))
      fail(op, "broadcast of " + shape_text(x) + " to " + shape_text(r) +
                   ": each extent must be equal to the result's or 1");
  }

  void cast(const TileOp& op) {
    arity(op, 1, 1);
    const TileType& x = use(op, op.operands[0]);
    std::vector<Expr> shape = x.shape;
    result(op, shape);
    if (!valid_dtype(k_.values[op.results[0]].type.dtype))
      fail(op, "cast to an invalid dtype; casts go to f32, bf16, f16 or f64");
  }

  void mma(const TileOp& op) {
    arity(op, 3, 1);
    const TileType &a = use(op, op.operands[0]), &b = use(op, op.operands[1]),
                   &c = use(op, op.operands[2]);
    for (const TileType* t : {&a, &b, &c})
      if (t->shape.size() != 2) fail(op, "mma operand " + type_text(*t) + " is not a 2-D tile");
    if (!expr_equal(a.shape[1], b.shape[0]))
      fail(op, "mma operand shapes " + shape_text(a) + " x " + shape_text(b) +
                   " do not chain: inner extents " + expr_to_string(a.shape[1]) + " and " +
                   expr_to_string(b.shape[0]) + " differ");
    TileType product{c.dtype, {a.shape[0], b.shape[1]}};
    if (!same_shape(c, product))
      fail(op, "mma accumulator shape " + shape_text(c) + " differs from the product shape " +
                   shape_text(product));
    define(op, op.results[0]);
    if (!same_type(k_.values[op.results[0]].type, c))
      fail(op, "mma result type " + type_text(k_.values[op.results[0]].type) +
                   " differs from the accumulator type " + type_text(c));
  }

  void nest(const TileOp& op) {
    const char* name = tile_op_name(op.kind);
    bool parallel = op.kind == TileOpKind::Parallel;
    size_t max_dims = parallel ? kMaxGridRank : 1;
    if (op.loops.empty() || op.loops.size() > max_dims)
      fail(op, std::string(name) + " has " + std::to_string(op.loops.size()) + " loop dimensions; " +
                   (parallel ? "1 to " + std::to_string(kMaxGridRank) : std::string("exactly 1")) +
                   " expected");
    if (op.regions.size() != 1)
      fail(op, std::string(name) + " has " + std::to_string(op.regions.size()) + " regions, not 1");
    const Region& body = op.regions[0];
    if (parallel && (!op.operands.empty() || !op.results.empty()))
      fail(op, "parallel carries no values, but has " + std::to_string(op.operands.size()) +
                   " operands and " + std::to_string(op.results.size()) + " results");
    if (body.args.size() != op.operands.size() || body.args.size() != op.results.size())
      fail(op, std::string(name) + " has " + std::to_string(op.operands.size()) +
                   " initial values, " + std::to_string(body.args.size()) + " carried values and " +
                   std::to_string(op.results.size()) + " results; the counts must agree");
    for (const LoopDim& d : op.loops) {
      expr(op, d.extent, "the extent of " + d.iv);
      if (d.iv.empty()) fail(op, std::string(name) + " has an unnamed induction variable");
    }
    if (op.stage_base) expr(op, op.stage_base, "the stage base of " + op.loops[0].iv);
    std::vector<TileType> inits;
    for (int id : op.operands) inits.push_back(use(op, id));
    for (const LoopDim& d : op.loops) ivs_.push_back(d.iv);
    for (size_t i = 0; i < body.args.size(); ++i) {
      define(op, body.args[i]);
      const TileType& arg = k_.values[body.args[i]].type;
      if (!same_type(arg, inits[i]))
        fail(op, std::string(name) + " carried value %" + k_.values[body.args[i]].name + " has type " +
                     type_text(arg) + " but its initial value has " + type_text(inits[i]));
    }
    parallel_depth_ += parallel;
    region(body, &op);
    parallel_depth_ -= parallel;
    ivs_.resize(ivs_.size() - op.loops.size());
    for (size_t i = 0; i < op.results.size(); ++i) {
      define(op, op.results[i]);
      const TileType& result = k_.values[op.results[i]].type;
      if (!same_type(result, inits[i]))
        fail(op, std::string(name) + " result %" + k_.values[op.results[i]].name + " has type " +
                     type_text(result) + " but its carried value has " + type_text(inits[i]));
    }
  }

  void branch(const TileOp& op) {
    if (op.regions.size() != 2)
      fail(op, "if has " + std::to_string(op.regions.size()) + " regions, not 2");
    if (!op.operands.empty()) fail(op, "if takes no operands");
    if (op.cond.on_scalar) {
      bool known = std::any_of(k_.scalars.begin(), k_.scalars.end(),
                               [&](const ScalarParam& s) { return s.name == op.cond.scalar; });
      if (!known) fail(op, "if tests unknown scalar parameter '" + op.cond.scalar + "'");
    } else {
      expr(op, op.cond.lhs, "the condition");
      expr(op, op.cond.rhs, "the condition");
    }
    for (const Region& r : op.regions) {
      if (!r.args.empty()) fail(op, "an if region takes no arguments");
      region(r, &op);
    }
    for (int id : op.results) define(op, id);
  }

  // Ticket: a rank-1 u32 counter tensor the kernel writes, one coordinate, a named
  // symbol and its count; inside a parallel nest's body (a group's), where loops and
  // branches may hold it (stream-K takes a ticket of each tile it shares).
  void ticket(const TileOp& op) {
    arity(op, 0, 0);
    if (parallel_depth_ == 0) fail(op, "ticket outside a parallel nest's body: a group takes its tickets there");
    const TensorParam* t = k_.find_tensor(op.param);
    if (!t) fail(op, "ticket of unknown tensor '" + op.param + "'");
    if (t->dtype != DType::U32 || t->rank() != 1 || t->access != Access::InOut)
      fail(op, "ticket of tensor " + t->name + ": a counter is a rank-1 u32 tensor declared inout, not " +
                   dtype_name(t->dtype) + " of rank " + std::to_string(t->rank()) + ", " + access_name(t->access));
    if (op.coords.size() != 1)
      fail(op, "ticket of tensor " + t->name + " at " + std::to_string(op.coords.size()) +
                   " coordinates; a counter takes 1");
    expr(op, op.coords[0], "the counter's element");
    if (op.loops.size() != 1 || op.loops[0].iv.empty())
      fail(op, "ticket needs one named symbol for the ticket it draws");
    expr(op, op.loops[0].extent, "the count of tickets");
    if (std::count(ivs_.begin(), ivs_.end(), op.loops[0].iv))
      fail(op, "ticket symbol '" + op.loops[0].iv + "' is already bound");
    ivs_.push_back(op.loops[0].iv);
  }

  void op(const TileOp& op) {
    switch (op.kind) {
      case TileOpKind::ScalarParam: {
        arity(op, 0, 1);
        auto it = std::find_if(k_.scalars.begin(), k_.scalars.end(),
                               [&](const ScalarParam& s) { return s.name == op.param; });
        if (it == k_.scalars.end()) fail(op, "param of unknown scalar parameter '" + op.param + "'");
        define(op, op.results[0]);
        const TileType& t = k_.values[op.results[0]].type;
        if (!t.is_scalar() || t.dtype != it->dtype)
          fail(op, "param " + op.param + " gives a " + dtype_name(it->dtype) + " scalar, not " +
                       type_text(t));
        break;
      }
      case TileOpKind::Const:
        arity(op, 0, 1);
        if (op.index_value) expr(op, op.index_value, "the value");
        define(op, op.results[0]);
        break;
      case TileOpKind::Load:
        arity(op, 0, 1);
        tensor(op, value(op, op.results[0]).type);
        define(op, op.results[0]);
        break;
      case TileOpKind::Store: {
        arity(op, 1, 0);
        const TensorParam& t = tensor(op, use(op, op.operands[0]));
        if (t.access == Access::In) fail(op, "store to tensor " + t.name + ", which is declared 'in'");
        break;
      }
      case TileOpKind::Mma: mma(op); break;
      case TileOpKind::Add:
      case TileOpKind::Sub:
      case TileOpKind::Mul:
      case TileOpKind::Div:
      case TileOpKind::Max:
      case TileOpKind::Min:
      case TileOpKind::Cmp: elementwise(op, 2); break;
      case TileOpKind::Exp:
      case TileOpKind::Exp2:
      case TileOpKind::Log:
      case TileOpKind::Neg:
      case TileOpKind::Abs:
      case TileOpKind::Sqrt:
      case TileOpKind::Rsqrt:
      case TileOpKind::Recip:
      case TileOpKind::Tanh: elementwise(op, 1); break;
      case TileOpKind::Select: select(op); break;
      case TileOpKind::Cast: cast(op); break;
      case TileOpKind::Broadcast: broadcast(op); break;
      case TileOpKind::Index: index(op); break;
      case TileOpKind::Reduce: reduce(op); break;
      case TileOpKind::Transpose: transpose(op); break;
      case TileOpKind::Parallel:
      case TileOpKind::Serial:
      case TileOpKind::Pipeline: nest(op); break;
      case TileOpKind::If: branch(op); break;
      case TileOpKind::Barrier: arity(op, 0, 0); break;
      case TileOpKind::Yield:
      case TileOpKind::Ticket: break;  // handled by region()
    }
  }

  const TileKernel& k_;
  std::vector<bool> in_scope_, defined_;
  std::vector<int> scope_;         // values defined in the open regions, in order
  std::vector<std::string> ivs_;   // induction variables of the open nests
  int parallel_depth_ = 0;          // open parallel nests (a ticket needs one)
};

}  // namespace

void verify_tile_kernel(const TileKernel& kernel) { Verifier(kernel).run(); }

}  // namespace tessel
