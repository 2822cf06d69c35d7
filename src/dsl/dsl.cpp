#include "dsl/dsl.h"

#include "ir/tile_verify.h"
#include "tessel/error.h"

namespace tessel {
namespace {

std::vector<Expr> exprs(const std::vector<Sym>& syms) {
  std::vector<Expr> out;
  for (const Sym& s : syms) out.push_back(s.e);
  return out;
}

bool is_one(const Expr& e) {
  int64_t v = 0;
  return expr_is_const(e, &v) && v == 1;
}

}  // namespace

KernelBuilder::KernelBuilder(std::string name) {
  kernel_.name = std::move(name);
  regions_.push_back(&kernel_.body);
}

Sym KernelBuilder::size(const std::string& name) {
  kernel_.size_params.push_back(name);
  return expr_sym(name);
}

Sym KernelBuilder::tile(const std::string& name) {
  kernel_.tile_params.push_back(name);
  return expr_sym(name);
}

Tensor KernelBuilder::tensor(const std::string& name, std::vector<Sym> shape,
                             std::vector<Sym> strides, Access access, DType dtype) {
  TensorParam t;
  t.name = name;
  t.dtype = dtype;
  t.shape = exprs(shape);
  t.strides = exprs(strides);
  t.access = access;
  kernel_.tensors.push_back(t);
  return Tensor{name, t.rank()};
}

Tensor KernelBuilder::tensor(const std::string& name, std::vector<Sym> shape, Access access,
                             DType dtype) {
  std::vector<Sym> strides(shape.size(), Sym(1));
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return tensor(name, shape, strides, access, dtype);
}

Tensor KernelBuilder::tensor(const std::string& name, Sym rows, Sym cols, Sym ld, Access access) {
  return tensor(name, {rows, cols}, {ld, 1}, access);
}

void KernelBuilder::allow_overlap(const Tensor& a, const Tensor& b) {
  for (TensorParam& t : kernel_.tensors)
    if (t.name == a.name && !t.may_overlap_with(b.name)) t.may_overlap.push_back(b.name);
}

std::string KernelBuilder::scalar(const std::string& name, DType dtype) {
  kernel_.scalars.push_back(ScalarParam{name, dtype});
  return name;
}

Tile KernelBuilder::new_value(TileType type) {
  Value v;
  v.id = static_cast<int>(kernel_.values.size());
  v.type = std::move(type);
  v.name = "v" + std::to_string(v.id);
  kernel_.values.push_back(v);
  return Tile{v.id};
}

const TileType& KernelBuilder::type_of(Tile t) const {
  static const TileType none;
  // A bad id is kept as is in the op; the verifier reports it at the user's line.
  if (t.id < 0 || t.id >= static_cast<int>(kernel_.values.size())) return none;
  return kernel_.values[t.id].type;
}

TileOp& KernelBuilder::emit(TileOp op) {
  regions_.back()->ops.push_back(std::move(op));
  return regions_.back()->ops.back();
}

std::string KernelBuilder::fresh_iv(const char* base) {
  return std::string(base) + std::to_string(next_iv_++);
}

Tile KernelBuilder::emit_op(TileOpKind kind, std::vector<Tile> operands, TileType result,
                            Loc loc) {
  Tile v = new_value(std::move(result));
  TileOp op;
  op.kind = kind;
  for (Tile t : operands) op.operands.push_back(t.id);
  op.results = {v.id};
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
  return v;
}

Tile KernelBuilder::scalar_value(const std::string& name, Loc loc) {
  DType dtype = DType::F32;
  for (const ScalarParam& s : kernel_.scalars)
    if (s.name == name) dtype = s.dtype;
  Tile t = new_value(TileType{dtype, {}});
  TileOp op;
  op.kind = TileOpKind::ScalarParam;
  op.param = name;
  op.results = {t.id};
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
  return t;
}

void KernelBuilder::parallel_nest(std::vector<Sym> extents,
                                  const std::function<void(std::vector<Sym>)>& body, Loc loc) {
  static const char* const names[] = {"i", "j", "b"};
  TileOp op;
  op.kind = TileOpKind::Parallel;
  op.loc = SourceLoc::from(loc);
  std::vector<Sym> ivs;
  for (size_t d = 0; d < extents.size(); ++d) {
    op.loops.push_back(LoopDim{fresh_iv(names[d % 3]), extents[d].e});
    ivs.push_back(expr_sym(op.loops.back().iv));
  }
  op.regions.resize(1);
  // The op joins its parent only once its body is complete, so pointers to open
  // regions never dangle.
  regions_.push_back(&op.regions[0]);
  body(ivs);
  regions_.pop_back();
  emit(std::move(op));
}

void KernelBuilder::parallel(Sym extent0, const std::function<void(Sym)>& body, Loc loc) {
  parallel_nest({extent0}, [&](std::vector<Sym> iv) { body(iv[0]); }, loc);
}

void KernelBuilder::parallel(Sym extent0, Sym extent1, const std::function<void(Sym, Sym)>& body,
                             Loc loc) {
  parallel_nest({extent0, extent1}, [&](std::vector<Sym> iv) { body(iv[0], iv[1]); }, loc);
}

void KernelBuilder::parallel(Sym extent0, Sym extent1, Sym extent2,
                             const std::function<void(Sym, Sym, Sym)>& body, Loc loc) {
  parallel_nest({extent0, extent1, extent2},
                [&](std::vector<Sym> iv) { body(iv[0], iv[1], iv[2]); }, loc);
}

void KernelBuilder::emit_yield(const std::vector<Tile>& values, const SourceLoc& loc) {
  TileOp yield;
  yield.kind = TileOpKind::Yield;
  for (Tile t : values) yield.operands.push_back(t.id);
  yield.loc = loc;
  emit(std::move(yield));
}

std::vector<Tile> KernelBuilder::carried_loop(TileOpKind kind, Sym extent, std::vector<Tile> init,
                                              const CarriedBody& body, Loc loc, Expr stage_base) {
  TileOp op;
  op.kind = kind;
  op.loc = SourceLoc::from(loc);
  op.loops = {LoopDim{fresh_iv("k"), extent.e}};
  op.stage_base = std::move(stage_base);
  op.regions.resize(1);
  std::vector<Tile> carried;
  for (Tile t : init) {
    op.operands.push_back(t.id);
    carried.push_back(new_value(type_of(t)));
    op.regions[0].args.push_back(carried.back().id);
  }
  regions_.push_back(&op.regions[0]);
  emit_yield(body(expr_sym(op.loops[0].iv), carried), op.loc);
  regions_.pop_back();
  std::vector<Tile> results;
  for (Tile t : init) {
    results.push_back(new_value(type_of(t)));
    op.results.push_back(results.back().id);
  }
  emit(std::move(op));
  return results;
}

Tile KernelBuilder::serial(Sym extent, Tile init, const std::function<Tile(Sym, Tile)>& body,
                           Loc loc) {
  auto one = [&](Sym k, std::vector<Tile> c) -> std::vector<Tile> { return {body(k, c[0])}; };
  return carried_loop(TileOpKind::Serial, extent, {init}, one, loc)[0];
}

Tile KernelBuilder::pipeline(Sym extent, Tile init, const std::function<Tile(Sym, Tile)>& body,
                             Loc loc) {
  auto one = [&](Sym k, std::vector<Tile> c) -> std::vector<Tile> { return {body(k, c[0])}; };
  return carried_loop(TileOpKind::Pipeline, extent, {init}, one, loc)[0];
}

Tile KernelBuilder::pipeline(Sym extent, Sym stage_base, Tile init, const std::function<Tile(Sym, Tile)>& body,
                             Loc loc) {
  auto one = [&](Sym k, std::vector<Tile> c) -> std::vector<Tile> { return {body(k, c[0])}; };
  return carried_loop(TileOpKind::Pipeline, extent, {init}, one, loc, stage_base.e)[0];
}

std::vector<Tile> KernelBuilder::serial(Sym extent, std::vector<Tile> init, const CarriedBody& body,
                                        Loc loc) {
  return carried_loop(TileOpKind::Serial, extent, std::move(init), body, loc);
}

std::vector<Tile> KernelBuilder::pipeline(Sym extent, std::vector<Tile> init,
                                          const CarriedBody& body, Loc loc) {
  return carried_loop(TileOpKind::Pipeline, extent, std::move(init), body, loc);
}

void KernelBuilder::branch(TileOp op, const std::function<void()>& then_body,
                           const std::function<void()>& else_body) {
  op.kind = TileOpKind::If;
  op.regions.resize(2);
  const std::function<void()>* bodies[2] = {&then_body, &else_body};
  for (int r = 0; r < 2; ++r) {
    regions_.push_back(&op.regions[r]);
    if (*bodies[r]) (*bodies[r])();
    regions_.pop_back();
  }
  emit(std::move(op));
}

void KernelBuilder::if_(ScalarCond cond, const std::function<void()>& then_body,
                        const std::function<void()>& else_body, Loc loc) {
  TileOp op;
  op.loc = SourceLoc::from(loc);
  op.cond.on_scalar = true;
  op.cond.scalar = cond.scalar;
  op.cond.op = cond.op;
  op.cond.value = cond.value;
  branch(std::move(op), then_body, else_body);
}

void KernelBuilder::if_(Sym lhs, CmpOp cmp, Sym rhs, const std::function<void()>& then_body,
                        const std::function<void()>& else_body, Loc loc) {
  TileOp op;
  op.loc = SourceLoc::from(loc);
  op.cond.lhs = lhs.e;
  op.cond.op = cmp;
  op.cond.rhs = rhs.e;
  branch(std::move(op), then_body, else_body);
}

std::vector<Tile> KernelBuilder::if_else(Sym lhs, CmpOp cmp, Sym rhs, const BranchBody& then_body,
                                         const BranchBody& else_body, Loc loc) {
  TileOp op;
  op.kind = TileOpKind::If;
  op.loc = SourceLoc::from(loc);
  op.cond.lhs = lhs.e;
  op.cond.op = cmp;
  op.cond.rhs = rhs.e;
  op.regions.resize(2);
  const BranchBody* bodies[2] = {&then_body, &else_body};
  if (!then_body || !else_body)
    user_error(ErrorKind::InvalidArgument, "if_else: both branches are needed (each returns the if's values)");
  std::vector<Tile> yielded[2];
  for (int r = 0; r < 2; ++r) {
    regions_.push_back(&op.regions[r]);
    yielded[r] = (*bodies[r])();
    emit_yield(yielded[r], op.loc);
    regions_.pop_back();
  }
  if (yielded[0].size() != yielded[1].size())
    user_error(ErrorKind::InvalidArgument, "if_else: the branches return " + std::to_string(yielded[0].size()) +
                                               " and " + std::to_string(yielded[1].size()) + " tiles");
  std::vector<Tile> results;
  for (size_t i = 0; i < yielded[0].size(); ++i) {
    TileType a = type_of(yielded[0][i]), b = type_of(yielded[1][i]);
    bool same = a.dtype == b.dtype && a.shape.size() == b.shape.size();
    for (size_t d = 0; same && d < a.shape.size(); ++d) same = expr_equal(a.shape[d], b.shape[d]);
    if (!same)
      user_error(ErrorKind::InvalidArgument,
                 "if_else: the branches' result " + std::to_string(i) + " has two different types");
    results.push_back(new_value(a));
    op.results.push_back(results.back().id);
  }
  emit(std::move(op));
  return results;
}

Tile KernelBuilder::load_at(const Tensor& t, std::vector<Sym> coords, TileDims dims, Sym rows,
                            Sym cols, double pad, Loc loc) {
  // bf16 and f16 are storage types: their tiles compute in fp32. f64 computes in fp64.
  const TensorParam* param = kernel_.find_tensor(t.name);
  DType dtype = param && param->dtype == DType::F64 ? DType::F64 : DType::F32;
  Tile v = new_value(TileType{dtype, {rows.e, cols.e}});
  TileOp op;
  op.kind = TileOpKind::Load;
  op.param = t.name;
  op.coords = exprs(coords);
  op.dims = dims;
  op.constant = pad;
  op.results = {v.id};
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
  return v;
}

void KernelBuilder::store_at(const Tensor& t, std::vector<Sym> coords, TileDims dims, Tile value,
                             Loc loc) {
  TileOp op;
  op.kind = TileOpKind::Store;
  op.param = t.name;
  op.coords = exprs(coords);
  op.dims = dims;
  op.operands = {value.id};
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
}

Tile KernelBuilder::load(const Tensor& t, std::initializer_list<Sym> coords, Sym rows, Sym cols,
                         double pad, Loc loc) {
  return load_at(t, coords, default_tile_dims(t.rank), rows, cols, pad, loc);
}

Tile KernelBuilder::load(const Tensor& t, const std::vector<Sym>& coords, Sym rows, Sym cols,
                         double pad, Loc loc) {
  return load_at(t, coords, default_tile_dims(t.rank), rows, cols, pad, loc);
}

Tile KernelBuilder::load(const Tensor& t, const std::vector<Sym>& coords, TileDims dims, Sym rows,
                         Sym cols, double pad, Loc loc) {
  return load_at(t, coords, dims, rows, cols, pad, loc);
}

Tile KernelBuilder::load(const Tensor& t, Sym row, Sym col, Sym rows, Sym cols, Loc loc) {
  return load_at(t, {row, col}, default_tile_dims(2), rows, cols, 0, loc);
}

void KernelBuilder::store(const Tensor& t, std::initializer_list<Sym> coords, Tile value, Loc loc) {
  store_at(t, coords, default_tile_dims(t.rank), value, loc);
}

void KernelBuilder::store(const Tensor& t, const std::vector<Sym>& coords, Tile value, Loc loc) {
  store_at(t, coords, default_tile_dims(t.rank), value, loc);
}

void KernelBuilder::store(const Tensor& t, const std::vector<Sym>& coords, TileDims dims,
                          Tile value, Loc loc) {
  store_at(t, coords, dims, value, loc);
}

void KernelBuilder::store(const Tensor& t, Sym row, Sym col, Tile value, Loc loc) {
  store_at(t, {row, col}, default_tile_dims(2), value, loc);
}

Tile KernelBuilder::constant(double value, Sym rows, Sym cols, Loc loc) {
  Tile v = emit_op(TileOpKind::Const, {}, TileType{DType::F32, {rows.e, cols.e}}, loc);
  regions_.back()->ops.back().constant = value;
  return v;
}

Tile KernelBuilder::constant(double value, Loc loc) {
  Tile v = emit_op(TileOpKind::Const, {}, TileType{DType::F32, {}}, loc);
  regions_.back()->ops.back().constant = value;
  return v;
}

Tile KernelBuilder::index_value(Sym value, Loc loc) {
  Tile v = emit_op(TileOpKind::Const, {}, TileType{DType::F32, {}}, loc);
  regions_.back()->ops.back().index_value = value.e;
  return v;
}

Tile KernelBuilder::index_value(Sym value, Sym rows, Sym cols, Loc loc) {
  Tile v = emit_op(TileOpKind::Const, {}, TileType{DType::F32, {rows.e, cols.e}}, loc);
  regions_.back()->ops.back().index_value = value.e;
  return v;
}

Tile KernelBuilder::mma(Tile a, Tile b, Tile acc, Loc loc) {
  return emit_op(TileOpKind::Mma, {a, b, acc}, type_of(acc), loc);
}

Tile KernelBuilder::emit_elementwise(TileOpKind kind, std::vector<Tile> operands, Loc loc) {
  // The result takes the broadcast shape of the operands and the dtype of the first
  // tile among them. Extents that do not broadcast are left to the verifier.
  TileType type{DType::F32, {}};
  bool typed = false;
  for (Tile t : operands) {
    const TileType& o = type_of(t);
    if (o.is_scalar()) continue;
    if (!typed) {
      type = o;
      typed = true;
      continue;
    }
    for (size_t d = 0; d < type.shape.size() && d < o.shape.size(); ++d)
      if (is_one(type.shape[d])) type.shape[d] = o.shape[d];
  }
  if (!typed && !operands.empty()) type.dtype = type_of(operands[0]).dtype;
  return emit_op(kind, std::move(operands), type, loc);
}

Tile KernelBuilder::add(Tile a, Tile b, Loc loc) { return emit_elementwise(TileOpKind::Add, {a, b}, loc); }
Tile KernelBuilder::sub(Tile a, Tile b, Loc loc) { return emit_elementwise(TileOpKind::Sub, {a, b}, loc); }
Tile KernelBuilder::mul(Tile a, Tile b, Loc loc) { return emit_elementwise(TileOpKind::Mul, {a, b}, loc); }
Tile KernelBuilder::div(Tile a, Tile b, Loc loc) { return emit_elementwise(TileOpKind::Div, {a, b}, loc); }
Tile KernelBuilder::max(Tile a, Tile b, Loc loc) { return emit_elementwise(TileOpKind::Max, {a, b}, loc); }
Tile KernelBuilder::min(Tile a, Tile b, Loc loc) { return emit_elementwise(TileOpKind::Min, {a, b}, loc); }
Tile KernelBuilder::exp(Tile a, Loc loc) { return emit_elementwise(TileOpKind::Exp, {a}, loc); }
Tile KernelBuilder::exp2(Tile a, Loc loc) { return emit_elementwise(TileOpKind::Exp2, {a}, loc); }
Tile KernelBuilder::log(Tile a, Loc loc) { return emit_elementwise(TileOpKind::Log, {a}, loc); }
Tile KernelBuilder::neg(Tile a, Loc loc) { return emit_elementwise(TileOpKind::Neg, {a}, loc); }
Tile KernelBuilder::abs(Tile a, Loc loc) { return emit_elementwise(TileOpKind::Abs, {a}, loc); }
Tile KernelBuilder::sqrt(Tile a, Loc loc) { return emit_elementwise(TileOpKind::Sqrt, {a}, loc); }
Tile KernelBuilder::rsqrt(Tile a, Loc loc) { return emit_elementwise(TileOpKind::Rsqrt, {a}, loc); }
Tile KernelBuilder::recip(Tile a, Loc loc) { return emit_elementwise(TileOpKind::Recip, {a}, loc); }
Tile KernelBuilder::tanh(Tile a, Loc loc) { return emit_elementwise(TileOpKind::Tanh, {a}, loc); }

Tile KernelBuilder::cmp(CmpOp op, Tile a, Tile b, Loc loc) {
  Tile v = emit_elementwise(TileOpKind::Cmp, {a, b}, loc);
  regions_.back()->ops.back().cmp = op;
  return v;
}

Tile KernelBuilder::select(Tile cond, Tile a, Tile b, Loc loc) {
  // The condition shapes the result only where it broadcasts the values.
  Tile v = emit_elementwise(TileOpKind::Select, {a, b, cond}, loc);
  TileOp& op = regions_.back()->ops.back();
  op.operands = {cond.id, a.id, b.id};
  return v;
}

Tile KernelBuilder::cast(Tile a, DType dtype, Loc loc) {
  TileType type = type_of(a);
  type.dtype = dtype;
  return emit_op(TileOpKind::Cast, {a}, type, loc);
}

Tile KernelBuilder::broadcast(Tile a, Sym rows, Sym cols, Loc loc) {
  return emit_op(TileOpKind::Broadcast, {a}, TileType{type_of(a).dtype, {rows.e, cols.e}}, loc);
}

Tile KernelBuilder::index(int axis, Sym rows, Sym cols, Loc loc) {
  Tile v = emit_op(TileOpKind::Index, {}, TileType{DType::F32, {rows.e, cols.e}}, loc);
  regions_.back()->ops.back().axis = axis;
  return v;
}

Tile KernelBuilder::emit_reduce(ReduceOp reduce, Tile a, int axis, Loc loc) {
  TileType type = type_of(a);
  if (type.shape.size() == 2 && (axis == 0 || axis == 1)) type.shape[axis] = expr_const(1);
  Tile v = emit_op(TileOpKind::Reduce, {a}, type, loc);
  TileOp& op = regions_.back()->ops.back();
  op.reduce = reduce;
  op.axis = axis;
  return v;
}

Tile KernelBuilder::reduce_sum(Tile a, int axis, Loc loc) { return emit_reduce(ReduceOp::Sum, a, axis, loc); }
Tile KernelBuilder::reduce_max(Tile a, int axis, Loc loc) { return emit_reduce(ReduceOp::Max, a, axis, loc); }
Tile KernelBuilder::reduce_min(Tile a, int axis, Loc loc) { return emit_reduce(ReduceOp::Min, a, axis, loc); }

Tile KernelBuilder::transpose(Tile a, Loc loc) {
  TileType type = type_of(a);
  if (type.shape.size() == 2) std::swap(type.shape[0], type.shape[1]);
  return emit_op(TileOpKind::Transpose, {a}, type, loc);
}

void KernelBuilder::barrier(Loc loc) {
  TileOp op;
  op.kind = TileOpKind::Barrier;
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
}

Sym KernelBuilder::ticket(const Tensor& counter, Sym index, Sym count, Loc loc) {
  TileOp op;
  op.kind = TileOpKind::Ticket;
  op.param = counter.name;
  op.coords = {index.e};
  op.dims = default_tile_dims(1);  // as the text form reads it back
  op.loops = {LoopDim{fresh_iv("t"), count.e}};
  op.loc = SourceLoc::from(loc);
  Sym ticket = expr_sym(op.loops[0].iv);
  emit(std::move(op));
  return ticket;
}

TileKernel KernelBuilder::finish_unverified() {
  TESSEL_ASSERT(regions_.size() == 1, "finish() inside an open nest");
  return kernel_;
}

TileKernel KernelBuilder::finish() {
  TileKernel k = finish_unverified();
  verify_tile_kernel(k);
  return k;
}

}  // namespace tessel
