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

bool cpu_microkernel_fits(int64_t ldb, const CpuIsaInfo& isa) {
  return ldb >= isa.lanes && ldb % isa.lanes == 0;
}

std::string cpu_microkernel_name(int64_t mr, int64_t nr, int64_t lda, int64_t ldb) {
  return "tsl_ukr_" + num(mr) + "x" + num(nr) + "_" + num(lda) + "_" + num(ldb);
}

// Accumulators plus the B vectors of a pass must fit the registers; without
// AVX-512's embedded broadcast one more holds the broadcast A element. A block with
// no more loads than FMAs per k (rows + vecs <= rows * vecs: x86 cores load and FMA
// at the same rate) beats one with more; then the most accumulators wins (FMA
// latency is hidden by independent chains), then the fewest loads per FMA.
CpuRegisterBlock cpu_microkernel_blocking(int64_t mr, int64_t nr, const CpuIsaInfo& isa) {
  const int64_t nv = ceil_div(nr, isa.lanes);
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

std::string emit_cpu_microkernel(int64_t mr, int64_t nr, int64_t lda, int64_t ldb, const CpuIsaInfo& isa) {
  TESSEL_ASSERT(mr >= 1 && nr >= 1 && nr <= ldb && cpu_microkernel_fits(ldb, isa),
                "micro-kernel " + num(mr) + "x" + num(nr) + " on a B panel of width " + num(ldb));
  const int64_t L = isa.lanes, nv = ceil_div(nr, L);
  const int64_t tail = nr - (nv - 1) * L;  // floats of the last vector of a row
  const CpuRegisterBlock blk = cpu_microkernel_blocking(mr, nr, isa);
  const int64_t row_chunks = ceil_div(mr, blk.rows), vec_chunks = ceil_div(nv, blk.vecs);
  auto acc = [](int64_t r, int64_t v) { return "c" + num(r) + "_" + num(v); };
  auto c_at = [&](int64_t r, int64_t v) { return "c + " + num(r) + " * ldc + " + num(v * L); };
  std::string s;
  // noinline: inlined into the group function, GCC spills an accumulator.
  s += "__attribute__((noinline)) static void " + cpu_microkernel_name(mr, nr, lda, ldb) +
       "(int64_t kc, const float* __restrict a, const float* __restrict b,\n"
       "    float* __restrict c, int64_t ldc) {\n";
  for (int64_t rc = 0; rc < row_chunks; ++rc)
    for (int64_t vc = 0; vc < vec_chunks; ++vc) {
      auto [r0, r1] = chunk(mr, row_chunks, rc);
      auto [v0, v1] = chunk(nv, vec_chunks, vc);
      s += "  {\n";
      // C in: a partial last vector through a fixed-size memcpy (columns >= NR untouched).
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t v = v0; v < v1; ++v) {
          if (v == nv - 1 && tail < L)
            s += "    tsl_vf " + acc(r, v) + " = {}; __builtin_memcpy(&" + acc(r, v) + ", " + c_at(r, v) +
                 ", " + num(tail * 4) + ");\n";
          else
            s += "    tsl_vf " + acc(r, v) + " = *(const tsl_vfu*)(" + c_at(r, v) + ");\n";
        }
      s += "    const float* ak = a;\n    const float* bk = b;\n";
      s += "    for (int64_t k = 0; k < kc; ++k, ++ak, bk += " + num(ldb) + ") {\n";
      for (int64_t v = v0; v < v1; ++v)
        s += "      const tsl_vf b" + num(v) + " = *(const tsl_vfu*)(bk + " + num(v * L) + ");\n";
      for (int64_t r = r0; r < r1; ++r) {
        // Scalar times vector broadcasts; GCC folds it into the FMA's memory operand.
        const std::string ar = "ak[" + num(r * lda) + "]";
        for (int64_t v = v0; v < v1; ++v) s += "      " + acc(r, v) + " += " + ar + " * b" + num(v) + ";\n";
      }
      s += "    }\n";
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t v = v0; v < v1; ++v) {
          if (v == nv - 1 && tail < L)
            s += "    __builtin_memcpy(" + c_at(r, v) + ", &" + acc(r, v) + ", " + num(tail * 4) + ");\n";
          else
            s += "    *(tsl_vfu*)(" + c_at(r, v) + ") = " + acc(r, v) + ";\n";
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
