// Code that every unit the cpu emitter writes may call but none needs inlined,
// compiled once into tessel instead of into each kernel (the guarded copy alone
// took about a third of the -O2 compile of a matrix-product unit).
//
// The ABI between tessel and an emitted unit: the unit exports
//   extern "C" void tessel_bind(void* const* table);
// which the JIT calls once after dlopen with cpu_support_table(); entry i of the
// table is the function the unit's prelude declares at index i (cpu_emit.cpp). The
// table's order and each function's signature are part of the unit's source, so a
// change to them changes every kernel's cache key: the unit names each entry it binds
// (its index, and for a micro-kernel its MR x NR, are in the source) and declares
// each signature.
//
//   entry 0       cpu_copy_guarded (below)
//   entry 1       cpu_mma_edge (below)
//   entry 2       cpu_mma_blocks (below)
//   entry 3       cpu_edge_block (below)
//   entry 4       cpu_edge_strip (below)
//   entry 5 + i   cpu_prebuilt_microkernels[i], 0 <= i < cpu_prebuilt_count: the fp32
//                 micro-kernels built into tessel (cpu_microkernel.h), in the index
//                 order of cpu_prebuilt_microkernel(mr, nr, isa)
#pragma once
#include <algorithm>
#include <cstdint>

namespace tessel {

// A window of a buffer (the unit's tsl_win, field for field): layout 0 strided
// (element (r, c) at r * ld + c * cs), 1 column panels, 2 row panels (rows x cols
// with panel width `panel`); (r0, c0) its top-left element; elements at or beyond
// (rb, cb) are outside.
struct CpuWindow {
  float* base;
  int64_t layout, ld, cs, rows, cols, panel, r0, c0, rb, cb;
};

// Entry 0. dst = src over rows x cols (fp32 on both sides): source elements outside
// read as `pad`; destination elements outside are left alone.
void cpu_copy_guarded(const CpuWindow* src, const CpuWindow* dst, int64_t rows, int64_t cols, float pad);

// Entry 1. A block of a matrix product that crosses the edge of the valid part, read
// in place (Plan::direct: what lies past `rows` or `cols` may lie past a tensor):
//   C[0:rows, 0:cols] += A[0:rows, 0:kc] * B[0:kc, 0:cols]      fp32
//   overwrite != 0: C[0:rows, 0:cols] = A * B, C not read
// with A(r, k) = a[r * lda + k], B(k, j) = b[k * ldb + j], C(r, j) = c[r * ldc + j];
// each element one multiply-add at a time in k order (cpu_microkernel_reference's
// operation with run-time sizes), except the columns below. Nothing outside those
// rows and columns is read or written; kc, rows or cols 0 leave C as it was (rows or
// cols) or zero its block (kc with overwrite). On a CPU with AVX-512 it runs in
// vectors, the last one of a row masked (cpu_support.cpp); elsewhere in scalar loops.
// With AVX-512, where cpu_edge_dot_columns(rows, cols, kc), the last cols % 16 columns are
// dot products along k instead: 16 partial sums in k order, then added together.
// With AVX-512 and kc <= kCpuStripMaxK, or cpu_edge_narrow_strip, in strips of every
// row (below).
void cpu_mma_edge(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t lda, int64_t ldb,
                  int64_t rows, int64_t cols, int overwrite);

// The most k at which cpu_mma_edge, on a CPU with AVX-512, runs strips of every row
// (B's k x up to 8 vectors held in registers while the rows go by, each row of C
// written once, in order), and at which cpu_mma_blocks hands it a whole part read in
// place. Against the blocks, one thread on Zen 4: 1.08-1.46x at k = 1 to 5 on shapes
// whose C leaves L1 (1000x500x5 1.41x, 1184x108x4 1.46x); at k = 6 to 8 the strips, of
// 3 or 4 vectors, lost (0.77-0.98x).
constexpr int64_t kCpuStripMaxK = 5;
// The most k of a strip past kCpuStripMaxK (cpu_edge_narrow_strip): B's k vectors, four
// rows' accumulators and the next row's first vector within 32 registers.
constexpr int64_t kCpuNarrowStripMaxK = 24;
// Whether cpu_mma_edge, on a CPU with AVX-512, runs rows x cols at kc past
// kCpuStripMaxK as one strip of every row: cols fit one strip (32 columns up to
// k = 12, then 16), kc <= kCpuNarrowStripMaxK, 16 rows or more, and not
// cpu_edge_dot_columns. Against the 24-row blocks, one thread on Zen 4 (tessel bench):
// 1.05-1.19x (170x12x11 1.07x, 132x13x6 1.12x, 1077x15x13 1.14x, 831x7x24 1.19x).
bool cpu_edge_narrow_strip(int64_t rows, int64_t cols, int64_t kc);

// Whether cpu_mma_edge, on a CPU with AVX-512, takes a block's last cols % 16 columns
// as dot products: 1 to 4 of them, with kc long enough that an FMA a row, a column
// and 16 k plus a lane sum (about 3 operations alone, 11 beside whole vectors, as
// measured), and the gathered columns' share, cost less than the masked vector's FMA
// a row and a k. The planner asks it too (a 32-wide atom and such a rest).
bool cpu_edge_dot_columns(int64_t rows, int64_t cols, int64_t kc);
// One of cpu_mma_edge's AVX-512 blocks, for a unit that calls it itself (a small
// product's few whole blocks, where cpu_mma_blocks's and cpu_mma_edge's dispatch
// cost as much as the block): cpu_mma_edge's operation on `rows` x `cols` with
//   block(kc, a, b, c, ldc, lda, ldb, tail, overwrite),  tail = the last vector's
// lanes as a mask ((1 << (cols - 16 * (ceil(cols / 16) - 1))) - 1),
// where cpu_mma_edge itself would run that one block: cols <= 64, rows at most
// cpu_edge_block_rows(cols), and not cpu_edge_dot_columns(rows, cols, kc).
using CpuEdgeBlock = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t lda,
                              int64_t ldb, unsigned short tail, int overwrite);
// Entry 3. The block of rows x cols; null without AVX-512 or where there is none.
CpuEdgeBlock cpu_edge_block(int64_t rows, int64_t cols);
// The most rows of one block `cols` wide (1 to 64): 24, 14, 9 or 6 for 1 to 4 vectors.
int64_t cpu_edge_block_rows(int64_t cols);
// One of cpu_mma_edge's strips of rows at short k (1 <= kc <= kCpuStripMaxK), for a
// unit that calls it itself over a whole part read in place, where cpu_mma_blocks,
// cpu_mma_edge and the unit's blocks of rows each cost a call and a dispatch
// (43x26x1: a third of the kernel's time): cpu_mma_edge's operation on `rows` x
// `cols` with
//   strip(a, b, c, ldc, lda, ldb, rows, tail, overwrite),  tail as cpu_edge_block's,
// for cols up to cpu_edge_strip_cols(kc), every row in one call.
using CpuEdgeStrip = void (*)(const float* a, const float* b, float* c, int64_t ldc, int64_t lda, int64_t ldb,
                              int64_t rows, unsigned short tail, int overwrite);
// Entry 4. The strip of cols at kc; null without AVX-512 or where there is none.
CpuEdgeStrip cpu_edge_strip(int64_t kc, int64_t cols);
// The most columns of one strip at kc (up to 128); 0 past kCpuStripMaxK.
int64_t cpu_edge_strip_cols(int64_t kc);
// Copies of a block's `accumulators` registers that split k (k, k + 1, ... in turn,
// summed at the end), so that about 8 FMA chains cover the FMA latency, the copies and
// the `vectors` of a B row staying within AVX-512's 32 registers: the edge blocks'
// and the tiny kernels' (cpu_tiny_kernel.h) rule.
constexpr int64_t cpu_accumulator_copies(int64_t accumulators, int64_t vectors) {
  return std::max<int64_t>(
      1, std::min<int64_t>({4, (8 + accumulators - 1) / accumulators, (32 - vectors) / accumulators}));
}

// Entry 2. A worker part's run of micro-kernel blocks (the loops the emitter writes
// around a built-in micro-kernel, cpu_microkernel.h): blocks_r x blocks_c blocks of
// br x bc, column blocks outside, row blocks inside (BLIS's jr and ir loops), or the
// other way round where kc x (its columns) is at most 128 KiB (short k); block
// (i, j) is
//   ukr(kc, a + i * a_step, b + j * b_step, c + i * br * ldc + j * bc, ldc, lda, ldb, overwrite)
// with ukr a kernel of the _s_s contract (cpu_microkernel.h), or null: every block
// by cpu_mma_edge over its valid part (in_place 1 only). Blocks that start at
// or past rows_valid rows or cols_valid columns are skipped. A block that crosses
// rows_valid or cols_valid: in_place 1 (A and B read from tensors) calls
// cpu_mma_edge over its valid part, so nothing past them is read; in_place 2 (A and
// B staged, C a tensor's window: an accumulator homed in its destination,
// cpu_emit.cpp) computes the whole block into a local tile and copies only its
// valid part in and out of C, so nothing past them is written; in_place 0 computes
// it whole in C (on the staging buffers' padding, C a fragment as large). In place, at
// kc <= kCpuStripMaxK on AVX-512, the whole valid part is one cpu_mma_edge call.
void cpu_mma_blocks(const void* ukr, int64_t kc, const float* a, int64_t a_step, const float* b, int64_t b_step,
                    float* c, int64_t ldc, int64_t lda, int64_t ldb, int64_t br, int64_t bc, int64_t blocks_r,
                    int64_t blocks_c, int64_t rows_valid, int64_t cols_valid, int in_place, int overwrite);

// What this CPU and OS run, by cpuid and xgetbv (not libgcc's __builtin_cpu_supports,
// which adds a library constructor: LD_PRELOAD of libtessel_blas.so, which carries
// this file, would run it in every process). x86-64 only; elsewhere all false.
struct CpuFeatures {
  bool avx2_fma = false, avx512 = false;  // avx512: F, VL, BW and DQ, with the OS saving ZMM state
};
CpuFeatures cpu_features();

// The table index of cpu_prebuilt_microkernels[0].
constexpr int kCpuSupportPrebuiltBase = 5;

// The table handed to tessel_bind.
void* const* cpu_support_table();

}  // namespace tessel
