// A reader over textual IR, shared by the TileIR and GroupIR parsers: whitespace,
// words, numbers, index expressions in expr_to_string's form, and Parse errors that
// name the line and column. Every recursion is bounded (kMaxDepth) and every read is
// checked, so arbitrary input ends in a value or a tessel::Error, never a crash.
// `//` starts a comment that runs to the end of the line; comments count as blanks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/tile_ir.h"

namespace tessel {

// Doubles print in their shortest form that reads back to the same bits.
std::string double_to_text(double v);
// Pieces both textual IRs print the same way, read back by TextCursor below.
// A: f32[M, K] strides(lda, 1) in   (the parser also reads `ld lda` for rank 2)
std::string tensor_param_text(const TensorParam& t);
std::string scalar_param_text(const ScalarParam& s);  // alpha: f32
std::string loops_text(const std::vector<LoopDim>& loops);  // i = E, j = E
std::string cond_text(const Cond& c);  // param beta == 0 | E < E

template <class T, class F>
std::string join(const std::vector<T>& items, F&& show) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + show(items[i]);
  return s;
}

class TextCursor {
 public:
  static constexpr int kMaxDepth = 64;  // nesting of expressions and of regions

  explicit TextCursor(const std::string& text) : text_(text) {}

  // "line L, column C: <message>" at the current position.
  [[noreturn]] void error(const std::string& message) const;
  size_t position() const { return pos_; }
  [[noreturn]] void error_at(size_t position, const std::string& message) const;
  // "line L, column C: expected <what>, found '<next word>'".
  [[noreturn]] void expected(const std::string& what) const;

  void skip_blanks();
  bool at_end();
  bool peek(char c);                 // the next non-blank character is c
  bool peek_on_line(char c);         // ... and it is on the current line
  bool at_line_end();                // only spaces, tabs or a comment before the end of the line
  bool peek_number();                // a real() comes next: digit, '-', '.', inf or nan
  bool accept(const char* literal);  // consumes it when it comes next
  void expect(const char* literal);
  bool peek_word(const char* word);  // the next word is exactly `word`
  bool accept_word(const char* word);
  void expect_word(const char* word);

  std::string word(const char* what);  // [A-Za-z_][A-Za-z0-9_.]*
  std::string value_name();            // %name, returns name: [A-Za-z0-9_.]+
  std::string token(const char* what); // a run of non-blank characters
  int64_t integer(const char* what);
  double real(const char* what);
  Expr expr(int depth = 0);
  DType dtype();
  // A possibly empty comma-separated list of index expressions, ended by `close`
  // (which is not consumed).
  std::vector<Expr> exprs(char close);
  TensorParam tensor_param();
  ScalarParam scalar_param();
  std::vector<LoopDim> loops();  // at least one
  Cond cond();

  // A possibly empty comma-separated list, ended by ';' or ')'.
  template <class F>
  void list(F&& item) {
    if (peek(';') || peek(')')) return;
    do item();
    while (accept(","));
  }

 private:
  char next() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool comment_at(size_t i) const;  // `//` starts at i

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace tessel
