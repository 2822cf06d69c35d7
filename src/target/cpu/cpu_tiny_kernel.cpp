#include "target/cpu/cpu_tiny_kernel.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "target/cpu/cpu_support.h"
#include "tessel/error.h"

namespace tessel {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

// The vectors of one B row, from column 0: whole 16-lane ones, then one of 4, 8 or
// 16 lanes for the rest (the narrowest that holds it: on Zen 4 a 256-bit FMA takes
// half the cycles of a 512-bit one, and elsewhere no more), masked where the rest
// does not fill it.
struct TinyVector {
  int64_t col, lanes, used;
};

std::vector<TinyVector> tiny_vectors(int64_t n) {
  std::vector<TinyVector> v;
  int64_t col = 0;
  for (; n - col > 16; col += 16) v.push_back({col, 16, 16});
  const int64_t rest = n - col;
  v.push_back({col, rest <= 4 ? 4 : rest <= 8 ? 8 : 16, rest});
  return v;
}

// The most rows of a kernel of `vectors` vectors a row: rows of one vector up to
// kCpuTinyOneVectorRows, else R x V accumulators, B's V vectors and the broadcast A
// element within 32 registers (14, 9 and 6 rows of 2, 3 and 4 vectors).
int64_t tiny_rows_max(int64_t vectors) { return vectors == 1 ? kCpuTinyOneVectorRows : (31 - vectors) / vectors; }

}  // namespace

bool cpu_tiny_kernel_fits(int64_t r, int64_t n, int64_t k, const CpuIsaInfo& isa) {
  if (isa.isa != CpuIsa::Avx512 || r < 1 || n < 1 || k < 1) return false;
  const int64_t vectors = int64_t(tiny_vectors(n).size()), accumulators = r * vectors;
  if (accumulators <= kCpuTinyAccumulators && accumulators * k <= kCpuTinyFmas) return true;
  // Dense kernels (cpu_tiny_kernel_dense): rows of one vector at any k; rows of several
  // past the strips' k.
  const bool rows_fit = vectors <= kCpuTinyDenseVectors && r <= tiny_rows_max(vectors);
  return rows_fit && (vectors == 1 || k > kCpuStripMaxK) && accumulators * k <= kCpuTinyTallFmas;
}

bool cpu_tiny_kernel_strided(int64_t r, int64_t n, int64_t k) {
  const int64_t accumulators = r * int64_t(tiny_vectors(n).size());
  return r <= kCpuTinyStrideRows && accumulators <= kCpuTinyAccumulators && accumulators * k <= kCpuTinyFmas;
}

bool cpu_tiny_kernel_dense(int64_t r, int64_t n, int64_t k) {
  const int64_t fmas = r * int64_t(tiny_vectors(n).size()) * k;
  return !cpu_tiny_kernel_strided(r, n, k) || r >= kCpuTinyDenseRows || fmas >= kCpuTinyDenseFmas;
}

int64_t cpu_tiny_row_chunks(int64_t r, int64_t n, int64_t k, const CpuIsaInfo& isa) {
  if (cpu_tiny_kernel_fits(r, n, k, isa)) return 1;
  const int64_t vectors = int64_t(tiny_vectors(n).size());
  if (vectors > kCpuTinyDenseVectors || cpu_edge_dot_columns(r, n, k)) return 0;
  if (vectors > 1 && cpu_edge_narrow_strip(r, n, k)) return 0;
  const int64_t chunks = (r + tiny_rows_max(vectors) - 1) / tiny_rows_max(vectors);
  const bool fit = chunks <= kCpuTinyRowChunks && cpu_tiny_kernel_fits((r + chunks - 1) / chunks, n, k, isa);
  return fit ? chunks : 0;
}

CpuTinyTiling cpu_tiny_tiling(int64_t r, int64_t n, int64_t k, const CpuIsaInfo& isa) {
  if (n <= kCpuTinyBlockCols) return {1, cpu_tiny_row_chunks(r, n, k, isa)};
  if (k <= kCpuStripMaxK || k > kCpuTinyBlocksMaxK || cpu_edge_dot_columns(r, n, k)) return {0, 0};
  const int64_t blocks = (n + kCpuTinyBlockCols - 1) / kCpuTinyBlockCols;
  const int64_t last = n - kCpuTinyBlockCols * (blocks - 1);
  const int64_t chunks = (r + tiny_rows_max(kCpuTinyDenseVectors) - 1) / tiny_rows_max(kCpuTinyDenseVectors);
  const int64_t rows = (r + chunks - 1) / chunks;
  const bool fit = chunks * blocks <= kCpuTinyBlockCalls &&
                   cpu_tiny_kernel_fits(rows, kCpuTinyBlockCols, k, isa) && cpu_tiny_kernel_fits(rows, last, k, isa);
  return fit ? CpuTinyTiling{blocks, chunks} : CpuTinyTiling{0, 0};
}

std::string cpu_tiny_kernel_name(int64_t r, int64_t n, int64_t k, int64_t ldb, bool strided) {
  TESSEL_ASSERT(!strided || cpu_tiny_kernel_strided(r, n, k), "no tiny kernel of any strides for this product");
  const bool dense = !strided && cpu_tiny_kernel_dense(r, n, k);
  return "tsl_tiny_" + num(r) + "x" + num(n) + "x" + num(k) + (dense ? "_dense" : "") +
         (dense && ldb > 0 && ldb != n ? "_ldb" + num(ldb) : "");
}

namespace {

// The kernel's body as asm, written as an asm statement's template: GCC only parses
// it. In C with vector extensions GCC spent about 10 ms of a cold compile on each
// kernel (and 12 more on the first). Registers: B's V vectors in 0 to V - 1, the broadcast A element in V where
// rows have several vectors (one vector takes it as the FMA's broadcast operand), then
// the accumulators; k1 holds the last vector's mask. A dense kernel reads A and B at
// constant offsets from one pointer each; any other, A's rows from a pointer per 4 rows
// and lda's multiples, B's rows from a pointer moved by ldb each k step.
struct AsmLines {
  std::string text;       // one C string literal a line
  int64_t registers = 0;  // vector registers written
};
AsmLines emit_asm_lines(int64_t r, int64_t n, int64_t k, int64_t ldb, bool dense) {
  const std::vector<TinyVector> vecs = tiny_vectors(n);
  const int64_t nv = vecs.size(), accumulators = r * nv, base = nv + (nv > 1 ? 1 : 0);
  // Copies split k, so never more than K of them.
  const int64_t copies = std::min(cpu_accumulator_copies(accumulators, nv), k);
  auto reg = [](int64_t lanes, int64_t x) {
    return std::string(lanes == 16 ? "%%zmm" : lanes == 8 ? "%%ymm" : "%%xmm") + num(x);
  };
  // Accumulator (u, i, j): copy u, row i, vector j.
  auto acc = [&](int64_t u, int64_t i, int64_t j) { return reg(vecs[j].lanes, base + (u * r + i) * nv + j); };
  auto masked = [](const TinyVector& v) { return v.used < v.lanes; };
  std::string s;
  auto line = [&](const std::string& x) { s += "      \"" + x + "\\n\\t\"\n"; };
  const TinyVector& last = vecs.back();
  if (masked(last)) {
    line("movl $" + num((int64_t{1} << last.used) - 1) + ", %k[t]");
    line("kmovw %k[t], %%k1");
  }
  // A(i, kk) and B(kk, col), kk counted from where the loop's pointers stand.
  auto a_at = [&](int64_t i, int64_t kk) {
    if (dense) return num(4 * (i * k + kk)) + "(%[a])";
    static const char* const offset[] = {")", ",%[lda],1)", ",%[lda],2)", ",%[l3],1)"};
    return num(4 * kk) + "(%[a" + (i < 4 ? std::string() : num(i / 4)) + "]" + offset[i % 4];
  };
  auto b_at = [&](int64_t kk, int64_t col) { return num(4 * ((dense ? kk * ldb : 0) + col)) + "(%[b])"; };
  // k step kk into copy u; the first step of a copy sets its accumulators.
  auto step = [&](int64_t kk, int64_t u, bool first) {
    const std::string op = first ? "vmulps " : "vfmadd231ps ";
    for (int64_t j = 0; j < nv; ++j)
      line("vmovups " + b_at(kk, vecs[j].col) + ", " + reg(vecs[j].lanes, j) +
           (masked(vecs[j]) ? "%{%%k1%}%{z%}" : ""));
    for (int64_t i = 0; i < r; ++i) {
      if (nv == 1) {
        line(op + a_at(i, kk) + "%{1to" + num(vecs[0].lanes) + "%}, " + reg(vecs[0].lanes, 0) + ", " + acc(u, i, 0));
        continue;
      }
      line("vbroadcastss " + a_at(i, kk) + ", " + reg(16, nv));
      for (int64_t j = 0; j < nv; ++j)
        line(op + reg(vecs[j].lanes, j) + ", " + reg(vecs[j].lanes, nv) + ", " + acc(u, i, j));
    }
    if (!dense && kk + 1 < k) line("addq %[ldb], %[b]");
  };
  for (int64_t u = 0; u < copies; ++u) step(u, u, true);
  // Written out up to kCpuTinyUnrolledFmas (every kernel that is not dense); past it a
  // loop of S steps (a multiple of the copies, about 128 FMAs), then the rest written out.
  int64_t kk = copies;
  const bool loop = accumulators * k > kCpuTinyUnrolledFmas;
  TESSEL_ASSERT(dense || !loop, "a tiny kernel with run-time strides has its k written out");
  if (loop) {
    const int64_t steps = copies * std::max<int64_t>(1, 128 / (accumulators * copies));
    const int64_t iterations = (k - copies) / steps;
    TESSEL_ASSERT(iterations > 0, "a tiny kernel's loop runs at least once");
    line("movq $" + num(iterations) + ", %[n]");
    line("1:");
    for (int64_t q = 0; q < steps; ++q) step(copies + q, q % copies, false);
    line("addq $" + num(4 * steps) + ", %[a]");
    line("addq $" + num(4 * steps * ldb) + ", %[b]");
    line("decq %[n]");
    line("jnz 1b");
    for (int64_t q = copies + iterations * steps; q < k; ++q) step(q - iterations * steps, q % copies, false);
    kk = k;
  }
  for (; kk < k; ++kk) step(kk, kk % copies, false);
  // C's old values all loaded before the first store, into copy 0: a load whose
  // vector overlaps an earlier masked store's bytes waits for it to reach the cache,
  // where rows are shorter than their vectors (24x2x3 accumulating: 2.6x the time of
  // overwriting, row by row). A rest of one or two columns is read and written whole,
  // as a float or 8 bytes, not masked: C += A B called again on the same C loads each
  // row's masked vector over the last call's masked stores (2x2x3 accumulating: 9.6 ->
  // 6.1 ns a call). A masked rest comes through register 0.
  line("testl %[ow], %[ow]");
  line("jnz 2f");
  line("movq %[c], %[t]");
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < nv; ++j) {
      const TinyVector& v = vecs[j];
      const std::string at = num(4 * v.col) + "(%[t])", x = acc(0, i, j), t0 = reg(v.lanes, 0);
      if (v.used == 1 || v.used == 2) {
        line((v.used == 1 ? "vmovss " : "vmovsd ") + at + ", %%xmm0");
      } else if (masked(v)) {
        line("vmovups " + at + ", " + t0 + "%{%%k1%}%{z%}");
      } else {
        line("vaddps " + at + ", " + x + ", " + x);
        continue;
      }
      line("vaddps " + t0 + ", " + x + ", " + x);
    }
    if (i + 1 < r) line("addq %[ldc], %[t]");
  }
  line("2:");
  // Each row stored once its copies are summed: all the sums first and then the
  // stores ran 3x13x3 about a tenth slower.
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < nv; ++j) {
      const TinyVector& v = vecs[j];
      const std::string at = num(4 * v.col) + "(%[c])", x = acc(0, i, j);
      for (int64_t u = 1; u < copies; ++u) line("vaddps " + acc(u, i, j) + ", " + x + ", " + x);
      if (v.used == 1) line("vmovss " + x + ", " + at);
      else if (v.used == 2) line("vmovlps " + x + ", " + at);
      else line("vmovups " + x + ", " + at + (masked(v) ? "%{%%k1%}" : ""));
    }
    if (i + 1 < r) line("addq %[ldc], %[c]");
  }
  // The upper halves of registers 0 to 15 cleared, as GCC does after its own 256- and
  // 512-bit code: left dirty, every SSE instruction after the kernel (the caller's)
  // waited on them (8x8x8: 0.13 us a call instead of 0.017).
  const bool wide = std::any_of(vecs.begin(), vecs.end(), [](const TinyVector& v) { return v.lanes > 4; });
  if (wide) line("vzeroupper");
  return {s, std::max<int64_t>(wide ? 16 : 0, base + copies * accumulators)};
}

// A kernel of any strides (not dense) as one asm statement in the body of a C
// function, inlined into each caller: its operands named, the strides and A's row
// pointers in registers the caller chooses.
std::string emit_asm_statement(int64_t r, int64_t n, int64_t k) {
  const AsmLines lines = emit_asm_lines(r, n, k, n, false);
  std::string inputs = "[ldc] \"r\"(ldc * 4), [ow] \"r\"(overwrite), [a] \"r\"(a)";
  if (k > 1) inputs += ", [ldb] \"r\"(ldb * 4)";
  if (r > 1) inputs += ", [lda] \"r\"(lda * 4)";
  if (r > 3) inputs += ", [l3] \"r\"(lda * 12)";
  for (int64_t g = 1; 4 * g < r; ++g) inputs += ", [a" + num(g) + "] \"r\"(a + " + num(4 * g) + " * lda)";
  std::string clobbers = "\"cc\", \"memory\", \"k1\"";
  for (int64_t x = 0; x < lines.registers; ++x) clobbers += ", \"xmm" + num(x) + "\"";
  return "  int64_t tsl_t;\n  __asm__ volatile(\n" + lines.text +
         "      : [b] \"+r\"(b), [c] \"+r\"(c), [t] \"=&r\"(tsl_t)\n      : " + inputs + "\n      : " + clobbers +
         ");\n";
}

// A dense kernel's asm statement as the whole body of a function defined at the top
// level, in the registers its arguments arrive in (the x86-64 System V ABI: a, b, c,
// ldc, overwrite in rdi, rsi, rdx, rcx, r8d; rax and r9 free): GCC passes the text to
// the assembler without compiling a function around it, about 1.5 ms of a cold
// compile a kernel. The operands' names become those registers and the asm statement's
// escapes (%%, %{ and %}) plain characters.
std::string top_level_asm(const std::string& name, const std::string& body) {
  static const std::pair<const char*, const char*> kRegisters[] = {
      {"[a]", "%rdi"}, {"[b]", "%rsi"}, {"[c]", "%rdx"}, {"[ldc]", "%rcx"},
      {"[ow]", "%r8d"}, {"[t]", "%rax"}, {"k[t]", "%eax"}, {"[n]", "%r9"}};
  std::string text;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '%' || i + 1 == body.size()) {
      text += body[i];
      continue;
    }
    const char next = body[i + 1];
    if (next == '%' || next == '{' || next == '}') {
      text += next;
      ++i;
      continue;
    }
    bool found = false;
    for (const auto& [operand, reg] : kRegisters)
      if (body.compare(i + 1, std::strlen(operand), operand) == 0) {
        text += reg;
        i += std::strlen(operand);
        found = true;
        break;
      }
    TESSEL_ASSERT(found, "a dense tiny kernel's asm names an operand with no register: " + body.substr(i, 8));
  }
  const std::string line_end = "\\n\\t\"\n";
  return "extern \"C\" __attribute__((visibility(\"hidden\"))) void " + name +
         "(const float* a, const float* b, float* c, int64_t ldc, int overwrite);\n__asm__(\n"
         "      \".pushsection .text\\n\\t.p2align 4\\n\\t.globl " + name + "\\n\\t.hidden " + name +
         "\\n\\t.type " + name + ", @function\\n" + name + ":\\n\\t.cfi_startproc" + line_end +
         "      \"salq $2, %rcx" + line_end + text +
         "      \"ret\\n\\t.cfi_endproc\\n\\t.size " + name + ", .-" + name + "\\n\\t.popsection\\n\");\n";
}

}  // namespace

std::string emit_cpu_tiny_kernel(int64_t r, int64_t n, int64_t k, int64_t ldb, bool strided) {
  const std::string name = cpu_tiny_kernel_name(r, n, k, ldb, strided);
  const bool dense = !strided && cpu_tiny_kernel_dense(r, n, k);
  const std::string head = "// " + name + ": cpu_tiny_kernel.h's contract.\n";
  // A dense kernel holds its strides as constants (the contract) and is a function of
  // its own, its arguments all in registers; any other is inlined.
  if (dense) return head + top_level_asm(name, emit_asm_lines(r, n, k, ldb > 0 ? ldb : n, true).text);
  return head + "static inline __attribute__((always_inline)) void " + name +
         "(const float* a, const float* b, float* c, int64_t ldc, int64_t lda, int64_t ldb, int overwrite) {\n" +
         emit_asm_statement(r, n, k) + "}\n";
}

}  // namespace tessel
