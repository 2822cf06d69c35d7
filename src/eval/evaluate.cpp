// The evaluator keeps one dense row-major array of doubles per live value (indexed by
// value id; SSA, so an op inside a loop simply overwrites its results each iteration)
// and a stack of induction variables for index expressions. It is written for
// obviousness, not speed: kernels here are test-sized.
#include "eval/evaluate.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/tensor_check.h"
#include "tessel/error.h"

namespace tessel {
namespace {

[[noreturn]] void bad_arg(const std::string& message) {
  user_error(ErrorKind::InvalidArgument, "evaluate: " + message);
}

// A scalar, or a rows x cols tile stored row-major.
struct Val {
  bool defined = false;
  bool scalar = true;
  int64_t rows = 1, cols = 1;
  std::vector<double> v;
  // Element (r, c) with broadcast by identity: a scalar or an extent-1 dim stretches.
  double at(int64_t r, int64_t c) const {
    if (scalar) return v[0];
    return v[(rows == 1 ? 0 : r) * cols + (cols == 1 ? 0 : c)];
  }
};

struct BoundTensor {
  const TensorParam* param = nullptr;
  std::vector<int64_t> shape, strides;
  std::span<double> data;
};

double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

template <class T>
std::string list_text(const std::vector<T>& xs) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s;
}

class Evaluator {
 public:
  Evaluator(const TileKernel& k, const EvalArgs& a) : k_(k), a_(a), vals_(k.values.size()) {}

  void run() {
    check_names();
    for (const TensorParam& t : k_.tensors) bind(t);
    region(k_.body);
  }

 private:
  [[noreturn]] void malformed(const TileOp& op, const std::string& message) const {
    std::string where = op.loc.to_string();
    user_error(ErrorKind::Verify, "evaluate: " + (where.empty() ? "" : where + ": ") +
                                      tile_op_name(op.kind) + ": " + message);
  }

  // Every parameter given, and nothing given that is not a parameter (a misspelt name
  // would otherwise be silently ignored).
  template <class M, class P, class Name>
  void match(const char* what, const M& given, const std::vector<P>& params, Name name) {
    for (const P& p : params)
      if (!given.count(name(p)))
        bad_arg(std::string(what) + " '" + name(p) + "' of kernel " + k_.name + " is not given");
    for (const auto& [n, _] : given)
      if (std::none_of(params.begin(), params.end(), [&](const P& p) { return name(p) == n; }))
        bad_arg(std::string(what) + " '" + n + "' is given but kernel " + k_.name +
                " has no such parameter");
  }

  void check_names() {
    auto id = [](const std::string& s) -> const std::string& { return s; };
    match("size", a_.sizes, k_.size_params, id);
    match("tile", a_.tiles, k_.tile_params, id);
    match("scalar", a_.scalars, k_.scalars, [](const ScalarParam& s) { return s.name; });
    match("tensor", a_.tensors, k_.tensors, [](const TensorParam& t) { return t.name; });
    for (const auto& [n, v] : a_.tiles)
      if (v < 1) bad_arg("tile '" + n + "' is bound to " + std::to_string(v) + "; tiles are >= 1");
  }

  // Extents, strides and the no-overlap rule of written tensors: the launch check
  // every target shares. Then the array must cover every element.
  void bind(const TensorParam& t) {
    TensorLayout layout = check_tensor(t, a_.sizes);
    BoundTensor b{&t, layout.shape, layout.strides, a_.tensors.at(t.name)};
    if (static_cast<int64_t>(b.data.size()) < layout.elements)
      bad_arg("tensor " + t.name + " of shape [" + list_text(b.shape) + "] and strides (" +
              list_text(b.strides) + ") needs " + std::to_string(layout.elements) +
              " elements, but its array has " + std::to_string(b.data.size()));
    tensors_[t.name] = std::move(b);
  }

  int64_t eval(const Expr& e) const {
    return expr_eval(e, [&](const std::string& s, int64_t* v) {
      for (auto it = ivs_.rbegin(); it != ivs_.rend(); ++it)
        if (it->first == s) return *v = it->second, true;
      if (auto it = a_.tiles.find(s); it != a_.tiles.end()) return *v = it->second, true;
      if (auto it = a_.sizes.find(s); it != a_.sizes.end()) return *v = it->second, true;
      return false;
    });
  }

  const Value& value(const TileOp& op, int id) const {
    if (id < 0 || id >= static_cast<int>(k_.values.size()))
      malformed(op, "value id " + std::to_string(id) + " out of range");
    return k_.values[id];
  }

  const Val& use(const TileOp& op, int id) const {
    value(op, id);
    if (!vals_[id].defined) malformed(op, "uses %" + k_.values[id].name + " before it is defined");
    return vals_[id];
  }

  // A value of the result's type (extents evaluated now), zero-filled.
  Val make(const TileOp& op, int id) const {
    const TileType& t = value(op, id).type;
    Val r;
    r.defined = true;
    r.scalar = t.is_scalar();
    if (!r.scalar) {
      if (t.shape.size() != 2) malformed(op, "%" + k_.values[id].name + " is not a 2-D tile");
      r.rows = eval(t.shape[0]);
      r.cols = eval(t.shape[1]);
      if (r.rows < 0 || r.cols < 0)
        bad_arg("tile %" + k_.values[id].name + " has extents " + std::to_string(r.rows) + " x " +
                std::to_string(r.cols));
    }
    r.v.assign(r.rows * r.cols, 0.0);
    return r;
  }

  void set(int id, Val v) {
    if (a_.fp32_model && k_.values[id].type.dtype != DType::F64)
      for (double& x : v.v) x = modeled(x);
    vals_[id] = std::move(v);
  }
  // One fp32 rounding under fp32_model (an fma's, in mma), else none.
  double modeled(double x) const { return a_.fp32_model ? round_to_dtype(x, DType::F32) : x; }

  void results(const TileOp& op, size_t n) const {
    if (op.results.size() != n)
      malformed(op, "has " + std::to_string(op.results.size()) + " results, not " + std::to_string(n));
  }
  void operands(const TileOp& op, size_t n) const {
    if (op.operands.size() != n)
      malformed(op, "has " + std::to_string(op.operands.size()) + " operands, not " +
                        std::to_string(n));
  }

  // Runs a region; returns the yield's operands (empty if it has none).
  std::vector<int> region(const Region& r) {
    const size_t mark = ivs_.size();  // a ticket's symbol ends with its region
    std::vector<int> yielded;
    for (const TileOp& op : r.ops) {
      if (op.kind == TileOpKind::Yield) {
        yielded = op.operands;
        break;
      }
      this->op(op);
    }
    ivs_.resize(mark);
    return yielded;
  }

  // The group's ticket: the counter element's value, which then advances (wrapping
  // to 0 after count - 1). Groups run one after another, so each sees every store
  // of the groups before it.
  void ticket(const TileOp& op) {
    if (op.coords.size() != 1 || op.loops.size() != 1) malformed(op, "needs one coordinate and one symbol");
    const BoundTensor& t = tensors_.at(op.param);
    const int64_t index = eval(op.coords[0]), count = eval(op.loops[0].extent);
    if (index < 0 || index >= t.shape[0])
      bad_arg("ticket of " + op.param + "[" + std::to_string(index) + "]: outside its " +
              std::to_string(t.shape[0]) + " elements");
    if (count < 1) bad_arg("ticket of " + op.param + " counts " + std::to_string(count) + " tickets");
    double& next = t.data[index * t.strides[0]];
    if (!(next >= 0 && next < static_cast<double>(count) && next == std::floor(next)))
      bad_arg("ticket of " + op.param + "[" + std::to_string(index) + "]: the counter holds " +
              std::to_string(next) + ", not a ticket in [0, " + std::to_string(count) + ")");
    const int64_t drawn = static_cast<int64_t>(next);
    next = drawn + 1 == count ? 0 : static_cast<double>(drawn + 1);
    ivs_.emplace_back(op.loops[0].iv, drawn);
  }

  // Copies the values `from` (a yield's operands) into `to` (results or carried args).
  void transfer(const TileOp& op, const std::vector<int>& from, const std::vector<int>& to) {
    if (from.size() != to.size())
      malformed(op, "yields " + std::to_string(from.size()) + " values for " +
                        std::to_string(to.size()));
    std::vector<Val> copies;
    for (int id : from) copies.push_back(use(op, id));
    for (size_t i = 0; i < to.size(); ++i) {
      value(op, to[i]);
      set(to[i], std::move(copies[i]));
    }
  }

  // Tensor coordinates of tile element (r, c): coords plus r along dims[0] and c
  // along dims[1]; a unit axis (-1) has extent 1, so only position 0 is inside.
  // Returns false when the element lies outside the tensor.
  bool address(const BoundTensor& t, const std::vector<int64_t>& base, std::array<int, 2> dims,
               int64_t r, int64_t c, int64_t* addr) const {
    int64_t off = 0;
    for (size_t d = 0; d < base.size(); ++d) {
      int64_t i = base[d] + (dims[0] == static_cast<int>(d) ? r : 0) +
                  (dims[1] == static_cast<int>(d) ? c : 0);
      if (i < 0 || i >= t.shape[d]) return false;
      off += i * t.strides[d];
    }
    if ((dims[0] < 0 && r != 0) || (dims[1] < 0 && c != 0)) return false;
    *addr = off;
    return true;
  }

  const BoundTensor& tensor_of(const TileOp& op, std::vector<int64_t>* base) const {
    auto it = tensors_.find(op.param);
    if (it == tensors_.end()) malformed(op, "unknown tensor '" + op.param + "'");
    const BoundTensor& t = it->second;
    int rank = static_cast<int>(t.shape.size());
    if (static_cast<int>(op.coords.size()) != rank)
      malformed(op, std::to_string(op.coords.size()) + " coordinates for tensor " + op.param +
                        " of rank " + std::to_string(rank));
    for (int d : op.dims)
      if (d < -1 || d >= rank) malformed(op, "dims name dim " + std::to_string(d) + " of " + op.param);
    if (op.dims[0] >= 0 && op.dims[0] == op.dims[1])
      malformed(op, "rows and cols both run along dim " + std::to_string(op.dims[0]));
    for (const Expr& e : op.coords) base->push_back(eval(e));
    return t;
  }

  void load(const TileOp& op) {
    operands(op, 0);
    results(op, 1);
    std::vector<int64_t> base;
    const BoundTensor& t = tensor_of(op, &base);
    Val out = make(op, op.results[0]);
    if (out.scalar) malformed(op, "loads a scalar");
    for (int64_t r = 0; r < out.rows; ++r)
      for (int64_t c = 0; c < out.cols; ++c) {
        int64_t addr;
        out.v[r * out.cols + c] = address(t, base, op.dims, r, c, &addr) ? t.data[addr] : op.constant;
      }
    set(op.results[0], std::move(out));
  }

  void store(const TileOp& op) {
    operands(op, 1);
    results(op, 0);
    std::vector<int64_t> base;
    const BoundTensor& t = tensor_of(op, &base);
    if (t.param->access == Access::In) malformed(op, "stores to 'in' tensor " + op.param);
    const Val& x = use(op, op.operands[0]);
    if (x.scalar) malformed(op, "stores a scalar");
    for (int64_t r = 0; r < x.rows; ++r)
      for (int64_t c = 0; c < x.cols; ++c) {
        int64_t addr;
        if (address(t, base, op.dims, r, c, &addr)) t.data[addr] = x.v[r * x.cols + c];
      }
  }

  void mma(const TileOp& op) {
    operands(op, 3);
    results(op, 1);
    const Val &a = use(op, op.operands[0]), &b = use(op, op.operands[1]),
              &c = use(op, op.operands[2]);
    Val out = make(op, op.results[0]);
    if (a.scalar || b.scalar || c.scalar || a.cols != b.rows || c.rows != a.rows ||
        c.cols != b.cols || out.scalar || out.rows != c.rows || out.cols != c.cols)
      malformed(op, "operand extents " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
                        ", " + std::to_string(b.rows) + "x" + std::to_string(b.cols) + ", " +
                        std::to_string(c.rows) + "x" + std::to_string(c.cols) + " do not chain");
    for (int64_t i = 0; i < a.rows; ++i)
      for (int64_t j = 0; j < b.cols; ++j) {
        double s = c.v[i * c.cols + j];
        for (int64_t p = 0; p < a.cols; ++p) s = modeled(s + a.v[i * a.cols + p] * b.v[p * b.cols + j]);
        out.v[i * out.cols + j] = s;
      }
    set(op.results[0], std::move(out));
  }

  // Elementwise over the result's shape, operands broadcast by identity.
  template <class F>
  void elementwise(const TileOp& op, size_t n, F f) {
    operands(op, n);
    results(op, 1);
    Val out = make(op, op.results[0]);
    std::vector<const Val*> in;
    for (int id : op.operands) {
      const Val& x = use(op, id);
      bool fits = x.scalar || (!out.scalar && (x.rows == out.rows || x.rows == 1) &&
                               (x.cols == out.cols || x.cols == 1));
      if (!fits)
        malformed(op, "operand %" + k_.values[id].name + " (" +
                          (x.scalar ? "scalar" : std::to_string(x.rows) + "x" + std::to_string(x.cols)) +
                          ") does not broadcast to the result's " +
                          (out.scalar ? "scalar" : std::to_string(out.rows) + "x" + std::to_string(out.cols)));
      in.push_back(&x);
    }
    double args[3] = {0, 0, 0};
    for (int64_t r = 0; r < out.rows; ++r)
      for (int64_t c = 0; c < out.cols; ++c) {
        for (size_t i = 0; i < n; ++i) args[i] = in[i]->at(r, c);
        out.v[r * out.cols + c] = f(args, r, c);
      }
    set(op.results[0], std::move(out));
  }

  template <class F>
  void unary(const TileOp& op, F f) {
    elementwise(op, 1, [&](const double* x, int64_t, int64_t) { return f(x[0]); });
  }
  template <class F>
  void binary(const TileOp& op, F f) {
    elementwise(op, 2, [&](const double* x, int64_t, int64_t) { return f(x[0], x[1]); });
  }

  void reduce(const TileOp& op) {
    operands(op, 1);
    results(op, 1);
    const Val& x = use(op, op.operands[0]);
    Val out = make(op, op.results[0]);
    if (op.axis != 0 && op.axis != 1) malformed(op, "axis " + std::to_string(op.axis));
    int64_t want_rows = op.axis == 0 ? 1 : x.rows, want_cols = op.axis == 1 ? 1 : x.cols;
    if (x.scalar || out.scalar || out.rows != want_rows || out.cols != want_cols)
      malformed(op, "result extents do not match the operand reduced along axis " +
                        std::to_string(op.axis));
    std::fill(out.v.begin(), out.v.end(), reduce_identity(op.reduce));
    for (int64_t r = 0; r < x.rows; ++r)
      for (int64_t c = 0; c < x.cols; ++c) {
        double& acc = out.v[(op.axis == 0 ? 0 : r) * out.cols + (op.axis == 1 ? 0 : c)];
        double e = x.v[r * x.cols + c];
        acc = op.reduce == ReduceOp::Sum ? modeled(acc + e)
              : op.reduce == ReduceOp::Max ? nan_max(acc, e)
                                           : nan_min(acc, e);
      }
    set(op.results[0], std::move(out));
  }

  void transpose(const TileOp& op) {
    operands(op, 1);
    results(op, 1);
    const Val& x = use(op, op.operands[0]);
    Val out = make(op, op.results[0]);
    if (x.scalar || out.scalar || out.rows != x.cols || out.cols != x.rows)
      malformed(op, "result extents are not the operand's swapped");
    for (int64_t r = 0; r < x.rows; ++r)
      for (int64_t c = 0; c < x.cols; ++c) out.v[c * out.cols + r] = x.v[r * x.cols + c];
    set(op.results[0], std::move(out));
  }

  void nest(const TileOp& op) {
    if (op.regions.size() != 1) malformed(op, "needs exactly one region");
    const Region& body = op.regions[0];
    if (op.loops.empty()) malformed(op, "has no loops");
    std::vector<int64_t> extents;
    for (const LoopDim& d : op.loops) extents.push_back(eval(d.extent));
    if (op.kind == TileOpKind::Parallel) {
      if (!op.operands.empty() || !op.results.empty()) malformed(op, "carries values");
      // Every grid point, the first loop outermost.
      for (int64_t e : extents)
        if (e <= 0) return;
      std::vector<int64_t> idx(extents.size(), 0);
      size_t mark = ivs_.size();
      for (size_t d = 0; d < idx.size(); ++d) ivs_.emplace_back(op.loops[d].iv, 0);
      while (true) {
        for (size_t d = 0; d < idx.size(); ++d) ivs_[mark + d].second = idx[d];
        region(body);
        size_t d = idx.size();
        while (d > 0 && ++idx[d - 1] == extents[d - 1]) idx[--d] = 0;
        if (d == 0) break;
      }
      ivs_.resize(mark);
      return;
    }
    if (op.loops.size() != 1) malformed(op, "has " + std::to_string(op.loops.size()) + " loops");
    if (body.args.size() != op.operands.size() || op.results.size() != op.operands.size())
      malformed(op, "initial, carried and result counts differ");
    transfer(op, op.operands, body.args);
    ivs_.emplace_back(op.loops[0].iv, 0);
    for (int64_t i = 0; i < extents[0]; ++i) {
      ivs_.back().second = i;
      transfer(op, region(body), body.args);
    }
    ivs_.pop_back();
    transfer(op, body.args, op.results);
  }

  void branch(const TileOp& op) {
    if (op.regions.size() != 2) malformed(op, "needs two regions");
    bool holds;
    if (op.cond.on_scalar) {
      auto it = a_.scalars.find(op.cond.scalar);
      if (it == a_.scalars.end()) malformed(op, "tests unknown scalar '" + op.cond.scalar + "'");
      holds = cmp_holds(op.cond.op, it->second, op.cond.value);
    } else {
      holds = cmp_holds(op.cond.op, static_cast<double>(eval(op.cond.lhs)),
                      static_cast<double>(eval(op.cond.rhs)));
    }
    transfer(op, region(op.regions[holds ? 0 : 1]), op.results);
  }

  void op(const TileOp& op) {
    using K = TileOpKind;
    switch (op.kind) {
      case K::ScalarParam: {
        operands(op, 0);
        results(op, 1);
        auto it = a_.scalars.find(op.param);
        if (it == a_.scalars.end()) malformed(op, "unknown scalar '" + op.param + "'");
        Val out = make(op, op.results[0]);
        std::fill(out.v.begin(), out.v.end(), it->second);
        set(op.results[0], std::move(out));
        return;
      }
      case K::Const: {
        // A number, or the value of an index expression (sizes, loop variables).
        double c = op.index_value ? static_cast<double>(eval(op.index_value)) : op.constant;
        elementwise(op, 0, [&](const double*, int64_t, int64_t) { return c; });
        return;
      }
      case K::Load: load(op); return;
      case K::Store: store(op); return;
      case K::Mma: mma(op); return;
      case K::Add: binary(op, [](double a, double b) { return a + b; }); return;
      case K::Sub: binary(op, [](double a, double b) { return a - b; }); return;
      case K::Mul: binary(op, [](double a, double b) { return a * b; }); return;
      case K::Div: binary(op, [](double a, double b) { return a / b; }); return;
      case K::Max: binary(op, nan_max); return;
      case K::Min: binary(op, nan_min); return;
      case K::Exp: unary(op, [](double x) { return std::exp(x); }); return;
      case K::Exp2: unary(op, [](double x) { return std::exp2(x); }); return;
      case K::Log: unary(op, [](double x) { return std::log(x); }); return;
      case K::Neg: unary(op, [](double x) { return -x; }); return;
      case K::Abs: unary(op, [](double x) { return std::fabs(x); }); return;
      case K::Sqrt: unary(op, [](double x) { return std::sqrt(x); }); return;
      case K::Rsqrt: unary(op, [](double x) { return 1.0 / std::sqrt(x); }); return;
      case K::Recip: unary(op, [](double x) { return 1.0 / x; }); return;
      case K::Tanh: unary(op, [](double x) { return std::tanh(x); }); return;
      case K::Cmp: binary(op, [&](double a, double b) { return cmp_holds(op.cmp, a, b) ? 1.0 : 0.0; }); return;
      case K::Select:
        elementwise(op, 3, [](const double* x, int64_t, int64_t) { return x[0] != 0 ? x[1] : x[2]; });
        return;
      case K::Cast: {
        DType to = value(op, op.results.empty() ? -1 : op.results[0]).type.dtype;
        unary(op, [to](double x) { return round_to_dtype(x, to); });
        return;
      }
      case K::Broadcast: unary(op, [](double x) { return x; }); return;
      case K::Index:
        if (op.axis != 0 && op.axis != 1) malformed(op, "axis " + std::to_string(op.axis));
        elementwise(op, 0, [&](const double*, int64_t r, int64_t c) {
          return static_cast<double>(op.axis == 0 ? r : c);
        });
        return;
      case K::Reduce: reduce(op); return;
      case K::Transpose: transpose(op); return;
      case K::Parallel:
      case K::Serial:
      case K::Pipeline: nest(op); return;
      case K::If: branch(op); return;
      case K::Yield: malformed(op, "is not the last op of its region");
      case K::Barrier: return;  // sequential evaluation needs no synchronization
      case K::Ticket: return ticket(op);
    }
    malformed(op, "unknown op kind " + std::to_string(static_cast<int>(op.kind)));
  }

  const TileKernel& k_;
  const EvalArgs& a_;
  std::vector<Val> vals_;
  std::map<std::string, BoundTensor> tensors_;
  std::vector<std::pair<std::string, int64_t>> ivs_;  // open loops, innermost last
};

// Rounds to a binary format with p significand bits and normal exponents
// [emin, emax], ties to even, gradual underflow, overflow to inf.
double round_format(double x, int p, int emin, int emax) {
  if (!std::isfinite(x) || x == 0) return x;
  int e;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  double ulp = std::ldexp(1.0, std::max(e - 1, emin) - (p - 1));
  double r = std::nearbyint(x / ulp) * ulp;  // exact scaling; nearbyint ties to even
  double max_finite = std::ldexp(2.0 - std::ldexp(1.0, 1 - p), emax);
  return std::fabs(r) > max_finite ? std::copysign(INFINITY, x) : r;
}

template <class G>
double relative_error_impl(std::span<const G> got, std::span<const double> want, double floor) {
  if (got.size() != want.size())
    bad_arg("relative_error: " + std::to_string(got.size()) + " elements against " +
            std::to_string(want.size()));
  double diff = 0, norm = 0, n = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got[i], w = want[i];
    if (!std::isfinite(w) || !std::isfinite(g)) {
      bool same = (std::isnan(g) && std::isnan(w)) || g == w;
      if (!same) return INFINITY;
      continue;
    }
    diff += (g - w) * (g - w);
    norm += w * w;
    n += 1;
  }
  double scale = std::max(std::sqrt(norm), floor * std::sqrt(n));
  return diff == 0 ? 0 : scale > 0 ? std::sqrt(diff) / scale : INFINITY;
}

}  // namespace

void evaluate(const TileKernel& kernel, const EvalArgs& args) { Evaluator(kernel, args).run(); }

double round_to_dtype(double x, DType dtype) {
  switch (dtype) {
    case DType::F32: return round_format(x, 24, -126, 127);
    case DType::BF16: return round_format(x, 8, -126, 127);
    case DType::F16: return round_format(x, 11, -14, 15);
    case DType::F64:
    case DType::U32: return x;  // no cast goes to u32 (the verifier refuses it)
  }
  return x;
}

double relative_error(std::span<const float> got, std::span<const double> want, double floor) {
  return relative_error_impl(got, want, floor);
}
double relative_error(std::span<const double> got, std::span<const double> want, double floor) {
  return relative_error_impl(got, want, floor);
}

double unit_roundoff(DType t) {
  switch (t) {
    case DType::F32: return std::ldexp(1.0, -24);
    case DType::BF16: return std::ldexp(1.0, -8);
    case DType::F16: return std::ldexp(1.0, -11);
    case DType::F64: return std::ldexp(1.0, -53);
    case DType::U32: return 0;  // counters: exact
  }
  return 0;
}

double error_bound(DType compute, DType storage, int64_t depth) {
  double bound = 32 * unit_roundoff(compute) * std::sqrt(static_cast<double>(std::max<int64_t>(depth, 1)));
  if (unit_roundoff(storage) > unit_roundoff(compute)) bound += 2 * unit_roundoff(storage);
  return bound;
}

}  // namespace tessel
