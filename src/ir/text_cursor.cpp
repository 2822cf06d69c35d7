#include "ir/text_cursor.h"

#include <charconv>
#include <cstring>

#include "tessel/error.h"

namespace tessel {
namespace {

bool is_word_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool is_word_char(char c) { return is_word_start(c) || (c >= '0' && c <= '9') || c == '.'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The parser builds the tree it reads, without expr_binary's folding, so that the
// parsed expression is the printed one node for node.
Expr node(ExprKind kind, Expr lhs, Expr rhs) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->lhs = std::move(lhs);
  n->rhs = std::move(rhs);
  return n;
}

}  // namespace

std::string double_to_text(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string tensor_param_text(const TensorParam& t) {
  std::string s = t.name + ": " + dtype_name(t.dtype) + "[" + join(t.shape, expr_to_string) + "] strides(" +
                  join(t.strides, expr_to_string) + ") " + access_name(t.access);
  if (!t.may_overlap.empty()) s += " overlaps(" + join(t.may_overlap, [](const std::string& n) { return n; }) + ")";
  return s;
}

std::string scalar_param_text(const ScalarParam& s) { return s.name + ": " + dtype_name(s.dtype); }

std::string loops_text(const std::vector<LoopDim>& loops) {
  return join(loops, [](const LoopDim& d) { return d.iv + " = " + expr_to_string(d.extent); });
}

std::string cond_text(const Cond& c) {
  if (c.on_scalar)
    return "param " + c.scalar + " " + cmp_op_name(c.op) + " " + double_to_text(c.value);
  return expr_to_string(c.lhs) + " " + cmp_op_name(c.op) + " " + expr_to_string(c.rhs);
}

void TextCursor::error(const std::string& message) const { error_at(pos_, message); }

void TextCursor::error_at(size_t position, const std::string& message) const {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < position && i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  user_error(ErrorKind::Parse,
             "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message);
}

void TextCursor::expected(const std::string& what) const {
  size_t end = pos_;
  while (end < text_.size() && end - pos_ < 16 && !is_blank(text_[end])) ++end;
  std::string found = pos_ >= text_.size() ? "end of input" : "'" + text_.substr(pos_, end - pos_) + "'";
  error("expected " + what + ", found " + found);
}

void TextCursor::skip_blanks() {
  for (;;) {
    while (pos_ < text_.size() && is_blank(text_[pos_])) ++pos_;
    if (!comment_at(pos_)) return;
    while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
  }
}

bool TextCursor::comment_at(size_t i) const {
  return i + 1 < text_.size() && text_[i] == '/' && text_[i + 1] == '/';
}

bool TextCursor::at_end() {
  skip_blanks();
  return pos_ >= text_.size();
}

bool TextCursor::peek(char c) {
  skip_blanks();
  return pos_ < text_.size() && text_[pos_] == c;
}

bool TextCursor::peek_on_line(char c) {
  size_t i = pos_;
  while (i < text_.size() && (text_[i] == ' ' || text_[i] == '\t')) ++i;
  return i < text_.size() && text_[i] == c;
}

bool TextCursor::at_line_end() {
  size_t i = pos_;
  while (i < text_.size() && (text_[i] == ' ' || text_[i] == '\t')) ++i;
  return i >= text_.size() || text_[i] == '\n' || text_[i] == '\r' || comment_at(i);
}

bool TextCursor::peek_number() {
  skip_blanks();
  return is_digit(next()) || next() == '-' || next() == '.' || peek_word("inf") || peek_word("nan");
}

bool TextCursor::accept(const char* literal) {
  skip_blanks();
  size_t n = std::strlen(literal);
  if (text_.compare(pos_, n, literal) != 0) return false;
  pos_ += n;
  return true;
}

void TextCursor::expect(const char* literal) {
  if (!accept(literal)) expected(std::string("'") + literal + "'");
}

bool TextCursor::peek_word(const char* word) {
  skip_blanks();
  size_t n = std::strlen(word);
  return text_.compare(pos_, n, word) == 0 &&
         (pos_ + n >= text_.size() || !is_word_char(text_[pos_ + n]));
}

bool TextCursor::accept_word(const char* word) {
  if (!peek_word(word)) return false;
  pos_ += std::strlen(word);
  return true;
}

void TextCursor::expect_word(const char* word) {
  if (!accept_word(word)) expected(std::string("'") + word + "'");
}

std::string TextCursor::word(const char* what) {
  skip_blanks();
  if (!is_word_start(next())) expected(what);
  size_t start = pos_;
  while (is_word_char(next())) ++pos_;
  return text_.substr(start, pos_ - start);
}

std::string TextCursor::value_name() {
  skip_blanks();
  if (next() != '%') expected("a value name (%name)");
  ++pos_;
  size_t start = pos_;
  while (is_word_char(next())) ++pos_;
  if (pos_ == start) expected("a value name after '%'");
  return text_.substr(start, pos_ - start);
}

std::string TextCursor::token(const char* what) {
  skip_blanks();
  size_t start = pos_;
  while (pos_ < text_.size() && !is_blank(text_[pos_])) ++pos_;
  if (pos_ == start) expected(what);
  return text_.substr(start, pos_ - start);
}

int64_t TextCursor::integer(const char* what) {
  skip_blanks();
  size_t start = pos_;
  if (next() == '-') ++pos_;
  if (!is_digit(next())) {
    pos_ = start;
    expected(what);
  }
  while (is_digit(next())) ++pos_;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, v);
  if (ec != std::errc()) {
    pos_ = start;
    error(std::string(what) + " does not fit in 64 bits");
  }
  return v;
}

double TextCursor::real(const char* what) {
  skip_blanks();
  size_t start = pos_;
  while (is_word_char(next()) || next() == '-' || next() == '+') ++pos_;
  double v = 0;
  const char* first = text_.data() + start;
  const char* last = text_.data() + pos_;
  auto [end, ec] = std::from_chars(first, last, v);
  if (start == pos_ || ec != std::errc() || end != last) {
    pos_ = start;
    expected(what);
  }
  return v;
}

Expr TextCursor::expr(int depth) {
  if (depth > kMaxDepth)
    error("index expression nested more than " + std::to_string(kMaxDepth) + " deep");
  skip_blanks();
  if (accept("(")) {
    Expr lhs = expr(depth + 1);
    ExprKind kind;
    if (accept("+")) kind = ExprKind::Add;
    else if (accept("-")) kind = ExprKind::Sub;
    else if (accept("*")) kind = ExprKind::Mul;
    else if (accept("%")) kind = ExprKind::Mod;
    else expected("'+', '-', '*' or '%' in an index expression");
    Expr rhs = expr(depth + 1);
    expect(")");
    return node(kind, lhs, rhs);
  }
  if (next() == '-' || is_digit(next())) return expr_const(integer("an integer"));
  std::string name = word("an index expression");
  struct Function { const char* name; ExprKind kind; };
  static const Function functions[] = {{"ceildiv", ExprKind::CeilDiv},
                                       {"floordiv", ExprKind::FloorDiv},
                                       {"min", ExprKind::Min},
                                       {"max", ExprKind::Max}};
  for (const Function& f : functions) {
    if (name != f.name || !accept("(")) continue;
    Expr lhs = expr(depth + 1);
    expect(",");
    Expr rhs = expr(depth + 1);
    expect(")");
    return node(f.kind, lhs, rhs);
  }
  return expr_sym(name);
}

DType TextCursor::dtype() {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64, DType::U32})
    if (accept_word(dtype_name(t))) return t;
  expected("a dtype (f32, bf16, f16, f64, u32)");
}

std::vector<Expr> TextCursor::exprs(char close) {
  std::vector<Expr> items;
  if (peek(close)) return items;
  do items.push_back(expr());
  while (accept(","));
  return items;
}

TensorParam TextCursor::tensor_param() {
  TensorParam t;
  t.name = word("a tensor name");
  expect(":");
  t.dtype = dtype();
  expect("[");
  t.shape = exprs(']');
  expect("]");
  if (accept_word("strides")) {
    expect("(");
    t.strides = exprs(')');
    expect(")");
  } else if (peek_word("ld")) {
    // The rank-2 form from before strides: `ld X` means strides(X, 1).
    if (t.rank() != 2)
      error("tensor " + t.name + ": 'ld' is for rank-2 tensors; this one has rank " +
            std::to_string(t.rank()) + " (write strides(...))");
    expect_word("ld");
    t.strides = {expr(), expr_const(1)};
  } else {
    expected("'strides(...)' or 'ld'");
  }
  if (accept_word("inout")) t.access = Access::InOut;
  else if (accept_word("in")) t.access = Access::In;
  else if (accept_word("out")) t.access = Access::Out;
  else expected("'in', 'out' or 'inout'");
  if (accept_word("overlaps")) {
    expect("(");
    do t.may_overlap.push_back(word("a tensor name"));
    while (accept(","));
    expect(")");
  }
  return t;
}

ScalarParam TextCursor::scalar_param() {
  ScalarParam s;
  s.name = word("a scalar name");
  expect(":");
  s.dtype = dtype();
  return s;
}

std::vector<LoopDim> TextCursor::loops() {
  std::vector<LoopDim> dims;
  do {
    LoopDim d;
    d.iv = word("an induction variable");
    expect("=");
    d.extent = expr();
    dims.push_back(d);
  } while (accept(","));
  return dims;
}

Cond TextCursor::cond() {
  Cond c;
  auto cmp = [this] {
    // Two-character operators first, so that "<=" is not read as "<".
    for (CmpOp op : {CmpOp::EQ, CmpOp::NE, CmpOp::LE, CmpOp::GE, CmpOp::LT, CmpOp::GT})
      if (accept(cmp_op_name(op))) return op;
    expected("a comparison (==, !=, <, <=, >, >=)");
  };
  if (accept_word("param")) {
    c.on_scalar = true;
    c.scalar = word("a scalar parameter name");
    c.op = cmp();
    c.value = real("a constant");
  } else {
    c.lhs = expr();
    c.op = cmp();
    c.rhs = expr();
  }
  return c;
}

}  // namespace tessel
