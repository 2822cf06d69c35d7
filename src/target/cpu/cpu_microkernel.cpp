#include "target/cpu/cpu_microkernel.h"

#include <algorithm>
#include <iterator>
#include <vector>

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

namespace {

// k steps an iteration of a built-in kernel's loop over k (one accumulator copy):
// 6 x 64 and 12 x 32 over 512^3, 384^3 and 1024x128x256 with A's block rows outside
// and B read in place ran 3-11% faster unrolled by 4 (Xeon, forty-sixth session:
// the loop's increments and branch are fewer of the uops in flight while B's
// lines come from L2), alike with A and B in L1.
constexpr int64_t kBuiltInUnrollK = 4;

// The kernel as a function called `name` (emit_cpu_microkernel).
std::string emit_microkernel_function(int64_t mr, int64_t nr, int64_t lda, int64_t ldb, const CpuIsaInfo& isa,
                                      bool f64, bool built_in, const std::string& name) {
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
  // C's row r: from c, or (built in, where no call site's constant ldc propagates into
  // the kernel) from a pointer per 4 rows of the pass, as A's rows below.
  std::vector<std::string> c_ptrs;
  int64_t c_r0 = 0;
  auto c_row = [&](int64_t r) {
    if (!built_in) return "c + " + num(r) + " * ldc";
    static const char* const offsets[] = {"", " + ldc", " + 2 * ldc", " + ldc3"};
    return c_ptrs[(r - c_r0) / 4] + offsets[(r - c_r0) % 4];
  };
  auto c_at = [&](int64_t r, int64_t v) { return c_row(r) + " + " + num(v * L); };
  // A partial last vector (tail < L) touches only its first `tail` elements: AVX-512
  // masked loads and stores; other ISAs move C through a fixed-size memcpy and
  // clear B's other lanes with an AND, since they may hold anything (a denormal
  // there would cost a microcode assist per FMA).
  const bool masked = tail < L && isa.isa == CpuIsa::Avx512;
  const bool embedded_broadcast = isa.isa == CpuIsa::Avx512 && !f64 && L == 16;
  const std::string mask = num((int64_t{1} << tail) - 1);
  const std::string mask_type = f64 ? "(unsigned char)" : "(unsigned short)";
  const std::string load_mask = f64 ? "__builtin_ia32_loadupd512_mask" : "__builtin_ia32_loadups512_mask";
  const std::string store_mask = f64 ? "__builtin_ia32_storeupd512_mask" : "__builtin_ia32_storeups512_mask";
  auto tail_load = [&](const std::string& ptr) {
    return load_mask + "(" + ptr + ", (" + V + "){}, " + mask_type + mask + ")";
  };
  std::string s;
  // noinline: inlined into the group function, GCC spills an accumulator.
  s += "__attribute__((noinline)) static void " + name + "(int64_t kc, const " +
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
      // Built in, C's row pointers are declared where they are used: in the prefetch
      // block, and after the k loop behind an empty asm that hides c and ldc from GCC.
      // Declared once before the loop, GCC kept them live across it and spilled them
      // to vector registers and the stack, which cost 3% at 32^3 (Zen 4).
      auto declare_c_ptrs = [&](const std::string& indent) {
        c_ptrs.clear();
        c_r0 = r0;
        for (int64_t g = 0; g < ceil_div(r1 - r0, 4); ++g) {
          c_ptrs.push_back("cp" + num(g));
          s += indent + T + "* const cp" + num(g) + " = c + " + num(r0 + 4 * g) + " * ldc;\n";
        }
        if (r1 - r0 >= 4) s += indent + "const int64_t ldc3 = 3 * ldc;\n";
      };
      // The accumulators start at zero and C is added after the k loop: C's cache
      // lines (of a fragment larger than the caches, in a large matrix product) are prefetched
      // here and arrive while the FMAs run, instead of stalling the first ones.
      // Built in, only over a long k loop: over a short one the prefetches cost more
      // than they save (32^3, C in L1: 289 -> 278 ns without them on Zen 5).
      const int64_t line = 64 / esize;  // elements per cache line
      if (built_in) {
        s += "    if (kc >= " + num(kCpuPrefetchCMinK) + ") {\n";
        declare_c_ptrs("      ");
      }
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t e = v0 * L; e < std::min(nr, v1 * L); e += line)
          s += std::string(built_in ? "      " : "    ") + "__builtin_prefetch(" + c_row(r) + " + " + num(e) +
               ", 1);\n";
      if (built_in) s += "    }\n";
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
      // A's rows: immediate offsets from one pointer, ak, or a[r * lda]; built in with
      // a run-time LDA, a pointer per 4 rows of the pass (ap0 for rows r0..r0+3, ...),
      // each row at 0, lda, 2 * lda or lda3 from it (with a row address each GCC ran
      // out of registers for 12 rows and spilled inside the k loop).
      const bool rt_lda = built_in && lda == kCpuRuntimeLd;
      const int64_t groups = rt_lda ? ceil_div(r1 - r0, 4) : 1;
      std::vector<std::string> ptrs;
      for (int64_t g = 0; g < groups; ++g) ptrs.push_back(rt_lda ? "ap" + num(g) : "ak");
      auto a_at = [&](int64_t r, int64_t u) {
        if (lda == kCpuRuntimeLd && !rt_lda) return "ak[" + num(u) + " + " + num(r) + " * lda]";
        if (!rt_lda) return "ak[" + num(u + r * lda) + "]";
        static const char* const offsets[] = {"", " + lda", " + 2 * lda", " + lda3"};
        return ptrs[(r - r0) / 4] + "[" + num(u) + offsets[(r - r0) % 4] + "]";
      };
      auto advance = [&](int64_t n) {
        std::string t;
        for (const std::string& p : ptrs) t += n == 1 ? ", ++" + p : ", " + p + " += " + num(n);
        return t + ", bk += " + (n == 1 ? ldb_s : num(n) + " * " + ldb_s);
      };
      // One k step at k + u (A's column u, B's row u from the pointers) into copy
      // `copy` of the accumulators.
      auto step = [&](int64_t u, int64_t copy) {
        const std::string sfx = copy == 0 ? "" : "_" + num(copy), bsfx = u == 0 ? "" : "_" + num(u);
        const std::string row = u == 0 ? "bk" : "bk + " + num(u) + " * " + ldb_s;
        for (int64_t v = v0; v < v1; ++v) {
          const std::string at = row + " + " + num(v * L), bv = "b" + num(v) + bsfx;
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
          // Scalar times vector broadcasts. GCC folds it into the FMA's memory operand
          // only where one FMA uses the element; where more do, it loads the broadcast
          // into a register first, which cost up to 6% of a kernel alone, depending on
          // how the loop came out (Zen 4; docs/cpu_microkernel.md). So on AVX-512:
          // - a row of several B vectors broadcasts its element once, by an asm that
          //   GCC cannot fold into the FMAs: each {1to16} operand is a load, and 12 x 32
          //   then loaded 26 values for 24 FMAs a k step, more than the Xeon's two
          //   loads a cycle feed (1.12-1.22x faster GEMMs there, forty-fifth session);
          // - a row of one B vector is written with its {1to16} operand, one load
          //   either way;
          // - in a pass of one row every B vector serves one FMA and the loads bound
          //   the loop (Zen 4 loads one 512-bit vector a cycle), so the element is
          //   broadcast once (1x64x32 1.28x, 1x48x40 1.20x, 1x200x50 1.18x faster).
          const bool register_broadcast = embedded_broadcast && r1 - r0 > 1 && v1 - v0 > 1;
          const std::string av = "av" + num(r) + bsfx;
          if (register_broadcast)
            s += "      " + V + " " + av + "; __asm__(\"vbroadcastss %1, %0\" : \"=v\"(" + av + ") : \"m\"(" +
                 a_at(r, u) + "));\n";
          for (int64_t v = v0; v < v1; ++v) {
            const std::string bv = "b" + num(v) + bsfx, c = acc(r, v) + sfx;
            if (register_broadcast)
              s += "      " + c + " += " + av + " * " + bv + ";\n";
            else if (embedded_broadcast && r1 - r0 > 1)
              s += "      __asm__(\"vfmadd231ps %2%{1to16%}, %1, %0\" : \"+v\"(" + c + ") : \"v\"(" + bv +
                   "), \"m\"(" + a_at(r, u) + "));\n";
            else
              s += "      " + c + " += " + a_at(r, u) + " * " + bv + ";\n";
          }
        }
      };
      if (rt_lda) {
        for (int64_t g = 0; g < groups; ++g)
          s += "    const " + T + "* " + ptrs[g] + " = a + " + num(r0 + 4 * g) + " * lda;\n";
        if (r1 - r0 >= 4) s += "    const int64_t lda3 = 3 * lda;\n";
      } else {
        s += "    const " + T + "* ak = a;\n";
      }
      s += "    const " + T + "* bk = b;\n    int64_t k = 0;\n";
      if (U > 1) {
        s += "    for (; k + " + num(U) + " <= kc; k += " + num(U) + advance(U) + ") {\n";
        for (int64_t u = 0; u < U; ++u) step(u, u);
        s += "    }\n";
      }
      // Built in, one accumulator copy's loop runs kBuiltInUnrollK steps an iteration.
      // GCC unrolls it, each step with its own pointer increments; steps written out
      // here with offsets instead left GCC short of registers for the rows' addresses.
      if (built_in && U == 1) s += "#pragma GCC unroll " + num(kBuiltInUnrollK) + "\n";
      s += "    for (; k < kc; ++k" + advance(1) + ") {\n";
      step(0, 0);
      s += "    }\n";
      for (int64_t u = 1; u < U; ++u)
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t v = v0; v < v1; ++v) s += "    " + acc(r, v) + " += " + acc(r, v) + "_" + num(u) + ";\n";
      // C in, added (unless the block overwrites C): a partial last vector masked or
      // through a fixed-size memcpy (columns >= NR untouched).
      if (built_in) {
        s += "    __asm__(\"\" : \"+r\"(c), \"+r\"(ldc));\n";
        declare_c_ptrs("    ");
      }
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

}  // namespace

std::string emit_cpu_microkernel(int64_t mr, int64_t nr, int64_t lda, int64_t ldb, const CpuIsaInfo& isa,
                                 bool f64, bool built_in) {
  return emit_microkernel_function(mr, nr, lda, ldb, isa, f64, built_in, cpu_microkernel_name(mr, nr, lda, ldb, f64));
}

namespace {

// The built-in set for one ISA, in index order: {NR, largest MR}.
constexpr int64_t kPrebuiltShapes[][2] = {{16, 16}, {32, 16}, {48, 8}, {64, 6}};
constexpr CpuIsa kPrebuiltIsas[] = {CpuIsa::Avx2, CpuIsa::Avx512};

int64_t prebuilt_per_isa() {
  int64_t n = 0;
  for (const auto& s : kPrebuiltShapes) n += s[1];
  return n;
}

}  // namespace

// Each ISA's block of the built-in table: its kernels in kPrebuiltShapes order, then
// its window copy.
int cpu_prebuilt_microkernel(int64_t mr, int64_t nr, CpuIsa isa) {
  int64_t at = 0;
  for (CpuIsa i : kPrebuiltIsas) {
    for (const auto& s : kPrebuiltShapes) {
      if (i == isa && s[0] == nr && mr >= 1 && mr <= s[1])
        return at + mr - 1 < cpu_prebuilt_count ? static_cast<int>(at + mr - 1) : -1;
      at += s[1];
    }
    at += 2;  // the copy, the elementwise loop
  }
  return -1;
}

int cpu_prebuilt_copy(CpuIsa isa) {
  int64_t at = 0;
  for (CpuIsa i : kPrebuiltIsas) {
    at += prebuilt_per_isa();
    if (i == isa) return at < cpu_prebuilt_count ? static_cast<int>(at) : -1;
    at += 2;
  }
  return -1;
}

int cpu_prebuilt_elementwise(CpuIsa isa) {
  const int copy = cpu_prebuilt_copy(isa);
  return copy >= 0 && copy + 1 < cpu_prebuilt_count ? copy + 1 : -1;
}

namespace {

// The built-in window copy and elementwise loop of one ISA (cpu_prebuilt_copy,
// cpu_prebuilt_elementwise), in the ISA's namespace of cpu_microkernel_prebuilt.inc:
// its vectors, run-time counts.
const char* kPrebuiltCopy = R"(
// dst = src over rows x cols, fp32 (cpu_microkernel.h: cpu_prebuilt_copy): whole
// windows with unit columns into unit columns or column panels starting on a panel
// in the ISA's vectors, anything else through cpu_copy_guarded.
// n floats: four vectors at a time, then one, then floats (copying a 127 x 193 tile,
// one vector at a time was 6% slower than the unit's inline loop, four 2% faster).
static inline void tsl_copy_run(float* d, const float* s, int64_t n) {
  const int64_t L = (int64_t)(sizeof(tsl_vf) / sizeof(float));
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const tsl_vf v0 = *(const tsl_vfu*)(s + i), v1 = *(const tsl_vfu*)(s + i + L);
    const tsl_vf v2 = *(const tsl_vfu*)(s + i + 2 * L), v3 = *(const tsl_vfu*)(s + i + 3 * L);
    *(tsl_vfu*)(d + i) = v0;
    *(tsl_vfu*)(d + i + L) = v1;
    *(tsl_vfu*)(d + i + 2 * L) = v2;
    *(tsl_vfu*)(d + i + 3 * L) = v3;
  }
  for (; i + L <= n; i += L) *(tsl_vfu*)(d + i) = *(const tsl_vfu*)(s + i);
  for (; i < n; ++i) d[i] = s[i];
}
// The windows' fields as arguments (CpuWindow's order, source then destination):
// the unit builds no structures, which took a tenth of a packing unit's compile.
static void tsl_copy_window(float* sb, int64_t sl, int64_t sld, int64_t scs, int64_t srows, int64_t scols,
                            int64_t spanel, int64_t sr0, int64_t sc0, int64_t srb, int64_t scb, float* db, int64_t dl,
                            int64_t dld, int64_t dcs, int64_t drows, int64_t dcols, int64_t dpanel, int64_t dr0,
                            int64_t dc0, int64_t drb, int64_t dcb, int64_t rows, int64_t cols, float pad) {
  const tessel::CpuWindow sw = {sb, sl, sld, scs, srows, scols, spanel, sr0, sc0, srb, scb};
  const tessel::CpuWindow dw = {db, dl, dld, dcs, drows, dcols, dpanel, dr0, dc0, drb, dcb};
  const tessel::CpuWindow *s = &sw, *d = &dw;
  const bool inside = s->r0 + rows <= s->rb && s->c0 + cols <= s->cb && d->r0 + rows <= d->rb &&
                      d->c0 + cols <= d->cb;
  if (inside && s->layout == 0 && s->cs == 1) {
    const float* from = s->base + s->r0 * s->ld + s->c0;
    if (d->layout == 0 && d->cs == 1) {
      float* to = d->base + d->r0 * d->ld + d->c0;
      for (int64_t r = 0; r < rows; ++r, from += s->ld, to += d->ld) tsl_copy_run(to, from, cols);
      return;
    }
    const int64_t p = d->panel;
    if (d->layout == 1 && d->c0 % p == 0) {
      // Packing into column panels: row by row, each row's panel-wide runs.
      float* to = d->base + (d->c0 / p * d->rows + d->r0) * p;
      for (int64_t r = 0; r < rows; ++r, from += s->ld, to += p)
        for (int64_t c = 0; c < cols; c += p) tsl_copy_run(to + c / p * d->rows * p, from + c, cols - c < p ? cols - c : p);
      return;
    }
  }
  tessel::cpu_copy_guarded(s, d, rows, cols, pad);
}

// d[e] = x[e] (op) y[e] for e < n, fp32 (cpu_microkernel.h: cpu_prebuilt_elementwise):
// op 0 +, 1 -, 2 *, 3 /, 4 x alone; x or y null: the scalar xs or ys at every e. In
// the ISA's vectors, then one float at a time; d may be x or y.
#define TSL_EW_LOOPS(A, B, VA, VB)                                                    \
  switch (op) {                                                                       \
    case 0: TSL_EW_LOOP(A + B, VA + VB) break;                                        \
    case 1: TSL_EW_LOOP(A - B, VA - VB) break;                                        \
    case 2: TSL_EW_LOOP(A * B, VA * VB) break;                                        \
    case 3: TSL_EW_LOOP(A / B, VA / VB) break;                                        \
    default: TSL_EW_LOOP(A, VA) break;                                                \
  }
#define TSL_EW_LOOP(F, V)                                                             \
  {                                                                                   \
    int64_t e = 0;                                                                    \
    for (; e + L <= n; e += L) *(tsl_vfu*)(d + e) = V;                                \
    for (; e < n; ++e) d[e] = F;                                                      \
  }
static void tsl_elementwise(int64_t op, float* d, const float* x, float xs, const float* y, float ys, int64_t n) {
  const int64_t L = (int64_t)(sizeof(tsl_vf) / sizeof(float));
  const tsl_vf vxs = (tsl_vf){} + xs, vys = (tsl_vf){} + ys;
  if (x && y) {
    TSL_EW_LOOPS(x[e], y[e], *(const tsl_vfu*)(x + e), *(const tsl_vfu*)(y + e))
  } else if (x) {
    TSL_EW_LOOPS(x[e], ys, *(const tsl_vfu*)(x + e), vys)
  } else if (y) {
    TSL_EW_LOOPS(xs, y[e], vxs, *(const tsl_vfu*)(y + e))
  } else {
    TSL_EW_LOOPS(xs, ys, vxs, vys)
  }
}
#undef TSL_EW_LOOP
#undef TSL_EW_LOOPS
)";

}  // namespace

std::string emit_cpu_prebuilt_source() {
  // Each ISA's kernels as the unit of that ISA has them (cpu_vector_types and the
  // emitted function), in a namespace of their own, compiled for the ISA as the JIT
  // compiles a unit (-ffp-contract=fast; the JIT's -mtune=native is left out: the
  // library may run on another CPU than the one that built it).
  const char* target[] = {"arch=x86-64-v3", "arch=x86-64-v4,prefer-vector-width=512"};
  std::string s =
      "// Generated by emit_cpu_prebuilt_source (cpu_microkernel.h): the fp32 micro-kernels\n"
      "// built into tessel, included by cpu_support.cpp (so that every library with the\n"
      "// support table has them). Do not edit; TESSEL_UPDATE_GOLDEN=1 test_cpu rewrites it.\n"
      "#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)\n";
  std::string table;
  for (size_t i = 0; i < std::size(kPrebuiltIsas); ++i) {
    const CpuIsaInfo& isa = cpu_isa_info(kPrebuiltIsas[i]);
    const std::string ns = std::string("tessel_prebuilt_") + isa.name;
    s += "\n#pragma GCC push_options\n#pragma GCC target(\"" + std::string(target[i]) +
         "\")\n#pragma GCC optimize(\"fp-contract=fast,no-tree-loop-distribute-patterns\")\nnamespace " + ns + " {\n" + cpu_vector_types(isa);
    for (const auto& shape : kPrebuiltShapes)
      for (int64_t mr = 1; mr <= shape[1]; ++mr) {
        s += "\n" + emit_cpu_microkernel(mr, shape[0], kCpuRuntimeLd, kCpuRuntimeLd, isa, false, true);
        table += "    reinterpret_cast<void*>(&" + ns + "::" +
                 cpu_microkernel_name(mr, shape[0], kCpuRuntimeLd, kCpuRuntimeLd) + "),\n";
      }
    s += kPrebuiltCopy;
    table += "    reinterpret_cast<void*>(&" + ns + "::tsl_copy_window),\n";
    table += "    reinterpret_cast<void*>(&" + ns + "::tsl_elementwise),\n";
    s += "}  // namespace " + ns + "\n#pragma GCC pop_options\n";
  }
  const std::string count = num((prebuilt_per_isa() + 2) * int64_t(std::size(kPrebuiltIsas)));
  s += "\nnamespace tessel {\nvoid* const cpu_prebuilt_microkernels[] = {\n" + table + "};\nconst int cpu_prebuilt_count = " +
       count + ";\n}  // namespace tessel\n"
       "#else\nnamespace tessel {\nvoid* const cpu_prebuilt_microkernels[] = {nullptr};\n"
       "const int cpu_prebuilt_count = 0;\n}  // namespace tessel\n#endif\n";
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
