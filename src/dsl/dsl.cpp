#include "dsl/dsl.h"


#include "ir/tile_verify.h"
#include "tessel/error.h"

namespace tessel {

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

namespace {
// A tensor's extents and leading dimension must each be one size parameter, so
// that a launch can bind them by name.
std::string size_name(const Sym& s, const char* what, const std::string& tensor) {
  if (!s.e || s.e->kind != ExprKind::Sym)
    user_error(ErrorKind::InvalidArgument,
               "tensor " + tensor + ": " + what + " must be a size parameter, got " +
                   expr_to_string(s.e));
  return s.e->name;
}
}  // namespace

Tensor KernelBuilder::tensor(const std::string& name, Sym rows, Sym cols, Sym ld, Access access) {
  TensorParam t;
  t.name = name;
  t.rows = size_name(rows, "rows", name);
  t.cols = size_name(cols, "cols", name);
  t.ld = size_name(ld, "ld", name);
  t.access = access;
  kernel_.tensors.push_back(t);
  return Tensor{name};
}

std::string KernelBuilder::scalar(const std::string& name) {
  kernel_.scalars.push_back(ScalarParam{name, DType::F32});
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

TileOp& KernelBuilder::emit(TileOp op) {
  regions_.back()->ops.push_back(std::move(op));
  return regions_.back()->ops.back();
}

std::string KernelBuilder::fresh_iv(const char* base) {
  return std::string(base) + std::to_string(next_iv_++);
}

Tile KernelBuilder::scalar_value(const std::string& name, Loc loc) {
  Tile t = new_value(TileType{DType::F32, {}});
  TileOp op;
  op.kind = TileOpKind::ScalarParam;
  op.param = name;
  op.results = {t.id};
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
  return t;
}

void KernelBuilder::parallel(Sym extent0, Sym extent1, const std::function<void(Sym, Sym)>& body,
                             Loc loc) {
  TileOp op;
  op.kind = TileOpKind::Parallel;
  op.loc = SourceLoc::from(loc);
  op.loops = {LoopDim{fresh_iv("i"), extent0.e}, LoopDim{fresh_iv("j"), extent1.e}};
  op.regions.resize(1);
  // The op joins its parent only once its body is complete, so pointers to open
  // regions never dangle.
  regions_.push_back(&op.regions[0]);
  body(expr_sym(op.loops[0].iv), expr_sym(op.loops[1].iv));
  regions_.pop_back();
  emit(std::move(op));
}

Tile KernelBuilder::carried_loop(TileOpKind kind, Sym extent, Tile init,
                                 const std::function<Tile(Sym, Tile)>& body, Loc loc) {
  TileOp op;
  op.kind = kind;
  op.loc = SourceLoc::from(loc);
  op.loops = {LoopDim{fresh_iv("k"), extent.e}};
  op.operands = {init.id};
  TileType type = init.id >= 0 && init.id < static_cast<int>(kernel_.values.size())
                      ? kernel_.values[init.id].type
                      : TileType{};
  Tile carried = new_value(type);
  op.regions.resize(1);
  op.regions[0].args = {carried.id};
  regions_.push_back(&op.regions[0]);
  Tile next = body(expr_sym(op.loops[0].iv), carried);
  TileOp yield;
  yield.kind = TileOpKind::Yield;
  yield.operands = {next.id};
  yield.loc = op.loc;
  emit(std::move(yield));
  regions_.pop_back();
  Tile result = new_value(type);
  op.results = {result.id};
  emit(std::move(op));
  return result;
}

Tile KernelBuilder::serial(Sym extent, Tile init, const std::function<Tile(Sym, Tile)>& body,
                           Loc loc) {
  return carried_loop(TileOpKind::Serial, extent, init, body, loc);
}

Tile KernelBuilder::pipeline(Sym extent, Tile init, const std::function<Tile(Sym, Tile)>& body,
                             Loc loc) {
  return carried_loop(TileOpKind::Pipeline, extent, init, body, loc);
}

void KernelBuilder::if_(ScalarCond cond, const std::function<void()>& then_body,
                        const std::function<void()>& else_body, Loc loc) {
  TileOp op;
  op.kind = TileOpKind::If;
  op.loc = SourceLoc::from(loc);
  op.cond.on_scalar = true;
  op.cond.scalar = cond.scalar;
  op.cond.op = cond.op;
  op.cond.value = cond.value;
  op.regions.resize(2);
  const std::function<void()>* bodies[2] = {&then_body, &else_body};
  for (int r = 0; r < 2; ++r) {
    regions_.push_back(&op.regions[r]);
    if (*bodies[r]) (*bodies[r])();
    regions_.pop_back();
  }
  emit(std::move(op));
}

Tile KernelBuilder::load(const Tensor& t, Sym row, Sym col, Sym rows, Sym cols, Loc loc) {
  Tile v = new_value(TileType{DType::F32, {rows.e, cols.e}});
  TileOp op;
  op.kind = TileOpKind::Load;
  op.param = t.name;
  op.coords = {row.e, col.e};
  op.results = {v.id};
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
  return v;
}

void KernelBuilder::store(const Tensor& t, Sym row, Sym col, Tile value, Loc loc) {
  TileOp op;
  op.kind = TileOpKind::Store;
  op.param = t.name;
  op.coords = {row.e, col.e};
  op.operands = {value.id};
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
}

Tile KernelBuilder::constant(double value, Sym rows, Sym cols, Loc loc) {
  Tile v = new_value(TileType{DType::F32, {rows.e, cols.e}});
  TileOp op;
  op.kind = TileOpKind::Const;
  op.constant = value;
  op.results = {v.id};
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
  return v;
}

Tile KernelBuilder::mma(Tile a, Tile b, Tile acc, Loc loc) {
  TileType type;
  if (acc.id >= 0 && acc.id < static_cast<int>(kernel_.values.size()))
    type = kernel_.values[acc.id].type;
  Tile v = new_value(type);
  TileOp op;
  op.kind = TileOpKind::Mma;
  op.operands = {a.id, b.id, acc.id};
  op.results = {v.id};
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
  return v;
}

Tile KernelBuilder::emit_elementwise(TileOpKind kind, std::vector<Tile> operands, Loc loc) {
  // The result takes the shape of the first tile operand; a scalar broadcasts.
  TileType type{DType::F32, {}};
  for (Tile t : operands)
    if (t.id >= 0 && t.id < static_cast<int>(kernel_.values.size()) &&
        !kernel_.values[t.id].type.is_scalar()) {
      type = kernel_.values[t.id].type;
      break;
    }
  Tile v = new_value(type);
  TileOp op;
  op.kind = kind;
  for (Tile t : operands) op.operands.push_back(t.id);
  op.results = {v.id};
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
  return v;
}

Tile KernelBuilder::add(Tile a, Tile b, Loc loc) { return emit_elementwise(TileOpKind::Add, {a, b}, loc); }
Tile KernelBuilder::sub(Tile a, Tile b, Loc loc) { return emit_elementwise(TileOpKind::Sub, {a, b}, loc); }
Tile KernelBuilder::mul(Tile a, Tile b, Loc loc) { return emit_elementwise(TileOpKind::Mul, {a, b}, loc); }
Tile KernelBuilder::max(Tile a, Tile b, Loc loc) { return emit_elementwise(TileOpKind::Max, {a, b}, loc); }
Tile KernelBuilder::exp(Tile a, Loc loc) { return emit_elementwise(TileOpKind::Exp, {a}, loc); }
Tile KernelBuilder::neg(Tile a, Loc loc) { return emit_elementwise(TileOpKind::Neg, {a}, loc); }

void KernelBuilder::barrier(Loc loc) {
  TileOp op;
  op.kind = TileOpKind::Barrier;
  op.loc = SourceLoc::from(loc);
  emit(std::move(op));
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
