// Index expressions: 64-bit integer arithmetic over named symbols (kernel size
// parameters, group coordinates, loop induction variables). Shared by TileIR and
// GroupIR; constants fold when built, so printed forms stay small.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace tessel {

enum class ExprKind { Const, Sym, Add, Sub, Mul, FloorDiv, CeilDiv, Mod, Min, Max };

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind = ExprKind::Const;
  int64_t value = 0;  // Const
  std::string name;   // Sym
  Expr lhs, rhs;      // binary kinds
};

Expr expr_const(int64_t value);
Expr expr_sym(const std::string& name);
Expr expr_binary(ExprKind kind, Expr lhs, Expr rhs);  // folds constants
inline Expr operator+(Expr a, Expr b) { return expr_binary(ExprKind::Add, a, b); }
inline Expr operator-(Expr a, Expr b) { return expr_binary(ExprKind::Sub, a, b); }
inline Expr operator*(Expr a, Expr b) { return expr_binary(ExprKind::Mul, a, b); }
inline Expr operator+(Expr a, int64_t b) { return a + expr_const(b); }
inline Expr operator*(Expr a, int64_t b) { return a * expr_const(b); }
Expr ceil_div(Expr a, Expr b);
Expr floor_div(Expr a, Expr b);
Expr expr_mod(Expr a, Expr b);
Expr expr_min(Expr a, Expr b);
Expr expr_max(Expr a, Expr b);

bool expr_is_const(const Expr& e, int64_t* value = nullptr);
bool expr_equal(const Expr& a, const Expr& b);  // structural
// Replaces every symbol for which `lookup` returns an expression.
Expr expr_substitute(const Expr& e, const std::function<Expr(const std::string&)>& lookup);
// Visits every symbol name.
void expr_symbols(const Expr& e, const std::function<void(const std::string&)>& visit);

// Evaluation. `lookup` returns false for an unknown symbol, which is a user error
// (ErrorKind::InvalidArgument) naming it. Division by zero is a user error too.
using SymbolLookup = std::function<bool(const std::string&, int64_t*)>;
int64_t expr_eval(const Expr& e, const SymbolLookup& lookup);
// A lookup of the symbols in `values` (which must outlive it).
SymbolLookup lookup_in(const std::map<std::string, int64_t>& values);

// Text: "ceildiv(M, 64)", "(k * 32)", "min(a, b)", "(x % 2)". Fully parenthesized
// binary operators so that the parser needs no precedence rules.
std::string expr_to_string(const Expr& e);
// As C++ source (int64_t arithmetic); symbols are printed through `name`.
std::string expr_to_cpp(const Expr& e, const std::function<std::string(const std::string&)>& name);

}  // namespace tessel
