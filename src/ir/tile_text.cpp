// Textual TileIR. One op per line, nests as indented braces:
//
//   kernel NAME(sizes M, N; tiles BM; tensors A: f32[M, N] strides(lda, 1) in; scalars s: f32) {
//     %r0, %r1 = KIND SPEC : TYPE0, TYPE1  @file.cpp:42
//   }
//
// SPEC by kind: `param NAME`, `const 1.5` or `const index E` (the value of an index
// expression), `load A[E, ...]` (one coordinate per tensor
// dimension, then ` dims(0, 2)` when the tile does not span the default dimensions and
// ` pad -inf` when the padding is not 0), `store %v to A[E, ...]` (with ` dims(...)`),
// `reduce.sum %x axis 1`, `cmp.lt %a, %b`, `index axis 0`,
// `parallel i = E, j = E, b = E {`, `serial|pipeline k = E iter(%arg: TYPE = %init, ...) {`,
// `if param beta == 0 {` or `if E < E {` ... `} else {`, `ticket t = E on T[E]` (the
// symbol, the count of tickets, the counter element), and for every other kind its
// operands (`mma %a, %b, %c`, `select %c, %a, %b`, `yield %d`, `barrier`). Types are
// `f32` (scalar) or `f32[E, E]`; a cast converts to its result's dtype. `//` comments
// are skipped. Value ids are assigned as a capture creates them: loop-carried
// arguments, then the body, then the op's results.
#include "ir/tile_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "ir/text_cursor.h"
#include "tessel/error.h"

namespace tessel {
namespace {

constexpr TileOpKind kAllKinds[] = {
    TileOpKind::ScalarParam, TileOpKind::Const,    TileOpKind::Load,      TileOpKind::Store,
    TileOpKind::Mma,         TileOpKind::Add,      TileOpKind::Sub,       TileOpKind::Mul,
    TileOpKind::Div,         TileOpKind::Max,      TileOpKind::Min,       TileOpKind::Exp,
    TileOpKind::Exp2,        TileOpKind::Log,      TileOpKind::Neg,       TileOpKind::Abs,
    TileOpKind::Sqrt,        TileOpKind::Rsqrt,    TileOpKind::Recip,     TileOpKind::Tanh,
    TileOpKind::Cmp,         TileOpKind::Select,   TileOpKind::Cast,      TileOpKind::Broadcast,
    TileOpKind::Index,       TileOpKind::Reduce,   TileOpKind::Transpose, TileOpKind::Parallel,
    TileOpKind::Serial,      TileOpKind::Pipeline, TileOpKind::If,        TileOpKind::Yield,
    TileOpKind::Barrier,     TileOpKind::Ticket};
constexpr CmpOp kAllCmps[] = {CmpOp::EQ, CmpOp::NE, CmpOp::LT, CmpOp::LE, CmpOp::GT, CmpOp::GE};
constexpr ReduceOp kAllReduces[] = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};

// The suffix of `cmp.lt`: a word, since the op name is read as one word.
const char* cmp_mnemonic(CmpOp op) {
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

// The padding prints when it is not +0, so that -0 keeps its sign through a round trip.
bool has_padding(double pad) { return pad != 0 || std::signbit(pad); }

std::string type_text(const TileType& t) {
  std::string s = dtype_name(t.dtype);
  if (!t.is_scalar()) s += "[" + join(t.shape, expr_to_string) + "]";
  return s;
}

bool is_nest(TileOpKind k) {
  return k == TileOpKind::Parallel || k == TileOpKind::Serial || k == TileOpKind::Pipeline;
}

class Printer {
 public:
  explicit Printer(const TileKernel& k) : k_(k) {}

  std::string run() {
    auto name = [](const std::string& s) { return s; };
    out_ = "kernel " + k_.name + "(" + section("sizes", join(k_.size_params, name)) + "; " +
           section("tiles", join(k_.tile_params, name)) + "; " +
           section("tensors", join(k_.tensors, tensor_param_text)) + "; " +
           section("scalars", join(k_.scalars, scalar_param_text)) + ") {\n";
    region(k_.body, 1);
    out_ += "}\n";
    return out_;
  }

 private:
  static std::string section(const char* label, const std::string& items) {
    return items.empty() ? label : std::string(label) + " " + items;
  }

  // A value id that does not index the kernel's values prints as %?ID, which the
  // parser rejects: the printer shows broken IR but never reads out of bounds.
  std::string value(int id) const {
    if (id < 0 || id >= static_cast<int>(k_.values.size())) return "%?" + std::to_string(id);
    const Value& v = k_.values[id];
    return "%" + (v.name.empty() ? std::to_string(id) : v.name);
  }
  std::string values(const std::vector<int>& ids) const {
    return join(ids, [this](int id) { return value(id); });
  }
  std::string value_type(int id) const {
    if (id < 0 || id >= static_cast<int>(k_.values.size())) return "?";
    return type_text(k_.values[id].type);
  }

  // `iter(%arg: TYPE = %init, ...)`; when the counts differ (broken IR) the surplus
  // items carry only an argument or only an initial value.
  std::string iter_text(const TileOp& op) const {
    const std::vector<int> none;
    const std::vector<int>& args = op.regions.empty() ? none : op.regions[0].args;
    std::string s;
    for (size_t i = 0; i < std::max(args.size(), op.operands.size()); ++i) {
      s += i ? ", " : "";
      if (i < args.size()) s += value(args[i]) + ": " + value_type(args[i]);
      if (i < op.operands.size()) s += std::string(i < args.size() ? " " : "") + "= " + value(op.operands[i]);
    }
    return " iter(" + s + ")";
  }

  void op(const TileOp& o, int depth) {
    std::string indent(2 * depth, ' ');
    out_ += indent;
    if (!o.results.empty()) out_ += values(o.results) + " = ";
    out_ += tile_op_name(o.kind);
    // The default dims follow from the coordinate count (= the tensor's rank when valid).
    auto coords = [&] {
      std::string s = o.param + "[" + join(o.coords, expr_to_string) + "]";
      if (o.dims != default_tile_dims(static_cast<int>(o.coords.size())))
        s += " dims(" + std::to_string(o.dims[0]) + ", " + std::to_string(o.dims[1]) + ")";
      return s;
    };
    auto operands = [&] { return o.operands.empty() ? std::string() : " " + values(o.operands); };
    switch (o.kind) {
      case TileOpKind::ScalarParam: out_ += " " + o.param; break;
      case TileOpKind::Const:
        out_ += o.index_value ? " index " + expr_to_string(o.index_value)
                              : " " + double_to_text(o.constant);
        break;
      case TileOpKind::Load:
        out_ += " " + coords();
        if (has_padding(o.constant)) out_ += " pad " + double_to_text(o.constant);
        break;
      case TileOpKind::Store: out_ += " " + values(o.operands) + " to " + coords(); break;
      case TileOpKind::Reduce:
        out_ += std::string(".") + reduce_op_name(o.reduce) + operands() + " axis " +
                std::to_string(o.axis);
        break;
      case TileOpKind::Cmp: out_ += std::string(".") + cmp_mnemonic(o.cmp) + operands(); break;
      case TileOpKind::Index: out_ += operands() + " axis " + std::to_string(o.axis); break;
      case TileOpKind::Parallel: out_ += " " + loops_text(o.loops); break;
      case TileOpKind::Serial:
      case TileOpKind::Pipeline:
        out_ += " " + loops_text(o.loops);
        if (o.stage_base) out_ += " stages_from " + expr_to_string(o.stage_base);
        out_ += iter_text(o);
        break;
      case TileOpKind::If: out_ += " " + cond_text(o.cond); break;
      case TileOpKind::Ticket: out_ += " " + loops_text(o.loops) + " on " + coords(); break;
      default: out_ += operands();
    }
    if (!o.results.empty())
      out_ += " : " + join(o.results, [this](int id) { return value_type(id); });
    if (!o.loc.file.empty()) out_ += "  @" + o.loc.to_string();
    for (size_t i = 0; i < o.regions.size(); ++i) {
      out_ += i ? " else {\n" : " {\n";
      region(o.regions[i], depth + 1);
      out_ += indent + "}";
    }
    out_ += "\n";
  }

  void region(const Region& r, int depth) {
    for (const TileOp& o : r.ops) op(o, depth);
  }

  const TileKernel& k_;
  std::string out_;
};

class Parser {
 public:
  explicit Parser(const std::string& text) : in_(text) {}

  TileKernel run() {
    in_.expect_word("kernel");
    k_.name = in_.word("a kernel name");
    in_.expect("(");
    in_.expect_word("sizes");
    in_.list([&] { k_.size_params.push_back(in_.word("a size parameter")); });
    in_.expect(";");
    in_.expect_word("tiles");
    in_.list([&] { k_.tile_params.push_back(in_.word("a tile parameter")); });
    in_.expect(";");
    in_.expect_word("tensors");
    in_.list([&] { k_.tensors.push_back(in_.tensor_param()); });
    in_.expect(";");
    in_.expect_word("scalars");
    in_.list([&] { k_.scalars.push_back(in_.scalar_param()); });
    in_.expect(")");
    in_.expect("{");
    region(k_.body, 0);
    in_.expect("}");
    if (!in_.at_end()) in_.expected("end of input");
    return std::move(k_);
  }

 private:
  TileType type() {
    TileType t;
    t.dtype = in_.dtype();
    if (in_.accept("[")) {
      do t.shape.push_back(in_.expr());
      while (in_.accept(","));
      in_.expect("]");
    }
    return t;
  }

  int define(const std::string& name, const TileType& type, size_t where) {
    if (!names_.emplace(name, static_cast<int>(k_.values.size())).second)
      in_.error_at(where, "value %" + name + " is defined twice");
    k_.values.push_back(Value{static_cast<int>(k_.values.size()), type, name});
    return k_.values.back().id;
  }

  int use() {
    in_.skip_blanks();  // so that an error points at the name
    size_t where = in_.position();
    std::string name = in_.value_name();
    auto it = names_.find(name);
    if (it == names_.end()) in_.error_at(where, "unknown value %" + name);
    return it->second;
  }

  std::vector<int> uses() {
    // An operand list ends its line: the next line may start with a result name.
    std::vector<int> ids;
    if (!in_.peek_on_line('%')) return ids;
    do ids.push_back(use());
    while (in_.accept(","));
    return ids;
  }

  void coords(TileOp& op) {
    op.param = in_.word("a tensor name");
    in_.expect("[");
    op.coords = in_.exprs(']');
    in_.expect("]");
    op.dims = default_tile_dims(static_cast<int>(op.coords.size()));
    if (in_.accept_word("dims")) {
      in_.expect("(");
      op.dims[0] = small_int("a tensor dimension");
      in_.expect(",");
      op.dims[1] = small_int("a tensor dimension");
      in_.expect(")");
    }
  }

  // Axes and dimensions: the verifier checks the range; this keeps them in an int.
  int small_int(const char* what) {
    in_.skip_blanks();
    size_t where = in_.position();
    int64_t v = in_.integer(what);
    if (v < -1000 || v > 1000)
      in_.error_at(where, std::string(what) + " " + std::to_string(v) + " is out of range");
    return static_cast<int>(v);
  }

  int axis() {
    in_.expect_word("axis");
    return small_int("an axis");
  }

  void iter(TileOp& op, Region& body) {
    in_.expect("(");
    if (!in_.peek(')')) {
      do {
        bool any = false;
        if (in_.peek('%')) {
          size_t where = in_.position();
          std::string name = in_.value_name();
          in_.expect(":");
          body.args.push_back(define(name, type(), where));
          any = true;
        }
        if (in_.accept("=")) {
          op.operands.push_back(use());
          any = true;
        }
        if (!any) in_.expected("'%arg: type = %init'");
      } while (in_.accept(","));
    }
    in_.expect(")");
  }

  SourceLoc loc() {
    std::string text = in_.token("a source location (file:line)");
    size_t colon = text.rfind(':');
    uint32_t line = 0;
    const char* last = text.data() + text.size();
    if (colon == std::string::npos || colon == 0 ||
        std::from_chars(text.data() + colon + 1, last, line).ptr != last || colon + 1 == text.size())
      in_.error("malformed source location '" + text + "': expected file:line");
    return SourceLoc{text.substr(0, colon), line};
  }

  void region(Region& r, int depth) {
    if (depth > TextCursor::kMaxDepth)
      in_.error("regions nested more than " + std::to_string(TextCursor::kMaxDepth) + " deep");
    while (!in_.peek('}')) {
      if (in_.at_end()) in_.expected("'}'");
      r.ops.push_back(op(depth));
    }
  }

  TileOp op(int depth) {
    TileOp o;
    std::vector<std::string> result_names;
    std::vector<size_t> result_positions;
    if (in_.peek('%')) {
      do {
        in_.skip_blanks();
        result_positions.push_back(in_.position());
        result_names.push_back(in_.value_name());
      } while (in_.accept(","));
      in_.expect("=");
    }
    in_.skip_blanks();  // so that an error points at the operation
    size_t kind_position = in_.position();
    std::string kind = in_.word("an operation");
    // reduce and cmp carry their flavour as a suffix: reduce.max, cmp.lt.
    size_t dot = kind.find('.');
    std::string base = kind.substr(0, dot);
    std::string suffix = dot == std::string::npos ? "" : kind.substr(dot + 1);
    bool known = false;
    for (TileOpKind k : kAllKinds)
      if (base == tile_op_name(k)) {
        o.kind = k;
        known = true;
      }
    bool suffixed = o.kind == TileOpKind::Reduce || o.kind == TileOpKind::Cmp;
    if (!known || (!suffixed && dot != std::string::npos))
      in_.error_at(kind_position, "unknown operation '" + kind + "'");
    if (o.kind == TileOpKind::Reduce) {
      known = false;
      for (ReduceOp r : kAllReduces)
        if (suffix == reduce_op_name(r)) {
          o.reduce = r;
          known = true;
        }
      if (!known)
        in_.error_at(kind_position, "unknown reduction '" + kind +
                                        "': expected reduce.sum, reduce.max or reduce.min");
    }
    if (o.kind == TileOpKind::Cmp) {
      known = false;
      for (CmpOp c : kAllCmps)
        if (suffix == cmp_mnemonic(c)) {
          o.cmp = c;
          known = true;
        }
      if (!known)
        in_.error_at(kind_position,
                     "unknown comparison '" + kind +
                         "': expected cmp.eq, cmp.ne, cmp.lt, cmp.le, cmp.gt or cmp.ge");
    }
    if (is_nest(o.kind) || o.kind == TileOpKind::If)
      o.regions.resize(o.kind == TileOpKind::If ? 2 : 1);
    switch (o.kind) {
      case TileOpKind::ScalarParam: o.param = in_.word("a scalar parameter name"); break;
      case TileOpKind::Const:
        if (in_.accept_word("index")) o.index_value = in_.expr();
        else o.constant = in_.real("a constant");
        break;
      case TileOpKind::Load:
        coords(o);
        if (in_.accept_word("pad")) o.constant = in_.real("a padding value");
        break;
      case TileOpKind::Reduce:
        o.operands = uses();
        o.axis = axis();
        break;
      case TileOpKind::Index:
        o.operands = uses();
        o.axis = axis();
        break;
      case TileOpKind::Store:
        o.operands = uses();
        in_.expect_word("to");
        coords(o);
        break;
      case TileOpKind::Parallel: o.loops = in_.loops(); break;
      case TileOpKind::Serial:
      case TileOpKind::Pipeline:
        o.loops = in_.loops();
        if (o.kind == TileOpKind::Pipeline && in_.accept_word("stages_from")) o.stage_base = in_.expr();
        in_.expect_word("iter");
        iter(o, o.regions[0]);
        break;
      case TileOpKind::If:
        o.cond = in_.cond();
        break;
      case TileOpKind::Ticket:
        o.loops = in_.loops();
        in_.expect_word("on");
        coords(o);
        break;
      default: o.operands = uses();
    }
    std::vector<TileType> types;
    if (!result_names.empty()) {
      in_.expect(":");
      do types.push_back(type());
      while (in_.accept(","));
      if (types.size() != result_names.size())
        in_.error(std::to_string(result_names.size()) + " results but " +
                  std::to_string(types.size()) + " types");
    }
    if (in_.accept("@")) o.loc = loc();
    for (size_t i = 0; i < o.regions.size(); ++i) {
      if (i) in_.expect_word("else");
      in_.expect("{");
      region(o.regions[i], depth + 1);
      in_.expect("}");
    }
    for (size_t i = 0; i < result_names.size(); ++i)
      o.results.push_back(define(result_names[i], types[i], result_positions[i]));
    return o;
  }

  TextCursor in_;
  TileKernel k_;
  std::map<std::string, int> names_;
};

}  // namespace

std::string print_tile_kernel(const TileKernel& kernel) { return Printer(kernel).run(); }

TileKernel parse_tile_kernel(const std::string& text) { return Parser(text).run(); }

}  // namespace tessel
