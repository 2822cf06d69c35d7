// The `cpu` mma atom: a register-blocked micro-kernel (BLIS's structure), emitted
// as a static function of the translation unit.
//
// Contract of  tsl_ukr_<MR>x<NR>_<LDA>(kc, a, b, c, ldc):
//   operation   C[0:MR, 0:NR] += A[0:MR, 0:kc] * B[0:kc, 0:NR]      (fp32, FMA)
//   A           row-major with a compile-time leading dimension LDA (the shared A
//               staging buffer, BM x BK): A(r, k) = a[r * LDA + k]. Each A element
//               is broadcast (an embedded broadcast operand of the FMA).
//   B           one k-major panel of NR columns (a ColPanels panel of the shared B
//               staging buffer with panel == NR): B(k, j) = b[k * NR + j].
//                 b: | k=0: j0 .. j(NR-1) | k=1: j0 .. j(NR-1) | ...
//   C           row-major, runtime leading dimension: C(r, j) = c[r * ldc + j]
//               (the acc fragment's part); loaded into MR * NR/16 zmm registers,
//               updated over all of kc, stored back once.
//   edges       none: the caller calls it on full MR x NR blocks only and handles
//               the leftover rows and columns of a fragment part with a scalar loop.
//               kc may be anything >= 0 (ragged K is zero-filled by the copies).
//   alignment   none required (unaligned vector loads and stores).
//   beta        not this kernel's business: it always accumulates; the epilogue
//               (FragLoad / Elementwise / FragStore) applies alpha and beta.
// Usable when NR is a multiple of 16 and the MR * NR/16 accumulators plus the
// NR/16 B vectors fit in the 32 zmm registers (12x32: 26, 14x32: 30).
#pragma once
#include <cstdint>
#include <string>

namespace tessel {

bool cpu_microkernel_fits(int64_t mr, int64_t nr);
std::string cpu_microkernel_name(int64_t mr, int64_t nr, int64_t lda);
std::string emit_cpu_microkernel(int64_t mr, int64_t nr, int64_t lda);

}  // namespace tessel
