#include "target/cpu/cpu_tiny_kernel.h"

#include <algorithm>
#include <vector>

#include "target/cpu/cpu_support.h"

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

bool cpu_tiny_kernel_dense(int64_t r, int64_t n, int64_t k) {
  const int64_t accumulators = r * int64_t(tiny_vectors(n).size());
  return r > kCpuTinyStrideRows || accumulators > kCpuTinyAccumulators || accumulators * k > kCpuTinyFmas;
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

std::string cpu_tiny_kernel_name(int64_t r, int64_t n, int64_t k) {
  return "tsl_tiny_" + num(r) + "x" + num(n) + "x" + num(k) + (cpu_tiny_kernel_dense(r, n, k) ? "_dense" : "");
}

namespace {

// A dense kernel's body as one asm statement (the contract's registers, in the same
// order of operations as the C form below): GCC spent about 10 ms of a cold compile on
// each such kernel in C (and 12 more on the first), and only parses this. Registers:
// B's V vectors in 0 to V - 1, the broadcast A element in V where rows have several
// vectors (one vector takes it as the FMA's broadcast operand), then the
// accumulators; k1 holds the last vector's mask.
std::string emit_dense_asm_body(int64_t r, int64_t n, int64_t k, const std::vector<TinyVector>& vecs,
                                int64_t copies) {
  const int64_t nv = vecs.size(), accumulators = r * nv, base = nv + (nv > 1 ? 1 : 0);
  auto reg = [](int64_t lanes, int64_t x) {
    return std::string(lanes == 16 ? "%%zmm" : lanes == 8 ? "%%ymm" : "%%xmm") + num(x);
  };
  auto acc = [&](int64_t u, int64_t i, int64_t j) { return reg(vecs[j].lanes, base + (u * r + i) * nv + j); };
  auto masked = [](const TinyVector& v) { return v.used < v.lanes; };
  std::string s;
  auto line = [&](const std::string& x) { s += "      \"" + x + "\\n\\t\"\n"; };
  const TinyVector& last = vecs.back();
  if (masked(last)) {
    line("movl $" + num((int64_t{1} << last.used) - 1) + ", %k[t]");
    line("kmovw %k[t], %%k1");
  }
  // k step kk into copy u, A and B at the byte offsets of k step kk - k0 (the loop's
  // pointers have moved k0 steps).
  auto step = [&](int64_t kk, int64_t u, bool first) {
    const std::string op = first ? "vmulps " : "vfmadd231ps ";
    for (int64_t j = 0; j < nv; ++j)
      line("vmovups " + num(4 * (kk * n + vecs[j].col)) + "(%[b]), " + reg(vecs[j].lanes, j) +
           (masked(vecs[j]) ? "%{%%k1%}%{z%}" : ""));
    for (int64_t i = 0; i < r; ++i) {
      const std::string at = num(4 * (i * k + kk)) + "(%[a])";
      if (nv == 1) {
        line(op + at + "%{1to" + num(vecs[0].lanes) + "%}, " + reg(vecs[0].lanes, 0) + ", " + acc(u, i, 0));
        continue;
      }
      line("vbroadcastss " + at + ", " + reg(16, nv));
      for (int64_t j = 0; j < nv; ++j)
        line(op + reg(vecs[j].lanes, j) + ", " + reg(vecs[j].lanes, nv) + ", " + acc(u, i, j));
    }
  };
  for (int64_t u = 0; u < copies; ++u) step(u, u, true);
  // Written out up to kDenseUnrolledFmas; past it a loop of S steps (a multiple of
  // the copies), then the rest written out.
  constexpr int64_t kDenseUnrolledFmas = 512;
  int64_t kk = copies;
  if (accumulators * k > kDenseUnrolledFmas) {
    const int64_t steps = copies * std::max<int64_t>(1, 128 / (accumulators * copies));
    const int64_t iterations = (k - copies) / steps;
    if (iterations > 0) {
      line("movq $" + num(iterations) + ", %[n]");
      line("1:");
      for (int64_t q = 0; q < steps; ++q) step(copies + q, q % copies, false);
      line("addq $" + num(4 * steps) + ", %[a]");
      line("addq $" + num(4 * steps * n) + ", %[b]");
      line("decq %[n]");
      line("jnz 1b");
      // The rest's offsets from the moved pointers.
      for (int64_t q = copies + iterations * steps; q < k; ++q) step(q - iterations * steps, q % copies, false);
      kk = k;
    }
  }
  for (; kk < k; ++kk) step(kk, kk % copies, false);
  for (int64_t u = 1; u < copies; ++u)
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < nv; ++j) line("vaddps " + acc(u, i, j) + ", " + acc(0, i, j) + ", " + acc(0, i, j));
  // C's old values all loaded before the first store (the C form says why); a rest of
  // one or two columns read and written whole, a masked rest through register 0.
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
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < nv; ++j) {
      const TinyVector& v = vecs[j];
      const std::string at = num(4 * v.col) + "(%[c])", x = acc(0, i, j);
      if (v.used == 1) line("vmovss " + x + ", " + at);
      else if (v.used == 2) line("vmovlps " + x + ", " + at);
      else line("vmovups " + x + ", " + at + (masked(v) ? "%{%%k1%}" : ""));
    }
    if (i + 1 < r) line("addq %[ldc], %[c]");
  }
  std::string clobbers = "\"cc\", \"memory\", \"k1\"";
  for (int64_t x = 0; x < base + copies * accumulators; ++x) clobbers += ", \"xmm" + num(x) + "\"";
  return "  int64_t tsl_t, tsl_n;\n  __asm__ volatile(\n" + s +
         "      : [a] \"+r\"(a), [b] \"+r\"(b), [c] \"+r\"(c), [t] \"=&r\"(tsl_t), [n] \"=&r\"(tsl_n)\n"
         "      : [ldc] \"r\"(ldc * 4), [ow] \"r\"(overwrite)\n      : " + clobbers + ");\n  (void)tsl_n;\n";
}

}  // namespace

std::string emit_cpu_tiny_kernel(int64_t r, int64_t n, int64_t k) {
  const std::vector<TinyVector> vecs = tiny_vectors(n);
  const int64_t nv = vecs.size(), accumulators = r * nv;
  // Copies split k, so never more than K of them.
  const int64_t copies = std::min(cpu_accumulator_copies(accumulators, nv), k);
  auto type = [](const TinyVector& v) { return "v" + num(v.lanes); };
  // Vector j of the row at p: a whole one, or a masked one.
  auto load = [&](const std::string& p, int64_t j) {
    const TinyVector& v = vecs[j];
    const std::string at = p + " + " + num(v.col);
    if (v.used == v.lanes) return "*(const " + type(v) + "u*)(" + at + ")";
    return "__builtin_ia32_loadups" + num(v.lanes * 32) + "_mask(" + at + ", (" + type(v) + "){}, " +
           num((int64_t{1} << v.used) - 1) + ")";
  };
  // C's vector j of the row at p. A rest of one or two columns is read and written
  // whole, as a float or 8 bytes, not masked: C += A B called again on the same C
  // loads each row's masked vector over the last call's masked stores, which waits
  // for them to reach the cache (2x2x3 accumulating: 9.6 -> 6.1 ns a call).
  auto c_load = [&](const std::string& p, int64_t j) {
    const TinyVector& v = vecs[j];
    const std::string at = p + " + " + num(v.col);
    if (v.used == 1) return "(v4){*(" + at + "), 0, 0, 0}";
    if (v.used == 2) return "__builtin_shufflevector(*(const v2u*)(" + at + "), (v2u){}, 0, 1, 2, 3)";
    return load(p, j);
  };
  auto c_store = [&](const std::string& p, int64_t j, const std::string& x) {
    const TinyVector& v = vecs[j];
    const std::string at = p + " + " + num(v.col);
    if (v.used == 1) return "  *(" + at + ") = " + x + "[0];\n";
    if (v.used == 2) return "  *(v2u*)(" + at + ") = __builtin_shufflevector(" + x + ", " + x + ", 0, 1);\n";
    if (v.used == v.lanes) return "  *(" + type(v) + "u*)(" + at + ") = " + x + ";\n";
    return "  __builtin_ia32_storeups" + num(v.lanes * 32) + "_mask(" + at + ", " + x + ", " +
           num((int64_t{1} << v.used) - 1) + ");\n";
  };
  // Accumulator (u, i, j): copy u, row i, vector j.
  auto acc = [](int64_t u, int64_t i, int64_t j) { return "c" + num(u) + "_" + num(i) + "_" + num(j); };
  // A(i, kk): from a pointer per 4 rows and three offsets (a pointer a row ran out of
  // registers at 16 rows).
  auto a_at = [](int64_t i, const std::string& kk) {
    static const char* const offset[] = {"", " + lda", " + l2", " + l3"};
    return "a" + num(i / 4) + "[" + kk + offset[i % 4] + "]";
  };
  // One k step into copy u: B's row, then a broadcast FMA per accumulator; the first
  // step of a copy sets its accumulators (no zeros to set first and add to).
  auto step = [&](const std::string& kk, int64_t u, bool first) {
    std::string s = "    {\n      const float* const bk = b + (" + kk + ") * ldb;\n";
    for (int64_t j = 0; j < nv; ++j) {
      s += "      " + type(vecs[j]) + " b" + num(j) + " = " + load("bk", j) + ";\n";
      // In registers, loaded once: GCC folds B's loads into each row's FMA as memory
      // operands (4x32x32: 12 loads to 8 FMAs a k, 0.67x the built-in kernel).
      if (r > 1) s += "      __asm__(\"\" : \"+v\"(b" + num(j) + "));\n";
    }
    for (int64_t i = 0; i < r; ++i) {
      s += "      { const float s = " + a_at(i, kk) + ";";
      for (int64_t j = 0; j < nv; ++j) s += " " + acc(u, i, j) + (first ? " = s * b" : " += s * b") + num(j) + ";";
      s += " }\n";
    }
    return s + "    }\n";
  };
  // Written out row by row, accumulators as named variables: the registers do not
  // depend on GCC unrolling and scalarizing loops over arrays, which -O1 does not.
  const std::string name = cpu_tiny_kernel_name(r, n, k);
  std::string s = "// " + name + ": cpu_tiny_kernel.h's contract.\n";
  if (cpu_tiny_kernel_dense(r, n, k))  // their strides as constants (the contract)
    return s + "static __attribute__((noinline)) void " + name +
           "(const float* a, const float* b, float* c, int64_t ldc, int64_t, int64_t, int overwrite) {\n" +
           emit_dense_asm_body(r, n, k, vecs, copies) + "}\n";
  else
    s += "static inline __attribute__((always_inline)) void " + name +
         "(const float* a, const float* b, float* c, int64_t ldc, int64_t lda, int64_t ldb, int overwrite) {\n";
  s += "  typedef float v2u __attribute__((vector_size(8), aligned(4)));\n";
  for (int64_t lanes : {4, 8, 16}) {
    const std::string bytes = num(lanes * 4);
    s += "  typedef float v" + num(lanes) + " __attribute__((vector_size(" + bytes + ")));\n";
    s += "  typedef float v" + num(lanes) + "u __attribute__((vector_size(" + bytes + "), aligned(4)));\n";
  }
  s += "  const int64_t l2 = 2 * lda, l3 = 3 * lda;\n  (void)l2, (void)l3;\n";
  for (int64_t i = 0; i < r; i += 4) s += "  const float* const a" + num(i / 4) + " = a + " + num(i) + " * lda;\n";
  for (int64_t u = 0; u < copies; ++u)
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < nv; ++j) s += "  " + type(vecs[j]) + " " + acc(u, i, j) + ";\n";
  // Each copy's first step sets it; the rest of k is written out where the product
  // is at most kCpuTinyUnrolledFmas FMAs, else a loop (#pragma GCC unroll over every
  // size made GCC's RTL passes take 0.1 s on 14x13x7).
  for (int64_t u = 0; u < copies; ++u) s += step(num(u), u, true);
  if (accumulators * k <= kCpuTinyUnrolledFmas) {
    for (int64_t kk = copies; kk < k; ++kk) s += step(num(kk), kk % copies, false);
  } else {
    s += "  int64_t k = " + num(copies) + ";\n  for (; k + " + num(copies) + " <= " + num(k) + "; k += " +
         num(copies) + ") {\n";
    for (int64_t u = 0; u < copies; ++u) s += step("k + " + num(u), u, false);
    s += "  }\n";
    if (k % copies != 0) s += "  for (; k < " + num(k) + "; ++k) {\n" + step("k", 0, false) + "  }\n";
  }
  // C's old values all loaded before the first store, into copy 0: a load whose
  // vector overlaps an earlier masked store's bytes waits for it to reach the cache,
  // where rows are shorter than their vectors (24x2x3 accumulating: 2.6x the time of
  // overwriting, row by row). Overwriting, each row is stored once its copies are
  // summed: all the sums first and then the stores ran 3x13x3 about a tenth slower.
  s += "  if (!overwrite) {\n";
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < nv; ++j)
      s += "    " + acc(0, i, j) + " += " + c_load("c + " + num(i) + " * ldc", j) + ";\n";
  s += "  }\n";
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < nv; ++j) {
      const std::string x = acc(0, i, j);
      for (int64_t u = 1; u < copies; ++u) s += "  " + x + " += " + acc(u, i, j) + ";\n";
      s += c_store("c + " + num(i) + " * ldc", j, x);
    }
  s += "}\n";
  return s;
}

}  // namespace tessel
