// Walks the kernel once, in order, keeping the values and induction variables in
// scope; the first violation is reported. Shapes are symbolic, so they are compared
// structurally (expr_equal): [BM, BK] and [BM, (BK * 1)] would differ, but the
// builders fold such forms away.
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

  void arity(const TileOp& op, size_t operands, size_t results) const {
    if (op.operands.size() != operands || op.results.size() != results)
      fail(op, std::string(tile_op_name(op.kind)) + " takes " + std::to_string(operands) +
                   " operands and gives " + std::to_string(results) + " results, not " +
                   std::to_string(op.operands.size()) + " and " + std::to_string(op.results.size()));
  }

  const TensorParam& tensor(const TileOp& op, const TileType& tile) {
    const char* name = tile_op_name(op.kind);
    const TensorParam* t = k_.find_tensor(op.param);
    if (!t) fail(op, std::string(name) + " of unknown tensor '" + op.param + "'");
    if (tile.shape.size() != 2)
      fail(op, std::string(name) + " of a " + (tile.is_scalar() ? "scalar" : "non-2-D tile") +
                   " " + type_text(tile) + " from tensor " + op.param + "; only 2-D tiles move");
    if (op.coords.size() != 2)
      fail(op, std::string(name) + " of tensor " + op.param + " at " +
                   std::to_string(op.coords.size()) + " coordinates; 2-D tensors need 2");
    for (const Expr& c : op.coords) expr(op, c, "a coordinate");
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
    size_t scope_mark = scope_.size();
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const TileOp& op = r.ops[i];
      if (op.kind == TileOpKind::Yield) {
        if (i + 1 != r.ops.size()) fail(op, "yield must be the last op of its region");
        check_yield(op, parent);
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
  }

  void elementwise(const TileOp& op, size_t n) {
    arity(op, n, 1);
    const TileType* tile = nullptr;
    for (int id : op.operands) {
      const TileType& t = use(op, id);
      if (t.is_scalar()) continue;
      if (tile && !same_shape(*tile, t))
        fail(op, std::string(tile_op_name(op.kind)) + " operand shapes " + shape_text(*tile) +
                     " and " + shape_text(t) + " differ");
      tile = &t;
    }
    define(op, op.results[0]);
    const TileType& result = k_.values[op.results[0]].type;
    if (tile ? !same_shape(*tile, result) : !result.is_scalar())
      fail(op, std::string(tile_op_name(op.kind)) + " result type " + type_text(result) +
                   " does not match its operands' shape " + (tile ? shape_text(*tile) : "(scalar)"));
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
    size_t max_dims = parallel ? 2 : 1;
    if (op.loops.empty() || op.loops.size() > max_dims)
      fail(op, std::string(name) + " has " + std::to_string(op.loops.size()) + " loop dimensions; " +
                   (parallel ? "1 or 2" : "exactly 1") + " expected");
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
    region(body, &op);
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
      case TileOpKind::Max: elementwise(op, 2); break;
      case TileOpKind::Exp:
      case TileOpKind::Neg: elementwise(op, 1); break;
      case TileOpKind::Parallel:
      case TileOpKind::Serial:
      case TileOpKind::Pipeline: nest(op); break;
      case TileOpKind::If: branch(op); break;
      case TileOpKind::Barrier: arity(op, 0, 0); break;
      case TileOpKind::Yield: break;  // handled by region()
    }
  }

  const TileKernel& k_;
  std::vector<bool> in_scope_, defined_;
  std::vector<int> scope_;         // values defined in the open regions, in order
  std::vector<std::string> ivs_;   // induction variables of the open nests
};

}  // namespace

void verify_tile_kernel(const TileKernel& kernel) { Verifier(kernel).run(); }

}  // namespace tessel
