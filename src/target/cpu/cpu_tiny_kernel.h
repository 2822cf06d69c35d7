// The `cpu` mma atom for a whole small product read in place (Plan::direct, one
// worker), emitted into the unit and inlined into its group function, so that the
// call of a few hundred FMAs is one function without a call inside it. A built-in
// kernel (cpu_microkernel.h) or edge block (cpu_support.h) costs a call, a frame,
// its stack arguments and its run-time lane mask; at 4x4x4 the edge block was 41% of
// a prepared call and the group function around it 15% (docs/cpu_microkernel.md).
//
// Contract of  tsl_tiny_<R>x<N>x<K>(a, b, c, ldc, lda, ldb, overwrite), and of the dense
//              tsl_tiny_<R>x<N>x<K>_dense[_ldb<S>](a, b, c, ldc, overwrite):
//   operation   C[0:R, 0:N] += A[0:R, 0:K] * B[0:K, 0:N]   (fp32, FMA)
//               overwrite != 0: C = A * B, C not read
//   A           A(r, k) = a[r * lda + k], each element broadcast
//   B           B(k, j) = b[k * ldb + j], read by rows: whole 16-lane vectors, then
//               the narrowest of 4, 8 or 16 lanes that holds the rest (V vectors in
//               all), an AVX-512 masked load where the rest does not fill it, so
//               nothing past column N - 1 is read
//   C           C(r, j) = c[r * ldc + j]; nothing past column N - 1 is read or written
//   registers   R x V accumulators (at most 30), in cpu_accumulator_copies (cpu_support.h) copies
//               (at most K) that split k, summed before the store; k written out up
//               to kCpuTinyUnrolledFmas vector FMAs (every kernel but dense ones)
//   extents     R, N and K are the exact extents (compile-time constants); the caller
//               checks that the valid part is the whole block.
//   strides     any, unless dense (cpu_tiny_kernel_dense): then A's and B's rows lie
//               one after another (lda = K, ldb = N, or S for a block of wider rows:
//               the unit checks this at run time, and other strides take the kernel
//               of any strides or the general body); the kernel holds them as
//               constants, so that each element is a constant offset from one
//               pointer, and takes no stride arguments: with them, overwrite was a
//               seventh argument, on the stack.
//   inlining    inlined into each caller, unless cpu_tiny_kernel_dense: then a
//               function of its own that both homes' bodies call, where inlined
//               twice it added about 15 ms to a cold compile (28x12x11: 86 -> 70 ms
//               on the sixty-sixth session's Xeon) for 1-3% of the call.
//   form        one asm statement, its registers named, ending in vzeroupper where
//               it used ymm or zmm registers; a dense kernel is the same asm as a
//               function defined at the top level (a hidden symbol, its arguments in
//               the ABI's registers), which GCC passes to the assembler without
//               compiling a function around it (2-4 ms of a cold compile with
//               several kernels, the seventieth session). In C with GCC's vector extensions GCC
//               spent about 10 ms of a cold compile on each kernel, and 12 more on the
//               first (16x12x11's unit 75 -> 50 ms, 39x12x11's 92 -> 64, at the same
//               speed or faster; docs/cpu_microkernel.md, the sixty-eighth session).
// AVX-512 (F and VL) only: the masks need it. cpu_microkernel_reference
// (cpu_microkernel.h) is the same operation as plain loops; the tests compare them.
#pragma once
#include <cstdint>
#include <string>

#include "target/cpu/cpu_isa.h"

namespace tessel {

// Whether an R x N x K product takes the tiny kernel on this ISA: AVX-512, at most
// kCpuTinyAccumulators accumulators (R x V) and kCpuTinyFmas vector FMAs (R x V x K);
// or a dense kernel of kCpuTinyOneVectorRows rows where a row is one vector (N <= 16),
// else of 14, 9 or 6 rows of 2, 3 or 4 vectors past kCpuStripMaxK k (the registers
// hold them), up to kCpuTinyTallFmas. Rows of one vector past 16 ran as a block of 16
// rows and one of the rest (two calls); the tiny kernel was 1.1-2.5x faster on 17 to
// 30 rows.
// Rows of two vectors past 16 accumulators were not (12x24x10 0.94x against the 12x32
// kernel), and 30 leaves registers for B's vector and no spill
// (docs/cpu_microkernel.md). Up to 2048 FMAs the tiny kernel ran 1.01x the blocks it
// would replace (geometric mean of 14 shapes, Zen 4, the fifty-fifth session), and its
// unit took about 15 ms more to compile.
constexpr int64_t kCpuTinyAccumulators = 16;
constexpr int64_t kCpuTinyOneVectorRows = 30;
constexpr int64_t kCpuTinyFmas = 256;
// Up to this many rows the kernel takes the tensors' strides as they come. Past it,
// with run-time strides, GCC ran out of general registers (a pointer per 4 rows,
// three multiples of lda) and reloaded them before each FMA (Zen 4, constant against run-time
// strides: 30x3x8 1.31x, 29x5x8 1.52x, 17x7x15 1.10x; 20x12x12 and 24x16x10 0.94x,
// within the noise).
constexpr int64_t kCpuTinyStrideRows = 16;
// Rows of one vector take the kernel up to this many FMAs, where it has constant
// strides (cpu_tiny_kernel_dense): on the Xeon of the sixty-sixth session 1.07-1.21x
// the edge blocks they replace past 16 rows (28x13x60 1.21x, 26x10x250 1.20x,
// 17x12x110 1.08x), and in the sixty-seventh 1.03-1.20x at 16 rows or fewer (13x14x25
// 1.13x, 16x12x100 1.09x, 8x8x40 1.20x), which with run-time strides had run 0.91-1.02x
// (16x12x100 0.91x). The cost: such a unit compiled in 57-72 ms instead of 35-47, and
// since the kernels are asm in 50-55 (13x14x25 51, 21x10x110 53).
constexpr int64_t kCpuTinyTallFmas = 8192;
// Dense kernels hold rows of at most this many vectors (64 columns). Rows of 2 to 4
// vectors ran as edge blocks of the same heights, their A reads indexed and k in a
// loop; dense kernels ran them 1.06-1.20x faster on the sixty-eighth session's Xeon
// (48x44x13 1.16x, 66x42x9 1.16x, 60x24x20 1.19x, 180x50x7 1.20x, 300x48x30 1.06x),
// 32^3 1.00-1.05x, 8x32x17 and 5x64x100 1.01x. Not at k <= kCpuStripMaxK, where the
// strips run them. Their units compile in 49-65 ms instead of 31-39 (48x44x13 49,
// 32^3 58, 66x42x9 65), 300x48x30 in 101 instead of 43.
constexpr int64_t kCpuTinyDenseVectors = 4;
// The widest dense kernel's columns: a block's width for wider rows (cpu_tiny_tiling).
constexpr int64_t kCpuTinyBlockCols = 16 * kCpuTinyDenseVectors;
// Up to this many vector FMAs the k steps are written out, not looped.
constexpr int64_t kCpuTinyUnrolledFmas = 512;
bool cpu_tiny_kernel_fits(int64_t r, int64_t n, int64_t k, const CpuIsaInfo& isa);
// From this many rows a product that fits a kernel of any strides is also given a
// dense one, which the unit calls where the strides are dense (emit_mma): each A read
// is a constant offset from one pointer, where the other form indexes it by lda. On
// the sixty-ninth session's Xeon, rows of one vector ran 1.01-1.18x (5x8x30 1.18x,
// 12x9x16 1.12x, 4x16x16 1.10x, 14x13x7 1.10x, 9x15x9 1.09x, 16x16x16 1.01x), rows
// of several 0.97-1.03x (4x32x8, 6x20x10, 4x40x6, 7x24x5). Below it, from
// kCpuTinyDenseFmas FMAs: once the leaves took their operands in registers (the
// seventy-first session) 2x26x15 and 2x33x12 ran 1.08x, 3x4x5 and 3x14x14 1.06x,
// 2x16x8 1.04x, 3x28x13 and 3x29x2 0.98-0.99x; with fewer, the jump to the dense
// kernel costs more than its indexing saves (1x7x1 0.83x, 2x2x3 0.96x), and the
// kernel of any strides is inlined into the leaf.
constexpr int64_t kCpuTinyDenseRows = 4;
constexpr int64_t kCpuTinyDenseFmas = 8;
// Whether the R x N x K product fits a kernel of any strides: at most
// kCpuTinyStrideRows rows, kCpuTinyAccumulators accumulators and kCpuTinyFmas FMAs.
bool cpu_tiny_kernel_strided(int64_t r, int64_t n, int64_t k);
// Whether the R x N x K kernel holds A's and B's strides as constants (the contract's
// strides, inlining and form): where it fits no kernel of any strides, or from
// kCpuTinyDenseRows rows or kCpuTinyDenseFmas FMAs. Its name says so
// (cpu_tiny_kernel_name).
bool cpu_tiny_kernel_dense(int64_t r, int64_t n, int64_t k);
// The chunks of rows an R x N x K product takes the tiny kernel in: 1 where it fits
// one; for rows of at most kCpuTinyDenseVectors vectors that do not, the fewest
// near-equal chunks that hold them (cpu_tiny_kernel_fits' rows), where each fits and
// there are at most kCpuTinyRowChunks; else 0. Rows of several vectors not where a
// narrow strip runs them (cpu_edge_narrow_strip: 200x28x11 0.91x).
// Such rows ran as edge blocks of 24 rows and the rest, whose A reads are indexed, or
// as strips; chunks of tiny kernels ran them 1.05-1.44x faster (39x12x11 1.25x,
// 137x10x30 1.19x, 268x8x64 1.16x, 109x4x1 1.44x) and the strips of k 6 to 24 about
// as fast (0.93-1.10x); 31 to 33 rows in chunks of 15 to 17 1.04-1.18x. Not where
// cpu_edge_dot_columns holds: there the dot products ran faster (123x3x41 0.81x).
// Their unit compiled in 64-97 ms instead of 36-39 (a chunk size or two: a function
// each), and since the kernels are asm in 57-64 (137x10x30, 39x12x11). More chunks
// for k past kCpuTinyTallFmas (250x9x423 in chunks of 17 and 18 rows) ran no faster
// than the edge blocks and took 129 ms to compile against 44. At most 16 chunks until
// the sixty-eighth session; 600x16x10's 20 ran 1.30x the edge blocks.
constexpr int64_t kCpuTinyRowChunks = 64;
int64_t cpu_tiny_row_chunks(int64_t r, int64_t n, int64_t k, const CpuIsaInfo& isa);

// How a product of more than kCpuTinyDenseVectors vectors a row takes tiny kernels:
// in blocks of kCpuTinyBlockCols columns (the last the rest), each block's rows in
// the chunks of the 4-vector kernel's rows; a call a chunk and block, at most
// kCpuTinyBlockCalls. Past kCpuStripMaxK up to kCpuTinyBlocksMaxK, not where
// cpu_edge_dot_columns holds. The kernels are dense, B's stride N
// (cpu_tiny_kernel_name's ldb). They ran 1.03-1.26x
// the 12x32 kernel's blocks on the sixty-eighth session's Xeon (80x173x9 1.26x,
// 128x128x16 1.17x, 28x137x13 1.14x, 41x142x22 1.03x; 60x125x32 1.01-1.11x,
// 256x174x20 0.95-0.99x), and their units compile in 67-113 ms instead of 38-50. At
// longer k they gained less (128^3 1.02x, 96x192x200 1.03x) for twice the cold
// compile (128^3 42 -> 96 ms), so they stop at kCpuTinyBlocksMaxK.
// Narrower products: one block, in cpu_tiny_row_chunks. No tiny kernels: {0, 0}.
struct CpuTinyTiling {
  int64_t col_blocks, row_chunks;
};
constexpr int64_t kCpuTinyBlockCalls = 128;
constexpr int64_t kCpuTinyBlocksMaxK = 48;
CpuTinyTiling cpu_tiny_tiling(int64_t r, int64_t n, int64_t k, const CpuIsaInfo& isa);

// The kernel's name; a dense kernel's B stride ldb (0: N) where it is not N.
// `strided`: the kernel of any strides, for a product that has both forms
// (cpu_tiny_kernel_strided); else the form cpu_tiny_kernel_dense says.
std::string cpu_tiny_kernel_name(int64_t r, int64_t n, int64_t k, int64_t ldb = 0, bool strided = false);
// The kernel's definition, using only the unit's int64_t: a static inline function,
// or where dense a hidden function in top-level asm, declared for C; a dense kernel
// reads B's rows ldb apart (0: N).
std::string emit_cpu_tiny_kernel(int64_t r, int64_t n, int64_t k, int64_t ldb = 0, bool strided = false);

}  // namespace tessel
