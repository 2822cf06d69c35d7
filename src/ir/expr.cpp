#include "ir/expr.h"

#include "tessel/error.h"

namespace tessel {
namespace {

Expr make(ExprKind kind, int64_t value, std::string name, Expr lhs, Expr rhs) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->value = value;
  n->name = std::move(name);
  n->lhs = std::move(lhs);
  n->rhs = std::move(rhs);
  return n;
}

[[noreturn]] void overflow(const char* op, int64_t a, int64_t b) {
  user_error(ErrorKind::InvalidArgument, "index expression overflows 64 bits: " + std::to_string(a) + " " +
                                             op + " " + std::to_string(b));
}

int64_t floor_div_i(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) overflow("/", a, b);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t apply(ExprKind kind, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (kind) {
    case ExprKind::Add:
      if (__builtin_add_overflow(a, b, &r)) overflow("+", a, b);
      return r;
    case ExprKind::Sub:
      if (__builtin_sub_overflow(a, b, &r)) overflow("-", a, b);
      return r;
    case ExprKind::Mul:
      if (__builtin_mul_overflow(a, b, &r)) overflow("*", a, b);
      return r;
    case ExprKind::FloorDiv:
    case ExprKind::CeilDiv:
    case ExprKind::Mod:
      if (b == 0) user_error(ErrorKind::InvalidArgument, "index expression divides by zero");
      if (kind == ExprKind::FloorDiv) return floor_div_i(a, b);
      if (kind == ExprKind::CeilDiv) {
        if (a == INT64_MIN) overflow("ceildiv", a, b);
        return -floor_div_i(-a, b);
      }
      if (b == -1) return 0;  // every integer is a multiple of -1 (and INT64_MIN / -1 overflows)
      // The result lies in (b, 0] or [0, b), but b * q alone may not fit.
      return static_cast<int64_t>(static_cast<__int128>(a) - static_cast<__int128>(b) * floor_div_i(a, b));
    case ExprKind::Min: return a < b ? a : b;
    case ExprKind::Max: return a > b ? a : b;
    default: TESSEL_ASSERT(false, "not a binary expression kind");
  }
}

const char* binary_symbol(ExprKind k) {
  switch (k) {
    case ExprKind::Add: return "+";
    case ExprKind::Sub: return "-";
    case ExprKind::Mul: return "*";
    case ExprKind::Mod: return "%";
    default: return nullptr;
  }
}

const char* binary_function(ExprKind k) {
  switch (k) {
    case ExprKind::FloorDiv: return "floordiv";
    case ExprKind::CeilDiv: return "ceildiv";
    case ExprKind::Min: return "min";
    case ExprKind::Max: return "max";
    default: return nullptr;
  }
}

}  // namespace

Expr expr_const(int64_t value) { return make(ExprKind::Const, value, "", nullptr, nullptr); }
Expr expr_sym(const std::string& name) { return make(ExprKind::Sym, 0, name, nullptr, nullptr); }

Expr expr_binary(ExprKind kind, Expr lhs, Expr rhs) {
  TESSEL_ASSERT(lhs && rhs, "binary expression needs two operands");
  int64_t a = 0, b = 0;
  bool ca = expr_is_const(lhs, &a), cb = expr_is_const(rhs, &b);
  if (ca && cb && !((kind == ExprKind::FloorDiv || kind == ExprKind::CeilDiv ||
                     kind == ExprKind::Mod) && b == 0))
    return expr_const(apply(kind, a, b));
  // Identities that keep printed forms short.
  if (kind == ExprKind::Add && ca && a == 0) return rhs;
  if ((kind == ExprKind::Add || kind == ExprKind::Sub) && cb && b == 0) return lhs;
  if (kind == ExprKind::Mul && ((ca && a == 0) || (cb && b == 0))) return expr_const(0);
  if (kind == ExprKind::Mul && ca && a == 1) return rhs;
  if (kind == ExprKind::Mul && cb && b == 1) return lhs;
  if ((kind == ExprKind::FloorDiv || kind == ExprKind::CeilDiv) && cb && b == 1) return lhs;
  return make(kind, 0, "", std::move(lhs), std::move(rhs));
}

Expr ceil_div(Expr a, Expr b) { return expr_binary(ExprKind::CeilDiv, a, b); }
Expr floor_div(Expr a, Expr b) { return expr_binary(ExprKind::FloorDiv, a, b); }
Expr expr_mod(Expr a, Expr b) { return expr_binary(ExprKind::Mod, a, b); }
Expr expr_min(Expr a, Expr b) { return expr_binary(ExprKind::Min, a, b); }
Expr expr_max(Expr a, Expr b) { return expr_binary(ExprKind::Max, a, b); }

bool expr_is_const(const Expr& e, int64_t* value) {
  if (!e || e->kind != ExprKind::Const) return false;
  if (value) *value = e->value;
  return true;
}

bool expr_equal(const Expr& a, const Expr& b) {
  if (!a || !b) return !a && !b;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
    case ExprKind::Const: return a->value == b->value;
    case ExprKind::Sym: return a->name == b->name;
    default: return expr_equal(a->lhs, b->lhs) && expr_equal(a->rhs, b->rhs);
  }
}

Expr expr_substitute(const Expr& e, const std::function<Expr(const std::string&)>& lookup) {
  if (!e) return e;
  switch (e->kind) {
    case ExprKind::Const: return e;
    case ExprKind::Sym: {
      Expr r = lookup(e->name);
      return r ? r : e;
    }
    default:
      return expr_binary(e->kind, expr_substitute(e->lhs, lookup),
                         expr_substitute(e->rhs, lookup));
  }
}

void expr_symbols(const Expr& e, const std::function<void(const std::string&)>& visit) {
  if (!e) return;
  if (e->kind == ExprKind::Sym) visit(e->name);
  expr_symbols(e->lhs, visit);
  expr_symbols(e->rhs, visit);
}

SymbolLookup lookup_in(const std::map<std::string, int64_t>& values) {
  return [&values](const std::string& name, int64_t* v) {
    auto it = values.find(name);
    if (it == values.end()) return false;
    *v = it->second;
    return true;
  };
}

int64_t expr_eval(const Expr& e, const SymbolLookup& lookup) {
  TESSEL_ASSERT(e, "evaluating a null expression");
  switch (e->kind) {
    case ExprKind::Const: return e->value;
    case ExprKind::Sym: {
      int64_t v = 0;
      if (!lookup(e->name, &v))
        user_error(ErrorKind::InvalidArgument, "unknown symbol '" + e->name + "' in index expression");
      return v;
    }
    default: return apply(e->kind, expr_eval(e->lhs, lookup), expr_eval(e->rhs, lookup));
  }
}

std::string expr_to_string(const Expr& e) {
  if (!e) return "<null>";
  switch (e->kind) {
    case ExprKind::Const: return std::to_string(e->value);
    case ExprKind::Sym: return e->name;
    default:
      if (const char* s = binary_symbol(e->kind))
        return "(" + expr_to_string(e->lhs) + " " + s + " " + expr_to_string(e->rhs) + ")";
      return std::string(binary_function(e->kind)) + "(" + expr_to_string(e->lhs) + ", " +
             expr_to_string(e->rhs) + ")";
  }
}

std::string expr_to_cpp(const Expr& e, const std::function<std::string(const std::string&)>& name) {
  TESSEL_ASSERT(e, "printing a null expression");
  switch (e->kind) {
    case ExprKind::Const: return "INT64_C(" + std::to_string(e->value) + ")";
    case ExprKind::Sym: return name(e->name);
    default: {
      std::string a = expr_to_cpp(e->lhs, name), b = expr_to_cpp(e->rhs, name);
      if (const char* s = binary_symbol(e->kind)) {
        if (e->kind == ExprKind::Mod) return "tsl_mod(" + a + ", " + b + ")";
        return "(" + a + " " + s + " " + b + ")";
      }
      return std::string("tsl_") + binary_function(e->kind) + "(" + a + ", " + b + ")";
    }
  }
}

}  // namespace tessel
