#include "target/cpu/cpu_microkernel.h"

#include <algorithm>

#include "tessel/error.h"

namespace tessel {
namespace {

std::string num(int64_t v) { return std::to_string(v); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Splits [0, n) into `parts` near-equal chunks; returns chunk i's [begin, end).
std::pair<int64_t, int64_t> chunk(int64_t n, int64_t parts, int64_t i) {
  return {n * i / parts, n * (i + 1) / parts};
}

}  // namespace

std::string cpu_vector_types(const CpuIsaInfo& isa) {
  const std::string bytes = num(isa.lanes * 4);
  return "typedef long int64_t;\n"
         "typedef float tsl_vf __attribute__((vector_size(" + bytes + ")));\n"
         "typedef float tsl_vfu __attribute__((vector_size(" + bytes + "), aligned(4)));\n";
}

// Elements of one vector register: fp32 lanes, or half as many doubles.
int64_t lanes_of(const CpuIsaInfo& isa, bool f64) { return f64 ? isa.lanes / 2 : isa.lanes; }

bool cpu_microkernel_fits(int64_t ldb, const CpuIsaInfo& isa, bool f64) {
  const int64_t lanes = lanes_of(isa, f64);
  return ldb >= lanes && ldb % lanes == 0;
}

std::string cpu_microkernel_name(int64_t mr, int64_t nr, int64_t lda, int64_t ldb, bool f64) {
  auto ld = [](int64_t v) { return v == kCpuRuntimeLd ? std::string("s") : num(v); };
  return std::string(f64 ? "tsl_ukr_d_" : "tsl_ukr_") + num(mr) + "x" + num(nr) + "_" + ld(lda) + "_" + ld(ldb);
}

// Accumulators plus the B vectors of a pass must fit the registers; without
// AVX-512's embedded broadcast one more holds the broadcast A element. A block with
// no more loads than FMAs per k (rows + vecs <= rows * vecs: x86 cores load and FMA
// at the same rate) beats one with more; then the most accumulators wins (FMA
// latency is hidden by independent chains), then the fewest loads per FMA.
CpuRegisterBlock cpu_microkernel_blocking(int64_t mr, int64_t nr, const CpuIsaInfo& isa, bool f64) {
  const int64_t nv = ceil_div(nr, lanes_of(isa, f64));
  const int64_t free = isa.registers - (isa.isa == CpuIsa::Avx512 ? 0 : 1);
  CpuRegisterBlock best{1, 1};
  for (int64_t vecs = 1; vecs <= nv; ++vecs) {
    int64_t rows = std::min(mr, (free - vecs) / vecs);
    if (rows < 1) continue;
    // Balanced chunks: the largest chunk is what the registers must hold.
    rows = ceil_div(mr, ceil_div(mr, rows));
    int64_t v = ceil_div(nv, ceil_div(nv, vecs));
    int64_t acc = rows * v, best_acc = best.rows * best.vecs;
    bool fed = rows + v <= acc, best_fed = best.rows + best.vecs <= best_acc;
    bool better = (fed && !best_fed) ||
                  (fed == best_fed && (acc > best_acc ||
                                       (acc == best_acc && (rows + v) * best_acc < (best.rows + best.vecs) * acc)));
    if (better) best = {rows, v};
  }
  return best;
}

std::string emit_cpu_microkernel(int64_t mr, int64_t nr, int64_t lda, int64_t ldb, const CpuIsaInfo& isa,
                                 bool f64) {
  const bool b_rows = ldb == kCpuRuntimeLd;  // B read in place: rows of a tensor
  TESSEL_ASSERT(mr >= 1 && nr >= 1 && (b_rows || (nr <= ldb && cpu_microkernel_fits(ldb, isa, f64))),
                "micro-kernel " + num(mr) + "x" + num(nr) + " on a B panel of width " + num(ldb));
  const std::string ldb_s = b_rows ? "ldb" : num(ldb);
  const int64_t L = lanes_of(isa, f64), nv = ceil_div(nr, L);
  const int64_t tail = nr - (nv - 1) * L;  // elements of the last vector of a row
  const int64_t esize = f64 ? 8 : 4;
  const std::string T = f64 ? "double" : "float", V = f64 ? "tsl_vd" : "tsl_vf", VU = f64 ? "tsl_vdu" : "tsl_vfu";
  const CpuRegisterBlock blk = cpu_microkernel_blocking(mr, nr, isa, f64);
  const int64_t row_chunks = ceil_div(mr, blk.rows), vec_chunks = ceil_div(nv, blk.vecs);
  auto acc = [](int64_t r, int64_t v) { return "c" + num(r) + "_" + num(v); };
  auto c_at = [&](int64_t r, int64_t v) { return "c + " + num(r) + " * ldc + " + num(v * L); };
  // A partial last vector (tail < L) touches only its first `tail` elements: AVX-512
  // masked loads and stores; other ISAs move C through a fixed-size memcpy and
  // clear B's other lanes with an AND, since they may hold anything (a denormal
  // there would cost a microcode assist per FMA).
  const bool masked = tail < L && isa.isa == CpuIsa::Avx512;
  const std::string mask = num((int64_t{1} << tail) - 1);
  const std::string mask_type = f64 ? "(unsigned char)" : "(unsigned short)";
  const std::string load_mask = f64 ? "__builtin_ia32_loadupd512_mask" : "__builtin_ia32_loadups512_mask";
  const std::string store_mask = f64 ? "__builtin_ia32_storeupd512_mask" : "__builtin_ia32_storeups512_mask";
  auto tail_load = [&](const std::string& ptr) {
    return load_mask + "(" + ptr + ", (" + V + "){}, " + mask_type + mask + ")";
  };
  std::string s;
  // noinline: inlined into the group function, GCC spills an accumulator.
  s += "__attribute__((noinline)) static void " + cpu_microkernel_name(mr, nr, lda, ldb, f64) + "(int64_t kc, const " +
       T + "* __restrict a, const " + T + "* __restrict b,\n    " + T + "* __restrict c, int64_t ldc" +
       (lda == kCpuRuntimeLd || b_rows ? ", int64_t lda, int64_t ldb" : "") + ", int overwrite) {\n";
  if (f64)
    s += "  typedef double tsl_vd __attribute__((vector_size(" + num(isa.lanes * 4) +
         ")));\n  typedef double tsl_vdu __attribute__((vector_size(" + num(isa.lanes * 4) + "), aligned(8)));\n";
  if (tail < L && !masked && !b_rows) {
    // Lanes < tail all ones: B's last vector ANDed with it.
    const std::string I = f64 ? "long long" : "int";
    s += "  typedef " + I + " tsl_vmask __attribute__((vector_size(" + num(isa.lanes * 4) + ")));\n";
    s += "  const tsl_vmask tail_lanes = {";
    for (int64_t i = 0; i < L; ++i) s += std::string(i ? ", " : "") + (i < tail ? "-1" : "0");
    s += "};\n";
  }
  for (int64_t rc = 0; rc < row_chunks; ++rc)
    for (int64_t vc = 0; vc < vec_chunks; ++vc) {
      auto [r0, r1] = chunk(mr, row_chunks, rc);
      auto [v0, v1] = chunk(nv, vec_chunks, vc);
      s += "  {\n";
      // The accumulators start at zero and C is added after the k loop: C's cache
      // lines (of a fragment larger than the caches, in a large matrix product) are prefetched
      // here and arrive while the FMAs run, instead of stalling the first ones.
      const int64_t line = 64 / esize;  // elements per cache line
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t e = v0 * L; e < std::min(nr, v1 * L); e += line)
          s += "    __builtin_prefetch(c + " + num(r) + " * ldc + " + num(e) + ", 1);\n";
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t v = v0; v < v1; ++v) s += "    " + V + " " + acc(r, v) + " = {};\n";
      // Fewer independent FMA chains than the FMA latency times the FMA ports (about
      // 8) leave the pipes idle (one row of a 1 x N product): then k is split over U
      // copies of the accumulators (k, k + 1, ... in turn), summed at the end.
      const int64_t chains = (r1 - r0) * (v1 - v0), bvecs = v1 - v0;
      int64_t U = 1;
      while (U < 4 && chains * U < 8 && (chains + bvecs) * (U + 1) + 1 <= isa.registers) ++U;
      for (int64_t u = 1; u < U; ++u)
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t v = v0; v < v1; ++v) s += "    " + V + " " + acc(r, v) + "_" + num(u) + " = {};\n";
      // One k step at ak[u], bk + u * LDB into copy u.
      auto step = [&](int64_t u) {
        const std::string sfx = u == 0 ? "" : "_" + num(u);
        const std::string row = u == 0 ? "bk" : "bk + " + num(u) + " * " + ldb_s;
        for (int64_t v = v0; v < v1; ++v) {
          const std::string at = row + " + " + num(v * L), bv = "b" + num(v) + sfx;
          if (v == nv - 1 && masked)
            s += "      const " + V + " " + bv + " = " + tail_load(at) + ";\n";
          else if (v == nv - 1 && tail < L && b_rows)  // past the tail may be past the tensor
            s += "      " + V + " " + bv + " = {}; __builtin_memcpy(&" + bv + ", " + at + ", " +
                 num(tail * esize) + ");\n";
          else if (v == nv - 1 && tail < L)
            s += "      const " + V + " " + bv + " = (" + V + ")((tsl_vmask)*(const " + VU + "*)(" + at +
                 ") & tail_lanes);\n";
          else
            s += "      const " + V + " " + bv + " = *(const " + VU + "*)(" + at + ");\n";
        }
        for (int64_t r = r0; r < r1; ++r) {
          // Scalar times vector broadcasts; GCC folds it into the FMA's memory operand.
          const std::string ar = lda == kCpuRuntimeLd ? "ak[" + num(u) + " + " + num(r) + " * lda]"
                                                      : "ak[" + num(u + r * lda) + "]";
          for (int64_t v = v0; v < v1; ++v)
            s += "      " + acc(r, v) + sfx + " += " + ar + " * b" + num(v) + sfx + ";\n";
        }
      };
      s += "    const " + T + "* ak = a;\n    const " + T + "* bk = b;\n    int64_t k = 0;\n";
      if (U > 1) {
        s += "    for (; k + " + num(U) + " <= kc; k += " + num(U) + ", ak += " + num(U) + ", bk += " + num(U) +
             " * " + ldb_s + ") {\n";
        for (int64_t u = 0; u < U; ++u) step(u);
        s += "    }\n";
      }
      s += "    for (; k < kc; ++k, ++ak, bk += " + ldb_s + ") {\n";
      step(0);
      s += "    }\n";
      for (int64_t u = 1; u < U; ++u)
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t v = v0; v < v1; ++v) s += "    " + acc(r, v) + " += " + acc(r, v) + "_" + num(u) + ";\n";
      // C in, added (unless the block overwrites C): a partial last vector masked or
      // through a fixed-size memcpy (columns >= NR untouched).
      s += "    if (!overwrite) {\n";
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t v = v0; v < v1; ++v) {
          if (v == nv - 1 && masked)
            s += "    " + acc(r, v) + " += " + tail_load(c_at(r, v)) + ";\n";
          else if (v == nv - 1 && tail < L)
            s += "    { " + V + " c_in = {}; __builtin_memcpy(&c_in, " + c_at(r, v) + ", " + num(tail * esize) +
                 "); " + acc(r, v) + " += c_in; }\n";
          else
            s += "    " + acc(r, v) + " += *(const " + VU + "*)(" + c_at(r, v) + ");\n";
        }
      s += "    }\n";
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t v = v0; v < v1; ++v) {
          if (v == nv - 1 && masked)
            s += "    " + store_mask + "(" + c_at(r, v) + ", " + acc(r, v) + ", " + mask_type + mask + ");\n";
          else if (v == nv - 1 && tail < L)
            s += "    __builtin_memcpy(" + c_at(r, v) + ", &" + acc(r, v) + ", " + num(tail * esize) + ");\n";
          else
            s += "    *(" + VU + "*)(" + c_at(r, v) + ") = " + acc(r, v) + ";\n";
        }
      s += "  }\n";
    }
  s += "}\n";
  return s;
}

void cpu_microkernel_reference(int64_t mr, int64_t nr, int64_t kc, const float* a, int64_t lda,
                               const float* b, int64_t ldb, float* c, int64_t ldc, bool overwrite) {
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j) {
      float s = overwrite ? 0.0f : c[r * ldc + j];
      for (int64_t k = 0; k < kc; ++k) s += a[r * lda + k] * b[k * ldb + j];
      c[r * ldc + j] = s;
    }
}

}  // namespace tessel
