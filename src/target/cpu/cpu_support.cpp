#include "target/cpu/cpu_support.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "target/cpu/cpu_microkernel.h"

// The built-in micro-kernels (cpu_microkernel.h), generated.
#include "target/cpu/cpu_microkernel_prebuilt.inc"

namespace tessel {
namespace {

int64_t clamp(int64_t x, int64_t hi) { return std::clamp<int64_t>(x, 0, hi); }

int64_t offset(const CpuWindow& w, int64_t r, int64_t c) {
  r += w.r0;
  c += w.c0;
  if (w.layout == 0) return r * w.ld + c * w.cs;
  if (w.layout == 1) return (c / w.panel * w.rows + r) * w.panel + c % w.panel;
  return (r / w.panel * w.cols + c) * w.panel + r % w.panel;
}

// Copies use the C library's memcpy (as wide as the CPU) except for runs shorter
// than a 64-byte line, where its call costs more than the copy; those and the
// padding take 16-byte vectors (the x86-64 baseline this file is built for) and a
// scalar tail. no-tree-loop-distribute-patterns keeps the compiler from turning the
// loops back into library calls.
typedef float Vec4 __attribute__((vector_size(16), aligned(4)));

__attribute__((optimize("no-tree-loop-distribute-patterns"))) void copy_run(float* to, const float* from,
                                                                             int64_t n) {
  if (n >= 16) {
    std::memcpy(to, from, n * sizeof(float));
    return;
  }
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) *reinterpret_cast<Vec4*>(to + i) = *reinterpret_cast<const Vec4*>(from + i);
  for (; i < n; ++i) to[i] = from[i];
}

__attribute__((optimize("no-tree-loop-distribute-patterns"))) void fill_run(float* to, float pad, int64_t n) {
  const Vec4 p = {pad, pad, pad, pad};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) *reinterpret_cast<Vec4*>(to + i) = p;
  for (; i < n; ++i) to[i] = pad;
}

}  // namespace

void cpu_copy_guarded(const CpuWindow* src, const CpuWindow* dst, int64_t rows, int64_t cols, float pad) {
  const CpuWindow& s = *src;
  const CpuWindow& d = *dst;
  const int64_t src_rows = clamp(s.rb - s.r0, rows), src_cols = clamp(s.cb - s.c0, cols);
  const int64_t dst_rows = clamp(d.rb - d.r0, rows), dst_cols = clamp(d.cb - d.c0, cols);
  // Rows below `live` hold `valid` source elements; the rest of each row is padding.
  const int64_t live = std::min(src_rows, dst_rows), valid = std::min(src_cols, dst_cols);
  const bool unit_src = s.layout == 0 && s.cs == 1;
  if (unit_src && d.layout == 0 && d.cs == 1) {
    for (int64_t r = 0; r < dst_rows; ++r) {
      const float* from = s.base + (s.r0 + r) * s.ld + s.c0;
      float* to = d.base + (d.r0 + r) * d.ld + d.c0;
      const int64_t v = r < live ? valid : 0;
      copy_run(to, from, v);
      fill_run(to + v, pad, dst_cols - v);
    }
  } else if (unit_src && d.layout == 1 && d.c0 % d.panel == 0) {
    // Packing B at an edge, panel by panel: a panel's rows are contiguous in it, and
    // each row's part is contiguous in the source.
    for (int64_t c0 = 0; c0 < dst_cols; c0 += d.panel) {
      float* to = d.base + ((d.c0 + c0) / d.panel * d.rows + d.r0) * d.panel;
      const float* from = s.base + s.r0 * s.ld + s.c0 + c0;
      const int64_t n = clamp(dst_cols - c0, d.panel), v = clamp(valid - c0, n);
      for (int64_t r = 0; r < live; ++r, to += d.panel, from += s.ld) {
        copy_run(to, from, v);
        fill_run(to + v, pad, n - v);
      }
      for (int64_t r = live; r < dst_rows; ++r, to += d.panel) fill_run(to, pad, n);
    }
  } else {
    for (int64_t r = 0; r < dst_rows; ++r) {
      const int64_t v = r < live ? valid : 0;
      for (int64_t c = 0; c < v; ++c) d.base[offset(d, r, c)] = s.base[offset(s, r, c)];
      for (int64_t c = v; c < dst_cols; ++c) d.base[offset(d, r, c)] = pad;
    }
  }
}

CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & bit_OSXSAVE, fma = c & bit_FMA;
  if (!osxsave) return f;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const bool ymm = (lo & 0x6) == 0x6, zmm = (lo & 0xe6) == 0xe6;  // XMM|YMM, + opmask|ZMM state
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  f.avx2_fma = ymm && fma && (b & bit_AVX2);
  f.avx512 = zmm && f.avx2_fma && (b & bit_AVX512F) && (b & bit_AVX512VL) && (b & bit_AVX512BW) &&
             (b & bit_AVX512DQ);
#endif
  return f;
}

namespace {

// The most k a dot-product column (dot_columns) takes: its B columns are gathered
// into a buffer on the stack.
constexpr int64_t kDotMaxK = 1024;

// The most rows of one edge block of V vectors (index V): 24, 14, 9, 6: R x V
// accumulators and V B vectors within 32 registers. One vector stops at 24, where A's
// row pointers still fit the general registers (at 30 the loop reloads two from the
// stack); 24 rather than 16: 552x14x241 and 250x9x423 1.04-1.05x.
constexpr int kEdgeMaxRows[5] = {0, 24, 14, 9, 6};

// The widest strip of rows (edge_avx512::strip) at k (the index): k x V of B's vectors
// and V accumulators within 32 registers, at most 8 vectors (at k = 2, 8 and 12 ran
// alike, 4 slower). Past kCpuStripMaxK, only products as narrow as one strip run as
// strips (cpu_edge_narrow_strip): 2 vectors up to k = 12, then 1.
constexpr int kStripVectors[kCpuNarrowStripMaxK + 1] = {0, 8, 8, 8, 6, 5, 2, 2, 2, 2, 2, 2, 2,
                                                        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
// The fewest rows of a strip past kCpuStripMaxK: at 8 rows, 24 k, loading B's 24
// vectors cost more than the blocks' B loads (8x16x24 0.78x); at 12 to 16 rows the
// strips ran 0.98-1.21x the blocks' speed.
constexpr int64_t kNarrowStripMinRows = 16;
// cpu_edge_narrow_strip but for the dot-product columns' case, which
// mma_edge_avx512 has ruled out by then.
bool narrow_strip_fits(int64_t rows, int64_t cols, int64_t kc) {
  return kc > kCpuStripMaxK && kc <= kCpuNarrowStripMaxK && rows >= kNarrowStripMinRows && cols >= 1 &&
         cols <= 16 * kStripVectors[kc];
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4,prefer-vector-width=512")
#pragma GCC optimize("fp-contract=fast")
namespace edge_avx512 {
typedef float Vf __attribute__((vector_size(64)));
typedef float Vfu __attribute__((vector_size(64), aligned(4)));

typedef float Vh __attribute__((vector_size(32)));  // half a vector: 8 lanes
typedef float Vq __attribute__((vector_size(16)));  // a quarter vector: 4 lanes

// cpu_mma_edge's operation on R rows and V vectors of columns whose last vector
// holds the lanes in `tail` (a mask: B's and C's other lanes are not touched, so
// nothing past the block is read or written). Registers: R x V accumulators, V B
// vectors, A broadcast from memory (R x V + V <= 32). A's rows from one pointer per
// 4 rows at 0, lda, 2 lda, 3 lda (a pointer a row runs out of registers).
// Half: the last vector is 8 lanes (256 bits; tail within its first 8): no more
// instructions than a 16-lane one, and twice as many a cycle where a 512-bit FMA
// takes both 256-bit pipes (Zen 4).
template <int R, int V, bool Half>
__attribute__((noinline)) void block(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                     int64_t lda, int64_t ldb, unsigned short tail, int overwrite) {
  constexpr int G = (R + 3) / 4, W = Half ? V - 1 : V;  // W: the 16-lane vectors
  // Fewer than 8 accumulators leave the FMA pipes waiting on the FMA latency (3x2x117,
  // three chains 117 deep): then k is split over U copies of them (k, k + 1, ... in
  // turn; as the built-in kernels do), summed at the end.
  constexpr int U = int(cpu_accumulator_copies(R * V, V));
  const float* ap[G];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) ap[g] = a + 4 * g * lda;
  const int64_t lda2 = 2 * lda, lda3 = 3 * lda;
  const auto tail_half = static_cast<unsigned char>(tail);
  Vf acc[U][R][V];
  Vh acc_half[U][R];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      acc_half[u][r] = Vh{};
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[u][r][v] = Vf{};
    }
  // k's step into copy u of the accumulators, B's row at bk.
  auto step = [&](int64_t k, const float* bk, int u) __attribute__((always_inline)) {
    Vf bv[V];
    Vh bh = {};
#pragma GCC unroll 4
    for (int v = 0; v + 1 < V; ++v) bv[v] = *(const Vfu*)(bk + 16 * v);
    if (Half)
      bh = __builtin_ia32_loadups256_mask(bk + 16 * (V - 1), Vh{}, tail_half);
    else
      bv[V - 1] = __builtin_ia32_loadups512_mask(bk + 16 * (V - 1), Vf{}, tail);
    // B's vectors in registers, loaded once a k: in blocks of 2 and 3 rows GCC 12
    // folds them into each row's FMA as a memory operand, a load a row, and Zen 4
    // loads one 512-bit vector a cycle (3x50x5: 1.24x). Taller blocks keep them in
    // registers anyway, and the empty asm there only moved GCC's schedule (13x40x7
    // 0.97x).
    if (R == 2 || R == 3) {
#pragma GCC unroll 4
      for (int v = 0; v < W; ++v) __asm__("" : "+v"(bv[v]));
      if (Half) __asm__("" : "+v"(bh));
    }
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      const float* const p = ap[r / 4] + k;
      const float* const ps = r % 4 == 0 ? p : r % 4 == 1 ? p + lda : r % 4 == 2 ? p + lda2 : p + lda3;
      if constexpr (Half && W == 0) {
        // The 8-lane vector alone: A's element as the FMA's broadcast operand. The
        // 512-bit broadcast below, for this vector alone, halved Zen 4's speed
        // (90x7x300 and 64x8x64 2.0-2.2x faster without it).
        acc_half[u][r] += *ps * bh;
      } else if constexpr (Half) {
        // One broadcast from memory, its low half for the 8-lane vector: left to
        // GCC, A's element came as a scalar load and two broadcasts from a register,
        // which run on the port of Intel's second FMA pipe (40^3 at 0.66x libxsmm).
        Vf sv;
        __asm__("vbroadcastss %1, %0" : "=v"(sv) : "m"(*ps));
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) acc[u][r][v] += sv * bv[v];
        acc_half[u][r] += __builtin_shufflevector(sv, sv, 0, 1, 2, 3, 4, 5, 6, 7) * bh;
      } else {
        const float s = *ps;
#pragma GCC unroll 4
        for (int v = 0; v < W; ++v) acc[u][r][v] += s * bv[v];
      }
    }
  };
  int64_t k = 0;
  if constexpr (U > 1)
    for (; k + U <= kc; k += U, b += U * ldb)
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) step(k + u, b + u * ldb, u);
  for (; k < kc; ++k, b += ldb) step(k, b, 0);
#pragma GCC unroll 4
  for (int u = 1; u < U; ++u)
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      acc_half[0][r] += acc_half[u][r];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[0][r][v] += acc[u][r][v];
    }
  // C's old values all loaded before the first store: where C's rows are shorter
  // than the block's vectors, a row's first load overlaps the previous row's masked
  // store, and waits for it to reach the cache (57x45x7 accumulating: 1.7x the time
  // of overwriting, row by row).
  if (!overwrite)
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      const float* cr = c + r * ldc;
#pragma GCC unroll 4
      for (int v = 0; v + 1 < V; ++v) acc[0][r][v] += *(const Vfu*)(cr + 16 * v);
      if (Half)
        acc_half[0][r] += __builtin_ia32_loadups256_mask(cr + 16 * (V - 1), Vh{}, tail_half);
      else
        acc[0][r][V - 1] += __builtin_ia32_loadups512_mask(cr + 16 * (V - 1), Vf{}, tail);
    }
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
#pragma GCC unroll 4
    for (int v = 0; v + 1 < V; ++v) *(Vfu*)(cr + 16 * v) = acc[0][r][v];
    if (Half)
      __builtin_ia32_storeups256_mask(cr + 16 * (V - 1), acc_half[0][r], tail_half);
    else
      __builtin_ia32_storeups512_mask(cr + 16 * (V - 1), acc[0][r][V - 1], tail);
  }
}

using Block = CpuEdgeBlock;

template <int V, bool Half, int... I>
constexpr std::array<Block, sizeof...(I)> blocks_of(std::integer_sequence<int, I...>) {
  return {&block<I + 1, V, Half>...};
}
template <bool Half>
struct BlockTable {
  static constexpr std::array<Block, 24> k1 = blocks_of<1, Half>(std::make_integer_sequence<int, 24>());
  static constexpr std::array<Block, 14> k2 = blocks_of<2, Half>(std::make_integer_sequence<int, 14>());
  static constexpr std::array<Block, 9> k3 = blocks_of<3, Half>(std::make_integer_sequence<int, 9>());
  static constexpr std::array<Block, 6> k4 = blocks_of<4, Half>(std::make_integer_sequence<int, 6>());
  static constexpr const Block* of[5] = {nullptr, k1.data(), k2.data(), k3.data(), k4.data()};
};
// kBlocks[half][V][R - 1]: half where the last vector's lanes are within its first 8.
const Block* const* const kBlocks[2] = {BlockTable<false>::of, BlockTable<true>::of};

// The sum of x's lanes: halves added, 16 -> 8 -> 4 -> 2 -> 1.
inline float lane_sum(Vf x) {
  typedef float V4 __attribute__((vector_size(16)));
  const Vh h = __builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7) +
               __builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15);
  const V4 q = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
  return (q[0] + q[2]) + (q[1] + q[3]);
}

// Two vectors' halves added side by side, at four widths: a's sums in the low
// half of each wider unit, b's in the high.
__attribute__((always_inline)) inline Vf fold256(Vf a, Vf b) {
  return __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
         __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
}
__attribute__((always_inline)) inline Vf fold128(Vf a, Vf b) {
  return __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
         __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
}
__attribute__((always_inline)) inline Vf fold64(Vf a, Vf b) {
  return __builtin_shufflevector(a, b, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29) +
         __builtin_shufflevector(a, b, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
}
__attribute__((always_inline)) inline Vf fold32(Vf a, Vf b) {
  return __builtin_shufflevector(a, b, 0, 2, 16, 18, 4, 6, 20, 22, 8, 10, 24, 26, 12, 14, 28, 30) +
         __builtin_shufflevector(a, b, 1, 3, 17, 19, 5, 7, 21, 23, 9, 11, 25, 27, 13, 15, 29, 31);
}

// Column J's 4 row sums, row r's in 128-bit unit r (zeros past T columns): rows 0
// and 1, 2 and 3 side by side, then the pairs.
template <int T, int J>
__attribute__((always_inline)) inline Vf column_partials(const Vf (&acc)[4][T]) {
  if constexpr (J < T) return fold128(fold256(acc[0][J], acc[1][J]), fold256(acc[2][J], acc[3][J]));
  return Vf{};
}

// Lane 4 r + j of the result: the sum of acc[r][j]'s lanes (zero past T). A tree of
// folds: for 16 sums, 30 shuffles and 15 adds, where a lane sum costs 8 operations
// each.
template <int T>
__attribute__((always_inline)) inline Vf lane_sums_4xT(const Vf (&acc)[4][T]) {
  return fold32(fold64(column_partials<T, 0>(acc), column_partials<T, 1>(acc)),
                fold64(column_partials<T, 2>(acc), column_partials<T, 3>(acc)));
}

// R rows of A against the T columns of B gathered in bt (column j's k-th element at
// bt[j * 16 * kv + k], zero past kc): R x T accumulators along k, whose lanes are
// summed at the end. A is read in vectors of 16 k, the last one masked (nothing
// past kc is read: it may be another row's, or NaN).
template <int R, int T>
__attribute__((always_inline)) inline void dot_rows(int64_t kc, int64_t kv, const float* a, int64_t lda,
                                                    const float* bt, float* c, int64_t ldc, int overwrite) {
  Vf acc[R][T];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < T; ++j) acc[r][j] = Vf{};
  const auto last = static_cast<unsigned short>((1u << (kc - 16 * (kv - 1))) - 1);
  for (int64_t v = 0; v < kv; ++v) {
    Vf av[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      av[r] = v + 1 < kv ? *(const Vfu*)(a + r * lda + 16 * v)
                         : __builtin_ia32_loadups512_mask(a + r * lda + 16 * v, Vf{}, last);
#pragma GCC unroll 4
    for (int j = 0; j < T; ++j) {
      const Vf bv = *(const Vf*)(bt + j * 16 * kv + 16 * v);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r][j] += av[r] * bv;
    }
  }
  if constexpr (R == 4) {  // the 4 x T sums in one tree (the last 1 to 3 rows: lane sums)
    const Vf sums = lane_sums_4xT<T>(acc);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < T; ++j) c[r * ldc + j] = overwrite ? sums[4 * r + j] : c[r * ldc + j] + sums[4 * r + j];
    return;
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < T; ++j) {
      const float sum = lane_sum(acc[r][j]);
      c[r * ldc + j] = overwrite ? sum : c[r * ldc + j] + sum;
    }
}

// B's columns 2P and 2P + 1 over 16 k, out of z (k = 4q + i's row of 4 columns at
// lanes 4i .. 4i + 3 of z[q]): two permutes of two vectors each, then the halves.
template <int P>
__attribute__((always_inline)) inline void column_pair(const Vf (&z)[4], float* even, float* odd) {
  constexpr int a = 2 * P, b = 2 * P + 1;
  const Vf lo = __builtin_shufflevector(z[0], z[1], a, a + 4, a + 8, a + 12, a + 16, a + 20, a + 24, a + 28, b,
                                        b + 4, b + 8, b + 12, b + 16, b + 20, b + 24, b + 28);
  const Vf hi = __builtin_shufflevector(z[2], z[3], a, a + 4, a + 8, a + 12, a + 16, a + 20, a + 24, a + 28, b,
                                        b + 4, b + 8, b + 12, b + 16, b + 20, b + 24, b + 28);
  *(Vf*)even = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
  if (odd) *(Vf*)odd = __builtin_shufflevector(lo, hi, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
}

// B's T columns (T <= 4) over `rows` <= 16 k from b (row stride ldb) into col[j * stride]
// for column j, lanes past `rows` zero: a masked load of T elements a row (nothing
// past column T is read), the rows four to a vector, then a transpose. Element by
// element, the copies took a tenth of 300x4x500's time and half of 3x2x117's.
template <int T>
__attribute__((always_inline)) inline void gather_columns_16(const float* b, int64_t ldb, int64_t rows, float* col,
                                                             int64_t stride) {
  typedef float V4 __attribute__((vector_size(16)));
  typedef float V8 __attribute__((vector_size(32)));
  V4 r[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? __builtin_ia32_loadups128_mask(b + i * ldb, V4{}, (1u << T) - 1) : V4{};
  Vf z[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const V8 lo = __builtin_shufflevector(r[4 * q], r[4 * q + 1], 0, 1, 2, 3, 4, 5, 6, 7);
    const V8 hi = __builtin_shufflevector(r[4 * q + 2], r[4 * q + 3], 0, 1, 2, 3, 4, 5, 6, 7);
    z[q] = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  }
  column_pair<0>(z, col, T > 1 ? col + stride : nullptr);
  if constexpr (T > 2) column_pair<1>(z, col + 2 * stride, T > 3 ? col + 3 * stride : nullptr);
}

// C's T columns (T <= 4) as dot products along k: where a block's columns end a few
// lanes into a vector, the masked vector costs an FMA a row and a k for those few
// columns; here it is an FMA a row, a column and 16 k, and a lane sum a row and a
// column (cpu_edge_dot_columns decides). kc <= kDotMaxK.
template <int T>
__attribute__((noinline)) void dot_columns(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                           int64_t lda, int64_t ldb, int64_t rows, int overwrite) {
  const int64_t kv = (kc + 15) / 16;
  alignas(64) float bt[T * kDotMaxK];
  if (ldb == 1 && T == 1) {  // one column of unit row stride (N = 1): already k-contiguous
    std::memcpy(bt, b, kc * sizeof(float));
    for (int64_t k = kc; k < 16 * kv; ++k) bt[k] = 0.0f;
  } else {
    for (int64_t v = 0; v < kv; ++v)
      gather_columns_16<T>(b + 16 * v * ldb, ldb, std::min<int64_t>(16, kc - 16 * v), bt + 16 * v, 16 * kv);
  }
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) dot_rows<4, T>(kc, kv, a + r * lda, lda, bt, c + r * ldc, ldc, overwrite);
  for (; r < rows; ++r) dot_rows<1, T>(kc, kv, a + r * lda, lda, bt, c + r * ldc, ldc, overwrite);
}

using DotColumns = void (*)(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t, int);
const DotColumns kDotColumns[5] = {nullptr, &dot_columns<1>, &dot_columns<2>, &dot_columns<3>, &dot_columns<4>};

typedef float Vhu __attribute__((vector_size(32), aligned(4)));

// The last vector of a strip's row: T lanes (16, 8 or 4; 1: a scalar), masked to
// the lanes in `tail`; or T = 12, 8 whole lanes and 4 masked to tail >> 8, computed
// in 16 lanes: a masked 512-bit store costs about 3 cycles whatever its lanes, and
// rows of 9 to 12 columns stored as a whole 256-bit vector and a masked 128-bit one
// took 0.70-0.85x the time (Zen 4).
template <int T>
using Last = std::conditional_t<T == 16 || T == 12, Vf,
                                std::conditional_t<T == 8, Vh, std::conditional_t<T == 4, Vq, float>>>;
template <int T>
__attribute__((always_inline)) inline Last<T> load_last(const float* p, unsigned short tail) {
  if constexpr (T == 12) {
    const Vh lo = *(const Vhu*)p;
    const Vq hi = __builtin_ia32_loadups128_mask(p + 8, Vq{}, static_cast<unsigned char>(tail >> 8));
    const Vh hi8 = __builtin_shufflevector(hi, Vq{}, 0, 1, 2, 3, 4, 5, 6, 7);
    return __builtin_shufflevector(lo, hi8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  } else if constexpr (T == 16)
    return __builtin_ia32_loadups512_mask(p, Vf{}, tail);
  else if constexpr (T == 8)
    return __builtin_ia32_loadups256_mask(p, Vh{}, static_cast<unsigned char>(tail));
  else if constexpr (T == 4)
    return __builtin_ia32_loadups128_mask(p, Vq{}, static_cast<unsigned char>(tail));
  else
    return *p;
}
template <int T>
__attribute__((always_inline)) inline void store_last(float* p, Last<T> x, unsigned short tail) {
  if constexpr (T == 12) {
    *(Vhu*)p = __builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7);
    __builtin_ia32_storeups128_mask(p + 8, __builtin_shufflevector(x, x, 8, 9, 10, 11),
                                    static_cast<unsigned char>(tail >> 8));
  } else if constexpr (T == 16)
    __builtin_ia32_storeups512_mask(p, x, tail);
  else if constexpr (T == 8)
    __builtin_ia32_storeups256_mask(p, x, static_cast<unsigned char>(tail));
  else if constexpr (T == 4)
    __builtin_ia32_storeups128_mask(p, x, static_cast<unsigned char>(tail));
  else
    *p = x;
}

// Short k (kc <= kCpuStripMaxK), and mid k on narrow columns (cpu_edge_narrow_strip):
// cpu_mma_edge's operation on every row of V vectors of columns, V - 1 whole ones and
// a last one of T lanes (the narrowest of 16, 8, 4 or 1 that holds its columns, 4 and
// 1 where V is 1; 12 for 9 to 12 columns alone) masked to the lanes in `tail`, B's
// KC x V vectors held in registers while the rows go by. At short k a product is
// bound by writing C, not by its FMAs: each row's part is written once, in order, with
// no block of rows to set up. The 12 x 32 blocks wrote 24 lines of 12 rows a block and
// loaded B again for each (316x385x2 ran at 0.74x libxsmm). At mid k on 16 columns or
// fewer the blocks' fixed cost (row pointers, a B load a k, a call a block) was a
// fifth of their time (170x12x11).
template <int KC, int V, int T>
__attribute__((noinline)) void strip(const float* a, const float* b, float* c, int64_t ldc, int64_t lda,
                                     int64_t ldb, int64_t rows, unsigned short tail, int overwrite) {
  constexpr int W = V - 1, WA = W > 0 ? W : 1;  // W: the whole vectors before the last (WA: an array's size)
  Vf bv[KC][WA];
  Last<T> bl[KC];
  // Every k loop whole (unroll 32 >= kCpuNarrowStripMaxK): a partial unroll keeps B's
  // vectors in memory.
#pragma GCC unroll 32
  for (int k = 0; k < KC; ++k) {
#pragma GCC unroll 8
    for (int v = 0; v < W; ++v) bv[k][v] = *(const Vfu*)(b + k * ldb + 16 * v);
    bl[k] = load_last<T>(b + k * ldb + 16 * W, tail);
  }
  // A row's first vector of C (the last one where V is 1).
  using First = std::conditional_t<(V > 1), Vf, Last<T>>;
  auto first_of = [&](const float* cr) __attribute__((always_inline)) -> First {
    if constexpr (V > 1)
      return *(const Vfu*)cr;
    else
      return load_last<T>(cr, tail);
  };
  // The row loop three times: without C's old values, and with them, loaded in turn
  // or ahead (GCC kept a run-time test of either in the loop). Past kCpuStripMaxK, RU
  // rows at a time, k outermost: one accumulator's chain of KC FMAs a row left the FMA
  // pipes waiting (170x12x11 1.09x with 4 rows). Up to it, a row at a time, four a
  // pass: at one vector a row the loop's own instructions were as many as the row's.
  // A load of C whose vector's bytes (all of them, masked lanes too) overlap an
  // earlier masked store's waits for that store to reach the cache (about 25 cycles
  // on Zen 4). So where a row's vectors reach past the next row's start, the next
  // rows' first vector is loaded ahead, before these rows' stores; the later rows of
  // a group and the row after it, two rows past the last row stored, are clear of it
  // where two rows span a row's vectors, which the narrowest last vector (4 lanes
  // from 2 columns, a scalar for 1) ensures (1354x47x2 and 300x20x3 4.5x and 7.9x,
  // 300x3x2 10x and 1000x2x1 8x slower accumulating than overwriting before).
  // Elsewhere the early load cost a fifth (267x8x1).
  constexpr int RU = KC <= kCpuStripMaxK ? 1 : std::clamp((30 - KC * V) / V, 1, 4);
  auto rows_loop = [&](auto accumulate, auto load_ahead) __attribute__((always_inline)) {
    constexpr bool old_c = decltype(accumulate)::value, ahead = decltype(load_ahead)::value;
    First first = {};
    if (old_c && ahead && rows > 0) first = first_of(c);
    // Rows r to r + N - 1; `first` holds row r's first vector, then row r + N's.
    auto group = [&](int64_t r, auto n) __attribute__((always_inline)) {
      constexpr int N = decltype(n)::value;
      Vf acc[N][WA] = {};
      Last<T> acc_last[N] = {};
      if constexpr (old_c) {
#pragma GCC unroll 4
        for (int i = 0; i < N; ++i) {
          const float* const cr = c + (r + i) * ldc;
          const First f = i == 0 && ahead ? first : first_of(cr);
          if constexpr (V > 1) {
            acc[i][0] = f;
#pragma GCC unroll 8
            for (int v = 1; v < W; ++v) acc[i][v] = *(const Vfu*)(cr + 16 * v);
            acc_last[i] = load_last<T>(cr + 16 * W, tail);
          } else {
            acc_last[i] = f;
          }
        }
      }
#pragma GCC unroll 32
      for (int k = 0; k < KC; ++k)
#pragma GCC unroll 4
        for (int i = 0; i < N; ++i) {
          const float s = a[(r + i) * lda + k];
#pragma GCC unroll 8
          for (int v = 0; v < W; ++v) acc[i][v] += s * bv[k][v];
          acc_last[i] += s * bl[k];
        }
      if (old_c && ahead && r + N < rows) first = first_of(c + (r + N) * ldc);
#pragma GCC unroll 4
      for (int i = 0; i < N; ++i) {
        float* const cr = c + (r + i) * ldc;
#pragma GCC unroll 8
        for (int v = 0; v < W; ++v) *(Vfu*)(cr + 16 * v) = acc[i][v];
        // Of two vectors, the masked store after the whole one (GCC put it first):
        // rows of 26 columns took 1.06-1.1x as long out of address order. Not past
        // two: 400x40x1 ran 1.12x slower with its stores so ordered, 1354x47x2 1.03x.
        if constexpr (W == 1) asm volatile("" ::: "memory");
        store_last<T>(cr + 16 * W, acc_last[i], tail);
      }
    };
    int64_t r = 0;
    if constexpr (RU == 1) {
#pragma GCC unroll 4
      for (; r < rows; ++r) group(r, std::integral_constant<int, 1>{});
    } else {
      for (; r + RU <= rows; r += RU) group(r, std::integral_constant<int, RU>{});
      for (; r < rows; ++r) group(r, std::integral_constant<int, 1>{});
    }
  };
  if (overwrite)
    rows_loop(std::false_type{}, std::false_type{});
  else if (ldc < 16 * W + T)
    rows_loop(std::true_type{}, std::true_type{});
  else
    rows_loop(std::true_type{}, std::false_type{});
}

using Strip = CpuEdgeStrip;
template <int KC, int T, int... I>
constexpr std::array<Strip, sizeof...(I)> strips_of(std::integer_sequence<int, I...>) {
  return {&strip<KC, I + 1, T>...};
}
// Last vectors of 12 and 4 lanes and scalars only where a row is one vector.
template <int KC, int T>
constexpr int kStripsOfT = T == 16 || T == 8 ? kStripVectors[KC] : 1;
template <int KC, int T>
constexpr std::array<Strip, kStripsOfT<KC, T>> kStripsOf =
    strips_of<KC, T>(std::make_integer_sequence<int, kStripsOfT<KC, T>>());
template <int T, int... KC>
constexpr std::array<const Strip*, sizeof...(KC) + 1> strips_by(std::integer_sequence<int, KC...>) {
  return {nullptr, kStripsOf<KC + 1, T>.data()...};
}
template <int T>
constexpr auto kStripsBy = strips_by<T>(std::make_integer_sequence<int, kCpuNarrowStripMaxK>());
// kStrips[t][KC][V - 1], t = 0 to 4 for a last vector of 16, 8, 4, 1 or 12 lanes (4, 1
// and 12 with V = 1 only).
const Strip* const* const kStrips[5] = {kStripsBy<16>.data(), kStripsBy<8>.data(), kStripsBy<4>.data(),
                                        kStripsBy<1>.data(), kStripsBy<12>.data()};

// The strip of `w` columns (1 to 16 * kStripVectors[kc]) at kc, and its last vector's
// lanes as a mask.
Strip strip_of(int64_t kc, int64_t w, unsigned short* tail) {
  const int64_t v = (w + 15) / 16, lanes = w - 16 * (v - 1);
  const int t = lanes > 8 ? (v == 1 && lanes <= 12 ? 4 : 0) : lanes > 4 || v > 1 ? 1 : lanes > 1 ? 2 : 3;
  *tail = static_cast<unsigned short>((1u << lanes) - 1);
  return kStrips[t][kc][v - 1];
}

// rows x cols by strips of kStripVectors[kc] vectors, the last one narrower.
void strips(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t lda, int64_t ldb,
            int64_t rows, int64_t cols, int overwrite) {
  const int64_t width = 16 * kStripVectors[kc];
  for (int64_t j0 = 0; j0 < cols; j0 += width) {
    unsigned short tail = 0;
    const Strip s = strip_of(kc, std::min(width, cols - j0), &tail);
    s(a, b + j0, c + j0, ldc, lda, ldb, rows, tail, overwrite);
  }
}
}  // namespace edge_avx512
#pragma GCC pop_options

// cpu_mma_edge in AVX-512 blocks of up to 4 vectors of columns, rows in near-equal
// chunks of at most kEdgeMaxRows; false where the CPU has no AVX-512.
bool mma_edge_avx512(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t lda,
                     int64_t ldb, int64_t rows, int64_t cols, int overwrite) {
  static const bool has = cpu_features().avx512;
  if (!has) return false;
  if (kc >= 1 && kc <= kCpuStripMaxK) {
    edge_avx512::strips(kc, a, b, c, ldc, lda, ldb, rows, cols, overwrite);
    return true;
  }
  // The whole vectors as below, the last few columns as dot products.
  if (cpu_edge_dot_columns(rows, cols, kc)) {
    const int64_t tail_cols = cols % 16, whole = cols - tail_cols;
    if (whole > 0) mma_edge_avx512(kc, a, b, c, ldc, lda, ldb, rows, whole, overwrite);
    edge_avx512::kDotColumns[tail_cols](kc, a, b + whole, c + whole, ldc, lda, ldb, rows, overwrite);
    return true;
  }
  if (narrow_strip_fits(rows, cols, kc)) {  // cpu_edge_narrow_strip: dot products ruled out above
    edge_avx512::strips(kc, a, b, c, ldc, lda, ldb, rows, cols, overwrite);
    return true;
  }
  const int64_t v = (std::min<int64_t>(cols, 64) + 15) >> 4;
  if (cols <= 64 && rows <= kEdgeMaxRows[v]) {  // one block (a unit's edge blocks): no divisions
    const int64_t lanes = cols - 16 * (v - 1);
    const auto tail = static_cast<unsigned short>((1u << lanes) - 1);
    edge_avx512::kBlocks[lanes <= 8][v][rows - 1](kc, a, b, c, ldc, lda, ldb, tail, overwrite);
    return true;
  }
  for (int64_t j0 = 0; j0 < cols; j0 += 64) {
    const int64_t w = std::min<int64_t>(64, cols - j0), v = (w + 15) / 16, lanes = w - 16 * (v - 1);
    const auto tail = static_cast<unsigned short>((1u << lanes) - 1);
    const int64_t chunks = (rows + kEdgeMaxRows[v] - 1) / kEdgeMaxRows[v];
    for (int64_t i = 0; i < chunks; ++i) {
      const int64_t r0 = rows * i / chunks, r1 = rows * (i + 1) / chunks;
      edge_avx512::kBlocks[lanes <= 8][v][r1 - r0 - 1](kc, a + r0 * lda, b + j0, c + r0 * ldc + j0, ldc, lda, ldb,
                                                       tail, overwrite);
    }
  }
  return true;
}

// The block of rows x cols (within cpu_edge_block's bounds); null without AVX-512.
CpuEdgeBlock edge_block_avx512(int64_t rows, int64_t cols) {
  static const bool has = cpu_features().avx512;
  const int64_t v = (cols + 15) >> 4, lanes = cols - 16 * (v - 1);
  return has ? edge_avx512::kBlocks[lanes <= 8][v][rows - 1] : nullptr;
}
// The strip of cols at kc (within cpu_edge_strip's bounds); null without AVX-512.
CpuEdgeStrip edge_strip_avx512(int64_t kc, int64_t cols) {
  static const bool has = cpu_features().avx512;
  unsigned short tail = 0;
  return has ? edge_avx512::strip_of(kc, cols, &tail) : nullptr;
}
#else
bool mma_edge_avx512(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, int) {
  return false;
}
CpuEdgeBlock edge_block_avx512(int64_t, int64_t) { return nullptr; }
CpuEdgeStrip edge_strip_avx512(int64_t, int64_t) { return nullptr; }
#endif

}  // namespace

int64_t cpu_edge_block_rows(int64_t cols) { return kEdgeMaxRows[(std::clamp<int64_t>(cols, 1, 64) + 15) >> 4]; }

CpuEdgeBlock cpu_edge_block(int64_t rows, int64_t cols) {
  if (cols < 1 || cols > 64 || rows < 1 || rows > cpu_edge_block_rows(cols)) return nullptr;
  return edge_block_avx512(rows, cols);
}

int64_t cpu_edge_strip_cols(int64_t kc) { return kc >= 1 && kc <= kCpuStripMaxK ? 16 * kStripVectors[kc] : 0; }

CpuEdgeStrip cpu_edge_strip(int64_t kc, int64_t cols) {
  if (cols < 1 || cols > cpu_edge_strip_cols(kc)) return nullptr;
  return edge_strip_avx512(kc, cols);
}

bool cpu_edge_dot_columns(int64_t rows, int64_t cols, int64_t kc) {
  const int64_t tail_cols = cols % 16;
  if (tail_cols < 1 || tail_cols > 4 || kc > kDotMaxK || rows < 1) return false;
  // Per row and column: a dot product's fixed cost, and the gathered B columns (a load
  // and a store an element) shared among the rows. The fixed cost is about 3 where
  // the columns stand alone: the lane sums of 4 rows are one tree, 45 operations for
  // 16 (64x4x32 0.68x, 128x4x24 0.77x the masked vector's time). Beside whole vectors
  // it is 11, as measured: those then run in a block of their own, whose FMAs no
  // longer share A's broadcast with the masked vector (64x20x32 1.09x with 3).
  const int64_t fixed = cols < 16 ? 3 : 11;
  return tail_cols * ((kc + 15) / 16 + fixed) + 2 * tail_cols * kc / rows < kc;
}

bool cpu_edge_narrow_strip(int64_t rows, int64_t cols, int64_t kc) {
  return narrow_strip_fits(rows, cols, kc) && !cpu_edge_dot_columns(rows, cols, kc);
}

void cpu_mma_edge(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t lda, int64_t ldb,
                  int64_t rows, int64_t cols, int overwrite) {
  if (rows > 0 && cols > 0 && mma_edge_avx512(kc, a, b, c, ldc, lda, ldb, rows, cols, overwrite)) return;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float s = overwrite ? 0.0f : c[r * ldc + j];
      for (int64_t k = 0; k < kc; ++k) s += a[r * lda + k] * b[k * ldb + j];
      c[r * ldc + j] = s;
    }
}

// B's part of a cpu_mma_blocks call up to which its block rows run outside: a part
// that stays in L2 beside C's rows, far from a packed plan's B block (a KC x NC
// panel of 512 KiB and more, which the column strips outside keep in L1 by strips).
constexpr int64_t kRowsOuterBBytes = 128 << 10;

void cpu_mma_blocks(const void* ukr, int64_t kc, const float* a, int64_t a_step, const float* b, int64_t b_step,
                    float* c, int64_t ldc, int64_t lda, int64_t ldb, int64_t br, int64_t bc, int64_t blocks_r,
                    int64_t blocks_c, int64_t rows_valid, int64_t cols_valid, int in_place, int overwrite) {
  using Ukr = void (*)(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t, int);
  const Ukr kernel = reinterpret_cast<Ukr>(const_cast<void*>(ukr));  // null: every block by cpu_mma_edge
  static const bool avx512 = cpu_features().avx512;
  if (kernel && in_place == 1 && avx512 && kc >= 1 && kc <= kCpuStripMaxK && a_step == br * lda && b_step == bc) {
    // Short k read in place: the whole part by cpu_mma_edge's strips of rows, which
    // write each row of C once, in order (see edge_avx512::strip).
    cpu_mma_edge(kc, a, b, c, ldc, lda, ldb, std::min(blocks_r * br, rows_valid), std::min(blocks_c * bc, cols_valid),
                 overwrite);
    return;
  }
  if (!kernel && (blocks_r == 1 || a_step == br * lda)) {
    // cpu_mma_edge blocks the rows itself: one call a column block, over every valid
    // row (what it sets up once, such as dot_columns's gathered B, serves them all).
    const int64_t rows = std::min(blocks_r * br, rows_valid);
    for (int64_t j = 0; j < blocks_c && j * bc < cols_valid; ++j)
      cpu_mma_edge(kc, a, b + j * b_step, c + j * bc, ldc, lda, ldb, rows, std::min(bc, cols_valid - j * bc),
                   overwrite);
    return;
  }
  // Column strips outside, so that B's strip stays in L1 over every block row. But
  // where this call's B is small (short k), block rows go outside: each block row
  // of C is written at once, not a strip a pass over all of C, which then left L1
  // between passes, and a line that two strips share (rows off 64 bytes) in two
  // passes. One thread (tessel bench, Xeon, fiftieth session): 1258x1587x15 2.02x,
  // 604x850x8 1.68x, 920x1436x17 1.64x, 1000x1000x4 1.51x, 298x198x4 1.26x faster;
  // 200x1000x8 0.96x. Past 128 KiB the order measured within 4%, both ways.
  const bool rows_outer = kc * std::min(blocks_c * bc, cols_valid) * 4 <= kRowsOuterBBytes;
  const int64_t outer = rows_outer ? blocks_r : blocks_c, inner = rows_outer ? blocks_c : blocks_r;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t n = 0; n < inner; ++n) {
      const int64_t i = rows_outer ? o : n, j = rows_outer ? n : o;
      if (i * br >= rows_valid || j * bc >= cols_valid) continue;
      const float* ai = a + i * a_step;
      const float* bj = b + j * b_step;
      float* cij = c + i * br * ldc + j * bc;
      const bool crosses = i * br + br > rows_valid || j * bc + bc > cols_valid;
      const int64_t rows = std::min(br, rows_valid - i * br), cols = std::min(bc, cols_valid - j * bc);
      if (!kernel || (in_place == 1 && crosses)) {
        cpu_mma_edge(kc, ai, bj, cij, ldc, lda, ldb, rows, cols, overwrite);
      } else if (in_place == 2 && crosses) {
        // The whole block on the staged operands' padding, into a local tile; only
        // its valid part is C's. Larger than any built-in block (16 x 32, 8 x 48, 6 x 64).
        float t[16 * 64] = {};
        for (int64_t r = 0; r < rows && !overwrite; ++r)
          for (int64_t c2 = 0; c2 < cols; ++c2) t[r * bc + c2] = cij[r * ldc + c2];
        kernel(kc, ai, bj, t, bc, lda, ldb, overwrite);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c2 = 0; c2 < cols; ++c2) cij[r * ldc + c2] = t[r * bc + c2];
      } else {
        kernel(kc, ai, bj, cij, ldc, lda, ldb, overwrite);
      }
    }
}

void* const* cpu_support_table() {
  static const std::vector<void*> table = [] {
    std::vector<void*> t = {reinterpret_cast<void*>(&cpu_copy_guarded), reinterpret_cast<void*>(&cpu_mma_edge),
                            reinterpret_cast<void*>(&cpu_mma_blocks)};
    t.push_back(reinterpret_cast<void*>(&cpu_edge_block));
    t.push_back(reinterpret_cast<void*>(&cpu_edge_strip));
    t.insert(t.end(), cpu_prebuilt_microkernels, cpu_prebuilt_microkernels + cpu_prebuilt_count);
    return t;
  }();
  return table.data();
}

}  // namespace tessel
