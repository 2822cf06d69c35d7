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
  return std::string(f64 ? "tsl_ukr_d_" : "tsl_ukr_") + num(mr) + "x" + num(nr) + "_" + num(lda) + "_" + num(ldb);
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
  TESSEL_ASSERT(mr >= 1 && nr >= 1 && nr <= ldb && cpu_microkernel_fits(ldb, isa, f64),
                "micro-kernel " + num(mr) + "x" + num(nr) + " on a B panel of width " + num(ldb));
  const int64_t L = lanes_of(isa, f64), nv = ceil_div(nr, L);
  const int64_t tail = nr - (nv - 1) * L;  // elements of the last vector of a row
  const int64_t esize = f64 ? 8 : 4;
  const std::string T = f64 ? "double" : "float", V = f64 ? "tsl_vd" : "tsl_vf", VU = f64 ? "tsl_vdu" : "tsl_vfu";
  const CpuRegisterBlock blk = cpu_microkernel_blocking(mr, nr, isa, f64);
  const int64_t row_chunks = ceil_div(mr, blk.rows), vec_chunks = ceil_div(nv, blk.vecs);
  auto acc = [](int64_t r, int64_t v) { return "c" + num(r) + "_" + num(v); };
  auto c_at = [&](int64_t r, int64_t v) { return "c + " + num(r) + " * ldc + " + num(v * L); };
  std::string s;
  // noinline: inlined into the group function, GCC spills an accumulator.
  s += "__attribute__((noinline)) static void " + cpu_microkernel_name(mr, nr, lda, ldb, f64) + "(int64_t kc, const " +
       T + "* __restrict a, const " + T + "* __restrict b,\n    " + T + "* __restrict c, int64_t ldc) {\n";
  if (f64)
    s += "  typedef double tsl_vd __attribute__((vector_size(" + num(isa.lanes * 4) +
         ")));\n  typedef double tsl_vdu __attribute__((vector_size(" + num(isa.lanes * 4) + "), aligned(8)));\n";
  for (int64_t rc = 0; rc < row_chunks; ++rc)
    for (int64_t vc = 0; vc < vec_chunks; ++vc) {
      auto [r0, r1] = chunk(mr, row_chunks, rc);
      auto [v0, v1] = chunk(nv, vec_chunks, vc);
      s += "  {\n";
      // C in: a partial last vector through a fixed-size memcpy (columns >= NR untouched).
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t v = v0; v < v1; ++v) {
          if (v == nv - 1 && tail < L)
            s += "    " + V + " " + acc(r, v) + " = {}; __builtin_memcpy(&" + acc(r, v) + ", " + c_at(r, v) +
                 ", " + num(tail * esize) + ");\n";
          else
            s += "    " + V + " " + acc(r, v) + " = *(const " + VU + "*)(" + c_at(r, v) + ");\n";
        }
      s += "    const " + T + "* ak = a;\n    const " + T + "* bk = b;\n";
      s += "    for (int64_t k = 0; k < kc; ++k, ++ak, bk += " + num(ldb) + ") {\n";
      for (int64_t v = v0; v < v1; ++v)
        s += "      const " + V + " b" + num(v) + " = *(const " + VU + "*)(bk + " + num(v * L) + ");\n";
      for (int64_t r = r0; r < r1; ++r) {
        // Scalar times vector broadcasts; GCC folds it into the FMA's memory operand.
        const std::string ar = "ak[" + num(r * lda) + "]";
        for (int64_t v = v0; v < v1; ++v) s += "      " + acc(r, v) + " += " + ar + " * b" + num(v) + ";\n";
      }
      s += "    }\n";
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t v = v0; v < v1; ++v) {
          if (v == nv - 1 && tail < L)
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
                               const float* b, int64_t ldb, float* c, int64_t ldc) {
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j) {
      float s = c[r * ldc + j];
      for (int64_t k = 0; k < kc; ++k) s += a[r * lda + k] * b[k * ldb + j];
      c[r * ldc + j] = s;
    }
}

}  // namespace tessel
