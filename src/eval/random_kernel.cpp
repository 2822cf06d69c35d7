// The generator keeps a pool of the values in scope, each with its shape class
// relative to the block's tile [R, C] (full, column [R, 1], row [1, C], unit [1, 1],
// scalar), a bound on its magnitude for inputs in [-1, 1], and whether fp32
// computes it exactly (loads, constants, indices, neg/abs/max/min/select/broadcast/
// transpose of exact values). Ops draw their operands from the pool; a region's
// values leave the pool when the region closes. Ops are emitted straight into the
// TileIR regions, so every value is defined before its use by construction.
#include "eval/random_kernel.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include "ir/tile_verify.h"
#include "runtime/tensor_check.h"
#include "tessel/error.h"

namespace tessel {
namespace {

enum class Kind { Full, Col, Row, Unit, Scalar };

bool rows_one(Kind k) { return k == Kind::Row || k == Kind::Unit; }
bool cols_one(Kind k) { return k == Kind::Col || k == Kind::Unit; }

Kind broadcast_kind(Kind a, Kind b) {
  if (a == Kind::Scalar) return b;
  if (b == Kind::Scalar) return a;
  bool r1 = rows_one(a) && rows_one(b), c1 = cols_one(a) && cols_one(b);
  return r1 ? (c1 ? Kind::Unit : Kind::Row) : (c1 ? Kind::Col : Kind::Full);
}

struct Node {
  int id = -1;
  Kind kind = Kind::Full;
  double bound = 1;
  bool exact = true;
};

// Where the elements of a logical [rows, cols] matrix (one per batch) live in a
// tensor: each tensor dimension's coordinate is the batch, the row, the column or a
// constant; the tile's rows and columns run along `dims`.
struct View {
  enum Source { Batch, Row, Col, Fixed };
  std::string tensor;
  std::vector<std::pair<Source, int64_t>> coord;
  std::array<int, 2> dims{0, 1};

  std::vector<Expr> at(const Expr& b, const Expr& r, const Expr& c) const {
    std::vector<Expr> out;
    for (auto [src, v] : coord)
      out.push_back(src == Batch ? b : src == Row ? r : src == Col ? c : expr_const(v));
    return out;
  }
};

constexpr double kSquashAbove = 1e3;

class Gen {
 public:
  Gen(uint64_t seed, const RandomKernelOptions& options) : rng_(seed), options_(options) {
    rk_.seed = seed;
    k_.name = "random_" + std::to_string(seed);
  }

  RandomKernel run() {
    square_ = chance(0.25);
    if (square_) {
      int64_t t = pick_tile();
      R_ = C_ = tile_param("T", t);
      r_ = c_ = t;
    } else {
      r_ = pick_tile();
      c_ = pick_tile();
      R_ = tile_param("BM", r_);
      C_ = tile_param("BN", c_);
    }
    m_ = ragged(r_);
    n_ = ragged(c_);
    M_ = size("M", m_);
    N_ = size("N", n_);
    int grid = rnd(1, 3);
    Region body;
    TileOp par = make(TileOpKind::Parallel);
    if (grid == 3) {
      bt_ = rnd(1, 3);
      Bt_ = size("Bt", bt_);
      par.loops.push_back({"b", Bt_});
      batch_ = expr_sym("b");
    }
    par.loops.push_back({"i", ceil_div(M_, R_)});
    if (grid >= 2) par.loops.push_back({"j", ceil_div(N_, C_)});
    grid_ivs_ = {"i"};
    if (grid >= 2) grid_ivs_.push_back("j");
    if (grid == 3) grid_ivs_.push_back("b");
    cur_ = &k_.body;
    in_region(body, [&] {
      row0_ = expr_sym("i") * R_;
      if (grid >= 2) {
        col0_ = expr_sym("j") * C_;
        block();
        row_output(true);
        col_output(true);
      } else {
        column_loop();
      }
    });
    par.regions.push_back(std::move(body));
    k_.body.ops.push_back(std::move(par));
    if (!phase_inputs_.empty() && chance(0.25)) second_phase();
    verify_tile_kernel(k_);
    rk_.kernel = std::move(k_);
    rk_.tolerance = error_bound(DType::F32, worst_storage_, depth_);
    return std::move(rk_);
  }

 private:
  // ---- randomness
  int rnd(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int64_t pick_tile() {
    static const int64_t common[] = {1, 2, 3, 4, 5, 7, 8, 11, 16};
    return chance(0.7) ? common[rnd(0, 8)] : rnd(1, 16);
  }
  // 1 to 3 blocks of `tile`, the last one mostly partial; at most 40.
  int64_t ragged(int64_t tile) {
    int64_t blocks = rnd(1, 3);
    int64_t hi = std::min<int64_t>(blocks * tile, 40), lo = std::min((blocks - 1) * tile + 1, hi);
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  double small_value() { return rnd(-8, 8) / 4.0; }  // exact in every dtype used

  // ---- parameters and values
  Expr size(const std::string& name, int64_t v) {
    k_.size_params.push_back(name);
    rk_.sizes[name] = v;
    return expr_sym(name);
  }
  Expr tile_param(const std::string& name, int64_t v) {
    k_.tile_params.push_back(name);
    rk_.tiles[name] = v;
    return expr_sym(name);
  }
  std::string fresh(const std::string& prefix) { return prefix + std::to_string(names_++); }

  std::vector<Expr> shape(Kind k) const {
    Expr one = expr_const(1);
    switch (k) {
      case Kind::Full: return {R_, C_};
      case Kind::Col: return {R_, one};
      case Kind::Row: return {one, C_};
      case Kind::Unit: return {one, one};
      case Kind::Scalar: return {};
    }
    return {};
  }
  int64_t extent(Kind k, int axis) const {
    bool one = axis == 0 ? rows_one(k) : cols_one(k);
    return one ? 1 : axis == 0 ? r_ : c_;
  }

  int new_value(DType dt, std::vector<Expr> shape) {
    int id = static_cast<int>(k_.values.size());
    k_.values.push_back(Value{id, TileType{dt, std::move(shape)}, "v" + std::to_string(id)});
    return id;
  }
  static TileOp make(TileOpKind kind, std::vector<int> operands = {}) {
    TileOp o;
    o.kind = kind;
    o.operands = std::move(operands);
    return o;
  }
  int emit(TileOp o, DType dt, std::vector<Expr> shape) {
    int id = new_value(dt, std::move(shape));
    o.results = {id};
    cur_->ops.push_back(std::move(o));
    return id;
  }
  // Runs `fill` with `r` as the current region; values made there leave the pool after.
  template <class F>
  void in_region(Region& r, F fill) {
    Region* saved = cur_;
    size_t mark = pool_.size();
    cur_ = &r;
    fill();
    cur_ = saved;
    pool_.resize(mark);
  }

  // ---- elementwise building blocks (results are f32)
  Node ew(TileOpKind kind, const std::vector<Node>& in, double bound, bool exact, Kind kd) {
    std::vector<int> ids;
    for (const Node& n : in) ids.push_back(n.id);
    return Node{emit(make(kind, ids), DType::F32, shape(kd)), kd, bound, exact};
  }
  Node unary(TileOpKind kind, Node x, double bound, bool exact = false) {
    return ew(kind, {x}, bound, exact, x.kind);
  }
  Node binary(TileOpKind kind, Node a, Node b, double bound, bool exact = false) {
    return ew(kind, {a, b}, bound, exact, broadcast_kind(a.kind, b.kind));
  }
  Node constant(double v, Kind kd) {
    TileOp o = make(TileOpKind::Const);
    o.constant = v;
    return Node{emit(std::move(o), DType::F32, shape(kd)), kd, std::abs(v), true};
  }
  Node cast(Node x, DType to) {
    return Node{emit(make(TileOpKind::Cast, {x.id}), to, shape(x.kind)), x.kind, x.bound, x.exact};
  }
  // |x| + 1: >= 1, the argument of log, sqrt, rsqrt, recip and a divisor.
  Node pos(Node x) {
    Node a = unary(TileOpKind::Abs, x, x.bound, x.exact);
    return binary(TileOpKind::Add, a, constant(1, Kind::Scalar), x.bound + 1);
  }
  Node squash(Node x) { return binary(TileOpKind::Div, x, pos(x), 1); }
  Node bounded(Node x) { return x.bound > 4 ? unary(TileOpKind::Tanh, x, 1) : x; }
  Node keep(Node n) {
    if (n.bound > kSquashAbove) n = squash(n);
    pool_.push_back(n);
    return n;
  }

  // A pool value, recent ones favoured so that chains grow deep.
  Node pick() {
    TESSEL_ASSERT(!pool_.empty(), "the pool starts with a load");
    int n = static_cast<int>(pool_.size());
    return pool_[chance(0.5) ? n - 1 - rnd(0, std::min(2, n - 1)) : rnd(0, n - 1)];
  }
  template <class P>
  std::optional<Node> pick_if(P pred) {
    std::vector<Node> c;
    for (const Node& n : pool_)
      if (pred(n)) c.push_back(n);
    if (c.empty()) return std::nullopt;
    return c[rnd(0, static_cast<int>(c.size()) - 1)];
  }
  Node full(Node x) {
    if (x.kind == Kind::Full) return x;
    return Node{emit(make(TileOpKind::Broadcast, {x.id}), DType::F32, shape(Kind::Full)), Kind::Full,
                x.bound, x.exact};
  }

  // ---- tensors and views
  // A tensor's dtype: f32, or with options_.narrow_tensors sometimes bf16 or f16 (the
  // same draws either way, so that a seed keeps its shape).
  DType tensor_dtype(double p_f32) {
    DType dt = chance(p_f32) ? DType::F32 : chance(0.5) ? DType::BF16 : DType::F16;
    return options_.narrow_tensors ? dt : DType::F32;
  }
  DType input_dtype() { return tensor_dtype(0.75); }

  void add_tensor(const std::string& name, DType dt, Access access, std::vector<Expr> shape,
                  std::vector<Expr> strides) {
    TensorParam t;
    t.name = name;
    t.dtype = dt;
    t.access = access;
    t.shape = std::move(shape);
    t.strides = std::move(strides);
    k_.tensors.push_back(std::move(t));
  }
  // A stride parameter of at least `min` (a little padding, sometimes).
  Expr stride(const std::string& tensor, int64_t min) {
    return size(tensor + "_s" + std::to_string(strides_++), min + (chance(0.5) ? 0 : rnd(1, 3)));
  }

  // A logical rows x cols matrix (per batch when the grid has one) in a fresh tensor.
  View matrix(const std::string& name, DType dt, Access access, Expr rows, int64_t rv, Expr cols,
              int64_t cv) {
    View v{name, {}, {0, 1}};
    bool written = access != Access::In;
    if (batch_) {
      switch (rnd(0, written ? 2 : 3)) {
        case 0: {  // [Bt, rows, cols] row-major
          Expr ld = stride(name, cv), sb = stride(name, rv * rk_.sizes[ld->name]);
          add_tensor(name, dt, access, {Bt_, rows, cols}, {sb, ld, expr_const(1)});
          v.coord = {{View::Batch, 0}, {View::Row, 0}, {View::Col, 0}};
          v.dims = {1, 2};
          break;
        }
        case 1: {  // [rows, Bt, cols]: the batch in the middle
          Expr sb = stride(name, cv), ld = stride(name, bt_ * rk_.sizes[sb->name]);
          add_tensor(name, dt, access, {rows, Bt_, cols}, {ld, sb, expr_const(1)});
          v.coord = {{View::Row, 0}, {View::Batch, 0}, {View::Col, 0}};
          v.dims = {0, 2};
          break;
        }
        case 2: {  // [Bt, rows, cols], each batch column-major
          Expr ld = stride(name, rv), sb = stride(name, cv * rk_.sizes[ld->name]);
          add_tensor(name, dt, access, {Bt_, rows, cols}, {sb, expr_const(1), ld});
          v.coord = {{View::Batch, 0}, {View::Row, 0}, {View::Col, 0}};
          v.dims = {1, 2};
          break;
        }
        default: {  // one matrix shared by every batch: batch stride 0
          Expr ld = stride(name, cv);
          add_tensor(name, dt, access, {Bt_, rows, cols}, {expr_const(0), ld, expr_const(1)});
          v.coord = {{View::Batch, 0}, {View::Row, 0}, {View::Col, 0}};
          v.dims = {1, 2};
          break;
        }
      }
      return v;
    }
    switch (rnd(0, 4)) {
      case 0: {  // row-major
        add_tensor(name, dt, access, {rows, cols}, {stride(name, cv), expr_const(1)});
        v.coord = {{View::Row, 0}, {View::Col, 0}};
        break;
      }
      case 1: {  // column-major: a transposed view by strides
        add_tensor(name, dt, access, {rows, cols}, {expr_const(1), stride(name, rv)});
        v.coord = {{View::Row, 0}, {View::Col, 0}};
        break;
      }
      case 2: {  // stored as [cols, rows], read with dims(1, 0)
        add_tensor(name, dt, access, {cols, rows}, {stride(name, rv), expr_const(1)});
        v.coord = {{View::Col, 0}, {View::Row, 0}};
        v.dims = {1, 0};
        break;
      }
      case 3: {  // slice 1 of a [2, rows, cols] tensor
        Expr ld = stride(name, cv), sb = stride(name, rv * rk_.sizes[ld->name]);
        add_tensor(name, dt, access, {expr_const(2), rows, cols}, {sb, ld, expr_const(1)});
        v.coord = {{View::Fixed, 1}, {View::Row, 0}, {View::Col, 0}};
        v.dims = {1, 2};
        break;
      }
      default: {  // slice 1 of a [rows, 2, cols] tensor: dims(0, 2)
        Expr s1 = stride(name, cv), s0 = stride(name, 2 * rk_.sizes[s1->name]);
        add_tensor(name, dt, access, {rows, expr_const(2), cols}, {s0, s1, expr_const(1)});
        v.coord = {{View::Row, 0}, {View::Fixed, 1}, {View::Col, 0}};
        v.dims = {0, 2};
        break;
      }
    }
    return v;
  }

  // A vector of `len` elements read (or written) as a row [1, C] or a column [R, 1]:
  // rank 1 (strided), or rank 2 [Bt, len] when batched.
  View vector(const std::string& name, DType dt, Access access, Expr len, int64_t lv, bool row) {
    View v{name, {}, {}};
    if (batch_ && (access != Access::In || chance(0.5))) {
      Expr s = chance(0.5) ? expr_const(1) : stride(name, 1);
      int64_t sv = s->kind == ExprKind::Const ? 1 : rk_.sizes[s->name];
      Expr sb = stride(name, lv * sv);
      add_tensor(name, dt, access, {Bt_, len}, {sb, s});
      v.coord = {{View::Batch, 0}, {row ? View::Col : View::Row, 0}};
      v.dims = row ? std::array<int, 2>{0, 1} : std::array<int, 2>{1, 0};
      return v;
    }
    add_tensor(name, dt, access, {len}, {chance(0.5) ? expr_const(1) : stride(name, 1)});
    v.coord = {{row ? View::Col : View::Row, 0}};
    v.dims = row ? std::array<int, 2>{-1, 0} : std::array<int, 2>{0, -1};
    return v;
  }

  int load(const View& v, const Expr& r, const Expr& c, DType dt, std::vector<Expr> shape,
           double pad = 0) {
    TileOp o = make(TileOpKind::Load);
    o.param = v.tensor;
    o.coords = v.at(batch_, r, c);
    o.dims = v.dims;
    o.constant = pad;
    return emit(std::move(o), dt, std::move(shape));
  }
  void store(const View& v, const Expr& r, const Expr& c, int id) {
    TileOp o = make(TileOpKind::Store, {id});
    o.param = v.tensor;
    o.coords = v.at(batch_, r, c);
    o.dims = v.dims;
    cur_->ops.push_back(std::move(o));
  }
  // A loaded tile as an exact f32 pool value (16-bit loads are cast: exactly).
  Node loaded(int id, DType dt, Kind kd) {
    Node n{id, kd, 1, true};
    return dt == DType::F32 ? n : cast(n, DType::F32);
  }

  // ---- leaves
  void load_matrix_leaf() {
    DType dt = input_dtype();
    std::string name = fresh("X");
    View v = matrix(name, dt, Access::In, M_, m_, N_, n_);
    if (dt == DType::F32) f32_matrices_.push_back(v);
    double pad = chance(0.6) ? 0 : small_value();
    Kind kd = chance(0.8) ? Kind::Full : chance(0.45) ? Kind::Row : chance(0.8) ? Kind::Col : Kind::Unit;
    Node x = loaded(load(v, row0_, col0_, dt, shape(kd), pad), dt, kd);
    x.bound = std::max(1.0, std::abs(pad));
    keep(x);
  }
  void load_vector_leaf(bool row) {
    DType dt = input_dtype();
    View v = vector(fresh(row ? "r" : "c"), dt, Access::In, row ? N_ : M_, row ? n_ : m_, row);
    Kind kd = row ? Kind::Row : Kind::Col;
    keep(loaded(load(v, row0_, col0_, dt, shape(kd), chance(0.7) ? 0 : small_value()), dt, kd));
  }
  void scalar_leaf() {
    std::string name = fresh("s");
    double v = rnd(-8, 8) / 8.0;
    k_.scalars.push_back(ScalarParam{name, DType::F32});
    rk_.scalars[name] = v;
    scalars_.push_back(name);
    TileOp o = make(TileOpKind::ScalarParam);
    o.param = name;
    keep(Node{emit(std::move(o), DType::F32, {}), Kind::Scalar, 1, true});
  }
  void index_leaf() {
    TileOp o = make(TileOpKind::Index);
    o.axis = rnd(0, 1);
    Kind kd = chance(0.6) ? Kind::Full : o.axis == 0 ? Kind::Col : Kind::Row;
    double bound = static_cast<double>(std::max(r_, c_));
    keep(Node{emit(std::move(o), DType::F32, shape(kd)), kd, bound, true});
  }
  void const_leaf() {
    static const Kind kinds[] = {Kind::Full, Kind::Col, Kind::Row, Kind::Unit, Kind::Scalar};
    if (chance(0.2)) return index_const_leaf(kinds[rnd(0, 4)]);
    keep(constant(small_value(), kinds[rnd(0, 4)]));
  }
  // A constant whose value is an index expression (grid and loop indices, the
  // block's origin, floor division and modulo), the same in every element.
  void index_const_leaf(Kind kd) {
    Expr iv = expr_sym(grid_ivs_[rnd(0, static_cast<int>(grid_ivs_.size()) - 1)]);
    Expr e;
    switch (rnd(0, 4)) {
      case 0: e = iv; break;
      case 1: e = row0_; break;
      case 2: e = floor_div(col0_ + iv, expr_const(rnd(2, 3))); break;
      case 3: e = expr_mod(iv + expr_const(1), expr_const(3)) - expr_const(1); break;
      default: e = M_ - expr_min(row0_, M_); break;
    }
    TileOp o = make(TileOpKind::Const);
    o.index_value = e;
    double bound = static_cast<double>(std::max({m_, n_, bt_, k_size_, int64_t{3}}));
    keep(Node{emit(std::move(o), DType::F32, shape(kd)), kd, bound, true});
  }
  void leaf() {
    switch (rnd(0, 5)) {
      case 0: load_matrix_leaf(); break;
      case 1: load_vector_leaf(true); break;
      case 2: load_vector_leaf(false); break;
      case 3: scalar_leaf(); break;
      case 4: index_leaf(); break;
      default: const_leaf(); break;
    }
  }

  // ---- ops
  void unary_op() {
    Node x = pick();
    switch (rnd(0, 8)) {
      case 0: {
        Node b = bounded(x);
        keep(unary(TileOpKind::Exp, b, std::exp(b.bound)));
        break;
      }
      case 1: {
        Node b = bounded(x);
        keep(unary(TileOpKind::Exp2, b, std::exp2(b.bound)));
        break;
      }
      case 2: {
        Node p = pos(x);
        keep(unary(TileOpKind::Log, p, std::log(p.bound)));
        break;
      }
      case 3: {
        Node p = pos(x);
        keep(unary(TileOpKind::Sqrt, p, std::sqrt(p.bound)));
        break;
      }
      case 4: keep(unary(TileOpKind::Rsqrt, pos(x), 1)); break;
      case 5: keep(unary(TileOpKind::Recip, pos(x), 1)); break;
      case 6: keep(unary(TileOpKind::Neg, x, x.bound, x.exact)); break;
      case 7: keep(unary(TileOpKind::Abs, x, x.bound, x.exact)); break;
      default: keep(unary(TileOpKind::Tanh, x, 1)); break;
    }
  }
  void binary_op() {
    Node a = pick(), b = pick();
    switch (rnd(0, 5)) {
      case 0: keep(binary(TileOpKind::Add, a, b, a.bound + b.bound)); break;
      case 1: keep(binary(TileOpKind::Sub, a, b, a.bound + b.bound)); break;
      case 2: keep(binary(TileOpKind::Mul, a, b, a.bound * b.bound)); break;
      case 3: keep(binary(TileOpKind::Div, a, pos(b), a.bound)); break;
      case 4: keep(binary(TileOpKind::Max, a, b, std::max(a.bound, b.bound), a.exact && b.exact)); break;
      default: keep(binary(TileOpKind::Min, a, b, std::max(a.bound, b.bound), a.exact && b.exact)); break;
    }
  }
  // Compares exact values only: fp32 and the fp64 oracle then agree on every outcome.
  void select_op() {
    auto exact = [](const Node& n) { return n.exact; };
    std::optional<Node> a = pick_if(exact), b = pick_if(exact);
    if (!a || !b) return const_leaf();
    TileOp c = make(TileOpKind::Cmp, {a->id, b->id});
    c.cmp = static_cast<CmpOp>(rnd(0, 5));
    Kind ck = broadcast_kind(a->kind, b->kind);
    Node cond = keep(Node{emit(std::move(c), DType::F32, shape(ck)), ck, 1, true});
    Node x = pick(), y = pick();
    Kind kd = broadcast_kind(cond.kind, broadcast_kind(x.kind, y.kind));
    keep(ew(TileOpKind::Select, {cond, x, y}, std::max(x.bound, y.bound), x.exact && y.exact, kd));
  }
  void reduce_op() {
    std::optional<Node> x = pick_if([](const Node& n) { return n.kind != Kind::Scalar; });
    if (!x) return index_leaf();
    TileOp o = make(TileOpKind::Reduce, {x->id});
    o.axis = x->kind == Kind::Full || chance(0.2) ? rnd(0, 1) : x->kind == Kind::Col ? 0 : 1;
    o.reduce = static_cast<ReduceOp>(rnd(0, 2));
    int64_t len = extent(x->kind, o.axis);
    Kind kd = o.axis == 0 ? (cols_one(x->kind) ? Kind::Unit : Kind::Row)
                          : (rows_one(x->kind) ? Kind::Unit : Kind::Col);
    bool sum = o.reduce == ReduceOp::Sum;
    if (sum) depth_ = std::max(depth_, len);
    keep(Node{emit(std::move(o), DType::F32, shape(kd)), kd, sum ? x->bound * len : x->bound,
              !sum && x->exact});
  }
  void broadcast_op() {
    std::optional<Node> x = pick_if([](const Node& n) { return n.kind != Kind::Full; });
    if (x) keep(full(*x));
  }
  // Through bf16 or f16 and back: exact for an exact value (which never overflows f16).
  void cast_op() {
    std::optional<Node> x = pick_if([](const Node& n) { return n.exact && n.bound < 6e4; });
    if (!x) return const_leaf();
    keep(cast(cast(*x, chance(0.5) ? DType::BF16 : DType::F16), DType::F32));
  }
  void transpose_op() {
    std::optional<Node> x = pick_if([](const Node& n) { return n.kind != Kind::Scalar; });
    if (!square_ || !x) return binary_op();
    Kind kd = x->kind == Kind::Row ? Kind::Col : x->kind == Kind::Col ? Kind::Row : x->kind;
    keep(Node{emit(make(TileOpKind::Transpose, {x->id}), DType::F32, shape(kd)), kd, x->bound, x->exact});
  }
  // %y = if COND { yield f(a) } else { yield b }, on a grid index or a scalar.
  void if_op() {
    Node a = pick();
    std::optional<Node> b = pick_if([&](const Node& n) { return n.kind == a.kind; });
    TileOp o = make(TileOpKind::If);
    if (!scalars_.empty() && chance(0.3)) {
      o.cond.on_scalar = true;
      o.cond.scalar = scalars_[rnd(0, static_cast<int>(scalars_.size()) - 1)];
      o.cond.op = chance(0.5) ? CmpOp::GT : CmpOp::LE;
      o.cond.value = 0;
    } else {
      Expr iv = expr_sym(grid_ivs_[rnd(0, static_cast<int>(grid_ivs_.size()) - 1)]);
      bool parity = chance(0.5);
      o.cond.lhs = parity ? expr_mod(iv, expr_const(2)) : iv;
      o.cond.rhs = expr_const(parity ? 0 : 1);
      o.cond.op = parity ? CmpOp::EQ : CmpOp::LT;
    }
    Region then_r, else_r;
    bool neg = chance(0.5);
    in_region(then_r, [&] {
      Node y = neg ? unary(TileOpKind::Neg, a, a.bound, a.exact) : unary(TileOpKind::Tanh, a, 1);
      cur_->ops.push_back(make(TileOpKind::Yield, {y.id}));
    });
    in_region(else_r, [&] { cur_->ops.push_back(make(TileOpKind::Yield, {b->id})); });
    int id = new_value(DType::F32, shape(a.kind));
    o.results = {id};
    o.regions.push_back(std::move(then_r));
    o.regions.push_back(std::move(else_r));
    cur_->ops.push_back(std::move(o));
    keep(Node{id, a.kind, std::max(a.bound, b->bound), neg && a.exact && b->exact});
  }

  // A serial or pipeline loop over `steps` (0 to 3 trips) carrying 1-3 pool values;
  // each yields tanh(carried [+ a body value of a shape that keeps its own]).
  void loop_op() {
    if (loop_depth_ > 0 || pool_.empty()) return unary_op();
    if (!steps_) steps_ = size("steps", rnd(0, 3));
    std::vector<Node> init;
    for (int n = rnd(1, 3); n > 0; --n) init.push_back(pick());
    TileOp o = make(chance(0.5) ? TileOpKind::Serial : TileOpKind::Pipeline);
    o.loops.push_back({fresh("t"), steps_});
    Region body;
    std::vector<Node> carried;
    for (const Node& x : init) {
      o.operands.push_back(x.id);
      int arg = new_value(DType::F32, shape(x.kind));
      body.args.push_back(arg);
      carried.push_back(Node{arg, x.kind, std::max(x.bound, 1.0), false});
    }
    ++loop_depth_;
    in_region(body, [&] {
      size_t mark = pool_.size();
      for (const Node& c : carried) pool_.push_back(c);
      grid_ivs_.push_back(o.loops[0].iv);
      grow(rnd(1, 4));
      grid_ivs_.pop_back();
      TileOp y = make(TileOpKind::Yield);
      for (const Node& c : carried) {
        std::optional<Node> v;
        for (int tries = 0; tries < 4 && !v; ++tries) {
          Node cand = pool_[rnd(static_cast<int>(mark), static_cast<int>(pool_.size()) - 1)];
          if (cand.id != c.id && broadcast_kind(c.kind, cand.kind) == c.kind) v = cand;
        }
        Node next = v ? binary(TileOpKind::Add, c, *v, c.bound + v->bound) : c;
        y.operands.push_back(unary(TileOpKind::Tanh, next, 1).id);
      }
      cur_->ops.push_back(std::move(y));
    });
    --loop_depth_;
    std::vector<Node> results;
    for (const Node& c : carried) {
      int id = new_value(DType::F32, shape(c.kind));
      o.results.push_back(id);
      results.push_back(Node{id, c.kind, c.bound, false});
    }
    o.regions.push_back(std::move(body));
    cur_->ops.push_back(std::move(o));
    for (const Node& r : results) keep(r);
  }

  // acc = mma over a K loop of A [R, BK] and B [BK, C] tiles (B maybe loaded as
  // [C, BK] and transposed), carrying 0-2 running reductions of the A or B tiles.
  void mma_op() {
    if (!K_) {
      bk_ = pick_tile();
      BK_ = tile_param("BK", bk_);
      k_size_ = chance(0.03) ? 0 : ragged(bk_);  // sometimes no K at all: 0 trips
      K_ = size("K", k_size_);
    }
    DType dt = tensor_dtype(0.6);
    View a_view = matrix(fresh("A"), dt, Access::In, M_, m_, K_, k_size_);
    bool bt = chance(0.4);
    View b_view = bt ? matrix(fresh("B"), dt, Access::In, N_, n_, K_, k_size_)
                     : matrix(fresh("B"), dt, Access::In, K_, k_size_, N_, n_);
    std::optional<Node> acc0 = chance(0.5) ? pick_if([](const Node& n) { return n.kind == Kind::Full; })
                                           : std::nullopt;
    if (!acc0) acc0 = constant(0, Kind::Full);
    struct Extra {
      ReduceOp op;
      bool of_a;  // a running reduction of A's rows (a column) or of B's columns (a row)
    };
    std::vector<Extra> extras;
    // With no K (0 trips) a running max or min would stay at its infinite identity.
    int n_extras = rnd(0, 2);
    if (k_size_ == 0) n_extras = 0;
    for (int n = n_extras; n > 0; --n) extras.push_back({static_cast<ReduceOp>(rnd(0, 2)), chance(0.5)});
    // Sometimes a second mma in the same loop shares the a tile: acc2 += a * B2.
    std::optional<View> b2_view;
    if (chance(0.25)) b2_view = matrix(fresh("B"), dt, Access::In, K_, k_size_, N_, n_);

    TileOp o = make(chance(0.5) ? TileOpKind::Serial : TileOpKind::Pipeline);
    std::string kv = fresh("k");
    o.loops.push_back({kv, ceil_div(K_, BK_)});
    Region body;
    o.operands.push_back(acc0->id);
    int acc = new_value(DType::F32, shape(Kind::Full));
    body.args.push_back(acc);
    std::vector<int> extra_args;
    for (const Extra& e : extras) {
      double init = reduce_identity(e.op);
      Kind kd = e.of_a ? Kind::Col : Kind::Row;
      o.operands.push_back(constant(init, kd).id);
      extra_args.push_back(new_value(DType::F32, shape(kd)));
      body.args.push_back(extra_args.back());
    }
    int acc2 = -1;
    if (b2_view) {
      o.operands.push_back(constant(0, Kind::Full).id);
      acc2 = new_value(DType::F32, shape(Kind::Full));
      body.args.push_back(acc2);
    }
    int64_t k_trips = (k_size_ + bk_ - 1) / bk_, k_pad = k_trips * bk_;
    double a_bound = 1;
    in_region(body, [&] {
      Expr kc = expr_sym(kv) * BK_;
      int a = load(a_view, row0_, kc, dt, {R_, BK_});
      if (dt == DType::F32 && chance(0.3)) {  // a computed operand
        a = emit(make(TileOpKind::Tanh, {a}), DType::F32, {R_, BK_});
        a_bound = 1;
      }
      int b;
      if (bt) {
        int t = load(b_view, col0_, kc, dt, {C_, BK_});
        b = emit(make(TileOpKind::Transpose, {t}), dt, {BK_, C_});
      } else {
        b = load(b_view, kc, col0_, dt, {BK_, C_});
      }
      if (dt == DType::F32 && chance(0.25))  // a computed b operand
        b = emit(make(TileOpKind::Tanh, {b}), DType::F32, {BK_, C_});
      TileOp y = make(TileOpKind::Yield);
      y.operands.push_back(emit(make(TileOpKind::Mma, {a, b, acc}), DType::F32, shape(Kind::Full)));
      for (size_t i = 0; i < extras.size(); ++i) {
        const Extra& e = extras[i];
        int src = e.of_a ? a : b;
        if (dt != DType::F32)
          src = emit(make(TileOpKind::Cast, {src}), DType::F32,
                     e.of_a ? std::vector<Expr>{R_, BK_} : std::vector<Expr>{BK_, C_});
        TileOp r = make(TileOpKind::Reduce, {src});
        r.axis = e.of_a ? 1 : 0;
        r.reduce = e.op;
        Kind kd = e.of_a ? Kind::Col : Kind::Row;
        Node part{emit(std::move(r), DType::F32, shape(kd)), kd, 0, false};
        Node prev{extra_args[i], kd, 0, false};
        TileOpKind combine = e.op == ReduceOp::Sum   ? TileOpKind::Add
                             : e.op == ReduceOp::Max ? TileOpKind::Max
                                                     : TileOpKind::Min;
        y.operands.push_back(binary(combine, prev, part, 0).id);
      }
      if (b2_view) {
        int b2 = load(*b2_view, kc, col0_, dt, {BK_, C_});
        y.operands.push_back(emit(make(TileOpKind::Mma, {a, b2, acc2}), DType::F32, shape(Kind::Full)));
      }
      cur_->ops.push_back(std::move(y));
    });
    int result = new_value(DType::F32, shape(Kind::Full));
    o.results.push_back(result);
    std::vector<Node> extra_results;
    for (const Extra& e : extras) {
      Kind kd = e.of_a ? Kind::Col : Kind::Row;
      int id = new_value(DType::F32, shape(kd));
      o.results.push_back(id);
      bool sum = e.op == ReduceOp::Sum;
      extra_results.push_back(Node{id, kd, sum ? static_cast<double>(k_pad) : 1.0, !sum});
    }
    if (b2_view) {
      int id = new_value(DType::F32, shape(Kind::Full));
      o.results.push_back(id);
      extra_results.push_back(Node{id, Kind::Full, static_cast<double>(k_pad) * a_bound, false});
    }
    o.regions.push_back(std::move(body));
    cur_->ops.push_back(std::move(o));
    depth_ = std::max(depth_, k_pad);
    keep(Node{result, Kind::Full, acc0->bound + static_cast<double>(k_pad) * a_bound, false});
    for (const Node& n : extra_results) keep(n);
  }

  // A numerically stable softmax of one tile's rows: padding -inf keeps the columns
  // outside the tensor out of the max and the sum; rows outside the tensor (all -inf)
  // are kept finite by clamping the max and the sum, so no NaN reaches a reduction.
  void softmax_op() {
    View v = f32_matrices_.empty() || chance(0.3)
                 ? matrix(fresh("X"), DType::F32, Access::In, M_, m_, N_, n_)
                 : f32_matrices_[rnd(0, static_cast<int>(f32_matrices_.size()) - 1)];
    Node x{load(v, row0_, col0_, DType::F32, shape(Kind::Full), -INFINITY), Kind::Full, INFINITY, true};
    TileOp mx = make(TileOpKind::Reduce, {x.id});
    mx.axis = 1;
    mx.reduce = ReduceOp::Max;
    Node m{emit(std::move(mx), DType::F32, shape(Kind::Col)), Kind::Col, 1, true};
    Node mc = binary(TileOpKind::Max, m, constant(-1e30, Kind::Scalar), 1);
    Node e = unary(TileOpKind::Exp, binary(TileOpKind::Sub, x, mc, 2), 1);
    TileOp sm = make(TileOpKind::Reduce, {e.id});
    sm.axis = 1;
    sm.reduce = ReduceOp::Sum;
    Node s{emit(std::move(sm), DType::F32, shape(Kind::Col)), Kind::Col, 1, false};
    Node sc = binary(TileOpKind::Max, s, constant(1, Kind::Scalar), static_cast<double>(c_));
    depth_ = std::max(depth_, c_);
    keep(binary(TileOpKind::Div, e, sc, 1));
    keep(sc);
  }

  // acc = mma(a, b, acc0) of values in the pool, no K loop (attention's P x V): a is a
  // pool tile [R, C] and b a [C, C] tile loaded from an [N, N] tensor, or, when the
  // tiles are square, both are pool tiles. A loaded tile never feeds the a side of
  // one mma and the b side of another (the lowering stages it for one of them).
  void pool_mma_op() {
    auto for_side = [&](char side) {
      return pick_if([&](const Node& n) {
        auto it = mma_side_.find(n.id);
        return n.kind == Kind::Full && (it == mma_side_.end() || it->second == side);
      });
    };
    std::optional<Node> a = for_side('a');
    if (!a) return binary_op();
    Node b;
    if (square_ && chance(0.5)) {
      std::optional<Node> pb = for_side('b');
      if (!pb || pb->id == a->id) return binary_op();
      b = *pb;
    } else {
      View w = matrix(fresh("W"), DType::F32, Access::In, N_, n_, N_, n_);
      b = Node{load(w, col0_, col0_, DType::F32, {C_, C_}), Kind::Full, 1, true};
    }
    mma_side_[a->id] = 'a';
    mma_side_[b.id] = 'b';
    std::optional<Node> acc = chance(0.5) ? pick_if([&](const Node& n) { return n.kind == Kind::Full; })
                                          : std::nullopt;
    if (!acc) acc = constant(0, Kind::Full);
    depth_ = std::max(depth_, c_);
    int id = emit(make(TileOpKind::Mma, {a->id, b.id, acc->id}), DType::F32, shape(Kind::Full));
    keep(Node{id, Kind::Full, acc->bound + static_cast<double>(c_) * a->bound * b.bound, false});
  }

  void grow(int n) {
    for (int i = 0; i < n; ++i) {
      switch (rnd(0, 16)) {
        case 0: case 1: case 2: unary_op(); break;
        case 3: case 4: case 5: binary_op(); break;
        case 6: select_op(); break;
        case 7: reduce_op(); break;
        case 8: broadcast_op(); break;
        case 9: cast_op(); break;
        case 10: transpose_op(); break;
        case 11: if_op(); break;
        case 12: loop_op(); break;
        case 13:
          if (chance(0.25)) {  // a user barrier, rarely
            cur_->ops.push_back(make(TileOpKind::Barrier));
            break;
          }
          leaf();
          break;
        case 14: pool_mma_op(); break;
        default: leaf(); break;
      }
    }
  }

  // ---- blocks and outputs
  // The work of one tile: leaves, ops (maybe an mma and a softmax), 1-2 tile outputs.
  void block() {
    load_matrix_leaf();
    for (int n = rnd(0, 2); n > 0; --n) leaf();
    if (chance(0.4)) mma_op();
    if (chance(0.2)) softmax_op();
    grow(rnd(3, 12));
    for (int n = rnd(1, 2); n > 0; --n) tile_output();
  }

  void note_storage(DType dt, const Node& x) {
    if (dt != DType::F32 && !x.exact && (worst_storage_ == DType::F32 || dt == DType::BF16))
      worst_storage_ = dt;
  }

  // A full tile stored in f32, bf16 or f16; sometimes in place (inout: old + new).
  void tile_output() {
    Node x = full(pick());
    DType dt = tensor_dtype(0.7);
    Access access = chance(0.25) ? Access::InOut : Access::Out;
    View v = matrix(fresh("Y"), dt, access, M_, m_, N_, n_);
    if (access == Access::InOut) {
      Node old = loaded(load(v, row0_, col0_, dt, shape(Kind::Full)), dt, Kind::Full);
      x = binary(TileOpKind::Add, x, old, x.bound + 1);
    }
    note_storage(dt, x);
    store(v, row0_, col0_, dt == DType::F32 ? x.id : cast(x, dt).id);
    if (dt == DType::F32) phase_inputs_.push_back({v, x.bound});
    // Read back what the group just stored (a round trip through global memory,
    // maybe spread over the workers differently): the value stored, padding outside.
    if (dt == DType::F32 && chance(0.2)) {
      Kind kd = chance(0.6) ? Kind::Full : chance(0.5) ? Kind::Row : Kind::Col;
      keep(Node{load(v, row0_, col0_, DType::F32, shape(kd)), kd, x.bound, x.exact});
    }
  }

  // A second grid, after the first: it reads an f32 tile output of the first (so that
  // output becomes inout) and writes outputs of its own. A phase needs the whole first
  // grid done, not only its own tile: here it reads the transposed tile when square.
  void second_phase() {
    auto [v, bound] = phase_inputs_[rnd(0, static_cast<int>(phase_inputs_.size()) - 1)];
    for (TensorParam& t : k_.tensors)
      if (t.name == v.tensor) t.access = Access::InOut;
    TileOp par = make(TileOpKind::Parallel);
    if (batch_) par.loops.push_back({"b", Bt_});
    bool flip = square_ && m_ == n_ && chance(0.5);
    par.loops.push_back({"i", ceil_div(M_, R_)});
    par.loops.push_back({"j", ceil_div(N_, C_)});
    grid_ivs_ = {"i", "j"};
    Region body;
    in_region(body, [&] {
      row0_ = expr_sym("i") * R_;
      col0_ = expr_sym("j") * C_;
      // The tile (j, i) of a square problem was written by another grid point.
      int x = flip ? load(v, col0_, row0_, DType::F32, shape(Kind::Full))
                   : load(v, row0_, col0_, DType::F32, shape(Kind::Full));
      keep(Node{x, Kind::Full, bound, false});
      block();
    });
    par.regions.push_back(std::move(body));
    k_.body.ops.push_back(std::move(par));
  }

  // A stored vector whose elements several grid points compute: one of them (the
  // first along `iv`) stores it, under an `if`.
  void guarded_store(const View& v, const std::string& iv, int id) {
    TileOp o = make(TileOpKind::If);
    o.cond.lhs = expr_sym(iv);
    o.cond.rhs = expr_const(0);
    o.cond.op = CmpOp::EQ;
    Region then_r, else_r;
    in_region(then_r, [&] { store(v, row0_, col0_, id); });
    o.regions.push_back(std::move(then_r));
    o.regions.push_back(std::move(else_r));
    cur_->ops.push_back(std::move(o));
  }

  // A column [R, 1] of this block into R (when `guard`, only by the grid's j == 0).
  void col_output(bool guard) {
    std::optional<Node> x = pick_if([](const Node& n) { return n.kind == Kind::Col; });
    if (!x || chance(0.3)) return;
    View v = vector(fresh("R"), DType::F32, Access::Out, M_, m_, false);
    if (guard) guarded_store(v, "j", x->id);
    else store(v, row0_, col0_, x->id);
  }
  // A row [1, C] into S, stored by the grid's i == 0 only.
  void row_output(bool) {
    std::optional<Node> x = pick_if([](const Node& n) { return n.kind == Kind::Row; });
    if (!x || chance(0.3)) return;
    View v = vector(fresh("S"), DType::F32, Access::Out, N_, n_, true);
    guarded_store(v, "i", x->id);
  }

  // The 1-D grid: the columns are a serial (or pipeline) loop inside each row block,
  // carrying 0-3 row reductions across the column blocks; they are stored after it.
  void column_loop() {
    if (chance(0.5)) load_vector_leaf(false);
    if (chance(0.3)) scalar_leaf();
    struct Acc {
      ReduceOp op;
      int arg;
    };
    std::vector<Acc> accs;
    TileOp o = make(chance(0.5) ? TileOpKind::Serial : TileOpKind::Pipeline);
    o.loops.push_back({"j", ceil_div(N_, C_)});
    Region body;
    for (int n = rnd(0, 3); n > 0; --n) {
      ReduceOp op = static_cast<ReduceOp>(rnd(0, 2));
      double init = reduce_identity(op);
      o.operands.push_back(constant(init, Kind::Col).id);
      accs.push_back({op, new_value(DType::F32, shape(Kind::Col))});
      body.args.push_back(accs.back().arg);
    }
    int64_t trips = (n_ + c_ - 1) / c_;
    std::vector<double> bounds;
    in_region(body, [&] {
      col0_ = expr_sym("j") * C_;
      grid_ivs_.push_back("j");
      // Feedback through global memory: read the tile that the previous trip stored
      // (the first trip reads its own tile's inputs), store this trip's at the end.
      std::optional<View> feedback;
      if (chance(0.25)) {
        feedback = matrix(fresh("F"), DType::F32, Access::InOut, M_, m_, N_, n_);
        Expr prev = expr_max(expr_sym("j") - expr_const(1), expr_const(0)) * C_;
        keep(Node{load(*feedback, row0_, prev, DType::F32, shape(Kind::Full)), Kind::Full, 1, false});
      }
      block();
      if (feedback) store(*feedback, row0_, col0_, unary(TileOpKind::Tanh, full(pick()), 1).id);
      row_output(true);
      TileOp y = make(TileOpKind::Yield);
      for (const Acc& a : accs) {
        Node x = full(pick());
        TileOp r = make(TileOpKind::Reduce, {x.id});
        r.axis = 1;
        r.reduce = a.op;
        Node part{emit(std::move(r), DType::F32, shape(Kind::Col)), Kind::Col, 0, false};
        TileOpKind combine = a.op == ReduceOp::Sum   ? TileOpKind::Add
                             : a.op == ReduceOp::Max ? TileOpKind::Max
                                                     : TileOpKind::Min;
        y.operands.push_back(binary(combine, Node{a.arg, Kind::Col, 0, false}, part, 0).id);
        bool sum = a.op == ReduceOp::Sum;
        bounds.push_back(sum ? x.bound * static_cast<double>(trips * c_) : x.bound);
        if (sum) depth_ = std::max(depth_, trips * c_);
      }
      cur_->ops.push_back(std::move(y));
      grid_ivs_.pop_back();
    });
    col0_ = expr_const(0);
    for (size_t i = 0; i < accs.size(); ++i) {
      int id = new_value(DType::F32, shape(Kind::Col));
      o.results.push_back(id);
      pool_.push_back(Node{id, Kind::Col, bounds[i], false});
    }
    o.regions.push_back(std::move(body));
    cur_->ops.push_back(std::move(o));
    col_output(false);
  }

  std::mt19937_64 rng_;
  RandomKernelOptions options_;
  RandomKernel rk_;
  TileKernel k_;
  Region* cur_ = nullptr;
  std::vector<Node> pool_;
  std::vector<View> f32_matrices_;
  std::vector<std::pair<View, double>> phase_inputs_;  // f32 tile outputs and their bounds
  std::vector<std::string> scalars_, grid_ivs_;
  std::map<int, char> mma_side_;  // pool values an mma read: 'a' or 'b'

  bool square_ = false;
  Expr R_, C_, BK_, M_, N_, K_, Bt_, steps_;  // tile extents and sizes (null: absent)
  int64_t r_ = 1, c_ = 1, bk_ = 1, m_ = 1, n_ = 1, k_size_ = 1, bt_ = 1;
  Expr batch_, row0_, col0_;  // the block's batch (null: none) and top-left element
  int names_ = 0, strides_ = 0, loop_depth_ = 0;
  int64_t depth_ = 1;  // the longest accumulation
  DType worst_storage_ = DType::F32;
};

}  // namespace

RandomKernel random_kernel(uint64_t seed, const RandomKernelOptions& options) {
  return Gen(seed, options).run();
}

std::map<std::string, std::vector<double>> random_kernel_tensors(const RandomKernel& rk, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::map<std::string, std::vector<double>> out;
  for (const TensorParam& t : rk.kernel.tensors) {
    std::vector<double>& v = out[t.name];
    v.resize(check_tensor(t, rk.sizes).elements);
    for (double& x : v) x = t.access == Access::Out ? NAN : round_to_dtype(u(rng), t.dtype);
  }
  return out;
}

EvalArgs eval_args(const RandomKernel& rk, std::map<std::string, std::vector<double>>& tensors) {
  EvalArgs a;
  a.sizes = rk.sizes;
  a.tiles = rk.tiles;
  a.scalars = rk.scalars;
  for (auto& [name, v] : tensors) a.tensors[name] = v;
  return a;
}

}  // namespace tessel
