// The `cpu` mma atom: a register-blocked micro-kernel (BLIS's structure), emitted
// as a static function of the translation unit for the ISA's vector width
// (cpu_isa.h). docs/cpu_microkernel.md has the contract with diagrams; in short:
//
// Contract of  tsl_ukr_<MR>x<NR>_<LDA>_<LDB>(kc, a, b, c, ldc, overwrite):
//   operation   C[0:MR, 0:NR] += A[0:MR, 0:kc] * B[0:kc, 0:NR]      (fp32, FMA)
//               overwrite != 0: C[0:MR, 0:NR] = A * B, C not read (the first k block
//               of an accumulator that was zero: its fill and its reads are saved)
//   f64         tsl_ukr_d_...: the same on double (A, B and C all f64), in vectors of
//               half as many lanes (its vector types are local to the function, so
//               units without an f64 product are unchanged).
//   A           row-major with a compile-time leading dimension LDA (the shared A
//               staging buffer, BM x BK): A(r, k) = a[r * LDA + k]. Each A element
//               is broadcast (on AVX-512 an embedded broadcast operand of the FMA).
//   B           k-major with compile-time row stride LDB (a ColPanels panel of the
//               shared B staging buffer, LDB = the panel width): B(k, j) = b[k * LDB + j].
//                 b: | k=0: j0 .. j(LDB-1) | k=1: j0 .. j(LDB-1) | ...
//               A partial last vector uses only columns < NR: an AVX-512 masked
//               load, else a whole vector ANDed with a lane mask (the columns up to
//               round_up(NR, lanes) must be readable: LDB is a multiple of the lane
//               count, cpu_microkernel_fits), so whatever lies past NR never enters
//               an FMA.
//   C           row-major, runtime leading dimension: C(r, j) = c[r * ldc + j] (the
//               acc fragment's part, or the tensor window the fragment lives in:
//               cpu_emit.cpp, find_homes); held in registers over all of kc, loaded and
//               stored once. Columns >= NR are neither read nor written: a partial
//               last vector moves through AVX-512 masked moves or a fixed-size memcpy
//               (the edge kernels).
//   blocking    when the MR x NR accumulators and the B vectors do not fit the ISA's
//               registers, the block is computed in register sub-blocks, each a pass
//               over kc (cpu_microkernel_blocking). A sub-block of fewer than 8
//               accumulators splits kc over up to 4 copies of them (FMA latency).
//   edges       the caller uses full MR x NR blocks where it can, and edge kernels
//               (smaller MR or NR, same LDA and LDB) for the rest of a fragment part.
//               kc may be anything >= 0 (ragged K is zero-filled by the copies).
//   alignment   none required (unaligned vector loads and stores).
//   beta        not this kernel's business: it accumulates into (or overwrites) the
//               fragment; the epilogue (FragLoad / Elementwise / FragStore) applies
//               alpha and beta.
// cpu_microkernel_reference below is the same operation as plain loops; the tests
// compare the two.
#pragma once
#include <cstdint>
#include <string>

#include "target/cpu/cpu_isa.h"

namespace tessel {

// The unit's vector types for the ISA: tsl_vf (one register of fp32 lanes) and
// tsl_vfu (the same, unaligned in memory), and int64_t; the micro-kernel uses them.
std::string cpu_vector_types(const CpuIsaInfo& isa);

// A B panel of width `ldb` can feed the micro-kernel: whole vectors of it are readable.
// f64: the double kernel (half the lanes a vector).
bool cpu_microkernel_fits(int64_t ldb, const CpuIsaInfo& isa, bool f64 = false);
std::string cpu_microkernel_name(int64_t mr, int64_t nr, int64_t lda, int64_t ldb, bool f64 = false);
// LDA and LDB as run-time arguments instead (Plan::direct: A and B read in place
// from tensors, B row-major): tsl_ukr_<MR>x<NR>_s_s(kc, a, b, c, ldc, lda, ldb, overwrite).
// B's partial last vector is then read only up to NR (a masked load, or a memcpy
// without AVX-512): what lies past it may lie past the tensor.
constexpr int64_t kCpuRuntimeLd = -1;
// The emitted function (fp32: uses the unit's tsl_vf / tsl_vfu vector types; f64
// declares its own).
// built_in: for cpu_microkernel_prebuilt.inc, compiled without the call sites (no
// constant ldc or LDA propagates into it) and with no compile time to save: A's rows
// (run-time LDA) and C's from a pointer per 4 rows, the k loop unrolled by GCC, and C's
// prefetches only where kc >= kCpuPrefetchCMinK (docs/cpu_microkernel.md).
std::string emit_cpu_microkernel(int64_t mr, int64_t nr, int64_t lda, int64_t ldb, const CpuIsaInfo& isa,
                                 bool f64 = false, bool built_in = false);

// The fp32 micro-kernels built into tessel instead of into each unit (a cold compile
// spent about 18 ms of the compiler's time on each kernel it emitted): the `_s_s`
// form (LDA and LDB run-time arguments) for MR x NR with NR a multiple of 16, which
// is a whole number of vectors on every ISA: NR 16 and 32 with MR 1..16, NR 48 with
// MR 1..8, NR 64 with MR 1..6 (the blocks of the atoms 12x32, 14x32, 8x48, 6x64 and
// their edges), for AVX2 and AVX-512 (SSE units emit theirs). The emitter calls one
// where the mma's k extent is at least kCpuPrebuiltMinK. On the Xeon of the
// fourteenth session a built-in kernel (emitted with built_in, below; then k unrolled
// by two) ran as fast as the emitted one with its compile-time LDA from k = 64, and
// slower below (32^3: 0.96 -> 0.87x OpenBLAS); on the Zen 5 of the seventeenth
// session it ran alike at every k (32^3 0.99, 48^3 0.95, 77x45x29 1.13, 96x33x17 1.05,
// 32x48x32 0.97: within the noise), and each kernel left out of a unit saves its cold
// compile about 18 ms on the Xeon and more there (32^3 173 -> 42 ms with the small
// elementwise loops below built in too): so from k = 1 (docs/cpu_microkernel.md). The
// source is
// src/target/cpu/cpu_microkernel_prebuilt.inc, written by emit_cpu_prebuilt_source
// (tests/cpu/cpu_support_test.cpp checks that the file is what it returns;
// TESSEL_UPDATE_GOLDEN=1 test_cpu rewrites it), each ISA's part compiled for that ISA
// (#pragma GCC target) and called only on a CPU that has it; cpu_support.cpp includes
// it, so that the libraries that hand units the support table (tessel, and
// libtessel_blas.so, whose units were emitted at build time) have them. Where the
// file's kernels are left out (a compiler other than GCC, or not x86-64) every
// kernel is emitted.
constexpr int64_t kCpuPrebuiltMinK = 1;
// A built-in kernel prefetches C's lines (for the stores after its k loop) only when
// kc is at least this.
constexpr int64_t kCpuPrefetchCMinK = 64;
//
// Index of the kernel in cpu_prebuilt_microkernels, or -1 when it is not built in.
int cpu_prebuilt_microkernel(int64_t mr, int64_t nr, CpuIsa isa);
// The same file has a window copy per ISA, which the emitter calls for an fp32
// transfer of at least kCpuPrebuiltCopyFloats elements between a source with unit
// columns and a destination with unit columns or column panels starting on a panel
// (the layouts it would copy inline in the ISA's vectors):
//   void (*)(<src's CpuWindow fields>, <dst's CpuWindow fields>, int64_t rows, int64_t cols, float pad)
// (the 11 fields of each window in CpuWindow's order: the unit builds no structure)
// with cpu_copy_guarded's contract (cpu_support.h); a window wholly inside its bounds is
// copied in the ISA's vectors, anything else by cpu_copy_guarded. One call replaces
// the unit's bounds check, its inline loop and its guarded call (with its windows):
// about a third of the compile time of a packing unit's group function. Until the
// seventeenth session a transfer below 4096 elements stayed inline; but then a small
// product's unit, whose fill, scales and C copies run only for ragged tiles or alpha
// != 1 or beta != 0, kept element loops and compiled at -O2 (32^3: 173 ms, 42 ms
// without). Its index, or -1.
constexpr int64_t kCpuPrebuiltCopyFloats = 1;
int cpu_prebuilt_copy(CpuIsa isa);
// And an elementwise loop per ISA, which the emitter calls for a flat fp32 +, -, *,
// / or copy over fragments and fp32 scalars of at least kCpuPrebuiltCopyFloats
// elements, and for a fill of that size (the loops took a fifth of a packing unit's
// compile):
//   void (*)(int64_t op, float* d, const float* x, float xs, const float* y, float ys, int64_t n)
//   d[e] = x[e] (op) y[e] for e < n; op 0 +, 1 -, 2 *, 3 /, 4 x alone; x or y null:
//   the scalar xs or ys at every e; d may be x or y (element e is read before it is
//   written, each once). Its index, or -1.
int cpu_prebuilt_elementwise(CpuIsa isa);
// The built-in functions in index order (a kernel: void (*)(int64_t kc, const float*
// a, const float* b, float* c, int64_t ldc, int64_t lda, int64_t ldb, int overwrite)),
// and how many there are (0 where they are left out).
extern void* const cpu_prebuilt_microkernels[];
extern const int cpu_prebuilt_count;
// The text of cpu_microkernel_prebuilt.inc.
std::string emit_cpu_prebuilt_source();

// One pass's register block: `rows` x `vecs` accumulators.
struct CpuRegisterBlock {
  int64_t rows = 0, vecs = 0;
};
CpuRegisterBlock cpu_microkernel_blocking(int64_t mr, int64_t nr, const CpuIsaInfo& isa, bool f64 = false);

// The reference: the contract's operation in scalar loops (fp32 accumulation in the
// same k order per element, so results agree to rounding of the FMA contraction).
void cpu_microkernel_reference(int64_t mr, int64_t nr, int64_t kc, const float* a, int64_t lda,
                               const float* b, int64_t ldb, float* c, int64_t ldc, bool overwrite = false);

}  // namespace tessel
