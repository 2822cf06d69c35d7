#include "target/cpu/cpu_emit.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "target/cpu/cpu_microkernel.h"
#include "tessel/error.h"

namespace tessel {
namespace {

// Everything the emitted unit needs in place of headers. int64_t is `long` on the
// LP64 targets we compile for; INT64_C is what expr_to_cpp prints for constants.
const char* kPrelude = R"(// Emitted by tessel (cpu target). Header-free on purpose: it compiles in tens of ms.
typedef long int64_t;
#define INT64_C(c) c##L
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));
static inline int64_t tsl_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t tsl_ceildiv(int64_t a, int64_t b) { return -tsl_floordiv(-a, b); }
static inline int64_t tsl_mod(int64_t a, int64_t b) { return a - b * tsl_floordiv(a, b); }
static inline int64_t tsl_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t tsl_max(int64_t a, int64_t b) { return a > b ? a : b; }

// The guarded (ragged edge) copy, shared by every transfer so that the unit stays
// small: one call per window instead of a loop nest per op. A window of a buffer:
// layout 0 row-major (ld), 1 column panels, 2 row panels; (r0, c0) its top-left
// element; elements at or beyond (rb, cb) are outside.
struct tsl_win { float* base; int64_t layout, ld, rows, cols, panel, r0, c0, rb, cb; };
static inline int64_t tsl_off(const tsl_win* w, int64_t r, int64_t c) {
  r += w->r0;
  c += w->c0;
  if (w->layout == 0) return r * w->ld + c;
  if (w->layout == 1) return (c / w->panel * w->rows + r) * w->panel + c % w->panel;
  return (r / w->panel * w->cols + c) * w->panel + r % w->panel;
}
static inline int64_t tsl_clamp(int64_t x, int64_t hi) { return x < 0 ? 0 : x > hi ? hi : x; }
// dst = src over rows x cols: source elements outside read as 0, destination
// elements outside are left alone.
__attribute__((noinline)) static void tsl_copy_guarded(tsl_win s, tsl_win d, int64_t rows, int64_t cols) {
  const int64_t src_rows = tsl_clamp(s.rb - s.r0, rows), src_cols = tsl_clamp(s.cb - s.c0, cols);
  const int64_t dst_rows = tsl_clamp(d.rb - d.r0, rows), dst_cols = tsl_clamp(d.cb - d.c0, cols);
  for (int64_t r = 0; r < dst_rows; ++r) {
    const int64_t valid = r < src_rows ? (src_cols < dst_cols ? src_cols : dst_cols) : 0;
    if (s.layout == 0 && d.layout == 0) {
      const float* from = s.base + (s.r0 + r) * s.ld + s.c0;
      float* to = d.base + (d.r0 + r) * d.ld + d.c0;
      __builtin_memcpy(to, from, valid * sizeof(float));
      __builtin_memset(to + valid, 0, (dst_cols - valid) * sizeof(float));
    } else if (s.layout == 0 && d.layout == 1 && d.c0 % d.panel == 0) {
      // Packing B at an edge: panel-wide runs are contiguous on both sides.
      const float* from = s.base + (s.r0 + r) * s.ld + s.c0;
      for (int64_t c0 = 0; c0 < dst_cols; c0 += d.panel) {
        float* to = d.base + ((d.c0 + c0) / d.panel * d.rows + d.r0 + r) * d.panel;
        const int64_t n = tsl_clamp(dst_cols - c0, d.panel), v = tsl_clamp(valid - c0, n);
        __builtin_memcpy(to, from + c0, v * sizeof(float));
        __builtin_memset(to + v, 0, (n - v) * sizeof(float));
      }
    } else {
      for (int64_t c = 0; c < valid; ++c) d.base[tsl_off(&d, r, c)] = s.base[tsl_off(&s, r, c)];
      for (int64_t c = valid; c < dst_cols; ++c) d.base[tsl_off(&d, r, c)] = 0.0f;
    }
  }
}
)";

constexpr int64_t kAlignFloats = 16;  // 64-byte alignment of every scratch region

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
std::string num(int64_t v) { return std::to_string(v); }
std::string sym(const std::string& name) { return "v_" + name; }
std::string ex(const Expr& e) { return expr_to_cpp(e, sym); }

std::string float_literal(double v) {
  if (std::isnan(v)) return "__builtin_nanf(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inff()" : "(-__builtin_inff())";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

// One side of a transfer (copy, fragment load or store): a window of a buffer whose
// top-left element sits at (row0, col0) in the buffer's coordinates.
struct Side {
  std::string base;      // float* to element (0, 0) of the buffer (version applied)
  Layout layout = Layout::RowMajor;
  std::string ld;        // RowMajor: row stride
  int64_t rows = 0, cols = 0, panel = 1;  // panel layouts: static extents
  Expr row0, col0;
  Expr row_bound, col_bound;  // null = unguarded

  // Element (r, c) of the window; r and c are C++ expressions.
  std::string at(const std::string& r, const std::string& c) const {
    std::string R = "(" + ex(row0) + " + " + r + ")", C = "(" + ex(col0) + " + " + c + ")";
    switch (layout) {
      case Layout::RowMajor: return base + "[" + R + " * " + ld + " + " + C + "]";
      case Layout::ColPanels:
        return base + "[(" + C + " / " + num(panel) + " * " + num(rows) + " + " + R + ") * " +
               num(panel) + " + " + C + " % " + num(panel) + "]";
      case Layout::RowPanels:
        return base + "[(" + R + " / " + num(panel) + " * " + num(cols) + " + " + C + ") * " +
               num(panel) + " + " + R + " % " + num(panel) + "]";
    }
    return "";
  }
  bool guarded() const { return row_bound || col_bound; }
};

class Emitter {
 public:
  explicit Emitter(const GroupProgram& p) : p_(p) {}

  std::string run() {
    check_params();
    layout_scratch();
    depth_ = 1;
    for (const GroupOp& op : p_.body) emit_op(op);
    std::string s = kPrelude;
    for (auto& [name, text] : microkernels_) s += "\n" + text;
    s += "\nextern \"C\" int64_t tessel_scratch_floats(void) { return " + num(scratch_floats_) +
         "; }\n\n";
    s += "extern \"C\" void tessel_group(const int64_t* sizes, const double* scalars,\n"
         "    float* const* tensors, const int64_t* group, float* scratch) {\n";
    for (size_t i = 0; i < p_.size_params.size(); ++i)
      s += "  const int64_t " + sym(p_.size_params[i]) + " = sizes[" + num(i) + "];\n";
    for (size_t i = 0; i < p_.scalars.size(); ++i)
      s += "  const float s_" + p_.scalars[i].name + " = (float)scalars[" + num(i) + "];\n";
    for (size_t i = 0; i < p_.tensors.size(); ++i)
      s += "  float* const t" + num(i) + " = tensors[" + num(i) + "];  // " +
           p_.tensors[i].name + "\n";
    for (size_t i = 0; i < p_.grid.size(); ++i)
      s += "  const int64_t " + sym(p_.grid[i].iv) + " = group[" + num(i) + "];\n";
    for (const Buffer& b : p_.buffers)
      if (b.space != Space::Global)
        s += "  float* const b" + num(b.id) + " = scratch + " + num(offset_[b.id]) + ";  // " +
             b.name + "\n";
    s += body_;
    s += "}\n";
    return s;
  }

 private:
  void check_params() {
    auto known = [&](const std::string& n) {
      for (const std::string& s : p_.size_params)
        if (s == n) return true;
      return false;
    };
    for (const TensorParam& t : p_.tensors) {
      if (t.dtype != DType::F32)
        user_error(ErrorKind::Unsupported, "cpu target: tensor '" + t.name + "' is " +
                                               dtype_name(t.dtype) + "; only f32 is supported");
      if (!known(t.ld))
        user_error(ErrorKind::Verify, "tensor '" + t.name + "': leading dimension '" + t.ld +
                                          "' is not a size parameter");
    }
    if (p_.workers < 1) user_error(ErrorKind::Verify, "program needs at least one worker");
  }

  // Shared buffers: every version, each padded to 64 bytes. Private fragments: one
  // row-major part per worker, each padded the same way.
  void layout_scratch() {
    offset_.assign(p_.buffers.size(), 0);
    slot_.assign(p_.buffers.size(), 0);
    int64_t at = 0;
    for (const Buffer& b : p_.buffers) {
      if (b.space == Space::Global) continue;
      if (b.space == Space::Shared) {
        // A partial last panel still takes a whole panel's room (layout_offset).
        int64_t rows = b.layout == Layout::RowPanels ? round_up(b.rows, b.panel) : b.rows;
        int64_t cols = b.layout == Layout::ColPanels ? round_up(b.cols, b.panel) : b.cols;
        slot_[b.id] = round_up(rows * cols, kAlignFloats);
        offset_[b.id] = at;
        at += slot_[b.id] * std::max(1, b.versions);
      } else {
        FragPart part = frag_part(p_, b, 0);
        slot_[b.id] = round_up(part.rows * part.cols, kAlignFloats);
        offset_[b.id] = at;
        at += slot_[b.id] * p_.workers;
      }
    }
    scratch_floats_ = std::max<int64_t>(at, kAlignFloats);
  }

  void line(const std::string& s) { body_ += std::string(2 * depth_, ' ') + s + "\n"; }
  void open(const std::string& s) { line(s.empty() ? "{" : s + " {"); ++depth_; }
  void close() { --depth_; line("}"); }

  std::string base_of(const Buffer& b, const Expr& version) const {
    if (b.space == Space::Global) return "t" + num(b.tensor);
    std::string base = "b" + num(b.id);
    if (version && !expr_is_const(version, nullptr)) return "(" + base + " + " + ex(version) + " * " + num(slot_[b.id]) + ")";
    int64_t v = 0;
    if (version && expr_is_const(version, &v) && v != 0) return "(" + base + " + " + num(v * slot_[b.id]) + ")";
    return base;
  }

  // A window of a global or shared buffer at (ref.row + dr, ref.col + dc).
  Side side(const BufferRef& ref, int64_t dr, int64_t dc, Expr rb, Expr cb) const {
    const Buffer& b = p_.buffer(ref.buffer);
    TESSEL_ASSERT(b.space != Space::Private, "fragment used as a copy operand");
    Side s;
    s.base = base_of(b, ref.version);
    s.layout = b.space == Space::Global ? Layout::RowMajor : b.layout;
    s.ld = b.space == Space::Global ? sym(p_.tensors.at(b.tensor).ld) : num(b.cols);
    s.rows = b.rows;
    s.cols = b.cols;
    s.panel = b.panel;
    s.row0 = ref.row + dr;
    s.col0 = ref.col + dc;
    s.row_bound = rb;
    s.col_bound = cb;
    return s;
  }

  // Worker w's part of a fragment, as a row-major window of its own.
  Side frag_side(const Buffer& f, int w) const {
    FragPart part = frag_part(p_, f, w);
    Side s;
    s.base = "(b" + num(f.id) + " + " + num(w * slot_[f.id]) + ")";
    s.ld = num(part.cols);
    s.row0 = expr_const(0);
    s.col0 = expr_const(0);
    return s;
  }

  static bool row_contiguous(const Side& s) { return s.layout == Layout::RowMajor; }

  // dst window = src window (rows x cols), guarded as each side says.
  void emit_transfer(const Side& src, const Side& dst, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    std::vector<std::string> checks;
    auto fits = [&](const Side& s) {
      if (s.row_bound) checks.push_back(ex(s.row0) + " + " + num(rows) + " <= " + ex(s.row_bound));
      if (s.col_bound) checks.push_back(ex(s.col0) + " + " + num(cols) + " <= " + ex(s.col_bound));
    };
    fits(src);
    fits(dst);
    if (checks.empty()) {
      emit_fast_transfer(src, dst, rows, cols);
      return;
    }
    std::string all;
    for (const std::string& c : checks) all += (all.empty() ? "" : " && ") + ("(" + c + ")");
    open("if (" + all + ")");
    emit_fast_transfer(src, dst, rows, cols);
    --depth_;
    open("} else");
    emit_guarded_transfer(src, dst, rows, cols);
    close();
  }

  void emit_fast_transfer(const Side& src, const Side& dst, int64_t rows, int64_t cols) {
    const std::string bytes = " * sizeof(float)";
    int64_t dc = 0;
    open("for (int64_t r = 0; r < " + num(rows) + "; ++r)");
    if (row_contiguous(src) && row_contiguous(dst)) {
      line("__builtin_memcpy(&" + dst.at("r", "0") + ", &" + src.at("r", "0") + ", " + num(cols) + bytes + ");");
    } else if (row_contiguous(src) && dst.layout == Layout::ColPanels &&
               expr_is_const(dst.col0, &dc) && dc % dst.panel == 0) {
      // Packing B: each row splits into panel-wide runs, contiguous on both sides.
      int64_t p = dst.panel, full = cols / p * p;
      if (full > 0) {
        open("for (int64_t c = 0; c < " + num(full) + "; c += " + num(p) + ")");
        line("__builtin_memcpy(&" + dst.at("r", "c") + ", &" + src.at("r", "c") + ", " + num(p) + bytes + ");");
        close();
      }
      if (cols > full)
        line("__builtin_memcpy(&" + dst.at("r", num(full)) + ", &" + src.at("r", num(full)) + ", " +
             num(cols - full) + bytes + ");");
    } else {
      open("for (int64_t c = 0; c < " + num(cols) + "; ++c)");
      line(dst.at("r", "c") + " = " + src.at("r", "c") + ";");
      close();
    }
    close();
  }

  // tsl_win's layout numbering (see the prelude).
  static std::string layout_code(Layout l) {
    switch (l) {
      case Layout::RowMajor: return "0";
      case Layout::ColPanels: return "1";
      case Layout::RowPanels: return "2";
    }
    return "0";
  }

  static std::string window(const Side& s) {
    std::string bound_r = s.row_bound ? ex(s.row_bound) : "INT64_C(0x7fffffffffffffff)";
    std::string bound_c = s.col_bound ? ex(s.col_bound) : "INT64_C(0x7fffffffffffffff)";
    return "(tsl_win){" + s.base + ", " + layout_code(s.layout) + ", " + (s.ld.empty() ? "0" : s.ld) +
           ", " + num(s.rows) + ", " + num(s.cols) + ", " + num(s.panel) + ", " + ex(s.row0) + ", " +
           ex(s.col0) + ", " + bound_r + ", " + bound_c + "}";
  }

  void emit_guarded_transfer(const Side& src, const Side& dst, int64_t rows, int64_t cols) {
    line("tsl_copy_guarded(" + window(src) + ", " + window(dst) + ", " + num(rows) + ", " + num(cols) + ");");
  }

  void emit_op(const GroupOp& op) {
    switch (op.kind) {
      case GroupOpKind::Copy: {
        // One thread runs every worker, and the workers' elements are disjoint, so
        // the whole window copied at once is the same as each worker's share in turn.
        line("// copy #" + num(op.id));
        open("");
        emit_transfer(side(op.src, 0, 0, op.src_row_bound, op.src_col_bound),
                      side(op.dst, 0, 0, op.dst_row_bound, op.dst_col_bound), op.rows, op.cols);
        close();
        return;
      }
      case GroupOpKind::AsyncCommit:
      case GroupOpKind::AsyncWait:
        // The CPU has no copy engine: every copy completed when it was issued, so
        // there is nothing to commit or wait for.
        line("// " + std::string(group_op_name(op.kind)) + " #" + num(op.id) + ": copies are synchronous here");
        return;
      case GroupOpKind::MmaWait:  // likewise every mma completed when it was issued
        line("// " + std::string(group_op_name(op.kind)) + " #" + num(op.id) + ": mmas are synchronous here");
        return;
      case GroupOpKind::Fence:
      case GroupOpKind::Barrier:
        // Workers run one after another within an interval: a barrier is a no-op.
        line("// " + std::string(group_op_name(op.kind)) + " #" + num(op.id));
        return;
      case GroupOpKind::FragFill: {
        const Buffer& f = frag(op.frag, op);
        line("// frag.fill #" + num(op.id));
        for (int w = 0; w < p_.workers; ++w) {
          int64_t n = part_elems(f, w);
          if (n == 0) continue;
          open("for (int64_t e = 0; e < " + num(n) + "; ++e)");
          line(frag_side(f, w).base + "[e] = " + float_literal(op.constant) + ";");
          close();
        }
        return;
      }
      case GroupOpKind::FragLoad:
      case GroupOpKind::FragStore: {
        bool load = op.kind == GroupOpKind::FragLoad;
        const Buffer& f = frag(op.frag, op);
        line("// " + std::string(group_op_name(op.kind)) + " #" + num(op.id));
        for (int w = 0; w < p_.workers; ++w) {
          FragPart part = frag_part(p_, f, w);
          if (part.rows * part.cols == 0) continue;
          open("");
          if (load) {
            emit_transfer(side(op.src, part.row0, part.col0, op.src_row_bound, op.src_col_bound),
                          frag_side(f, w), part.rows, part.cols);
          } else {
            emit_transfer(frag_side(f, w),
                          side(op.dst, part.row0, part.col0, op.dst_row_bound, op.dst_col_bound),
                          part.rows, part.cols);
          }
          close();
        }
        return;
      }
      case GroupOpKind::Mma: emit_mma(op); return;
      case GroupOpKind::Elementwise: emit_elementwise(op); return;
      case GroupOpKind::Call:
        user_error(ErrorKind::Unsupported, "cpu target: op #" + num(op.id) + " calls '" + op.callee +
                                               "', and opaque calls are not supported");
      case GroupOpKind::For:
        open("for (int64_t " + sym(op.iv) + " = " + ex(op.lo) + "; " + sym(op.iv) + " < " + ex(op.hi) +
             "; ++" + sym(op.iv) + ")");
        for (const GroupOp& inner : op.bodies.at(0)) emit_op(inner);
        close();
        return;
      case GroupOpKind::If: {
        open("if (" + cond(op.cond) + ")");
        for (const GroupOp& inner : op.bodies.at(0)) emit_op(inner);
        if (op.bodies.size() > 1 && !op.bodies[1].empty()) {
          --depth_;
          open("} else");
          for (const GroupOp& inner : op.bodies[1]) emit_op(inner);
        }
        close();
        return;
      }
    }
  }

  std::string cond(const Cond& c) const {
    const std::string o = cmp_op_name(c.op);
    if (!c.on_scalar) return ex(c.lhs) + " " + o + " " + ex(c.rhs);
    for (size_t i = 0; i < p_.scalars.size(); ++i)
      if (p_.scalars[i].name == c.scalar) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", c.value);
        return "scalars[" + num(i) + "] " + o + " " + buf;
      }
    user_error(ErrorKind::Verify, "if: unknown scalar '" + c.scalar + "'");
  }

  const Buffer& frag(int id, const GroupOp& op) const {
    const Buffer& f = p_.buffer(id);
    if (f.space != Space::Private)
      user_error(ErrorKind::Verify, "op #" + num(op.id) + ": '" + f.name + "' is not a fragment");
    return f;
  }

  int64_t part_elems(const Buffer& f, int w) const {
    FragPart part = frag_part(p_, f, w);
    return part.rows * part.cols;
  }

  void emit_elementwise(const GroupOp& op) {
    const Buffer& dst = frag(op.frag, op);
    size_t arity = (op.ew == EwOp::Exp || op.ew == EwOp::Neg || op.ew == EwOp::Copy) ? 1 : 2;
    if (op.operands.size() != arity)
      user_error(ErrorKind::Verify, "ew #" + num(op.id) + ": " + ew_op_name(op.ew) + " takes " +
                                        num(arity) + " operands, got " + num(op.operands.size()));
    line("// ew #" + num(op.id) + " " + ew_op_name(op.ew));
    for (int w = 0; w < p_.workers; ++w) {
      int64_t n = part_elems(dst, w);
      if (n == 0) continue;
      std::vector<std::string> x;
      for (const EwOperand& o : op.operands) {
        switch (o.kind) {
          case EwOperand::Kind::Frag: {
            const Buffer& f = frag(o.frag, op);
            if (f.rows != dst.rows || f.cols != dst.cols)
              user_error(ErrorKind::Unsupported, "ew #" + num(op.id) + ": operand '" + f.name +
                                                     "' and result '" + dst.name + "' differ in shape");
            x.push_back(frag_side(f, w).base + "[e]");
            break;
          }
          case EwOperand::Kind::Scalar: {
            bool found = false;
            for (const ScalarParam& s : p_.scalars) found |= s.name == o.scalar;
            if (!found) user_error(ErrorKind::Verify, "ew #" + num(op.id) + ": unknown scalar '" + o.scalar + "'");
            x.push_back("s_" + o.scalar);
            break;
          }
          case EwOperand::Kind::Const: x.push_back(float_literal(o.value)); break;
        }
      }
      std::string v;
      switch (op.ew) {
        case EwOp::Add: v = x[0] + " + " + x[1]; break;
        case EwOp::Sub: v = x[0] + " - " + x[1]; break;
        case EwOp::Mul: v = x[0] + " * " + x[1]; break;
        case EwOp::Max: v = "(" + x[0] + " > " + x[1] + " ? " + x[0] + " : " + x[1] + ")"; break;
        case EwOp::Exp: v = "__builtin_expf(" + x[0] + ")"; break;
        case EwOp::Neg: v = "-" + x[0]; break;
        case EwOp::Copy: v = x[0]; break;
      }
      open("for (int64_t e = 0; e < " + num(n) + "; ++e)");
      line(frag_side(dst, w).base + "[e] = " + v + ";");
      close();
    }
  }

  // Each worker: its part of acc += a * b, in MR x NR blocks through the
  // micro-kernel where the layouts allow it, a scalar loop for the rest.
  void emit_mma(const GroupOp& op) {
    const Buffer& acc = frag(op.frag, op);
    const Buffer& A = p_.buffer(op.a.buffer);
    const Buffer& B = p_.buffer(op.b.buffer);
    const int64_t mr = p_.atom_m, nr = p_.atom_n;
    int64_t b_col = -1;
    bool fast = cpu_microkernel_fits(mr, nr) && A.space == Space::Shared && A.layout == Layout::RowMajor &&
                B.space == Space::Shared && B.layout == Layout::ColPanels && B.panel == nr &&
                expr_is_const(op.b.col, &b_col) && b_col % nr == 0;
    line("// mma #" + num(op.id) + " (" + num(op.m) + "x" + num(op.n) + "x" + num(op.k) + ")");
    Side a = side(op.a, 0, 0, nullptr, nullptr), b = side(op.b, 0, 0, nullptr, nullptr);
    // The valid part of the tile (GroupOp::m_valid): work outside it is skipped.
    open("");
    line("const int64_t mv = " + (op.m_valid ? ex(op.m_valid) : num(op.m)) + ";");
    line("const int64_t nv = " + (op.n_valid ? ex(op.n_valid) : num(op.n)) + ";");
    line("const int64_t kv = tsl_min(" + (op.k_valid ? ex(op.k_valid) : num(op.k)) + ", " +
         num(op.k) + ");");
    for (int w = 0; w < p_.workers; ++w) {
      FragPart part = frag_part(p_, acc, w);
      if (part.rows * part.cols == 0) continue;
      std::string c = frag_side(acc, w).base;
      int64_t rows_fast = 0, cols_fast = 0;
      if (fast) {
        rows_fast = part.rows / mr * mr;
        cols_fast = part.cols / nr * nr;
      }
      if (rows_fast > 0 && cols_fast > 0) {
        std::string name = cpu_microkernel_name(mr, nr, A.cols);
        if (!microkernels_.count(name)) microkernels_[name] = emit_cpu_microkernel(mr, nr, A.cols);
        // jr outer, ir inner (BLIS): one B micro-panel stays in L1 while the A
        // micro-panels stream past it.
        open("for (int64_t jr = 0; jr < " + num(cols_fast) + " && " + num(part.col0) +
             " + jr < nv; jr += " + num(nr) + ")");
        open("for (int64_t ir = 0; ir < " + num(rows_fast) + " && " + num(part.row0) +
             " + ir < mv; ir += " + num(mr) + ")");
        line(name + "(kv, &" + a.at(num(part.row0) + " + ir", "0") + ", &" +
             b.at("0", num(part.col0) + " + jr") + ", " + c + " + ir * " + num(part.cols) + " + jr, " +
             num(part.cols) + ");");
        close();
        close();
      }
      // Leftovers: rows below the blocked ones (all columns), then the columns to
      // the right of the blocked ones (blocked rows only).
      emit_scalar_mma(op, a, b, c, part, rows_fast, part.rows, 0, part.cols);
      if (rows_fast > 0) emit_scalar_mma(op, a, b, c, part, 0, rows_fast, cols_fast, part.cols);
    }
    close();
  }

  void emit_scalar_mma(const GroupOp& op, const Side& a, const Side& b, const std::string& c,
                       const FragPart& part, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (r0 >= r1 || c0 >= c1) return;
    open("for (int64_t r = " + num(r0) + "; r < " + num(r1) + " && " + num(part.row0) +
         " + r < mv; ++r)");
    open("for (int64_t c = " + num(c0) + "; c < " + num(c1) + " && " + num(part.col0) +
         " + c < nv; ++c)");
    line("float s = " + c + "[r * " + num(part.cols) + " + c];");
    open("for (int64_t kk = 0; kk < kv; ++kk)");
    line("s += " + a.at(num(part.row0) + " + r", "kk") + " * " + b.at("kk", num(part.col0) + " + c") + ";");
    close();
    line(c + "[r * " + num(part.cols) + " + c] = s;");
    close();
    close();
  }

  const GroupProgram& p_;
  std::vector<int64_t> offset_, slot_;
  int64_t scratch_floats_ = 0;
  std::map<std::string, std::string> microkernels_;
  std::string body_;
  int depth_ = 1;
};

}  // namespace

std::string emit_cpu(const GroupProgram& program) { return Emitter(program).run(); }

}  // namespace tessel
