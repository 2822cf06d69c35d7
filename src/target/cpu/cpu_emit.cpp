#include "target/cpu/cpu_emit.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "ir/group_effects.h"
#include "target/cpu/cpu_isa.h"
#include "target/cpu/cpu_microkernel.h"
#include "target/cpu/cpu_support.h"
#include "target/cpu/cpu_tiny_kernel.h"
#include "tessel/error.h"

namespace tessel {
namespace {

// Everything the emitted unit needs in place of headers. int64_t is `long` on the
// LP64 targets we compile for; INT64_C is what expr_to_cpp prints for constants.
const char* kPrelude = R"(typedef unsigned int tsl_u32;
typedef unsigned short tsl_u16;
#define INT64_C(c) c##L
static inline int64_t tsl_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t tsl_ceildiv(int64_t a, int64_t b) { return -tsl_floordiv(-a, b); }
static inline int64_t tsl_mod(int64_t a, int64_t b) { return a - b * tsl_floordiv(a, b); }
static inline int64_t tsl_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t tsl_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t tsl_clamp(int64_t x, int64_t hi) { return x < 0 ? 0 : x > hi ? hi : x; }
// d = s over `vecs` whole vectors of the ISA and then `rest` floats (fp32, not
// overlapping); the emitter passes constants. Not __builtin_memcpy: whether the
// compiler expands that inline or calls the C library (a call per packed row)
// depends on its version and tuning; the JIT's -fno-tree-loop-distribute-patterns
// keeps these loops from becoming such a call.
static inline __attribute__((always_inline)) void tsl_copy_f32(float* d, const float* s, int64_t vecs, int64_t rest) {
  for (int64_t i = 0; i < vecs; ++i) ((tsl_vfu*)d)[i] = ((const tsl_vfu*)s)[i];
  d += vecs * (int64_t)(sizeof(tsl_vf) / sizeof(float));
  s += vecs * (int64_t)(sizeof(tsl_vf) / sizeof(float));
  for (int64_t i = 0; i < rest; ++i) d[i] = s[i];
}

// 16-bit storage types, converted by bit manipulation on the float (round to
// nearest even; NaN stays NaN, overflow becomes infinity).
static inline float tsl_bf16_to_f32(tsl_u16 h) { return __builtin_bit_cast(float, (tsl_u32)h << 16); }
static inline tsl_u16 tsl_f32_to_bf16(float x) {
  tsl_u32 u = __builtin_bit_cast(tsl_u32, x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (tsl_u16)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (tsl_u16)(u >> 16);
}
static inline float tsl_f16_to_f32(tsl_u16 h) {
  tsl_u32 sign = (tsl_u32)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in fp32
    float f = (float)m * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  tsl_u32 u = sign | (e == 31 ? 0x7f800000u | (m << 13) : ((e - 15 + 127) << 23) | (m << 13));
  return __builtin_bit_cast(float, u);
}
static inline tsl_u16 tsl_f32_to_f16(float x) {
  tsl_u32 u = __builtin_bit_cast(tsl_u32, x);
  tsl_u32 sign = (u >> 16) & 0x8000u, m = u & 0x7fffffu;
  int e = (int)((u >> 23) & 0xffu) - 127 + 15;
  if ((u & 0x7fffffffu) > 0x7f800000u) return (tsl_u16)(sign | 0x7e00u);
  if (e >= 31) return (tsl_u16)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (tsl_u16)sign;
    m |= 0x800000u;
    int shift = 14 - e;
    tsl_u32 half = 1u << (shift - 1), rest = m & ((1u << shift) - 1), v = m >> shift;
    if (rest > half || (rest == half && (v & 1u))) ++v;
    return (tsl_u16)(sign | v);
  }
  tsl_u32 v = ((tsl_u32)e << 10) | (m >> 13), rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (v & 1u))) ++v;  // a carry into the exponent is right
  return (tsl_u16)(sign | v);
}
static inline float tsl_round_bf16(float x) { return tsl_bf16_to_f32(tsl_f32_to_bf16(x)); }
static inline float tsl_round_f16(float x) { return tsl_f16_to_f32(tsl_f32_to_f16(x)); }

// Elementwise choices with every operand evaluated (see ew_value). Max and min keep
// a NaN of either operand, as the sim does.
template <class A, class B> static inline auto tsl_max(A a, B b) -> decltype(a + b) { return a != a || a > b ? a : b; }
template <class A, class B> static inline auto tsl_min(A a, B b) -> decltype(a + b) { return a != a || a < b ? a : b; }
template <class C, class A, class B> static inline auto tsl_select(C c, A a, B b) -> decltype(a + b) { return c != 0 ? a : b; }

// exp and exp2 in fp32 without branches, so that loops over fragments vectorize
// (calls into libm do not): 2^n * p(r), with n = round(x / ln 2) and r = x - n ln 2
// (Cody-Waite, two constants), p Cephes' degree-6 polynomial for exp on
// [-ln2/2, ln2/2]; 2^n is two exponent-field factors, so subnormal results and
// results near the overflow bound come out right. Within 2 ulp of the true value;
// +-inf and NaN behave as in libm.
static inline float tsl_exp_poly(float r, float n) {
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const int k = (int)n, a = k >> 1, b = k - a;
  return p * __builtin_bit_cast(float, (a + 127) << 23) * __builtin_bit_cast(float, (b + 127) << 23);
}
static inline float tsl_expf(float x) {
  float c = x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x;
  c = c != c ? 0.0f : c;
  const float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  float r = c - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const float y = tsl_exp_poly(r, n);
  return x != x ? x : x > 88.7228394f ? __builtin_inff() : x < -103.972084f ? 0.0f : y;
}
static inline float tsl_exp2f(float x) {
  float c = x < -151.0f ? -151.0f : x > 129.0f ? 129.0f : x;
  c = c != c ? 0.0f : c;
  const float n = (c + 12582912.0f) - 12582912.0f;
  const float y = tsl_exp_poly((c - n) * 0.693147180559945309f, n);
  return x != x ? x : x >= 128.0f ? __builtin_inff() : x < -150.0f ? 0.0f : y;
}

// The guarded (ragged edge) copy of fp32 windows, shared by every such transfer so
// that the unit stays small: one call per window instead of a loop nest per op. It
// lives in tessel (cpu_support.h: cpu_copy_guarded, entry 0 of the table that
// tessel_bind receives after dlopen), so no unit spends compile time on it. A window
// of a buffer: layout 0 strided (element (r, c) at r * ld + c * cs), 1 column
// panels, 2 row panels; (r0, c0) its top-left element; elements at or beyond
// (rb, cb) are outside.
struct tsl_win { float* base; int64_t layout, ld, cs, rows, cols, panel, r0, c0, rb, cb; };
typedef void (*tsl_copy_fn)(const tsl_win*, const tsl_win*, int64_t, int64_t, float);
static tsl_copy_fn tsl_copy_guarded_fn;
// dst = src over rows x cols: source elements outside read as `pad`, destination
// elements outside are left alone.
static inline void tsl_copy_guarded(tsl_win s, tsl_win d, int64_t rows, int64_t cols, float pad) {
  tsl_copy_guarded_fn(&s, &d, rows, cols, pad);
}
// An fp32 block of an mma read in place that crosses the valid part's edge, one
// scalar multiply-add at a time over its valid rows x cols (cpu_support.h:
// cpu_mma_edge, entry 1): C (+)= A * B with A(r, k) = a[r * lda + k], B(k, j) =
// b[k * ldb + j], C(r, j) = c[r * ldc + j]; overwrite: C not read.
typedef void (*tsl_mma_edge_fn_t)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t lda,
                                  int64_t ldb, int64_t rows, int64_t cols, int overwrite);
static tsl_mma_edge_fn_t tsl_mma_edge;
// The blocks of a built-in micro-kernel over a worker's part, their loops in tessel
// (cpu_support.h: cpu_mma_blocks, entry 2).
typedef void (*tsl_mma_blocks_fn_t)(const void* ukr, int64_t kc, const float* a, int64_t a_step, const float* b,
                                    int64_t b_step, float* c, int64_t ldc, int64_t lda, int64_t ldb, int64_t br,
                                    int64_t bc, int64_t blocks_r, int64_t blocks_c, int64_t rows_valid,
                                    int64_t cols_valid, int in_place, int overwrite);
static tsl_mma_blocks_fn_t tsl_mma_blocks;
)";

constexpr int64_t kAlignFloats = 16;  // 64-byte alignment of every scratch region

// An emitted micro-kernel's block across the valid part's edge of an accumulator
// homed in its tensor (find_homes), A and B staged: the kernel computes the whole
// block (rows x cols of it valid, at most 16 x 64) on the staging padding into a
// local tile, and only the valid part is copied in from C and back, so nothing past
// the tensor's edge is written (cpu_mma_blocks does the same for built-in kernels).
const char* const kBounce = R"(static void tsl_bounce(void (*ukr)(int64_t, const float*, const float*, float*, int64_t, int),
                       int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t rows,
                       int64_t cols, int64_t bc, int overwrite) {
  float t[16 * 64];
  for (int64_t i = 0; i < 16 * 64; ++i) t[i] = 0;
  for (int64_t r = 0; r < rows && !overwrite; ++r)
    for (int64_t j = 0; j < cols; ++j) t[r * bc + j] = c[r * ldc + j];
  ukr(kc, a, b, t, bc, overwrite);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) c[r * ldc + j] = t[r * bc + j];
}
)";

constexpr int64_t kCacheLineFloats = 16;  // 64 bytes
int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
int64_t ceil_div(int64_t x, int64_t a) { return (x + a - 1) / a; }
// Block rows from which an mma reading B in place copies B panel by panel (emit_mma).
constexpr int64_t kCpuPackBRows = 12;
// B's bytes (the mma's k x n) from which an mma of built-in kernels copies B's panels.
constexpr int64_t kCpuPackBBytes = 384 << 10;
// The most rows of a block in a part narrower than one B panel (the tallest built-in
// kernels, and tsl_bounce's tile).
constexpr int64_t kCpuNarrowBlockRows = 16;
// The most blocks of one call site that the unit calls one by one (when all are
// inside the valid part) instead of through cpu_mma_blocks.
constexpr int64_t kCpuInlineBlocks = 4;
// A's bytes (the mma's m x k, read in place) from which its block rows run outside,
// and B's (k x n) from which they do too.
constexpr int64_t kCpuRowsOuterABytes = 1 << 20, kCpuRowsOuterBBytes = 512 << 10;
std::string num(int64_t v) { return std::to_string(v); }
std::string sym(const std::string& name) { return "v_" + name; }
std::string ex(const Expr& e) { return expr_to_cpp(e, sym); }

// A literal of the compute type: fp32 ("1.5f") or fp64 ("1.5").
std::string literal(double v, bool f64) {
  const char* suffix = f64 ? "" : "f";
  if (std::isnan(v)) return f64 ? "__builtin_nan(\"\")" : "__builtin_nanf(\"\")";
  if (std::isinf(v)) return std::string(v > 0 ? "" : "(-") + (f64 ? "__builtin_inf()" : "__builtin_inff()") + (v > 0 ? "" : ")");
  char buf[64];
  std::snprintf(buf, sizeof buf, f64 ? "%.17g" : "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  s += suffix;
  return v < 0 ? "(" + s + ")" : s;  // "-(-1.0f)" would read as a decrement
}
std::string float_literal(double v) { return literal(v, false); }

// Scratch (shared buffers and fragments) holds float, or double for f64 buffers;
// a 16-bit buffer in scratch holds floats rounded to its precision.
bool is_f64(DType t) { return t == DType::F64; }
std::string scratch_ctype(DType t) { return is_f64(t) ? "double" : "float"; }
// Tensors hold their storage type.
std::string tensor_ctype(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::BF16:
    case DType::F16: return "tsl_u16";
    case DType::U32: return "unsigned";
  }
  return "float";
}

// One side of a transfer (copy, fragment load or store, reduction scratch): a
// window of a buffer whose top-left element sits at (row0, col0) in the buffer's
// coordinates.
struct Side {
  std::string base;      // pointer to element (0, 0) of the buffer (version, offset applied)
  DType dtype = DType::F32;
  bool in_scratch = true;  // shared or private (float/double) rather than a tensor
  Layout layout = Layout::RowMajor;
  std::string ld;        // RowMajor: row stride
  std::string cs;        // RowMajor: column stride ("" = 1, the contiguous case)
  bool unit_rows = false;  // RowMajor: the row stride is 1 (a transposed view of a tensor)
  int64_t rows = 0, cols = 0, panel = 1;  // panel layouts: static extents
  Expr row0, col0;
  Expr row_bound, col_bound;  // null = unguarded

  std::string ctype() const { return in_scratch ? scratch_ctype(dtype) : tensor_ctype(dtype); }
  bool unit_cols() const { return layout == Layout::RowMajor && cs.empty(); }

  // Element (r, c) of the window, as an lvalue; r and c are C++ expressions.
  std::string at(const std::string& r, const std::string& c) const {
    std::string R = "(" + ex(row0) + " + " + r + ")", C = "(" + ex(col0) + " + " + c + ")";
    switch (layout) {
      case Layout::RowMajor:
        return base + "[" + R + " * " + ld + " + " + C + (cs.empty() ? "" : " * " + cs) + "]";
      case Layout::ColPanels:
        return base + "[(" + C + " / " + num(panel) + " * " + num(rows) + " + " + R + ") * " +
               num(panel) + " + " + C + " % " + num(panel) + "]";
      case Layout::RowPanels:
        return base + "[(" + R + " / " + num(panel) + " * " + num(cols) + " + " + C + ") * " +
               num(panel) + " + " + R + " % " + num(panel) + "]";
    }
    return "";
  }
  // Element (r, c) as a value of the compute type (float, or double for f64).
  std::string read(const std::string& r, const std::string& c) const {
    if (!in_scratch && dtype == DType::BF16) return "tsl_bf16_to_f32(" + at(r, c) + ")";
    if (!in_scratch && dtype == DType::F16) return "tsl_f16_to_f32(" + at(r, c) + ")";
    return at(r, c);
  }
  // Stores `v` (a value of dtype `from`) at (r, c), rounding to this side's dtype.
  std::string write(const std::string& r, const std::string& c, const std::string& v, DType from) const {
    std::string to = at(r, c) + " = ";
    if (dtype == DType::BF16 || dtype == DType::F16) {
      bool bf = dtype == DType::BF16;
      if (!in_scratch) return to + (bf ? "tsl_f32_to_bf16(" : "tsl_f32_to_f16(") + v + ");";
      if (from != dtype) return to + (bf ? "tsl_round_bf16(" : "tsl_round_f16(") + v + ");";
    }
    return to + v + ";";
  }
  bool guarded() const { return row_bound || col_bound; }
};

// Both sides hold the same bytes for the same values: a memcpy is a copy.
bool raw_copyable(const Side& a, const Side& b) { return a.ctype() == b.ctype() && a.dtype == b.dtype; }

class Emitter {
 public:
  Emitter(const GroupProgram& p, const CpuIsaInfo& isa) : p_(p), isa_(isa) {}

  std::string run() {
    check_params();
    layout_scratch();
    find_first_writes(p_.body);
    find_homes(p_.body);
    find_part_copies(p_.body);
    depth_ = 1;
    const int64_t body_scratch = scratch_floats_;  // before the mmas' own (emit_mma: tsl_bp)
    for (const GroupOp& op : p_.body) emit_op(op);
    const std::vector<HomesBody> fast = fast_group_bodies(body_scratch);
    // int64_t and the vector types of the ISA (the micro-kernel's registers).
    std::string s = std::string("// Emitted by tessel (cpu target, ") + isa_.name +
                    "). Header-free on purpose: it compiles in tens of ms.\n";
    // A unit whose work all happens in tessel's built-in functions (no micro-kernel
    // and no element loop of its own: calls, their arguments and the loops around
    // them) compiles at -Og: GCC's -O2 passes cost such a group function about 30 ms
    // for nothing to speed up, -Og about 15 (64^3: a cold compile of 55 -> 38 ms).
    // With a grid of constant extents (sizes fixed by the plan) the bounds and
    // guards are constants: -O1 then costs no more to compile than -Og (8^3 33 vs
    // 34 ms, 64x68x64 42 vs 42) and folds the loops and spills -Og leaves.
    bool constant_grid = true;
    for (const LoopDim& d : p_.grid) constant_grid &= expr_is_const(d.extent);
    const bool calls_only = !element_loops_ && microkernels_.empty();
    const std::string level = constant_grid ? "#pragma GCC optimize (\"O1\")  // calls only, constant bounds\n"
                                            : "#pragma GCC optimize (\"Og\")  // calls only\n";
    // With a homes' body (fast_group_bodies), -O1 and sibling calls, which -O1 leaves
    // out and the leaves' jumps (below) need. The tiny kernels are asm: -Og compiled
    // such units 3-5 ms faster but makes no sibling calls, -O2 8-15 ms slower. Four
    // of -O1's passes that find nothing in bodies of calls cost the leaves and the
    // general body a tenth of their compile (200x250x30's first unit 47 -> 41 ms);
    // the leaves of one kernel come out the same (4x4x4, diffed).
    if (calls_only)
      s += fast.empty() ? level
                        : "#pragma GCC optimize (\"O1\", \"optimize-sibling-calls\", \"no-tree-dominator-opts\", "
                          "\"no-tree-pta\", \"no-ivopts\", \"no-tree-loop-optimize\")  // tiny kernels\n";
    s += cpu_vector_types(isa_) + kPrelude;
    for (auto& [name, text] : microkernels_) s += "\n" + text;
    // The micro-kernels built into tessel that the unit calls (cpu_microkernel.h),
    // bound with the guarded copy from tessel's table (cpu_support.h) after dlopen.
    std::string bind = "  tsl_copy_guarded_fn = (tsl_copy_fn)table[0];\n  tsl_mma_edge = (tsl_mma_edge_fn_t)table[1];\n"
                       "  tsl_mma_blocks = (tsl_mma_blocks_fn_t)table[2];\n";
    if (!prebuilt_.empty())
      s += "\n// Built into tessel (cpu_microkernel.h): fp32 micro-kernels (the _s_s contract), the\n"
           "// window copy (cpu_copy_guarded's contract), the elementwise loop\n"
           "typedef void (*tsl_ukr_fn)(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t, int);\n";
    if (prebuilt_.count("tsl_elementwise"))
      s += "typedef void (*tsl_elementwise_t)(int64_t, float*, const float*, float, const float*, float, int64_t);\n";
    if (prebuilt_.count("tsl_copy_window"))
      s += "typedef void (*tsl_copy_window_t)(float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, "
           "int64_t, int64_t, int64_t, float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, "
           "int64_t, int64_t, int64_t, int64_t, float);\n";
    for (auto& [name, index] : prebuilt_) {
      const std::string type = name == "tsl_copy_window"   ? "tsl_copy_window_t"
                               : name == "tsl_elementwise" ? "tsl_elementwise_t"
                                                           : "tsl_ukr_fn";
      s += "static " + type + " " + name + ";\n";
      bind += "  " + name + " = (" + type + ")table[" + num(kCpuSupportPrebuiltBase + index) + "];\n";
    }
    // cpu_mma_edge's blocks and strips of rows that the unit calls itself (emit_mma),
    // each looked up once: table[entry], of type `lookup`, maps two sizes to a `type`.
    auto bind_lookups = [&](const std::set<std::pair<int64_t, int64_t>>& used, const std::string& what,
                            const std::string& fn, int entry, const std::string& type, const std::string& args,
                            const std::string& lookup, std::string (*name_of)(int64_t, int64_t)) {
      if (used.empty()) return;
      s += "// cpu_mma_edge's AVX-512 " + what + " (cpu_support.h: " + fn + ", entry " + num(entry) + ")\n" +
           "typedef void (*" + type + ")(" + args + ");\n" + "typedef " + type + " (*" + lookup +
           ")(int64_t, int64_t);\n";
      for (const auto& [x, y] : used) {
        const std::string name = name_of(x, y);
        s += "static " + type + " " + name + ";\n";
        bind += "  " + name + " = ((" + lookup + ")table[" + num(entry) + "])(" + num(x) + ", " + num(y) + ");\n";
      }
    };
    bind_lookups(edge_blocks_, "blocks", "cpu_edge_block", 3, "tsl_edge_block_t",
                 "int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t, unsigned short, int",
                 "tsl_edge_lookup_t", &edge_block_name);
    bind_lookups(edge_strips_, "strips of rows", "cpu_edge_strip", 4, "tsl_edge_strip_t",
                 "const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t, unsigned short, int",
                 "tsl_strip_lookup_t", &edge_strip_name);
    // With homes' bodies the general body is a second unit (cpu_emit.h), which binds
    // its own copies of the table's pointers.
    const std::string common = s;
    const std::string hidden = "extern \"C\" __attribute__((visibility(\"hidden\"))) void ";
    if (!fast.empty()) s += hidden + "tsl_bind_general(void* const* table);\n";
    s += "extern \"C\" void tessel_bind(void* const* table) {\n" + bind +
         (fast.empty() ? "" : "  tsl_bind_general(table);\n") + "}\n";
    s += "\nextern \"C\" int64_t tessel_scratch_floats(void) { return " + num(scratch_floats_) +
         "; }\n\n";
    // The grid for given sizes, so that a kernel found through its request entry
    // launches without its GroupIR (cpu_jit.h, find_cpu_kernel).
    s += "extern \"C\" int tessel_grid(const int64_t* sizes, int64_t* extents) {\n";
    for (size_t i = 0; i < p_.size_params.size(); ++i)
      s += "  const int64_t " + sym(p_.size_params[i]) + " = sizes[" + num(i) + "];\n  (void)" +
           sym(p_.size_params[i]) + ";\n";
    for (size_t i = 0; i < p_.grid.size(); ++i) s += "  extents[" + num(i) + "] = " + ex(p_.grid[i].extent) + ";\n";
    s += "  return " + num(p_.grid.size()) + ";\n}\n\n";
    const std::string params = "(const int64_t* sizes, const double* scalars,\n"
                               "    float* const* tensors, const int64_t* group, float* scratch)";
    const std::string args = "(sizes, scalars, tensors, group, scratch)";
    if (fast.empty())
      return s + "extern \"C\" void tessel_group" + params + " {\n" + group_prelude() + body_ + "}\n";
    // Each homes' body in a leaf of its own, the storing one the entry: a leaf tests
    // its conditions first and jumps to the next function where they fail, the last
    // being the general one. It reads only the locals those conditions name before the
    // jump: reads above it held the leaf's values in saved registers, since the jump
    // keeps the arguments in theirs (2x50x2: 8.1 -> 6.8 ns a call). The adding body's
    // test in the entry, before the storing one's, cost the calls that store a quarter
    // (2x13x3, 3x13x3). With leaf_regs_ the leaves take the tensors and scalars in
    // registers (regs_params), the entry in that form is exported too (cpu_jit.h,
    // CpuGroupRegsFn), the entry of arrays passes them on, and the general body is
    // reached through tsl_general_regs, which makes the arrays again.
    for (const auto& [name, text] : tiny_kernels_) s += text + "\n";
    const std::string leaf = "static __attribute__((noinline)) void ";
    const std::string leaf_params = leaf_regs_ ? regs_params() : params;
    const std::string leaf_args = leaf_regs_ ? regs_args() : args;
    std::string next = leaf_regs_ ? "tsl_general_regs" : "tsl_group_general";
    std::string second = kCpuSecondUnit + common + hidden + "tsl_bind_general(void* const* table) {\n" + bind +
                         "}\n\n" + hidden + "tsl_group_general" + params + " {\n" + group_prelude() + body_ + "}\n";
    s += hidden + next + leaf_params + ";\n\n";
    if (leaf_regs_)
      second += "\n" + hidden + next + leaf_params + " {\n" + regs_arrays() + "  tsl_group_general" + args +
                ";\n}\n";
    for (size_t i = fast.size(); i-- > 0;) {
      const HomesBody& h = fast[i];
      const std::string name = i > 0 ? "tsl_group_homes" + num(i) : leaf_regs_ ? regs_entry() : "tessel_group";
      s += (i == 0 ? "extern \"C\" void " : leaf) + name + leaf_params + " {\n" +
           group_prelude(Locals::Named, h.when) + "  if (!(" + h.when + "))\n    return " + next + leaf_args +
           ";\n" + group_prelude(Locals::Unnamed, h.when) + "  {\n" + h.body + "  }\n}\n" + (i == 0 ? "" : "\n");
      next = name;
    }
    if (leaf_regs_) {
      std::string pass;
      for (size_t i = 0; i < p_.tensors.size(); ++i) pass += ", tensors[" + num(i) + "]";
      for (size_t i = 0; i < p_.scalars.size(); ++i) pass += ", scalars[" + num(i) + "]";
      s += "\nextern \"C\" void tessel_group" + params + " {\n  return " + next + "(sizes, group, scratch" +
           pass + ");\n}\n";
    }
    return s + second;
  }

  // The leaves' form with the tensors and scalars in registers, where they fit the
  // x86-64 calling convention's six integer and eight vector registers beside sizes,
  // group and scratch: a caller's arrays and the leaf's reads of them were a fifth of a
  // 4x4x4 call. Exported under a name that says how many of each (cpu_jit.h).
  bool fits_regs() const { return p_.tensors.size() + 3 <= 6 && p_.scalars.size() <= 8; }
  std::string regs_entry() const {
    return "tessel_group_t" + num(p_.tensors.size()) + "s" + num(p_.scalars.size());
  }
  std::string regs_params() const {
    std::string s = "(const int64_t* sizes, const int64_t* group, float* scratch";
    for (size_t i = 0; i < p_.tensors.size(); ++i) s += ", float* tsl_t" + num(i);
    for (size_t i = 0; i < p_.scalars.size(); ++i) s += ", double tsl_s" + num(i);
    return s + ")";
  }
  std::string regs_args() const {
    std::string s = "(sizes, group, scratch";
    for (size_t i = 0; i < p_.tensors.size(); ++i) s += ", tsl_t" + num(i);
    for (size_t i = 0; i < p_.scalars.size(); ++i) s += ", tsl_s" + num(i);
    return s + ")";
  }
  // The arrays of the group function's form, from the registers' (tsl_general_regs).
  std::string regs_arrays() const {
    std::string t, v;
    for (size_t i = 0; i < p_.tensors.size(); ++i) t += (i ? ", tsl_t" : "tsl_t") + num(i);
    for (size_t i = 0; i < p_.scalars.size(); ++i) v += (i ? ", tsl_s" : "tsl_s") + num(i);
    return (t.empty() ? "  float* const* tensors = nullptr;\n" : "  float* const tensors[] = {" + t + "};\n") +
           (v.empty() ? "  const double* scalars = nullptr;\n" : "  const double scalars[] = {" + v + "};\n");
  }

  // The group function's locals: sizes, scalars, tensors, the group's indices, scratch
  // buffers; all of them, or those that `text` names, or those it does not.
  enum class Locals { All, Named, Unnamed };
  std::string group_prelude(Locals which = Locals::All, const std::string& text = "") const {
    std::string s;
    const bool regs = which != Locals::All && leaf_regs_;  // a leaf's (above)
    auto scalar = [&](size_t i) { return regs ? "tsl_s" + num(i) : "scalars[" + num(i) + "]"; };
    auto tensor = [&](size_t i) { return regs ? "tsl_t" + num(i) : "tensors[" + num(i) + "]"; };
    auto local = [&](const std::string& name, const std::string& decl) {
      if (which == Locals::All || names_identifier(text, name) == (which == Locals::Named))
        s += "  " + decl + "\n";
    };
    for (size_t i = 0; i < p_.size_params.size(); ++i)
      local(sym(p_.size_params[i]), "const int64_t " + sym(p_.size_params[i]) + " = sizes[" + num(i) + "];");
    for (size_t i = 0; i < p_.scalars.size(); ++i) {
      const std::string& name = p_.scalars[i].name;
      if (is_f64(p_.scalars[i].dtype))
        local("s_" + name, "const double s_" + name + " = " + scalar(i) + ";");
      else
        local("s_" + name, "const float s_" + name + " = (float)" + scalar(i) + ";");
      // Conditions compare the value as given (cond), read once.
      local("sd_" + name, "const double sd_" + name + " = " + scalar(i) + ";");
    }
    for (size_t i = 0; i < p_.tensors.size(); ++i) {
      const TensorParam& t = p_.tensors[i];
      if (t.dtype == DType::F32)
        local("t" + num(i), "float* const t" + num(i) + " = " + tensor(i) + ";  // " + t.name);
      else  // the launch passes every tensor as float*; it points at the storage type
        local("t" + num(i), tensor_ctype(t.dtype) + "* const t" + num(i) + " = (" + tensor_ctype(t.dtype) +
                                "*)" + tensor(i) + ";  // " + t.name + " (" + dtype_name(t.dtype) + ")");
    }
    for (size_t i = 0; i < p_.grid.size(); ++i)
      local(sym(p_.grid[i].iv), "const int64_t " + sym(p_.grid[i].iv) + " = group[" + num(i) + "];");
    for (const Buffer& b : p_.buffers)
      if (b.space != Space::Global) {
        const std::string name = "b" + num(b.id);
        if (is_f64(b.dtype))
          local(name, "double* const " + name + " = (double*)(scratch + " + num(offset_[b.id]) + ");  // " + b.name);
        else
          local(name, "float* const " + name + " = scratch + " + num(offset_[b.id]) + ";  // " + b.name);
      }
    return s;
  }

  // Whether `text` names identifier `name` (not as a part of a longer one).
  static bool names_identifier(const std::string& text, const std::string& name) {
    auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
      const size_t end = at + name.size();
      if ((at == 0 || !ident(text[at - 1])) && (end == text.size() || !ident(text[end]))) return true;
    }
    return false;
  }

  // Where every fragment that may live in its tensor (find_homes) is filled at the
  // top level and every mma can take a tiny kernel (cpu_tiny_kernel.h), the body again
  // with all homes holding and the tiny kernels inlined, run where all their
  // conditions hold: there every fill, scale and copy of the fragments folds away
  // (alpha 1 and beta 0 for a matrix product) and no call is left. Where a
  // home also serves its if's other branch (adds_in_place), a second such body has
  // those homes adding (beta 1); one body for both, with a run-time flag, cost the
  // smallest calls at beta 0 a tenth (2x2x3). Where a body calls several tiny kernels
  // (chunks of rows, blocks of columns) that flag costs nothing seen, and one body for
  // both (HomesHold::Either) saves the unit a function, 10-15 ms of a cold compile.
  // Else none (and no tiny kernel: the general body calls tessel's kernels, as before).
  struct HomesBody {
    std::string when, body;  // where the homes hold, and the body then
  };
  std::vector<HomesBody> fast_group_bodies(int64_t body_scratch) {
    if (home_.empty() || p_.workers != 1 || isa_.isa != CpuIsa::Avx512) return {};  // no tiny kernel (emit_mma)
    bool adds = false;
    for (const auto& [fill, home] : home_) {
      bool top = false;
      for (const GroupOp& op : p_.body) top |= op.id == fill;
      if (!top) return {};
      adds |= !home.add_when.empty();
    }
    const std::string general = body_;
    const int64_t scratch = scratch_floats_;
    leaf_regs_ = fits_regs();
    auto body_for = [&](HomesHold hold) {
      std::string when;
      for (const auto& [fill, home] : home_) {
        const std::string either = home.add_when.empty() ? home.when : home.when + ") || (" + home.add_when;
        when += (when.empty() ? "(" : " && (") +
                (hold == HomesHold::Either ? either
                 : hold == HomesHold::Add && !home.add_when.empty() ? home.add_when
                                                                    : home.when) +
                ")";
      }
      if (hold == HomesHold::Either) when = "(" + when + ")";
      scratch_floats_ = body_scratch;
      body_.clear();
      depth_ = 2;
      homes_hold_ = hold;
      mmas_ = tiny_mmas_ = tiny_calls_ = 0;
      written_ = false;
      leaf_when_.clear();
      for (const GroupOp& op : p_.body) emit_op(op);
      homes_hold_ = HomesHold::None;
      TESSEL_ASSERT(scratch_floats_ == scratch, "the homes' body laid out scratch again");
      return HomesBody{when + leaf_when_, body_};
    };
    std::vector<HomesBody> fast = {body_for(HomesHold::Store)};
    if (adds && tiny_calls_ > 1) fast = {body_for(HomesHold::Either)};
    else if (adds) fast.push_back(body_for(HomesHold::Add));
    body_ = general;
    if (mmas_ > 0 && tiny_mmas_ == mmas_) return fast;
    tiny_kernels_.clear();
    leaf_regs_ = false;
    return {};
  }

 private:
  void check_params() {
    for (const TensorParam& t : p_.tensors)
      if (t.shape.size() != t.strides.size() || t.shape.empty() || t.rank() > kMaxTensorRank)
        user_error(ErrorKind::Verify, "tensor '" + t.name + "': " + num(t.shape.size()) + " extents and " +
                                          num(t.strides.size()) + " strides (rank 1 to " +
                                          num(kMaxTensorRank) + ", one stride per extent)");
    if (p_.workers < 1) user_error(ErrorKind::Verify, "program needs at least one worker");
    if (p_.grid.size() > static_cast<size_t>(kMaxGridRank))
      user_error(ErrorKind::Verify, "grid has " + num(p_.grid.size()) + " dimensions; at most " +
                                        num(kMaxGridRank));
  }

  // Shared buffers: every version, each padded to 64 bytes. Private fragments: one
  // row-major part per worker, each padded the same way. Offsets count floats; an
  // f64 buffer takes two per element.
  void layout_scratch() {
    offset_.assign(p_.buffers.size(), 0);
    slot_.assign(p_.buffers.size(), 0);
    int64_t at = 0;
    for (const Buffer& b : p_.buffers) {
      if (b.space == Space::Global) continue;
      const int64_t width = is_f64(b.dtype) ? 2 : 1;
      if (b.space == Space::Shared) {
        // A partial last panel still takes a whole panel's room (layout_offset).
        int64_t rows = b.layout == Layout::RowPanels ? round_up(b.rows, b.panel) : b.rows;
        int64_t cols = b.layout == Layout::ColPanels ? round_up(b.cols, b.panel) : b.cols;
        slot_[b.id] = round_up(rows * cols, kAlignFloats);
        offset_[b.id] = at;
        at += slot_[b.id] * width * std::max(1, b.versions);
      } else {
        FragPart part = frag_part(p_, b, 0);
        slot_[b.id] = round_up(part.rows * part.cols, kAlignFloats);
        offset_[b.id] = at;
        at += slot_[b.id] * width * p_.workers;
      }
    }
    scratch_floats_ = std::max<int64_t>(at, kAlignFloats);
  }

  void line(const std::string& s) { body_ += std::string(2 * depth_, ' ') + s + "\n"; }
  void open(const std::string& s) {
    if (s.rfind("for (", 0) == 0) element_loops_ = true;
    line(s.empty() ? "{" : s + " {");
    ++depth_;
  }
  // A loop whose body is calls and other loops (k tiles, workers, micro-kernel
  // blocks), not element work: it leaves element_loops_ alone.
  void open_control_loop(const std::string& s) {
    line(s + " {");
    ++depth_;
  }
  void close() { --depth_; line("}"); }

  // `slot_` counts elements of the buffer's own type, so version offsets do too.
  std::string base_of(const Buffer& b, const Expr& version) const {
    if (b.space == Space::Global) return "t" + num(b.tensor);
    std::string base = "b" + num(b.id);
    if (version && !expr_is_const(version, nullptr)) return "(" + base + " + " + ex(version) + " * " + num(slot_[b.id]) + ")";
    int64_t v = 0;
    if (version && expr_is_const(version, &v) && v != 0) return "(" + base + " + " + num(v * slot_[b.id]) + ")";
    return base;
  }

  // A window of a global or shared buffer at (ref.row + dr, ref.col + dc).
  Side side(const BufferRef& ref, int64_t dr, int64_t dc, Expr rb, Expr cb, const GroupOp& op) const {
    Side s = side_at(ref, expr_const(dr), expr_const(dc), op);
    s.row_bound = rb;
    s.col_bound = cb;
    return s;
  }
  Side side_at(const BufferRef& ref, const Expr& dr, const Expr& dc, const GroupOp& op) const {
    const Buffer& b = p_.buffer(ref.buffer);
    if (b.space == Space::Private)
      user_error(ErrorKind::Verify, "op #" + num(op.id) + ": fragment '" + b.name + "' used as a window");
    Side s;
    s.base = base_of(b, ref.version);
    s.rows = b.rows;
    s.cols = b.cols;
    s.panel = b.panel;
    if (b.space == Space::Global) {
      const TensorParam& t = p_.tensors.at(b.tensor);
      if (!ref.row_stride || !ref.col_stride)
        user_error(ErrorKind::Verify, "op #" + num(op.id) + ": window of tensor '" + t.name +
                                          "' has no row or column stride");
      s.dtype = t.dtype;
      s.in_scratch = false;
      s.layout = Layout::RowMajor;
      s.ld = ex(ref.row_stride);
      int64_t unit = 0;
      s.unit_rows = expr_is_const(ref.row_stride, &unit) && unit == 1;
      if (!(expr_is_const(ref.col_stride, &unit) && unit == 1)) s.cs = ex(ref.col_stride);
      int64_t off = 0;
      if (ref.offset && !(expr_is_const(ref.offset, &off) && off == 0))
        s.base = "(" + s.base + " + " + ex(ref.offset) + ")";
    } else {
      s.dtype = b.dtype;
      s.layout = b.layout;
      s.ld = num(b.cols);
    }
    s.row0 = ref.row + dr;
    s.col0 = ref.col + dc;
    return s;
  }

  // Worker w's part of a fragment, as a row-major window of its own.
  std::string part_base(const Buffer& f, int w) const {
    return "(b" + num(f.id) + " + " + num(w * slot_[f.id]) + ")";
  }

  // The worker an op's code runs for: one worker, unrolled (`w`), or every worker
  // of the grid in a runtime loop over kWorker (their parts have the same extents;
  // surplus workers hold nothing and are left out). A loop keeps the unit's size
  // independent of the worker count for the ops whose parts need no guards.
  struct Worker {
    bool loop = false;
    int w = 0;
  };
  static constexpr const char* kWorker = "tsl_w";  // printed by ex() as v_tsl_w
  Expr worker_sym() const { return expr_sym(kWorker); }
  // Calls `body` once per worker that holds part of `f`, or once inside a loop.
  void for_workers(const Buffer& f, const std::function<void(const Worker&)>& body) {
    const int grid = p_.worker_rows * p_.worker_cols;
    if (grid <= 1) {
      for (int w = 0; w < p_.workers; ++w)
        if (part_elems(f, w) > 0) body(Worker{false, w});
      return;
    }
    open_control_loop("for (int64_t " + sym(kWorker) + " = 0; " + sym(kWorker) + " < " + num(grid) + "; ++" +
                      sym(kWorker) + ")");
    body(Worker{true, 0});
    close();
  }
  FragPart part_of(const Buffer& f, const Worker& w) const { return frag_part(p_, f, w.loop ? 0 : w.w); }
  std::string base(const Buffer& f, const Worker& w) const {
    if (!w.loop) return part_base(f, w.w);
    return "(b" + num(f.id) + " + " + sym(kWorker) + " * " + num(slot_[f.id]) + ")";
  }
  // Position in the worker grid, and the part's first row and column in the tile.
  Expr grid_row(const Worker& w) const {
    return w.loop ? floor_div(worker_sym(), expr_const(p_.worker_cols)) : expr_const(worker_position(p_, w.w).first);
  }
  Expr grid_col(const Worker& w) const {
    return w.loop ? expr_mod(worker_sym(), expr_const(p_.worker_cols)) : expr_const(worker_position(p_, w.w).second);
  }
  Expr row0(const Buffer& f, const Worker& w) const {
    FragPart part = part_of(f, w);
    return w.loop && f.rows != 1 ? grid_row(w) * part.rows : expr_const(w.loop ? 0 : part.row0);
  }
  Expr col0(const Buffer& f, const Worker& w) const {
    FragPart part = part_of(f, w);
    return w.loop && f.cols != 1 ? grid_col(w) * part.cols : expr_const(w.loop ? 0 : part.col0);
  }
  // C++ condition: the worker owns its part (false for replicas, see frag_part).
  std::string owner(const Buffer& f, const Worker& w) const {
    if (!w.loop) return frag_part(p_, f, w.w).owner ? "1" : "0";
    std::string c;
    if (f.rows == 1 && p_.worker_rows > 1) c = ex(grid_row(w)) + " == 0";
    if (f.cols == 1 && p_.worker_cols > 1) c += (c.empty() ? "" : " && ") + ex(grid_col(w)) + " == 0";
    return c.empty() ? "1" : c;
  }
  Side frag_side(const Buffer& f, const Worker& w) const {
    FragPart part = part_of(f, w);
    Side s;
    s.base = base(f, w);
    s.dtype = f.dtype;
    s.ld = num(part.cols);
    s.row0 = expr_const(0);
    s.col0 = expr_const(0);
    return s;
  }

  // dst window (rows x cols) = src window, or its transpose (dst (r, c) = src (c, r),
  // the source window then being cols x rows); guarded as each side says, source
  // elements outside reading as `pad`.
  void emit_transfer(const Side& src, const Side& dst, int64_t rows, int64_t cols, double pad = 0,
                     bool transpose = false) {
    if (rows <= 0 || cols <= 0) return;
    // A large fp32 copy that the ISA's vectors would take inline: one call of tessel's
    // window copy, which checks the bounds itself (cpu_microkernel.h: cpu_prebuilt_copy).
    int64_t dc0 = 0;
    const bool vector_layouts =
        !transpose && raw_copyable(src, dst) && src.ctype() == "float" && src.unit_cols() &&
        (dst.unit_cols() || (dst.layout == Layout::ColPanels && expr_is_const(dst.col0, &dc0) && dc0 % dst.panel == 0));
    const int copy = vector_layouts && rows * cols >= kCpuPrebuiltCopyFloats ? cpu_prebuilt_copy(isa_.isa) : -1;
    if (copy >= 0) {
      prebuilt_["tsl_copy_window"] = copy;
      line("tsl_copy_window(" + window_fields(src) + ", " + window_fields(dst) + ", " + num(rows) + ", " + num(cols) +
           ", " + float_literal(pad) + ");");
      return;
    }
    const int64_t src_rows = transpose ? cols : rows, src_cols = transpose ? rows : cols;
    std::vector<std::string> checks;
    auto fits = [&](const Side& s, int64_t r, int64_t c) {
      if (s.row_bound) checks.push_back(ex(s.row0) + " + " + num(r) + " <= " + ex(s.row_bound));
      if (s.col_bound) checks.push_back(ex(s.col0) + " + " + num(c) + " <= " + ex(s.col_bound));
    };
    fits(src, src_rows, src_cols);
    fits(dst, rows, cols);
    if (checks.empty()) {
      emit_fast_transfer(src, dst, rows, cols, transpose);
      return;
    }
    std::string all;
    for (const std::string& c : checks) all += (all.empty() ? "" : " && ") + ("(" + c + ")");
    open("if (" + all + ")");
    emit_fast_transfer(src, dst, rows, cols, transpose);
    --depth_;
    open("} else");
    emit_guarded_transfer(src, dst, rows, cols, pad, transpose);
    close();
  }

  void emit_fast_transfer(const Side& src_in, const Side& dst_in, int64_t rows, int64_t cols, bool transpose) {
    // A tensor window's base (the tensor plus its group's offset: products and, for
    // grouped heads, divisions) is computed once, before the loops: GCC kept an idiv
    // of that offset inside an element loop (a transposed 64 x 64 operand's copy took
    // twice the time of the two mmas around it).
    Side src = src_in, dst = dst_in;
    const bool hoist_src = src.base.find('(') != std::string::npos, hoist_dst = dst.base.find('(') != std::string::npos;
    if (hoist_src || hoist_dst) open("");
    if (hoist_src) {
      line("auto* const tsl_sb = " + src.base + ";");
      src.base = "tsl_sb";
    }
    if (hoist_dst) {
      line("auto* const tsl_db = " + dst.base + ";");
      dst.base = "tsl_db";
    }
    if (emit_block_transpose(src, dst, rows, cols, transpose)) {
      if (hoist_src || hoist_dst) close();
      return;
    }
    const bool raw = raw_copyable(src, dst) && !transpose && src.ctype() == "float";
    // tsl_copy_f32's arguments for n floats: whole vectors, then the rest.
    auto run = [&](int64_t n) { return num(n / isa_.lanes) + ", " + num(n % isa_.lanes); };
    int64_t dc = 0;
    open("for (int64_t r = 0; r < " + num(rows) + "; ++r)");
    if (raw && src.unit_cols() && dst.unit_cols()) {
      line("tsl_copy_f32(&" + dst.at("r", "0") + ", &" + src.at("r", "0") + ", " + run(cols) + ");");
    } else if (raw && src.unit_cols() && dst.layout == Layout::ColPanels &&
               expr_is_const(dst.col0, &dc) && dc % dst.panel == 0) {
      // Packing B: each row splits into panel-wide runs, contiguous on both sides.
      int64_t p = dst.panel, full = cols / p * p;
      if (full > 0) {
        open("for (int64_t c = 0; c < " + num(full) + "; c += " + num(p) + ")");
        line("tsl_copy_f32(&" + dst.at("r", "c") + ", &" + src.at("r", "c") + ", " + run(p) + ");");
        close();
      }
      if (cols > full)
        line("tsl_copy_f32(&" + dst.at("r", num(full)) + ", &" + src.at("r", num(full)) + ", " +
             run(cols - full) + ");");
    } else {
      open("for (int64_t c = 0; c < " + num(cols) + "; ++c)");
      line(dst.write("r", "c", transpose ? src.read("c", "r") : src.read("r", "c"), src.dtype));
      close();
    }
    close();
    if (hoist_src || hoist_dst) close();
  }

  // A transposing copy of fp32 (dst (r, c) from elements that are contiguous along r
  // in the source) in square blocks of one vector's lanes, shuffled in registers
  // (tsl_transpose_f32): the element loop loads and stores one float at a time. True
  // when it emitted the copy.
  bool emit_block_transpose(const Side& src, const Side& dst, int64_t rows, int64_t cols, bool transpose) {
    const int64_t L = isa_.lanes;
    if (L < 4 || rows % L != 0 || cols % L != 0) return false;
    if (src.ctype() != "float" || dst.ctype() != "float" || src.dtype != DType::F32 || dst.dtype != DType::F32) return false;
    // The source runs along r: a view whose row stride is 1, or a transposed read of
    // contiguous rows. `src_step`: from source element (r, c) to (r, c + 1).
    std::string src_step;
    if (!transpose && src.layout == Layout::RowMajor && src.unit_rows && !src.cs.empty()) src_step = src.cs;
    else if (transpose && src.unit_cols()) src_step = src.ld;
    else return false;
    // The destination runs along c for L elements from every block's start.
    // `dst_step`: from destination element (r, c) to (r + 1, c).
    std::string dst_step;
    int64_t dc = 0;
    if (dst.unit_cols()) dst_step = dst.ld;
    else if (dst.layout == Layout::ColPanels && dst.panel % L == 0 && expr_is_const(dst.col0, &dc) && dc % L == 0)
      dst_step = num(dst.panel);
    else return false;
    if (!microkernels_.count("tsl_transpose_f32")) microkernels_["tsl_transpose_f32"] = transpose_helper();
    open("for (int64_t r = 0; r < " + num(rows) + "; r += " + num(L) + ")");
    open("for (int64_t c = 0; c < " + num(cols) + "; c += " + num(L) + ")");
    line("tsl_transpose_f32(&" + dst.at("r", "c") + ", " + dst_step + ", &" +
         (transpose ? src.at("c", "r") : src.at("r", "c")) + ", " + src_step + ");");
    close();
    close();
    return true;
  }

  // tsl_transpose_f32(d, dstep, s, sstep): the L x L block whose column i is the
  // vector at s + i * sstep is stored with row j at d + j * dstep (L = the ISA's
  // lanes). log2(L) rounds of interleaving rows i and i + L/2 transpose it.
  std::string transpose_helper() const {
    const int64_t L = isa_.lanes, h = L / 2;
    std::string lo, hi;
    for (int64_t k = 0; k < h; ++k) {
      lo += (k ? ", " : "") + num(k) + ", " + num(k + L);
      hi += (k ? ", " : "") + num(k + h) + ", " + num(k + h + L);
    }
    std::string s = "typedef int tsl_vi __attribute__((vector_size(" + num(4 * L) + ")));\n"
                    "static inline __attribute__((always_inline)) void tsl_transpose_f32(float* d, int64_t dstep, "
                    "const float* s, int64_t sstep) {\n"
                    "  const tsl_vi lo = {" + lo + "}, hi = {" + hi + "};\n"
                    "  tsl_vf v0";
    for (int64_t i = 1; i < L; ++i) s += ", v" + num(i);
    s += ";\n";
    for (int64_t i = 0; i < L; ++i) s += "  v" + num(i) + " = *(const tsl_vfu*)(s + " + num(i) + " * sstep);\n";
    for (int64_t round = 0; (int64_t{1} << round) < L; ++round) {
      s += "  {\n";
      for (int64_t i = 0; i < h; ++i)
        s += "    const tsl_vf w" + num(2 * i) + " = __builtin_shuffle(v" + num(i) + ", v" + num(i + h) + ", lo), w" +
             num(2 * i + 1) + " = __builtin_shuffle(v" + num(i) + ", v" + num(i + h) + ", hi);\n";
      for (int64_t i = 0; i < L; ++i) s += "    v" + num(i) + " = w" + num(i) + ";\n";
      s += "  }\n";
    }
    for (int64_t j = 0; j < L; ++j) s += "  *(tsl_vfu*)(d + " + num(j) + " * dstep) = v" + num(j) + ";\n";
    return s + "}\n";
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

  // A tsl_win's fields in order (see the prelude), and the window.
  static std::string window_fields(const Side& s) {
    std::string bound_r = s.row_bound ? ex(s.row_bound) : "INT64_C(0x7fffffffffffffff)";
    std::string bound_c = s.col_bound ? ex(s.col_bound) : "INT64_C(0x7fffffffffffffff)";
    return s.base + ", " + layout_code(s.layout) + ", " + (s.ld.empty() ? "0" : s.ld) + ", " +
           (s.cs.empty() ? "1" : s.cs) + ", " + num(s.rows) + ", " + num(s.cols) + ", " + num(s.panel) + ", " +
           ex(s.row0) + ", " + ex(s.col0) + ", " + bound_r + ", " + bound_c;
  }
  static std::string window(const Side& s) { return "(tsl_win){" + window_fields(s) + "}"; }

  void emit_guarded_transfer(const Side& src, const Side& dst, int64_t rows, int64_t cols, double pad,
                             bool transpose) {
    if (!transpose && src.ctype() == "float" && raw_copyable(src, dst)) {
      line("tsl_copy_guarded(" + window(src) + ", " + window(dst) + ", " + num(rows) + ", " + num(cols) +
           ", " + float_literal(pad) + ");");
      return;
    }
    // Any other pair of types or a transposed read: one loop nest, clamped to the
    // valid extents (the source's in its own window coordinates).
    const int64_t src_rows = transpose ? cols : rows, src_cols = transpose ? rows : cols;
    auto extent = [](const Expr& bound, const Expr& at, int64_t n) {
      return bound ? "tsl_clamp(" + ex(bound) + " - " + ex(at) + ", " + num(n) + ")" : num(n);
    };
    open("");
    line("const int64_t sr = " + extent(src.row_bound, src.row0, src_rows) +
         ", sc = " + extent(src.col_bound, src.col0, src_cols) + ";");
    line("const int64_t dr = " + extent(dst.row_bound, dst.row0, rows) +
         ", dc = " + extent(dst.col_bound, dst.col0, cols) + ";");
    open("for (int64_t r = 0; r < dr; ++r)");
    open("for (int64_t c = 0; c < dc; ++c)");
    const bool f64 = is_f64(src.dtype) || is_f64(dst.dtype);
    std::string inside = transpose ? "c < sr && r < sc" : "r < sr && c < sc";
    std::string v = transpose ? src.read("c", "r") : src.read("r", "c");
    line(dst.write("r", "c", "(" + inside + ") ? " + v + " : " + literal(pad, f64), src.dtype));
    close();
    close();
    close();
  }

  void emit_op(const GroupOp& op) {
    emit_op_kind(op);
    // What a leaf has done before its tiny kernels' test (emit_mma): a fill writes at
    // most the group's scratch, which the general body fills again; fences, waits and
    // control flow write nothing themselves.
    switch (op.kind) {
      case GroupOpKind::FragFill:
      case GroupOpKind::AsyncCommit:
      case GroupOpKind::AsyncWait:
      case GroupOpKind::MmaWait:
      case GroupOpKind::Fence:
      case GroupOpKind::Barrier:
      case GroupOpKind::For:
      case GroupOpKind::If: break;
      default: written_ = true;
    }
  }
  void emit_op_kind(const GroupOp& op) {
    switch (op.kind) {
      case GroupOpKind::Copy: {
        if (moved_copies_.count(op.id)) {
          line("// copy #" + num(op.id) + ": part by part in its mma's worker loop");
          return;
        }
        // One thread runs every worker, and the workers' elements are disjoint, so
        // the whole window copied at once is the same as each worker's share in turn.
        line("// copy #" + num(op.id));
        open("");
        emit_transfer(side(op.src, 0, 0, op.src_row_bound, op.src_col_bound, op),
                      side(op.dst, 0, 0, op.dst_row_bound, op.dst_col_bound, op), op.rows, op.cols,
                      op.constant);
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
      case GroupOpKind::Ticket: {
        // One thread runs the group's workers, so they have all passed here; groups
        // run on several threads, hence the atomic step (acquire and release).
        const std::string t = sym(op.iv);
        line("// ticket #" + num(op.id));
        line("int64_t " + t + ";");
        open("");
        line("unsigned* const tsl_c = &" + side_at(op.dst, expr_const(0), expr_const(0), op).at("0", "0") + ";");
        line("const unsigned tsl_n = (unsigned)(" + ex(op.hi) + ");");
        line("unsigned tsl_old = __atomic_load_n(tsl_c, __ATOMIC_RELAXED);");
        line("while (!__atomic_compare_exchange_n(tsl_c, &tsl_old, tsl_old + 1 >= tsl_n ? 0u : tsl_old + 1, 1, "
             "__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {}");
        line(t + " = tsl_old;");
        close();
        return;
      }
      case GroupOpKind::FragFill: {
        const Buffer& f = frag(op.frag, op);
        line("// frag.fill #" + num(op.id));
        auto skip = skip_fill_.find(op.id);
        if (skip != skip_fill_.end()) {
          // The loop's first mma overwrites the whole fragment (find_first_writes), or
          // every element that its store writes where it lives in the store's window
          // (find_homes).
          auto home = home_.find(op.id);
          if (home != home_.end()) {
            const std::string id = num(op.id);
            std::string when = homes_hold_ != HomesHold::None ? "true" : home->second.when;
            if (!home->second.add_when.empty()) {  // adds_in_place
              const std::string adds = homes_hold_ == HomesHold::None     ? home->second.add_when
                                       : homes_hold_ == HomesHold::Either ? home->second.adds
                                       : homes_hold_ == HomesHold::Add    ? "true"
                                                                          : "false";
              line("const bool tsl_addhome_" + id + " = " + adds + ";");
              if (homes_hold_ == HomesHold::None) when = "(" + when + ") || tsl_addhome_" + id;
            }
            line("const bool tsl_home_" + id + " = " + when + ";");
            if (p_.workers == 1) {  // one part: the mma's pointer and row stride, chosen here
              line("float* const tsl_acc_" + id + " = tsl_home_" + id + " ? " + home->second.base + " : " +
                   part_base(f, 0) + ";");
              line("const int64_t tsl_ldacc_" + id + " = tsl_home_" + id + " ? " + home->second.ld + " : " +
                   num(f.cols) + ";");
            } else {
              line("float* const tsl_acc_" + id + " = " + home->second.base + ";");
              line("const int64_t tsl_ldacc_" + id + " = " + home->second.ld + ";");
            }
            line("const bool tsl_whole_" + id + " = tsl_home_" + id + " || (" + skip->second + ");");
          } else {
            line("const bool tsl_whole_" + num(op.id) + " = " + skip->second + ";");
          }
          open("if (!tsl_whole_" + num(op.id) + ")");
        }
        for_workers(f, [&](const Worker& w) {
          FragPart part = part_of(f, w);
          const int64_t n = part.rows * part.cols;
          if (f.dtype == DType::F32 && builtin_elementwise(n)) {
            line("tsl_elementwise(4, " + base(f, w) + ", 0, " + literal(op.constant, false) + ", 0, 0.0f, " + num(n) + ");");
            return;
          }
          flat_loop(n, base(f, w) + "[e] = " + literal(op.constant, is_f64(f.dtype)) + ";");
        });
        if (skip != skip_fill_.end()) close();
        return;
      }
      case GroupOpKind::FragLoad:
      case GroupOpKind::FragStore: {
        bool load = op.kind == GroupOpKind::FragLoad;
        const Buffer& f = frag(op.frag, op);
        if (!load && op.transpose)
          user_error(ErrorKind::Verify, "frag.store #" + num(op.id) + ": only fragment loads transpose");
        line("// " + std::string(group_op_name(op.kind)) + " #" + num(op.id));
        auto homed = homed_store_.find(op.id);
        // The fragment may already be in the window (find_homes).
        if (homed != homed_store_.end()) open("if (!tsl_home_" + num(homed->second) + ")");
        for_workers(f, [&](const Worker& w) {
          FragPart part = part_of(f, w);
          // Replicas hold the owner's values: only owners store, so no element is
          // written twice.
          std::string own = load ? "1" : owner(f, w);
          if (own == "0") return;
          open(own == "1" ? "" : "if (" + own + ")");
          Side mine = frag_side(f, w);
          const Expr r0 = row0(f, w), c0 = col0(f, w);
          if (load) {
            // Transposed, fragment (r, c) comes from window (c, r).
            Side src = side_at(op.src, op.transpose ? c0 : r0, op.transpose ? r0 : c0, op);
            src.row_bound = op.src_row_bound;
            src.col_bound = op.src_col_bound;
            emit_transfer(src, mine, part.rows, part.cols, op.constant, op.transpose);
          } else {
            Side dst = side_at(op.dst, r0, c0, op);
            dst.row_bound = op.dst_row_bound;
            dst.col_bound = op.dst_col_bound;
            emit_transfer(mine, dst, part.rows, part.cols);
          }
          close();
        });
        if (homed != homed_store_.end()) close();
        return;
      }
      case GroupOpKind::Mma: emit_mma(op); return;
      case GroupOpKind::Elementwise: emit_elementwise(op); return;
      case GroupOpKind::Reduce: emit_reduce(op); return;
      case GroupOpKind::Call:
        user_error(ErrorKind::Unsupported, "cpu target: op #" + num(op.id) + " calls '" + op.callee +
                                               "', and opaque calls are not supported");
      case GroupOpKind::MbarInit:
      case GroupOpKind::MbarArrive:
      case GroupOpKind::MbarExpectTx:
      case GroupOpKind::MbarWait:
      case GroupOpKind::Tma:
      case GroupOpKind::Roles:
      case GroupOpKind::ClusterSync:
        // The GPU's mbarriers, tensor-memory copies and warp roles: nothing here
        // emits them for a cpu plan.
        user_error(ErrorKind::Unsupported, "cpu target: op #" + num(op.id) + " (" + group_op_name(op.kind) +
                                               ") is not supported on the cpu");
      case GroupOpKind::For:
        open_control_loop("for (int64_t " + sym(op.iv) + " = " + ex(op.lo) + "; " + sym(op.iv) + " < " +
                          ex(op.hi) + "; ++" + sym(op.iv) + ")");
        fors_.push_back(&op);
        for (const GroupOp& inner : op.bodies.at(0)) emit_op(inner);
        fors_.pop_back();
        close();
        return;
      case GroupOpKind::If: {
        open("if (" + cond(op.cond) + ")");
        for (const GroupOp& inner : op.bodies.at(0)) emit_op(inner);
        if (op.bodies.size() > 1 && !op.bodies[1].empty()) {
          --depth_;
          open("} else");
          // C += the product where it was homed in C (adds_in_place): done already. In
          // the homes' bodies, always: there a home whose if's condition fails adds.
          const auto adding = adding_if_.find(op.id);
          if (adding != adding_if_.end() && homes_hold_ != HomesHold::None) {
            line("// C += the product: done in place");
          } else {
            if (adding != adding_if_.end()) open("if (!tsl_addhome_" + num(adding->second) + ")");
            for (const GroupOp& inner : op.bodies[1]) emit_op(inner);
            if (adding != adding_if_.end()) close();
          }
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
        return "sd_" + c.scalar + " " + o + " " + buf;
      }
    user_error(ErrorKind::Verify, "if: unknown scalar '" + c.scalar + "'");
  }

  const Buffer& frag(int id, const GroupOp& op) const {
    if (id < 0 || id >= static_cast<int>(p_.buffers.size()))
      user_error(ErrorKind::Verify, "op #" + num(op.id) + ": fragment id " + num(id) + " is not a buffer");
    const Buffer& f = p_.buffer(id);
    if (f.space != Space::Private)
      user_error(ErrorKind::Verify, "op #" + num(op.id) + ": '" + f.name + "' is not a fragment");
    return f;
  }

  int64_t part_elems(const Buffer& f, int w) const {
    FragPart part = frag_part(p_, f, w);
    return part.rows * part.cols;
  }

  // The index of an operand along one dimension: the destination's own index when
  // the extents agree, 0 when the operand's extent is 1 (it stretches).
  std::string broadcast_index(const GroupOp& op, const Buffer& f, const Buffer& dst, int64_t fe,
                              int64_t de, const std::string& i) const {
    if (fe == de) return i;
    if (fe == 1) return "0";
    user_error(ErrorKind::Verify, std::string(group_op_name(op.kind)) + " #" + num(op.id) + ": operand '" +
                                      f.name + "' [" + num(f.rows) + ", " + num(f.cols) +
                                      "] does not broadcast to the result '" + dst.name + "' [" +
                                      num(dst.rows) + ", " + num(dst.cols) + "]");
  }

  // The scalar (its C++ name) by which `op` scales its own fragment in place, or ""
  // (emit_elementwise skips such a scale when the scalar is 1).
  static std::string unit_scale_of(const GroupOp& op) {
    if (op.kind != GroupOpKind::Elementwise || op.ew != EwOp::Mul || op.operands.size() != 2) return "";
    for (int i = 0; i < 2; ++i) {
      const EwOperand &f = op.operands[i], &s = op.operands[1 - i];
      if (f.kind == EwOperand::Kind::Frag && f.frag == op.frag && s.kind == EwOperand::Kind::Scalar)
        return "s_" + s.scalar;
    }
    return "";
  }

  void emit_elementwise(const GroupOp& op) {
    const Buffer& dst = frag(op.frag, op);
    const size_t arity = static_cast<size_t>(ew_arity(op.ew));
    if (op.operands.size() != arity)
      user_error(ErrorKind::Verify, "ew #" + num(op.id) + ": " + ew_op_name(op.ew) + " takes " +
                                        num(arity) + " operands, got " + num(op.operands.size()));
    if (op.ew == EwOp::Index && op.axis != 0 && op.axis != 1)
      user_error(ErrorKind::Verify, "ew #" + num(op.id) + ": index axis " + num(op.axis) + " is not 0 or 1");
    const bool f64 = is_f64(dst.dtype);
    // Operands of the same shape as the result are read at the same element: one
    // flat loop (the common case, and what an mma epilogue takes). Broadcast
    // operands and Index need the row and column.
    bool flat = op.ew != EwOp::Index;
    for (const EwOperand& o : op.operands)
      if (o.kind == EwOperand::Kind::Frag) {
        const Buffer& f = frag(o.frag, op);
        broadcast_index(op, f, dst, f.rows, dst.rows, "r");
        broadcast_index(op, f, dst, f.cols, dst.cols, "c");
        flat &= f.rows == dst.rows && f.cols == dst.cols;
      } else if (o.kind == EwOperand::Kind::Scalar) {
        bool found = false;
        for (const ScalarParam& s : p_.scalars) found |= s.name == o.scalar;
        if (!found) user_error(ErrorKind::Verify, "ew #" + num(op.id) + ": unknown scalar '" + o.scalar + "'");
      }
    std::string what = ew_op_name(op.ew);
    if (op.ew == EwOp::Cmp) what += std::string(".") + cmp_op_name(op.cmp);
    if (op.ew == EwOp::Cast) what += std::string(".") + dtype_name(op.dtype);
    line("// ew #" + num(op.id) + " " + what);
    // A fragment scaled in place by a scalar parameter is left alone when the scalar
    // is 1 at run time (x * 1 == x for every x, NaN and infinities included): a scale
    // of 1 then costs no pass over an accumulator.
    const std::string unit_scale = unit_scale_of(op);
    if (!unit_scale.empty()) open("if (" + unit_scale + " != 1)");
    // A flat fp32 +, -, *, / or copy of fragments and fp32 scalars: tessel's loop
    // (cpu_microkernel.h: cpu_prebuilt_elementwise) when it is large.
    int ew_code = -1;
    switch (op.ew) {
      case EwOp::Add: ew_code = 0; break;
      case EwOp::Sub: ew_code = 1; break;
      case EwOp::Mul: ew_code = 2; break;
      case EwOp::Div: ew_code = 3; break;
      case EwOp::Copy: ew_code = 4; break;
      default: break;
    }
    bool ew_f32 = flat && ew_code >= 0 && dst.dtype == DType::F32;
    for (const EwOperand& o : op.operands) {
      if (o.kind == EwOperand::Kind::Frag) ew_f32 &= frag(o.frag, op).dtype == DType::F32;
      else if (o.kind == EwOperand::Kind::Scalar)
        for (const ScalarParam& sp : p_.scalars) ew_f32 &= sp.name != o.scalar || !is_f64(sp.dtype);
      else ew_f32 &= o.kind == EwOperand::Kind::Const;
    }
    for_workers(dst, [&](const Worker& w) {
      FragPart part = part_of(dst, w);
      if (ew_f32 && builtin_elementwise(part.rows * part.cols)) {
        std::string args;
        for (size_t i = 0; i < 2; ++i) {
          if (i >= op.operands.size()) {
            args += ", 0, 0.0f";
            continue;
          }
          const EwOperand& o = op.operands[i];
          if (o.kind == EwOperand::Kind::Frag) args += ", " + base(frag(o.frag, op), w) + ", 0.0f";
          else if (o.kind == EwOperand::Kind::Scalar) args += ", 0, s_" + o.scalar;
          else args += ", 0, " + literal(o.value, false);
        }
        line("tsl_elementwise(" + num(ew_code) + ", " + base(dst, w) + args + ", " + num(part.rows * part.cols) + ");");
        return;
      }
      std::vector<std::string> x, per_row;  // per_row: values read once per row
      for (const EwOperand& o : op.operands) {
        switch (o.kind) {
          case EwOperand::Kind::Frag: {
            const Buffer& f = frag(o.frag, op);
            FragPart fp = part_of(f, w);
            if (flat) {
              x.push_back(base(f, w) + "[e]");
            } else {
              std::string r = broadcast_index(op, f, dst, f.rows, dst.rows, "r");
              std::string c = broadcast_index(op, f, dst, f.cols, dst.cols, "c");
              std::string at = base(f, w) + "[" + (fp.cols == 1 ? r : r + " * " + num(fp.cols)) +
                               (c == "0" ? "" : " + " + c) + "]";
              if (c == "0" && dst.cols > 1 && f.id != dst.id) {
                // A column operand, read once per row: the row's loop then has no
                // load that might alias its stores, and vectorizes.
                std::string h = "h" + num(per_row.size());
                per_row.push_back("const " + scratch_ctype(f.dtype) + " " + h + " = " + at + ";");
                at = h;
              }
              x.push_back(at);
            }
            break;
          }
          case EwOperand::Kind::Scalar: x.push_back("s_" + o.scalar); break;
          case EwOperand::Kind::Const: x.push_back(literal(o.value, f64)); break;
          case EwOperand::Kind::Index:
            if (!o.index) user_error(ErrorKind::Verify, "ew #" + num(op.id) + ": index operand without an expression");
            x.push_back(std::string(f64 ? "(double)" : "(float)") + "(" + ex(o.index) + ")");
            break;
        }
      }
      std::string v = ew_value(op, x, f64, ex(op.axis == 0 ? row0(dst, w) : col0(dst, w)));
      std::string d = base(dst, w);
      if (flat) {
        flat_loop(part.rows * part.cols, d + "[e] = " + v + ";");
      } else {
        open("for (int64_t r = 0; r < " + num(part.rows) + "; ++r)");
        for (const std::string& h : per_row) line(h);
        // Element (r, c) reads operands at (r, c) or a row broadcast at (0, c), each
        // a fragment of its own or dst itself at (r, c): no element feeds another.
        // GCC cannot prove the broadcast row apart from dst's rows and, at -O2, does
        // not version the loop for it (a masking select ran one element at a time).
        line("#pragma GCC ivdep");
        open("for (int64_t c = 0; c < " + num(part.cols) + "; ++c)");
        line(d + "[r * " + num(part.cols) + " + c] = " + v + ";");
        close();
        close();
      }
    });
    if (!unit_scale.empty()) close();
  }

  // Whether n elements go to tessel's elementwise loop (registered for the unit).
  bool builtin_elementwise(int64_t n) {
    const int index = n >= kCpuPrebuiltCopyFloats ? cpu_prebuilt_elementwise(isa_.isa) : -1;
    if (index >= 0) prebuilt_["tsl_elementwise"] = index;
    return index >= 0;
  }

  // `statement` (over element e) for e in [0, n): a loop over whole vectors of the ISA,
  // then one over the rest. GCC at -O2 vectorizes only loops whose trip count is a
  // multiple of the vector (77x77 fragments were filled and scaled one float at a time).
  void flat_loop(int64_t n, const std::string& statement) {
    const int64_t whole = n / isa_.lanes * isa_.lanes;
    if (whole > 0) {
      open("for (int64_t e = 0; e < " + num(whole) + "; ++e)");
      line(statement);
      close();
    }
    if (whole < n) {
      open("for (int64_t e = " + num(whole) + "; e < " + num(n) + "; ++e)");
      line(statement);
      close();
    }
  }

  // The value of one element; x holds the operands' element expressions (array
  // reads, scalars or literals: cheap to repeat).
  // `first` is the part's first row (Index axis 0) or column (axis 1) in the tile.
  std::string ew_value(const GroupOp& op, const std::vector<std::string>& x, bool f64,
                       const std::string& first) const {
    auto fn = [&](const char* name) { return std::string("__builtin_") + name + (f64 ? "" : "f") + "(" + x[0] + ")"; };
    const std::string one = f64 ? "1.0" : "1.0f", zero = f64 ? "0.0" : "0.0f";
    switch (op.ew) {
      case EwOp::Add: return x[0] + " + " + x[1];
      case EwOp::Sub: return x[0] + " - " + x[1];
      case EwOp::Mul: return x[0] + " * " + x[1];
      case EwOp::Div: return x[0] + " / " + x[1];
      // Max and min propagate NaN (as the sim does), so a poisoned element stays visible.
      // Through inline functions, so that every operand is read whichever way the
      // choice goes: GCC does not vectorize a loop whose ?: reads one arm's array
      // element conditionally (a masking select ran one element at a time).
      case EwOp::Max: return "tsl_max(" + x[0] + ", " + x[1] + ")";
      case EwOp::Min: return "tsl_min(" + x[0] + ", " + x[1] + ")";
      // fp32 exp and exp2 inline and vectorize (the prelude); fp64 ones call libm.
      case EwOp::Exp: return f64 ? fn("exp") : "tsl_expf(" + x[0] + ")";
      case EwOp::Exp2: return f64 ? fn("exp2") : "tsl_exp2f(" + x[0] + ")";
      case EwOp::Log: return fn("log");
      case EwOp::Neg: return "-" + x[0];
      case EwOp::Abs: return fn("fabs");
      case EwOp::Sqrt: return fn("sqrt");
      case EwOp::Rsqrt: return one + " / " + fn("sqrt");
      case EwOp::Recip: return one + " / " + x[0];
      case EwOp::Tanh: return fn("tanh");
      case EwOp::Cmp:
        return "(" + x[0] + " " + cmp_op_name(op.cmp) + " " + x[1] + " ? " + one + " : " + zero + ")";
      case EwOp::Select: return "tsl_select(" + x[0] + ", " + x[1] + ", " + x[2] + ")";
      case EwOp::Cast:
        switch (op.dtype) {
          case DType::F32: return "(float)" + x[0];
          case DType::F64: return "(double)" + x[0];
          case DType::BF16: return "tsl_round_bf16((float)" + x[0] + ")";
          case DType::F16: return "tsl_round_f16((float)" + x[0] + ")";
          case DType::U32: break;  // no cast goes to u32 (the verifier refuses it)
        }
        return x[0];
      case EwOp::Index:
        // The element's row or column in the logical tile.
        return std::string(f64 ? "(double)" : "(float)") + "(" + first + " + " + (op.axis == 0 ? "r" : "c") + ")";
      case EwOp::Copy: return x[0];
    }
    return x[0];
  }

  // acc = acc (op) x, as a statement; max and min keep a NaN, like Max and Min.
  static std::string reduce_step(ReduceOp r, const std::string& acc, const std::string& x) {
    switch (r) {
      case ReduceOp::Sum: return acc + " += " + x + ";";
      case ReduceOp::Max:
        return "{ const auto y = " + x + "; " + acc + " = " + acc + " != " + acc + " || " + acc + " > y ? " + acc + " : y; }";
      case ReduceOp::Min:
        return "{ const auto y = " + x + "; " + acc + " = " + acc + " != " + acc + " || " + acc + " < y ? " + acc + " : y; }";
    }
    return "";
  }

  // Reduce along op.axis (ReduceMode says where the partials go); see group_ir.h.
  void emit_reduce(const GroupOp& op) {
    const bool rows = op.axis == 1;  // axis 1 reduces each row; axis 0 each column
    if (op.axis != 0 && op.axis != 1)
      user_error(ErrorKind::Verify, "reduce #" + num(op.id) + ": axis " + num(op.axis) + " is not 0 or 1");
    line("// reduce." + std::string(reduce_op_name(op.reduce)) + " #" + num(op.id) + " axis " + num(op.axis) +
         " " + reduce_mode_name(op.reduce_mode));
    const Buffer* src = nullptr;
    if (op.reduce_mode != ReduceMode::Combine) {
      if (op.operands.size() != 1 || op.operands[0].kind != EwOperand::Kind::Frag)
        user_error(ErrorKind::Verify, "reduce #" + num(op.id) + ": the source must be one fragment");
      src = &frag(op.operands[0].frag, op);
    }
    const Buffer* dst = op.reduce_mode == ReduceMode::Partial ? nullptr : &frag(op.frag, op);
    if (src && dst) {
      bool ok = rows ? dst->cols == 1 && dst->rows == src->rows : dst->rows == 1 && dst->cols == src->cols;
      if (!ok)
        user_error(ErrorKind::Verify, "reduce #" + num(op.id) + ": result '" + dst->name + "' [" +
                                          num(dst->rows) + ", " + num(dst->cols) + "] is not '" + src->name +
                                          "' [" + num(src->rows) + ", " + num(src->cols) +
                                          "] reduced along axis " + num(op.axis));
    }
    const Buffer& elem = dst ? *dst : *src;
    const bool f64 = is_f64(elem.dtype) || (src && is_f64(src->dtype));
    const std::string T = f64 ? "double" : "float", init = literal(reduce_identity(op.reduce), f64);
    // One worker's reduction of its part of the source: line i (a row when `rows`)
    // reduces to a value that `store(i, value)` puts away. Sequential chains of adds
    // or compares would bound the speed, so the lines are reduced in independent
    // lanes that vectorize: 16 partial results per row (axis 1, when the row length
    // divides by 16), or all columns at once (axis 0, the rows streaming past).
    auto reduce_part = [&](const Worker& w, const std::function<void(const std::string&, const std::string&)>& store) {
      FragPart sp = part_of(*src, w);
      const int64_t outer = rows ? sp.rows : sp.cols, inner = rows ? sp.cols : sp.rows;
      const std::string in = base(*src, w);
      constexpr int64_t kLanes = 16;
      if (rows && inner % kLanes == 0 && inner >= 2 * kLanes) {
        open("for (int64_t i = 0; i < " + num(outer) + "; ++i)");
        line(T + " v[" + num(kLanes) + "];");
        line("for (int64_t l = 0; l < " + num(kLanes) + "; ++l) v[l] = " + init + ";");
        open("for (int64_t j = 0; j < " + num(inner) + "; j += " + num(kLanes) + ")");
        open("for (int64_t l = 0; l < " + num(kLanes) + "; ++l)");
        line(reduce_step(op.reduce, "v[l]", in + "[i * " + num(sp.cols) + " + j + l]"));
        close();
        close();
        // The lanes combine in halves (8 + 8, 4 + 4, ...), loops that vectorize,
        // rather than one after another (15 dependent scalar steps per line).
        for (int64_t half = kLanes / 2; half >= 1; half /= 2) {
          open("for (int64_t l = 0; l < " + num(half) + "; ++l)");
          line(reduce_step(op.reduce, "v[l]", "v[l + " + num(half) + "]"));
          close();
        }
        store("i", "v[0]");
        close();
        return;
      }
      if (!rows && outer > 1 && outer <= 4096) {
        open("");
        line(T + " v[" + num(outer) + "];");
        line("for (int64_t i = 0; i < " + num(outer) + "; ++i) v[i] = " + init + ";");
        open("for (int64_t j = 0; j < " + num(inner) + "; ++j)");
        open("for (int64_t i = 0; i < " + num(outer) + "; ++i)");
        line(reduce_step(op.reduce, "v[i]", in + "[j * " + num(sp.cols) + " + i]"));
        close();
        close();
        open("for (int64_t i = 0; i < " + num(outer) + "; ++i)");
        store("i", "v[i]");
        close();
        close();
        return;
      }
      open("for (int64_t i = 0; i < " + num(outer) + "; ++i)");
      line(T + " a = " + init + ";");
      open("for (int64_t j = 0; j < " + num(inner) + "; ++j)");
      line(reduce_step(op.reduce, "a", in + "[" + (rows ? "i * " + num(sp.cols) + " + j" : "j * " + num(sp.cols) + " + i") + "]"));
      close();
      store("i", "a");
      close();
    };
    switch (op.reduce_mode) {
      case ReduceMode::Local:
        for_workers(*src, [&](const Worker& w) {
          FragPart dp = part_of(*dst, w);
          const std::string out = base(*dst, w);
          reduce_part(w, [&](const std::string& i, const std::string& v) {
            line(out + "[" + (rows ? i + " * " + num(dp.cols) : i) + "] = " + v + ";");
          });
        });
        return;
      case ReduceMode::Partial:
        // Element (line, s) of the scratch window for the worker at position s along
        // the axis; a replica's owner writes the same partial, so replicas skip it.
        for_workers(*src, [&](const Worker& w) {
          if (!w.loop && !frag_part(p_, *src, w.w).owner) return;
          std::string own = owner(*src, w);
          if (own != "1") open("if (" + own + ")");
          Expr s = rows ? grid_col(w) : grid_row(w);
          Side scratch = side_at(op.dst, rows ? row0(*src, w) : s, rows ? s : col0(*src, w), op);
          reduce_part(w, [&](const std::string& i, const std::string& v) {
            line(rows ? scratch.write(i, "0", v, elem.dtype) : scratch.write("0", i, v, elem.dtype));
          });
          if (own != "1") close();
        });
        return;
      case ReduceMode::Combine: {
        const int64_t S = rows ? p_.worker_cols : p_.worker_rows;  // one partial per worker along the axis
        for_workers(*dst, [&](const Worker& w) {
          FragPart dp = part_of(*dst, w);
          Side scratch = side_at(op.src, rows ? row0(*dst, w) : expr_const(0), rows ? expr_const(0) : col0(*dst, w), op);
          open("for (int64_t i = 0; i < " + num(rows ? dp.rows : dp.cols) + "; ++i)");
          line(T + " a = " + init + ";");
          open("for (int64_t s = 0; s < " + num(S) + "; ++s)");
          line(reduce_step(op.reduce, "a", rows ? scratch.read("i", "s") : scratch.read("s", "i")));
          close();
          line(base(*dst, w) + "[" + (rows ? "i * " + num(dp.cols) : "i") + "] = a;");
          close();
        });
        return;
      }
    }
  }

  // Does `op` (or a body nested in it) name private buffer `f`?
  static bool names_frag(const GroupOp& op, int f) {
    if (op.frag == f || op.a.buffer == f || op.b.buffer == f || op.src.buffer == f || op.dst.buffer == f) return true;
    for (const EwOperand& x : op.operands)
      if (x.kind == EwOperand::Kind::Frag && x.frag == f) return true;
    for (const auto& body : op.bodies)
      for (const GroupOp& inner : body)
        if (names_frag(inner, f)) return true;
    return false;
  }

  // A zero fill of an accumulator followed by a loop whose first use of it is an
  // mma over the whole fragment (at the loop's top level): where the mma's valid
  // part is the whole fragment and the loop runs at least once, the first
  // iteration's micro-kernels overwrite it (overwrite = 1) and the fill is skipped,
  // saving a pass that writes the fragment and the reads of those zeros. Otherwise
  // (ragged edge tiles, an empty loop) the fill runs and the mma accumulates, as
  // before. The valid extents must not depend on the loop variable: they are
  // evaluated before the loop.
  void find_first_writes(const std::vector<GroupOp>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      for (const auto& body : ops[i].bodies) find_first_writes(body);
      const GroupOp& fill = ops[i];
      if (fill.kind != GroupOpKind::FragFill || fill.constant != 0 || i + 1 >= ops.size()) continue;
      const GroupOp& loop = ops[i + 1];
      if (loop.kind != GroupOpKind::For) continue;
      const GroupOp* mma = nullptr;
      for (const GroupOp& inner : loop.bodies.at(0))
        if (names_frag(inner, fill.frag)) {
          if (inner.kind == GroupOpKind::Mma && inner.frag == fill.frag) mma = &inner;
          break;
        }
      if (!mma) continue;
      const Buffer& acc = p_.buffer(fill.frag);
      if (mma->m != acc.rows || mma->n != acc.cols) continue;
      bool uses_iv = false;
      for (const Expr& e : {mma->m_valid, mma->n_valid})
        if (e) expr_symbols(e, [&](const std::string& name) { uses_iv |= name == loop.iv; });
      if (uses_iv) continue;
      std::string whole = "(" + ex(loop.hi) + ") > (" + ex(loop.lo) + ")";
      first_mma_[fill.id] = {mma, whole};
      if (mma->m_valid) whole += " && (" + ex(mma->m_valid) + ") >= " + num(mma->m);
      if (mma->n_valid) whole += " && (" + ex(mma->n_valid) + ") >= " + num(mma->n);
      skip_fill_[fill.id] = whole;
      overwrite_[mma->id] = "(tsl_whole_" + num(fill.id) + " && " + sym(loop.iv) + " == (" + ex(loop.lo) + "))";
    }
  }

  // Ops in `ops` (and the bodies nested in them) that name buffer `id` (a fragment
  // or a tensor's global buffer).
  static int count_names(const std::vector<GroupOp>& ops, int id) {
    int n = 0;
    for (const GroupOp& op : ops) {
      bool named = op.frag == id || op.a.buffer == id || op.b.buffer == id || op.src.buffer == id ||
                   op.dst.buffer == id;
      for (const EwOperand& x : op.operands) named |= x.kind == EwOperand::Kind::Frag && x.frag == id;
      n += named;
      for (const auto& body : op.bodies) n += count_names(body, id);
    }
    return n;
  }

  // An accumulator that lives in its destination. Where find_first_writes skips an
  // accumulator's fill, and the fragment's one way out is a store to a window of a
  // tensor with its own shape, the micro-kernels can write that window directly:
  // the store, a copy of the whole fragment after the k loop, goes away (one
  // thread, 128^3: 6-10% of the call). The ops from the fill to the store may only
  // be the k loop (which names the fragment in mmas into it alone), fences, and
  // in-place scales of the fragment by a scalar (skipped when it is 1); the store
  // may sit in the then-branch of an if (alone there). At run time the fragment is
  // homed when the k loop runs, the first mma's valid part is exactly the part of
  // the window that the store writes (the whole tile inside the tensor, or a ragged
  // tile whose valid part ends where the tensor does), the if's condition holds and
  // every scale is 1: then the fill is skipped (the first k step overwrites every
  // element that is stored), nothing else reads or writes the fragment before the
  // store, and the store's copy is skipped. Where the if's other branch is C += the
  // fragment, adds_in_place homes it for that branch as well. The mmas into a
  // homed fragment write nothing past its valid part (emit_mma: blocks across its
  // edge go through a local tile). Nothing else in the program may name the
  // fragment or, before the store, the tensor (so no op reads a partial sum there);
  // the fragment is fp32 and its worker parts are disjoint (no replicas), each a
  // block of the window.
  void find_homes(const std::vector<GroupOp>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      for (const auto& body : ops[i].bodies) find_homes(body);
      const GroupOp& fill = ops[i];
      if (fill.kind != GroupOpKind::FragFill || !skip_fill_.count(fill.id) || i + 1 >= ops.size()) continue;
      const int f = fill.frag;
      const Buffer& acc = p_.buffer(f);
      // (An atom larger than tsl_bounce's tile keeps the fragment in scratch.)
      if (acc.dtype != DType::F32 || p_.atom_m * p_.atom_n > 16 * 64) continue;
      bool owners = true;
      for (int w = 0; w < p_.workers; ++w) owners &= frag_part(p_, acc, w).owner;
      if (!owners) continue;
      const GroupOp& loop = ops[i + 1];
      int mmas = 0;
      for (const GroupOp& inner : loop.bodies.at(0))
        if (inner.kind == GroupOpKind::Mma && inner.frag == f && inner.a.buffer != f && inner.b.buffer != f) ++mmas;
      if (mmas == 0 || mmas != count_names(loop.bodies.at(0), f)) continue;
      const GroupOp& mma = *first_mma_.at(fill.id).first;
      std::string when = first_mma_.at(fill.id).second;
      const GroupOp* store = nullptr;
      const GroupOp* branch = nullptr;  // the if whose first branch holds the store
      size_t j = i + 2;
      for (; j < ops.size() && !store; ++j) {
        const GroupOp& op = ops[j];
        if (op.kind == GroupOpKind::Fence || op.kind == GroupOpKind::Barrier) continue;
        const std::string scale = op.frag == f ? unit_scale_of(op) : "";
        if (!scale.empty()) {
          when += " && " + scale + " == 1";
          continue;
        }
        if (op.kind == GroupOpKind::FragStore && op.frag == f) {
          store = &op;
        } else if (op.kind == GroupOpKind::If && !op.bodies.empty()) {
          const GroupOp* only = nullptr;
          bool other = false;
          for (const GroupOp& inner : op.bodies[0]) {
            if (inner.kind == GroupOpKind::Fence || inner.kind == GroupOpKind::Barrier) continue;
            if (inner.kind == GroupOpKind::FragStore && inner.frag == f && !only) only = &inner;
            else other = true;
          }
          if (only && !other) {
            store = only;
            branch = &op;
          }
        }
        if (!store) break;
      }
      if (!store || store->transpose) continue;
      // ops[i..j) hold every use of the fragment; the tensor is named by none of
      // them before the store (the if's other branch does not run when homed).
      std::vector<GroupOp> region(ops.begin() + i, ops.begin() + j);
      const int tensor = store->dst.buffer;
      if (count_names(region, f) != count_names(p_.body, f) || tensor < 0 ||
          p_.buffer(tensor).space != Space::Global)
        continue;
      std::vector<GroupOp> before(ops.begin() + i, ops.begin() + (j - 1));
      if (count_names(before, tensor) != 0) continue;
      Side dst = side_at(store->dst, expr_const(0), expr_const(0), *store);
      if (!dst.unit_cols() || dst.dtype != DType::F32) continue;
      // The store writes min(extent, bound - start) rows (columns) of the window; the
      // mma's valid part must be exactly those.
      std::string covered;
      auto covers = [&](const Expr& valid, int64_t extent, const Expr& start, const Expr& bound) {
        const std::string v = "tsl_min(" + (valid ? ex(valid) : num(extent)) + ", " + num(extent) + ")";
        covered += " && " + v + " == " +
                   (bound ? "tsl_min(" + num(extent) + ", " + ex(bound) + " - (" + ex(start) + "))" : num(extent));
      };
      covers(mma.m_valid, acc.rows, dst.row0, store->dst_row_bound);
      covers(mma.n_valid, acc.cols, dst.col0, store->dst_col_bound);
      Home& home = home_[fill.id];
      home = {when + (branch ? " && " + cond(branch->cond) : "") + covered, "&" + dst.at("0", "0"), dst.ld, "", ""};
      homed_frag_[f] = fill.id;
      homed_store_[store->id] = fill.id;
      if (!branch) continue;
      if (std::optional<std::string> unit = adds_in_place(*branch, *store, f)) {
        home.add_when = when + " && !(" + cond(branch->cond) + ")" + *unit + covered;
        home.adds = "!(" + cond(branch->cond) + ")";
        adding_if_[branch->id] = fill.id;
        overwrite_[mma.id] = "(tsl_whole_" + num(fill.id) + " && !tsl_addhome_" + num(fill.id) + " && " +
                             sym(ops[i + 1].iv) + " == (" + ex(ops[i + 1].lo) + "))";
      }
    }
  }

  // Where find_homes has homed fragment f in `store`'s window, the if's other branch
  // may add f to that window's old values: a load of the same window into fragment
  // g, in-place scales of g by scalars, g = f + g (either order), and a store of g to
  // the same window, g named nowhere else. With every scale 1 (the conditions
  // returned; nullopt where the branch is anything else), the branch is C += f:
  // homed, the k loop's mmas accumulate into C's old values (overwrite 0 from the
  // first k step), the fill is skipped and the branch does not run. Within one k
  // step the sums round as the branch does (the kernels add C to the step's sum).
  std::optional<std::string> adds_in_place(const GroupOp& branch, const GroupOp& store, int f) const {
    if (branch.bodies.size() < 2) return std::nullopt;
    std::vector<const GroupOp*> ops;
    for (const GroupOp& op : branch.bodies[1])
      if (op.kind != GroupOpKind::Fence && op.kind != GroupOpKind::Barrier) ops.push_back(&op);
    if (ops.size() < 3) return std::nullopt;
    const GroupOp &load = *ops.front(), &add = *ops[ops.size() - 2], &put = *ops.back();
    const int g = load.frag;
    auto same_window = [&](const BufferRef& w, const Expr& row_bound, const Expr& col_bound) {
      const BufferRef& d = store.dst;
      return w.buffer == d.buffer && expr_equal(w.version, d.version) && expr_equal(w.row, d.row) &&
             expr_equal(w.col, d.col) && expr_equal(w.offset, d.offset) && expr_equal(w.row_stride, d.row_stride) &&
             expr_equal(w.col_stride, d.col_stride) && expr_equal(row_bound, store.dst_row_bound) &&
             expr_equal(col_bound, store.dst_col_bound);
    };
    if (load.kind != GroupOpKind::FragLoad || load.transpose || g == f || put.kind != GroupOpKind::FragStore ||
        put.frag != g || put.transpose || !same_window(load.src, load.src_row_bound, load.src_col_bound) ||
        !same_window(put.dst, put.dst_row_bound, put.dst_col_bound))
      return std::nullopt;
    const Buffer &fb = p_.buffer(f), &gb = p_.buffer(g);
    if (gb.dtype != DType::F32 || gb.rows != fb.rows || gb.cols != fb.cols) return std::nullopt;
    auto is_frag = [](const EwOperand& x, int id) { return x.kind == EwOperand::Kind::Frag && x.frag == id; };
    if (add.kind != GroupOpKind::Elementwise || add.ew != EwOp::Add || add.frag != g || add.operands.size() != 2 ||
        !((is_frag(add.operands[0], f) && is_frag(add.operands[1], g)) ||
          (is_frag(add.operands[0], g) && is_frag(add.operands[1], f))))
      return std::nullopt;
    std::string unit;
    for (size_t i = 1; i + 2 < ops.size(); ++i) {
      const std::string scale = ops[i]->frag == g ? unit_scale_of(*ops[i]) : "";
      if (scale.empty()) return std::nullopt;
      unit += " && " + scale + " == 1";
    }
    if (count_names(p_.body, g) != static_cast<int>(ops.size())) return std::nullopt;
    return unit;
  }

  // A copy into a shared buffer that one mma alone reads, as its A operand from
  // row 0, runs part by part inside that mma's worker loop, each part's rows just
  // before the part's sweep over B: the rows come into L1 with the copy and the
  // kernel reads them there, where a copy of the whole A block first (1 MiB for
  // 1032 x 256 floats) pushed them, and part of B's block, out of L2 before the
  // kernel came to them (docs/cpu_microkernel.md, "Large shapes"). One thread runs a
  // group's workers in order, so the copy only has to precede its part's mma. The
  // ops between the two may only copy other buffers (or be fences); the worker grid
  // is one column, so the parts are disjoint row ranges of A.
  void find_part_copies(const std::vector<GroupOp>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      for (const auto& body : ops[i].bodies) find_part_copies(body);
      const GroupOp& copy = ops[i];
      if (copy.kind != GroupOpKind::Copy || p_.worker_cols != 1) continue;
      const Buffer& d = p_.buffer(copy.dst.buffer);
      int64_t r = -1, c = -1;
      if (d.space != Space::Shared || d.versions != 1 || d.layout != Layout::RowMajor ||
          p_.buffer(copy.src.buffer).space != Space::Global || copy.rows != d.rows || copy.cols != d.cols ||
          !expr_is_const(copy.dst.row, &r) || r != 0 || !expr_is_const(copy.dst.col, &c) || c != 0)
        continue;
      for (size_t j = i + 1; j < ops.size(); ++j) {
        const GroupOp& op = ops[j];
        if (op.kind == GroupOpKind::Mma && op.a.buffer == copy.dst.buffer && op.b.buffer != copy.dst.buffer &&
            expr_is_const(op.a.row, &r) && r == 0 && op.m == d.rows && references(p_.body, copy.dst.buffer) == 2) {
          part_copy_[op.id] = &copy;
          moved_copies_.insert(copy.id);
        }
        const bool other_copy = op.kind == GroupOpKind::Copy && op.dst.buffer != copy.dst.buffer &&
                                op.src.buffer != copy.dst.buffer;
        if (!other_copy && op.kind != GroupOpKind::Fence && op.kind != GroupOpKind::Barrier) break;
      }
    }
  }
  // The ops, nested ones included, that read or write the buffer.
  int references(const std::vector<GroupOp>& ops, int buffer) const {
    int n = 0;
    for (const GroupOp& op : ops) {
      for (const MemEffect& e : op_effects(p_, op)) n += e.buffer == buffer;
      for (const auto& body : op.bodies) n += references(body, buffer);
    }
    return n;
  }
  // The rows [row0, row0 + rows) of a copy that find_part_copies moved.
  void emit_part_copy(const GroupOp& copy, const Expr& row0, int64_t rows) {
    line("// copy #" + num(copy.id) + ", this part's rows");
    open("");
    Side src = side_at(copy.src, row0, expr_const(0), copy), dst = side_at(copy.dst, row0, expr_const(0), copy);
    src.row_bound = copy.src_row_bound, src.col_bound = copy.src_col_bound;
    dst.row_bound = copy.dst_row_bound, dst.col_bound = copy.dst_col_bound;
    emit_transfer(src, dst, rows, copy.cols, copy.constant);
    // The next part's rows, prefetched into L2 while this part's kernel runs: they
    // come from a tensor row apart each, which the hardware's prefetchers do not
    // run ahead of. (Written with line(), not open(): loops of calls only, which
    // leave a unit of calls at -Og.)
    if (src.layout == Layout::RowMajor && src.unit_cols()) {
      const std::string rb = src.row_bound ? " && " + ex(src.row0) + " + r < " + ex(src.row_bound) : "",
                        cb = src.col_bound ? " && " + ex(src.col0) + " + c < " + ex(src.col_bound) : "";
      line("for (int64_t r = " + num(rows) + "; r < " + num(2 * rows) + rb + "; ++r)");
      line("  for (int64_t c = 0; c < " + num(copy.cols) + cb + "; c += " + num(kCacheLineFloats) +
           ") __builtin_prefetch(&" + src.at("r", "c") + ", 0, 2);");
    }
    close();
  }

  // Each worker: its part of acc += a * b, in MR x NR blocks through the
  // micro-kernel where the layouts allow it, and the part's leftover rows and
  // columns through edge micro-kernels (smaller MR or NR: cpu_microkernel.h); a
  // scalar loop only where the layouts do not fit the micro-kernel at all.
  void emit_mma(const GroupOp& op) {
    const Buffer& acc = frag(op.frag, op);
    const Buffer& A = p_.buffer(op.a.buffer);
    const Buffer& B = p_.buffer(op.b.buffer);
    if (B.space == Space::Private)
      user_error(ErrorKind::Verify, "mma #" + num(op.id) + ": operand b must be a shared or global buffer");
    if (A.space == Space::Private)
      user_error(ErrorKind::Unsupported, "mma #" + num(op.id) + ": an a operand in registers (" + A.name +
                                             ") runs on the sim and the cuda mma.sync atom, not the cpu");
    const int64_t mr = p_.atom_m, nr = p_.atom_n;
    int64_t b_col = -1;
    // The micro-kernel takes A, B and acc all fp32 (16-bit staging holds floats) or all
    // f64. A tensor read in place (Plan::direct) is passed with its run-time row
    // stride and must have unit columns and the compute type.
    const bool f64 = is_f64(acc.dtype);
    Side a = side(op.a, 0, 0, nullptr, nullptr, op), b = side(op.b, 0, 0, nullptr, nullptr, op);
    const bool a_global = A.space == Space::Global, b_global = B.space == Space::Global;
    const DType compute = f64 ? DType::F64 : DType::F32;
    const bool a_fits = a_global ? a.unit_cols() && a.dtype == compute
                                 : A.layout == Layout::RowMajor && is_f64(A.dtype) == f64;
    const bool b_fits = b_global ? b.unit_cols() && b.dtype == compute
                                 : cpu_microkernel_fits(nr, isa_, f64) && B.layout == Layout::ColPanels &&
                                       B.panel == nr && expr_is_const(op.b.col, &b_col) && b_col % nr == 0 &&
                                       is_f64(B.dtype) == f64;
    bool fast = mr >= 1 && nr >= 1 && a_fits && b_fits;
    const int64_t lda = a_global ? kCpuRuntimeLd : A.cols, ldb = b_global ? kCpuRuntimeLd : nr;
    // A kernel reading a tensor in place must stay inside the valid part: a block
    // that crosses its edge (a ragged tile) takes the scalar loop instead.
    const bool in_place = a_global || b_global;
    // B read in place and met by many block rows: each panel of NR columns is first
    // copied into scratch (kv x NR, `tsl_bp`), then every block row reads the copy
    // as a staged B (LDB = NR); A stays in place. Read from the tensor, B's rows lie
    // a tensor row apart, and at some row strides those of one kernel's panel fall
    // into a few L1 sets and evict each other between the block rows that reuse
    // them. One thread, against reading in place: 513x257x129 (43 block rows),
    // 1024x64x64 and 300x300x100 1.04, 200x300x160 (17) 1.00; with 9 to 11 block
    // rows 0.95-0.99 and 96^3 (8) 0.92, where the copy costs more than it saves: so
    // from kCpuPackBRows block rows on (docs/cpu_microkernel.md). One worker's part
    // (the direct plans) only. Over a long k loop (the built-in kernels) only where
    // B's window is larger than kCpuPackBBytes: a 64 KiB panel (512 x 32) read in
    // place stayed fast while B and A fit L2 together (160x160x512: the copy 0.95,
    // 150x64x300 0.95), and 512^3 read in place was 20% slower than packed (its
    // block rows inside; from kCpuRowsOuterBBytes they run outside, below).
    const FragPart first_part = frag_part(p_, acc, 0);
    // A read in place and larger than kCpuRowsOuterABytes: block rows outside, B's
    // panels inside, so that each A block row comes from memory once and meets all
    // of B (in L2) while it sits in L1. Likewise where B takes kCpuRowsOuterBBytes or
    // more, which it then reads in place from L2 instead of copying each panel once
    // a block row pass: 512^3 1.07x, 384^3, 640x480x320 and 256x1024x128 1.00-1.02x
    // (Xeon, forty-sixth session, with the kernels' k loops unrolled by 4).
    const bool rows_outer = fast && a_global && b_global && p_.workers == 1 &&
                            (op.m * op.k * 4 > kCpuRowsOuterABytes || op.k * op.n * 4 >= kCpuRowsOuterBBytes);
    const bool pack_b = !rows_outer && fast && b_global && a_global && !f64 && p_.workers == 1 &&
                        (first_part.rows + mr - 1) / mr >= kCpuPackBRows && first_part.cols > 0 &&
                        cpu_microkernel_fits(nr, isa_) &&
                        (op.k < kCpuPrebuiltMinK || cpu_prebuilt_microkernel(mr, nr, isa_.isa) < 0 ||
                         op.k * op.n * 4 > kCpuPackBBytes);
    const int64_t panel_floats = op.k * nr;  // one panel of tsl_bp
    const std::string ld_args =
        in_place ? ", " + (a_global ? a.ld : "0") + ", " + (pack_b ? num(nr) : b_global ? b.ld : "0") : "";
    // The leading dimensions as values (a staged operand's are constants).
    const std::string lda_arg = a_global ? a.ld : num(lda),
                      ldb_arg = pack_b ? num(nr) : b_global ? b.ld : num(ldb);
    line("// mma #" + num(op.id) + " (" + num(op.m) + "x" + num(op.n) + "x" + num(op.k) + ")");
    // The valid part of the tile (GroupOp::m_valid): work outside it is skipped.
    open("");
    line("const int64_t mv = " + (op.m_valid ? ex(op.m_valid) : num(op.m)) + ";");
    line("const int64_t nv = " + (op.n_valid ? ex(op.n_valid) : num(op.n)) + ";");
    line("const int64_t kv = tsl_min(" + (op.k_valid ? ex(op.k_valid) : num(op.k)) + ", " +
         num(op.k) + ");");
    auto over = overwrite_.find(op.id);
    line("const int overwrite = " + (over == overwrite_.end() ? std::string("0") : over->second) + ";");
    if (pack_b) {
      line("float* const tsl_bp = scratch + " + num(scratch_floats_) + ";  // one B panel (kv x NR)");
      scratch_floats_ += round_up(panel_floats, kAlignFloats);
    }
    // Parts all have one size. When every part starts on a B panel and the operands
    // are staged, one runtime loop over the worker grid runs them (a plan with many
    // row parts, the cache blocks of a large matrix product, keeps a small unit); otherwise
    // each worker's part is written out with its offsets as constants.
    const int grid = p_.worker_rows * p_.worker_cols;
    const FragPart first = frag_part(p_, acc, 0);
    const bool loop = fast && !in_place && grid > 1 && first.rows * first.cols > 0 &&
                      (first.cols % nr == 0 || p_.worker_cols == 1 || acc.cols == 1);
    if (loop) {
      const Worker lw{true, 0};
      open_control_loop("for (int64_t " + sym(kWorker) + " = 0; " + sym(kWorker) + " < " + num(grid) + "; ++" +
                      sym(kWorker) + ")");
      line("const int64_t tsl_r0 = " + ex(row0(acc, lw)) + ", tsl_c0 = " + ex(col0(acc, lw)) + ";");
    }
    // A whole small product read in place: one tiny kernel (cpu_tiny_kernel.h), or rows
    // too tall for one in chunks of rows, and rows past four vectors in blocks of 64
    // columns (cpu_tiny_tiling), a kernel each.
    // One worker: its part is `first`.
    const CpuTinyTiling tiling = cpu_tiny_tiling(first.rows, first.cols, op.k, isa_);
    const bool tiny = homes_hold_ != HomesHold::None && fast && a_global && b_global && !f64 && p_.workers == 1 &&
                      !loop && !rows_outer && !pack_b && tiling.row_chunks > 0;
    ++mmas_;
    tiny_mmas_ += tiny;
    if (tiny) tiny_calls_ += tiling.row_chunks * tiling.col_blocks;
    const auto moved = part_copy_.find(op.id);
    for (int w = 0; w < (loop ? 1 : p_.workers); ++w) {
      FragPart part = frag_part(p_, acc, w);
      if (moved != part_copy_.end())
        emit_part_copy(*moved->second, loop ? row0(acc, Worker{true, 0}) : expr_const(part.row0), part.rows);
      if (part.rows * part.cols == 0) continue;
      std::string c = loop ? base(acc, Worker{true, 0}) : part_base(acc, w);
      // The part's row stride: its width, or, for an accumulator that may live in its
      // store's window (find_homes), the run-time pointer and stride.
      std::string ldc = num(part.cols);
      // The part's first row and column in the tile: constants, or the loop's.
      const std::string r0s = loop ? "tsl_r0" : num(part.row0), c0s = loop ? "tsl_c0" : num(part.col0);
      // Homed (find_homes), the part is a block of the window; blocks across the valid
      // part's edge then must not write past it (below).
      std::string home;
      bool scoped = false;
      if (auto homed = homed_frag_.find(op.frag); homed != homed_frag_.end() && p_.workers == 1) {
        home = "tsl_home_" + num(homed->second);
        c = "tsl_acc_" + num(homed->second);
        ldc = "tsl_ldacc_" + num(homed->second);
      } else if (homed != homed_frag_.end()) {
        home = "tsl_home_" + num(homed->second);
        const std::string id = num(homed->second);
        scoped = true;
        open("");  // the part's pointer and row stride, once
        line("float* const tsl_c = " + home + " ? tsl_acc_" + id + " + (" + r0s + ") * tsl_ldacc_" + id + " + (" + c0s +
             ") : " + c + ";");
        line("const int64_t tsl_ldc = " + home + " ? tsl_ldacc_" + id + " : INT64_C(" + num(part.cols) + ");");
        c = "tsl_c", ldc = "tsl_ldc";
      }
      if (tiny) {
        // A dense kernel needs constant strides: A's and B's rows one after another (K
        // and N). Where the product also fits a kernel of any strides, that one runs
        // the other strides; else the general body does.
        const bool dense = tiling.col_blocks > 1 || cpu_tiny_kernel_dense(part.rows, part.cols, op.k);
        const bool strided = dense && tiling.col_blocks == 1 && tiling.row_chunks == 1 &&
                             cpu_tiny_kernel_strided(part.rows, part.cols, op.k);
        const std::string dense_strides = lda_arg + " == " + num(op.k) + " && " + ldb_arg + " == " + num(part.cols);
        open("if (kv == " + num(op.k) + " && mv - (" + r0s + ") >= " + num(part.rows) + " && nv - (" + c0s +
             ") >= " + num(part.cols) + (dense && !strided ? " && " + dense_strides : "") + ")");
        if (strided) open("if (" + dense_strides + ")");
        emit_tiny_calls(op, a, b, part, tiling, c, ldc, r0s, c0s, dense ? num(op.k) : lda_arg,
                        dense ? num(part.cols) : ldb_arg, !dense);
        if (strided) {
          --depth_;
          open("} else");
          emit_tiny_calls(op, a, b, part, tiling, c, ldc, r0s, c0s, lda_arg, ldb_arg, true);
          close();
        }
        --depth_;
        open("} else");
        // Where the leaf has written nothing yet and runs this test once, the general
        // body runs the call instead of a copy of it here: that copy was a fifth of a
        // tiny unit's cold compile (28x137x13). An outermost loop of run-time trips
        // runs once in the leaf by its condition (leaf_when_): the plan takes the
        // whole k of a small product in one step.
        std::string once;
        bool jump = !written_;
        for (const GroupOp* f : fors_) {
          int64_t lo = 0, hi = 0;
          if (expr_is_const(f->lo, &lo) && expr_is_const(f->hi, &hi) && hi - lo <= 1) continue;
          jump &= f == fors_.front();
          once = " && (" + ex(f->hi) + ") - (" + ex(f->lo) + ") <= 1";
        }
        if (jump) {
          leaf_when_ += once;
          line(leaf_regs_ ? "return tsl_general_regs" + regs_args() + ";"
                          : "return tsl_group_general(sizes, scalars, tensors, group, scratch);");
          close();
          if (scoped) close();
          continue;
        }
      }
      // Short k read in place on AVX-512: the whole part in cpu_mma_edge's strips of
      // rows (cpu_edge_strip), one call a strip of columns over every row. Through
      // cpu_mma_blocks and cpu_mma_edge, and in the blocks of rows below, each call and
      // dispatch cost about what the strip's rows take at a few dozen rows (43x26x1,
      // 100x9x1, 202x1x1). Whole k blocks and columns only; any other runs below.
      const int64_t strip_cols = cpu_edge_strip_cols(op.k);
      const int64_t strip_calls = ceil_div(part.cols, std::max<int64_t>(strip_cols, 1));
      const bool strip_part = !tiny && fast && a_global && b_global && !f64 && !loop && !pack_b &&
                              isa_.isa == CpuIsa::Avx512 && cpu_prebuilt_count > 0 && strip_cols > 0 &&
                              strip_calls <= kCpuInlineBlocks;
      if (strip_part) {
        std::string found, calls;
        for (int64_t j0 = 0; j0 < part.cols; j0 += strip_cols) {
          const int64_t w = std::min(strip_cols, part.cols - j0), v = ceil_div(w, isa_.lanes);
          const std::string name = edge_strip_name(op.k, w);
          edge_strips_.insert({op.k, w});
          found += name + " && ";
          calls += name + "(&" + a.at(r0s, "0") + ", &" + b.at("0", c0s + " + " + num(j0)) + ", " + c + " + " +
                   num(j0) + ", " + ldc + ", " + lda_arg + ", " + ldb_arg + ", tsl_min(" + num(part.rows) + ", mv - (" +
                   r0s + ")), " + num((int64_t{1} << (w - isa_.lanes * (v - 1))) - 1) + ", overwrite);\n";
        }
        open("if (" + found + "kv == " + num(op.k) + " && nv - (" + c0s + ") >= " + num(part.cols) + ")");
        for (size_t at = 0, end; (end = calls.find('\n', at)) != std::string::npos; at = end + 1)
          line(calls.substr(at, end - at));
        --depth_;
        open("} else");
      }
      // The kernels read B by whole panel rows from the part's first column: it must
      // start a panel (a worker grid whose parts are not a multiple of NR wide
      // leaves some parts off the boundaries; those take the scalar loop).
      if (!fast || (!b_global && part.col0 % nr != 0)) {
        emit_scalar_mma(acc, a, b, c, ldc, part, 0, part.rows, 0, part.cols);
        if (scoped) close();
        continue;
      }
      // Rows in near-equal blocks of at most MR (100 rows: one of 12 and eight of 11,
      // not eight of 12 and a thin one of 4); columns in whole panels, then the rest.
      const int64_t cols_fast = part.cols / nr * nr, cols_left = part.cols - cols_fast;
      // A part narrower than a panel holds fewer vectors a row, so its blocks may be
      // taller: as many rows as MR x NR's accumulators, up to kCpuNarrowBlockRows (16^3:
      // one 16 x 16 block instead of two of 8 x 16, whose 8 accumulators barely cover
      // the FMA latency).
      // Columns that all end in part of a vector run as cpu_mma_edge's masked blocks
      // (blocks, below), which hold up to cpu_edge_block_rows rows: 13x26 is one
      // block of 13, not 7 + 6, and 21x10 one of 21, not 11 + 10. Where they run as
      // strips of rows or dot products instead, one call takes all the part's rows
      // (52x15x23: two calls had cost 1.2x).
      const bool masked_only = cols_fast == 0 && !f64 && isa_.isa == CpuIsa::Avx512 && cpu_prebuilt_count > 0 &&
                               part.cols % isa_.lanes != 0;
      const int64_t edge_rows = cpu_edge_block_rows(part.cols);
      const bool edge_strips = (op.k <= kCpuStripMaxK || cpu_edge_narrow_strip(part.rows, part.cols, op.k)) &&
                               ceil_div(part.rows, edge_rows) > 2;
      const bool one_edge_call = edge_strips || cpu_edge_dot_columns(part.rows, part.cols, op.k);
      const int64_t block_rows =
          cols_fast > 0 ? mr
          : masked_only ? (one_edge_call ? part.rows : std::max(mr, edge_rows))
                        : std::clamp(mr * ceil_div(nr, isa_.lanes) / ceil_div(part.cols, isa_.lanes), mr,
                                     std::max(mr, kCpuNarrowBlockRows));
      const int64_t row_blocks = (part.rows + block_rows - 1) / block_rows, row_base = part.rows / row_blocks;
      const int64_t rows_big = (part.rows % row_blocks) * (row_base + 1);  // rows in blocks of row_base + 1
      // Blocks of [r0, r1) x [c0, c1) of the part, `br` x `bc` at a time.
      // B packed (pack_b): the caller runs the jr loop, packing each panel.
      auto jr_loop = [&](int64_t c0, int64_t c1, int64_t bc) {
        open_control_loop("for (int64_t jr = " + num(c0) + "; jr < " + num(c1) + " && " + c0s +
                          " + jr < nv; jr += " + num(bc) + ")");
      };
      auto blocks = [&](int64_t r0, int64_t r1, int64_t br, int64_t c0, int64_t c1, int64_t bc) {
        if (r0 >= r1 || c0 >= c1) return;
        // Over a long k loop a kernel built into tessel is called through the table
        // with its leading dimensions as arguments (cpu_microkernel.h); any other is
        // emitted into the unit.
        const int prebuilt = f64 || op.k < kCpuPrebuiltMinK ? -1 : cpu_prebuilt_microkernel(br, bc, isa_.isa);
        // Columns that end in part of a vector on AVX-512, read in place or packed:
        // every block by tessel's cpu_mma_edge in masked vectors (cpu_support.cpp;
        // cpu_mma_blocks with no kernel), not a kernel emitted here.
        const bool masked_edge = !f64 && prebuilt < 0 && isa_.isa == CpuIsa::Avx512 && cpu_prebuilt_count > 0 &&
                                 bc % isa_.lanes != 0;
        std::string name, lds = ld_args;
        if (prebuilt >= 0 || masked_edge) {
          // Its blocks' loops in tessel too (cpu_mma_blocks): one call instead of a
          // loop nest, the steps between blocks as address differences.
          name = masked_edge ? "0" : "tsl_ukr_" + num(br) + "x" + num(bc) + "_p";
          if (!masked_edge) prebuilt_[name] = prebuilt;
          const std::string a0 = "&" + a.at(r0s + " + " + num(r0), "0"), b0 = "&" + b.at("0", c0s + " + " + num(c0));
          if (rows_outer) {
            // The block row at ir (the caller's loop), over all its column blocks.
            const std::string ai = "&" + a.at(r0s + " + ir", "0");
            line("tsl_mma_blocks((const void*)" + name + ", kv, " + ai + ", 0, " + b0 + ", &" +
                 b.at("0", c0s + " + " + num(c0 + bc)) + " - " + b0 + ", " + c + " + ir * " + ldc + " + " + num(c0) +
                 ", " + ldc + ", " + lda_arg + ", " + ldb_arg + ", " + num(br) + ", " + num(bc) + ", 1, " +
                 num((c1 - c0) / bc) + ", mv - (" + r0s + " + ir), nv - (" + c0s + " + " + num(c0) + "), 1, overwrite);");
            return;
          }
          if (pack_b) {
            // The block rows of the panel at jr, copied to tsl_bp by the caller.
            line("tsl_mma_blocks((const void*)" + name + ", kv, " + a0 + ", &" + a.at(r0s + " + " + num(r0 + br), "0") +
                 " - " + a0 + ", tsl_bp, 0, " + c + " + " + num(r0) + " * " + ldc + " + jr, " + ldc + ", " + lda_arg +
                 ", " + num(nr) + ", " + num(br) + ", " + num(bc) + ", " + num((r1 - r0) / br) + ", 1, mv - (" + r0s +
                 " + " + num(r0) + "), nv - (" + c0s + " + jr), 1, overwrite);");
            return;
          }
          const int64_t blocks_r = (r1 - r0) / br, blocks_c = (c1 - c0) / bc;
          // A few blocks, all inside the valid part: each kernel called here, without
          // cpu_mma_blocks's loops (a small product's call path; 32^3 is three blocks).
          // Masked-edge blocks likewise, where cpu_mma_edge would run them as whole
          // blocks of its own (cpu_edge_block): at 8^3 or 13x40x7 its dispatch and
          // cpu_mma_blocks's cost about as much as the blocks.
          std::vector<std::string> edge_calls;
          std::string first_edge;  // the first block's pointer (null without AVX-512)
          if (masked_edge && (blocks_r == 1 || a_global)) {
            // cpu_mma_blocks hands cpu_mma_edge every row of a column block at once
            // (rows of A a row stride apart), which splits them into near-equal chunks.
            const int64_t rows = r1 - r0, most = cpu_edge_block_rows(bc), chunks = ceil_div(rows, most);
            const int64_t v = ceil_div(bc, isa_.lanes), tail = (int64_t{1} << (bc - isa_.lanes * (v - 1))) - 1;
            // At short k, three chunks or more run faster as cpu_mma_edge's strips of rows
            // (158x27x2 1.29x); two, as blocks (20x20x3 0.81x, 28x20x5 0.84x as strips).
            // Past it, likewise where cpu_mma_edge takes strips (cpu_edge_narrow_strip):
            // with fewer chunks its dispatch costs what the strip saves (30x12x17 0.83x).
            // (Where every column is masked the choice is the part's, made above: its
            // rows may come in two ranges.)
            const bool strips =
                masked_only ? edge_strips
                            : (op.k <= kCpuStripMaxK || cpu_edge_narrow_strip(rows, bc, op.k)) && chunks > 2;
            if (bc <= 64 && blocks_c * chunks <= kCpuInlineBlocks && !cpu_edge_dot_columns(rows, bc, op.k) && !strips)
              for (int64_t j = 0; j < blocks_c; ++j)
                for (int64_t i = 0; i < chunks; ++i) {
                  const int64_t ra = r0 + rows * i / chunks, rb = r0 + rows * (i + 1) / chunks;
                  edge_blocks_.insert({rb - ra, bc});
                  if (first_edge.empty()) first_edge = edge_block_name(rb - ra, bc);
                  edge_calls.push_back(edge_block_name(rb - ra, bc) + "(kv, &" + a.at(r0s + " + " + num(ra), "0") +
                                       ", &" + b.at("0", c0s + " + " + num(c0 + j * bc)) + ", " + c + " + " + num(ra) +
                                       " * " + ldc + " + " + num(c0 + j * bc) + ", " + ldc + ", " + lda_arg + ", " +
                                       ldb_arg + ", " + num(tail) + ", overwrite);");
                }
          }
          const bool inline_calls = !edge_calls.empty() || (!masked_edge && blocks_r * blocks_c <= kCpuInlineBlocks);
          if (inline_calls) {
            // (An edge block is null without AVX-512, and runs whole k blocks only: its
            // choice against dot products was made for the tile's k.)
            const std::string edge_ok = first_edge.empty() ? "" : first_edge + " && kv == " + num(op.k) + " && ";
            open("if (" + edge_ok + "mv - (" + r0s + " + " + num(r0) + ") >= " + num(r1 - r0) + " && nv - (" + c0s +
                 " + " + num(c0) + ") >= " + num(c1 - c0) + ")");
            for (const std::string& call : edge_calls) line(call);
            for (int64_t j = 0; edge_calls.empty() && j < blocks_c; ++j)
              for (int64_t i = 0; i < blocks_r; ++i)
                line(name + "(kv, &" + a.at(r0s + " + " + num(r0 + i * br), "0") + ", &" +
                     b.at("0", c0s + " + " + num(c0 + j * bc)) + ", " + c + " + " + num(r0 + i * br) + " * " + ldc +
                     " + " + num(c0 + j * bc) + ", " + ldc + ", " + lda_arg + ", " + ldb_arg + ", overwrite);");
            --depth_;
            open("} else");
          }
          line("tsl_mma_blocks((const void*)" + name + ", kv, " + a0 + ", &" + a.at(r0s + " + " + num(r0 + br), "0") +
               " - " + a0 + ", " + b0 + ", &" + b.at("0", c0s + " + " + num(c0 + bc)) + " - " + b0 + ", " + c + " + " +
               num(r0) + " * " + ldc + " + " + num(c0) + ", " + ldc + ", " + lda_arg + ", " + ldb_arg + ", " + num(br) +
               ", " + num(bc) + ", " + num(blocks_r) + ", " + num(blocks_c) + ", mv - (" + r0s + " + " +
               num(r0) + "), nv - (" + c0s + " + " + num(c0) + "), " +
               (in_place ? "1" : home.empty() ? "0" : "(" + home + " ? 2 : 0)") + ", overwrite);");
          if (inline_calls) close();
          return;
        } else {
          // Packed, B is a panel of width NR (compile-time LDB); A stays run-time.
          const int64_t kernel_ldb = pack_b ? nr : ldb;
          name = cpu_microkernel_name(br, bc, lda, kernel_ldb, f64);
          if (!microkernels_.count(name))
            microkernels_[name] = emit_cpu_microkernel(br, bc, lda, kernel_ldb, isa_, f64);
        }
        // B's block at column jr: in the tensor, or the panel packed for this jr.
        const std::string b_block = pack_b ? "tsl_bp" : "&" + b.at("0", c0s + " + jr");
        // jr outer, ir inner (BLIS): one B micro-panel stays in L1 while the A
        // micro-panels stream past it.
        // (rows_outer: the caller runs ir, outside; jr here.)
        if (rows_outer) {
          jr_loop(c0, c1, bc);
        } else {
          if (!pack_b) jr_loop(c0, c1, bc);
          open_control_loop("for (int64_t ir = " + num(r0) + "; ir < " + num(r1) + " && " + r0s +
                            " + ir < mv; ir += " + num(br) + ")");
        }
        const std::string call = name + "(kv, &" + a.at(r0s + " + ir", "0") + ", " + b_block + ", " + c +
                                 " + ir * " + ldc +
                                 " + jr, " + ldc + lds + ", overwrite);";
        if (!in_place && home.empty()) {
          line(call);
        } else if (!in_place) {
          // Staged operands, homed C: a block across the valid part's edge is computed
          // whole on the staging padding into a local tile (tsl_bounce).
          open("if (!" + home + " || (" + r0s + " + ir + " + num(br) + " <= mv && " + c0s + " + jr + " + num(bc) +
               " <= nv))");
          line(call);
          --depth_;
          open("} else");
          microkernels_["tsl_bounce"] = kBounce;
          line("tsl_bounce(" + name + ", kv, &" + a.at(r0s + " + ir", "0") + ", " + b_block + ", " + c + " + ir * " +
               ldc + " + jr, " + ldc + ", tsl_min(" + num(br) + ", mv - (" + r0s + " + ir)), tsl_min(" + num(bc) +
               ", nv - (" + c0s + " + jr)), " + num(bc) + ", overwrite);");
          close();
        } else {
          open("if (" + num(part.row0) + " + ir + " + num(br) + " <= mv && " + num(part.col0) + " + jr + " + num(bc) +
               " <= nv)");
          line(call);
          --depth_;
          open("} else");
          if (f64) {
            emit_block_scalar(acc, a, b, c, ldc, part, br, bc);
          } else {
            // fp32: the valid rows and columns of the block in tessel (cpu_mma_edge).
            line("tsl_mma_edge(kv, &" + a.at(r0s + " + ir", "0") + ", " + b_block + ", " + c +
                 " + ir * " + ldc + " + jr, " + ldc + ", " + lda_arg + ", " + ldb_arg +
                 ", tsl_min(" + num(br) + ", mv - (" + r0s + " + ir)), tsl_min(" + num(bc) + ", nv - (" + c0s +
                 " + jr)), overwrite);");
          }
          close();
        }
        close();
        if (!pack_b && !rows_outer) close();
      };
      if (pack_b) {
        // Each panel of B (kv rows of its valid columns) copied once, then met by
        // every block row; columns past the valid ones are left as they are (no
        // kernel reads them: cpu_microkernel.h).
        auto panels = [&](int64_t c0, int64_t c1, int64_t bc) {
          if (c0 >= c1) return;
          jr_loop(c0, c1, bc);
          line("const int64_t tsl_pc = tsl_min(" + num(bc) + ", nv - (" + c0s + " + jr));");
          line("const float* const tsl_s = &" + b.at("0", c0s + " + jr") + ";");
          if (const int copy = cpu_prebuilt_copy(isa_.isa); copy >= 0) {
            // tessel's window copy (strided to strided, wholly inside): no loop in
            // the unit, which then stays calls only.
            prebuilt_["tsl_copy_window"] = copy;
            const std::string open_ended =
                "INT64_C(0), INT64_C(0), INT64_C(0x7fffffffffffffff), INT64_C(0x7fffffffffffffff)";
            line("tsl_copy_window((float*)tsl_s, 0, " + b.ld + ", 1, 0, 0, 1, " + open_ended + ", tsl_bp, 0, " +
                 num(nr) + ", 1, 0, 0, 1, " + open_ended + ", kv, tsl_pc, 0.0f);");
          } else {
            open("for (int64_t k = 0; k < kv; ++k)");
            line("tsl_copy_f32(tsl_bp + k * " + num(nr) + ", tsl_s + k * " + b.ld + ", tsl_pc / " + num(isa_.lanes) +
                 ", tsl_pc % " + num(isa_.lanes) + ");");
            close();
          }
          blocks(0, rows_big, row_base + 1, c0, c1, bc);
          blocks(rows_big, part.rows, row_base, c0, c1, bc);
          close();
        };
        panels(0, cols_fast, nr);
        panels(cols_fast, part.cols, cols_left);
      } else if (rows_outer) {
        // Each block row once, over the whole panels and then the edge columns, so
        // that A's rows are read once.
        auto row_blocks = [&](int64_t r0, int64_t r1, int64_t br) {
          if (r0 >= r1) return;
          open_control_loop("for (int64_t ir = " + num(r0) + "; ir < " + num(r1) + " && " + r0s +
                            " + ir < mv; ir += " + num(br) + ")");
          blocks(r0, r1, br, 0, cols_fast, nr);
          blocks(r0, r1, br, cols_fast, part.cols, cols_left);
          close();
        };
        row_blocks(0, rows_big, row_base + 1);
        row_blocks(rows_big, part.rows, row_base);
      } else {
        // Full blocks, then the edge kernels: the right columns, the bottom rows, the corner.
        blocks(0, rows_big, row_base + 1, 0, cols_fast, nr);
        blocks(0, rows_big, row_base + 1, cols_fast, part.cols, cols_left);
        blocks(rows_big, part.rows, row_base, 0, cols_fast, nr);
        blocks(rows_big, part.rows, row_base, cols_fast, part.cols, cols_left);
      }
      if (tiny || strip_part) close();
      if (scoped) close();
    }
    if (loop) close();
    close();
  }

  // The tiny kernels' calls for a part (emit_mma): chunks of rows outside, column
  // blocks inside, so that each chunk's rows of C are written at once. Near-equal
  // chunks have two heights; each height's chunks are a loop where more than two
  // (written out, 256x174x20's 132 calls took 60 ms of its cold compile). `strided`:
  // the kernels of any strides (cpu_tiny_kernel_strided), else each size's own form.
  void emit_tiny_calls(const GroupOp& op, const Side& a, const Side& b, const FragPart& part,
                       const CpuTinyTiling& tiling, const std::string& c, const std::string& ldc,
                       const std::string& r0s, const std::string& c0s, const std::string& lda,
                       const std::string& ldb, bool strided) {
    const int64_t shorter = part.rows / tiling.row_chunks, longer = part.rows % tiling.row_chunks;
    for (auto [rows, count, first_row] : {std::array<int64_t, 3>{shorter, tiling.row_chunks - longer, 0},
                                          {shorter + 1, longer, shorter * (tiling.row_chunks - longer)}}) {
      if (count == 0) continue;
      const bool looped = count > 2;
      if (looped)
        open_control_loop("for (int64_t tsl_i = " + num(first_row) + "; tsl_i < " + num(first_row + count * rows) +
                          "; tsl_i += " + num(rows) + ")");
      // Blocks of kCpuTinyBlockCols columns read B's rows N apart (the kernel's ldb);
      // one block is the whole part.
      const int64_t block = tiling.col_blocks > 1 ? kCpuTinyBlockCols : part.cols;
      const int64_t ldb_kernel = block < part.cols ? part.cols : 0;
      for (int64_t q = 0; q < (looped ? 1 : count); ++q) {
        const bool top = !looped && first_row + q * rows == 0;
        const std::string i0 = looped ? "tsl_i" : num(first_row + q * rows);
        for (int64_t j0 = 0; j0 < part.cols; j0 += block) {
          const int64_t w = std::min(block, part.cols - j0);
          const std::string name = cpu_tiny_kernel_name(rows, w, op.k, ldb_kernel, strided);
          if (!tiny_kernels_.count(name))
            tiny_kernels_[name] = emit_cpu_tiny_kernel(rows, w, op.k, ldb_kernel, strided);
          std::string c_chunk = top ? c : "(" + c + ") + " + i0 + " * " + ldc;
          if (j0) c_chunk = "(" + c_chunk + ") + " + num(j0);
          const bool dense = !strided && cpu_tiny_kernel_dense(rows, w, op.k);  // no stride arguments
          line(name + "(&" + a.at(top ? r0s : r0s + " + " + i0, "0") + ", &" +
               b.at("0", j0 ? c0s + " + " + num(j0) : c0s) + ", " + c_chunk + ", " + ldc +
               (dense ? "" : ", " + lda + ", " + ldb) + ", overwrite);");
        }
      }
      if (looped) close();
    }
  }

  // The block at (ir, jr) of br x bc inside a worker's part, inside the valid part only.
  void emit_block_scalar(const Buffer& acc, const Side& a, const Side& b, const std::string& c,
                         const std::string& ldc, const FragPart& part, int64_t br, int64_t bc) {
    emit_scalar_loops(acc, a, b, c, ldc, part, "ir", "ir + " + num(br), "jr", "jr + " + num(bc));
  }

  void emit_scalar_mma(const Buffer& acc, const Side& a, const Side& b, const std::string& c,
                       const std::string& ldc, const FragPart& part, int64_t r0, int64_t r1, int64_t c0,
                       int64_t c1) {
    if (r0 >= r1 || c0 >= c1) return;
    emit_scalar_loops(acc, a, b, c, ldc, part, num(r0), num(r1), num(c0), num(c1));
  }

  // Rows [r0, r1) and columns [c0, c1) of a worker's part, inside the valid part only,
  // one scalar multiply-add at a time.
  void emit_scalar_loops(const Buffer& acc, const Side& a, const Side& b, const std::string& c,
                         const std::string& ldc, const FragPart& part, const std::string& r0, const std::string& r1,
                         const std::string& c0, const std::string& c1) {
    open("for (int64_t r = " + r0 + "; r < " + r1 + " && " + num(part.row0) + " + r < mv; ++r)");
    open("for (int64_t c = " + c0 + "; c < " + c1 + " && " + num(part.col0) + " + c < nv; ++c)");
    line(scratch_ctype(acc.dtype) + " s = overwrite ? 0 : " + c + "[r * " + ldc + " + c];");
    open("for (int64_t kk = 0; kk < kv; ++kk)");
    line("s += " + a.read(num(part.row0) + " + r", "kk") + " * " + b.read("kk", num(part.col0) + " + c") + ";");
    close();
    line(c + "[r * " + ldc + " + c] = s;");
    close();
    close();
  }

  const GroupProgram& p_;
  const CpuIsaInfo& isa_;
  std::vector<int64_t> offset_, slot_;
  int64_t scratch_floats_ = 0;
  std::map<std::string, std::string> microkernels_;
  // Built-in functions the unit calls: its pointer's name -> cpu_prebuilt_microkernels index.
  std::map<std::string, int> prebuilt_;
  std::set<std::pair<int64_t, int64_t>> edge_blocks_;  // rows x cols of cpu_edge_block the unit calls
  std::set<std::pair<int64_t, int64_t>> edge_strips_;  // k x cols of cpu_edge_strip the unit calls
  // The unit's pointer to cpu_edge_strip(k, cols).
  static std::string edge_strip_name(int64_t k, int64_t cols) {
    return "tsl_strip_" + std::to_string(k) + "x" + std::to_string(cols);
  }
  // The unit's pointer to cpu_edge_block(rows, cols).
  static std::string edge_block_name(int64_t rows, int64_t cols) {
    return "tsl_edge_" + std::to_string(rows) + "x" + std::to_string(cols);
  }
  // find_first_writes: fill id -> the condition under which it is skipped; mma id ->
  // its overwrite flag.
  std::map<int, std::string> skip_fill_, overwrite_;
  // find_first_writes: fill id -> its loop's first mma and the condition that the loop runs.
  std::map<int, std::pair<const GroupOp*, std::string>> first_mma_;
  // find_homes: fill id -> the accumulator's home; fragment id and store id -> that fill id.
  struct Home {
    std::string when, base, ld;  // the run-time condition, C++ pointer and row stride of the window
    std::string add_when;        // adds_in_place: when the fragment adds to the window's values there
    std::string adds;            // adds_in_place: whether it adds, where `when` or `add_when` holds
  };
  std::map<int, Home> home_;
  std::map<int, int> homed_frag_, homed_store_;
  std::map<int, int> adding_if_;  // adds_in_place: if id -> the fill id whose home skips its other branch
  // find_part_copies: mma id -> the copy it runs part by part; those copies' ids.
  std::map<int, const GroupOp*> part_copy_;
  std::set<int> moved_copies_;
  std::string body_;
  int depth_ = 1;
  bool element_loops_ = false;  // the group function loops over elements itself (open)
  int mmas_ = 0, tiny_mmas_ = 0;  // mma ops emitted, and those a tiny kernel runs
  int64_t tiny_calls_ = 0;        // tiny kernels those call (chunks of rows x blocks of columns)
  bool written_ = false;                // whether an op that writes memory was emitted (emit_op)
  std::vector<const GroupOp*> fors_;    // the loops around the op being emitted, outermost first
  std::string leaf_when_;               // conditions a homes' body adds to its own (emit_mma)
  bool leaf_regs_ = false;              // the leaves take tensors and scalars in registers (fits_regs)
  // Emitting fast_group_bodies: every home holds, storing (its if's condition holds),
  // adding (adds_in_place, where the home serves the if's other branch), or either
  // (whether it adds read at run time).
  enum class HomesHold { None, Store, Add, Either };
  HomesHold homes_hold_ = HomesHold::None;
  std::map<std::string, std::string> tiny_kernels_;  // the homes' body's (fast_group_bodies)
};

}  // namespace

const char kCpuSecondUnit[] = "// ---- tessel: a second unit, compiled beside the first ----\n";

std::vector<std::string> split_cpu_units(const std::string& source) {
  const size_t at = source.find(kCpuSecondUnit);
  if (at == std::string::npos) return {source};
  return {source.substr(0, at), source.substr(at + sizeof kCpuSecondUnit - 1)};
}

std::string emit_cpu(const GroupProgram& program, CpuIsa isa) { return Emitter(program, cpu_isa_info(isa)).run(); }
std::string emit_cpu(const GroupProgram& program) { return emit_cpu(program, cpu_isa()); }

}  // namespace tessel
