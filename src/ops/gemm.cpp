#include "ops/gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ops/gemm_kernel.h"
#include "plan/default_plan.h"
#include "plan/machine.h"
#include "plan/tuning_cache.h"
#include "runtime/bound_cpu_group.h"
#include "target/cpu/cpu_emit.h"
#include "target/cpu/cpu_support.h"
#include "tessel/tessel.h"
#include "tessel/error.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_kernel.h"
#include "target/cuda/cuda_memory.h"
#endif

namespace tessel {
namespace {

// Machine parameters of the cpu target's GEMM (AVX-512, one core's caches): the
// micro-tile held in registers and the largest cache blocks.
constexpr int64_t kCpuAtomM = 12, kCpuAtomN = 32;
// Products read in place whose N is past kCpuAtomN but within one block of these
// take the first that holds it: 8 rows of 3 vectors (AVX-512) up to 48 columns, 6
// rows of 4 up to 64; one pass over each A row, as many rows as the registers hold.
constexpr std::pair<int64_t, int64_t> kCpuNarrowAtoms[] = {{8, 48}, {6, 64}};
constexpr int64_t kCpuExact = 128, kCpuExactN = 256;
// Cache blocks (BLIS's MC, NC, KC; measured on the Xeon of 2026-12-01, 48 KB L1d,
// 2 MB L2 per core): a worker part of kCpuPartM rows of A stays in cache while it
// meets every panel of a group's packed B block (BK x BN, at most cpu_max_bn() wide);
// a group is as tall as kCpuMaxBM (its fragment, BM x BN floats, within the plan's
// tile limit) so that each packed B block serves many parts.
// The B block's depth and size are the machine's (plan/machine.h: cpu_blocking):
// on most cores half of L2, 256 x 1024 floats on the Xeon's 2 MB, 256 x 512 on a Zen
// 5's 1 MiB. On the Zen 5, against 1024, two threads (as many column groups each):
// 2000^3 1.01-1.06x, 1536^3 1.13x, 4096x1024x2048 1.10x, 2500x1800x1200 0.96x,
// 1200x3000x900 1.00x; one thread, 2000^3 1.06x, the others within 1%
// (docs/results/cpu-gemm-2026-12-02-session18). On a Zen 4, 512 x 1536 from L3.
// kCpuMaxBK is the depth of the one-k-block rule below and kCpuL2Bytes the Xeon's L2:
// that rule was not measured again.
constexpr int64_t kCpuPartM = 24, kCpuMaxBM = 4032, kCpuMaxBK = 256;
constexpr int64_t kCpuMaxFragmentElems = int64_t{1} << 22;  // a buffer's limit (lower.cpp)
int64_t cpu_max_bn() {
  const CpuBlocking blocking = cpu_blocking();
  const int64_t bn = blocking.b_block_bytes / (4 * blocking.max_bk) / kCpuAtomN * kCpuAtomN;
  return std::clamp<int64_t>(bn, 4 * kCpuAtomN, 2048);
}
constexpr int64_t kCpuL2Bytes = int64_t{2} << 20;
// A group whose B block (K x BN) is at most this takes all of K in one k block: the
// fragment, homed in C, is then written once, where k blocks of kCpuMaxBK read and
// write it again each (past L2, from memory). One thread, against k blocks of 256:
// 2000x128x1000 1.11, 4000x64x512 1.11, 1000x300x600 1.07, 3000x200x500 1.04,
// 5000x256x300 1.03, 1400x100x300 0.98; two threads, 600x300x700 1.17, 3000x200x500
// 1.05, 512^3 1.01 (docs/results/cpu-gemm-2026-12-02-session12).
constexpr int64_t kCpuOneKBlockBytes = 1 << 20;
// A product within the exact sizes run by several threads is split into equal
// groups of whole rows (or whole columns), one a thread, from this many
// multiply-adds a thread: below it the second thread's start costs more than its
// half saves. Two threads against OpenBLAS with two (which runs these on one):
// 64^3 0.93 -> 0.90, 68^3 0.92 -> 0.97, 72^3 1.00 -> 1.13, 96^3 1.01 -> 1.45,
// 128^3 1.14 -> 1.82, 100x60x80 1.30 -> 1.57 (docs/results/cpu-gemm-2026-12-02-session14).
// Unequal groups (the last one short) are made only with AVX-512, where the short
// group's ragged row block runs in cpu_mma_edge's masked vectors; elsewhere it takes
// the scalar edge loop (127x193x61 on two 64-row groups ran 2.7x slower).
constexpr int64_t kCpuSplitMinWork = 150000;
// A and B are read in place (Plan::direct, no packing) beyond the exact sizes while B
// (K x N) stays well inside L2: there packing cost more than it saved. With more than
// one thread, each reads B whole into its own core's L2 and its group's rows of A
// (until the thirty-ninth session only one thread did; against that packed plan, two
// threads: 300x4x500 3.5x, 100x3x300 2.5x, 1000x1x1000 5.0x, 3000x128x800 1.19x,
// 150x100x600 1.15x, 1500x500x500 1.09x, 2000x256x512 and 422x165x946 1.05x faster,
// docs/results/cpu-gemm-2026-12-05-session39). One thread
// (2026-12-01, against packing: 1024x64x64 1.23x, 256x128x256 1.17x, 200x300x160 1.17x, 160x160x512
// 1.03x faster; 256^3, 300^3, 384^3, 128x1024x128 within 2%). B from 384 KiB to 1 MiB
// read in place was slower (256x512x256 4%, 512^3 20%) until the emitter copied B's
// panels there (cpu_emit.cpp, kCpuPackBBytes): then 1.04-1.14x faster than packed
// (512^3, 384^3, 448^3, 256x512x256, 500x400x300; docs/results/cpu-gemm-2026-12-02-session12).
// Past 1 MiB, A's block rows run outside (cpu_emit.cpp), each read from memory once
// while B stays in L2: first for tall and narrow products (N within the exact sizes;
// packed, a group's whole A block went to memory and back: 4000x64x512 1.41x,
// 2000x128x1000 1.22x, 3000x200x500 1.10x faster in place), then for any (neither A
// nor the fragment bounded: 640x320x480 1.13x, 800x400x300 1.07x, 1000x400x400,
// 768x768x256 and 3000x400x200 1.07x, 900x512x256 1.04x, 1024x512x512 1.03x faster
// than packed; 700x500x400 0.97x; docs/results/cpu-gemm-2026-12-02-session15). The
// fragment stays within the plan's tile limit, and a wide one within half of it:
// 4000x1000x200 (4M outputs of 200 multiply-adds) ran 0.94x packed.
constexpr int64_t kCpuDirectBBytes = 1 << 20;
constexpr int64_t kCpuDirectTallElems = int64_t{1} << 22, kCpuDirectWideElems = kCpuDirectTallElems / 2;
// Past L2 (B over kCpuDirectBBytes) on one or two threads, with K of at least
// kCpuDirectBK, A and B are read in place too, K in blocks of kCpuDirectBK, where both
// row strides spread over the caches' sets (cpu_row_stride_spreads): in the fewest equal
// groups (a multiple of the threads) whose tiles stay within kCpuDirectTallElems. The
// packed plan copied A's whole block once per 500 columns of C, and each 500-wide group
// ended in a masked edge. Against it (`tessel bench --reference`, twenty-first session,
// docs/results/cpu-gemm-2026-12-03-session21), one thread: 2000^3 1.00-1.09x,
// 1500x1300x700 1.12x, 800x2500x1000 1.07x, 1200x900x1100 1.04x, 4001x1500x800 1.29x,
// 2600x2600x1300 1.15x, 3000x2000x1000 1.05x, 1700x1000x2300 0.97x; two threads: 2000^3
// 1.22x, 2500x1800x1200 1.34x, 1200x900x1100 1.19x, 3000x3000x1500 1.11x,
// 4001x1500x800 1.16x, 4000x3000x1000 1.05x. Strides of 1024, 1536 and 1600 floats ran
// 0.74-0.97x in place: those stay packed. K blocks of 384 to 1000 ran alike at 2000^3;
// 128 read C too often and 2000 lost L1. (Shorter K keeps the bounds above:
// 4000x1000x200 ran 0.94x in place.) Where the machine packs past L2 (plan/machine.h:
// cpu_blocking: every machine but AMD's Zen 5 and later), only narrow products (below)
// are read in place so, on a Zen 4, whatever B's stride (rows of 64, 128, 192 and 256
// floats ran 1.08-1.18x faster in place there too).
constexpr int64_t kCpuDirectBK = 500;
// On such a machine (a Zen 4) the narrow products are those of at most
// kCpuNarrowInPlaceN columns, A's rows need only spread over kCpuNarrowMinSets of L1's
// 64 sets (rows 8000 or 40000 floats apart: 16 sets; 16000: 8), and K is one block
// where B is within kCpuWholeKBBytes: the accumulators stay in registers over all of
// K, and C is read and written once. One thread, against k blocks of 500 in place or
// packed (sixty-third session, docs/cpu_microkernel.md): 1000x64x40000 1.30x (in
// blocks), 1000x128x16000 1.13x, 1000x16x20000 1.11x, 4000x64x5000 1.10x,
// 800x176x8000 1.09x, 4000x320x1000 1.09x, 3000x300x3000 1.07x, 2000x512x2000 1.05x;
// A's rows 1024 or 2048 floats apart (one set) ran 0.94-0.98x at 256 to 512 columns,
// so they stay packed. Past 8 MiB B streams from memory with K whole: 600x512x8000
// (B 16 MiB) ran 0.95x packed, 1.03x in blocks of 500; 300x512x20000 (40 MiB) 0.66x
// of the blocks.
constexpr int64_t kCpuNarrowInPlaceN = 512, kCpuNarrowMinSets = 8, kCpuWholeKBBytes = 8 << 20;
// Measured on two cores only: with more, every group would read all of B from L3,
// where the packed plans share it; more threads keep the packed plan (for B within
// kCpuDirectBBytes too).
constexpr int64_t kCpuDirectMaxThreads = 2;

// Whether rows `floats` apart spread over L1's 64 sets of 64-byte lines: not a whole
// number of lines apart, or consecutive rows' lines in at least `min_sets` sets (by
// default 32: a number of lines with at most one factor 2).
constexpr int64_t kCpuSpreadSets = 32;
bool cpu_row_stride_spreads(int64_t floats, int64_t min_sets = kCpuSpreadSets) {
  const int64_t bytes = 4 * floats;
  return bytes % 64 != 0 || 64 / std::gcd(bytes / 64, int64_t{64}) >= min_sets;
}

// A product of a few rows (AVX-512) and more columns than the narrow atoms span:
// the widest of them at least M tall, for as many accumulators as those rows can
// hold. 12x32's blocks of 1 to 3 rows hold 2 to 6, under the 8 that keep both FMA
// pipes busy through an FMA's latency, and of 4 to 8 rows they read B in half the
// lines a k step. One thread, against 12x32 (forty-ninth session,
// docs/results/cpu-gemm-2026-12-06-session49): 3x327x142 2.15x, 1x256x256 1.16x,
// 6x364x40 1.14x, 4x1765x141 1.23x, 7x811x79 1.13x, 10-12 rows (still 12x32) alike.
void cpu_short_product_atom(Plan& p, int64_t m, int64_t n) {
  if (cpu_vector_lanes() != 16 || n <= std::rbegin(kCpuNarrowAtoms)->second) return;
  for (auto atom = std::rbegin(kCpuNarrowAtoms); atom != std::rend(kCpuNarrowAtoms); ++atom)
    if (m <= atom->first) {
      p.atom_m = atom->first;
      p.atom_n = atom->second;
      return;
    }
}

// The sim interprets every element: small tiles, a few workers.
constexpr int64_t kSimBlockM[] = {8, 16};
constexpr int64_t kSimBlockN[] = {8, 16};
constexpr int64_t kSimBlockK[] = {4, 8};

// cuda (numbers for the H200; see docs/cuda.md): the tile grows with the problem so
// that small problems still spread over many blocks. Fma: 4x4 or 8x8 outputs per
// thread. MmaSync: one warp per 16x16, 32x32 or 64x32 of C, the largest class
// with a 4-stage cp.async pipeline. 64x64 per warp (128x256 over 8 warps) ran 1.2x
// faster on the H200 but still spills 8-16 bytes at 255 registers (docs/cuda.md).
struct CudaTile {
  int64_t max_mn;  // used while M * N <= max_mn
  int64_t bm, bn, bk_f32;          // fma
  int64_t bm_mma, bn_mma, bk_mma;  // mma.sync
  int fma_threads, mma_warps, mma_window;
};
// Largest class, 16-bit operands, on sm_90: warpgroup wgmma from 128-byte-swizzled
// shared tiles, one 64 x bn part per warpgroup, k tiles of 64 (128-byte rows).
// 128x256 over 2 warpgroups (64x256 each, 128 accumulator registers a thread) with
// a 4-stage pipeline (193 KB of shared memory) ran fastest on the H200: 1.11x
// 256x128 over 4, 1.34x 128x128 over 2 (docs/cuda.md).
constexpr int64_t kWgmmaBM = 128, kWgmmaBN = 256, kWgmmaBK = 64;
constexpr int kWgmmaWarpgroups = 2, kWgmmaWindow = 4;
// With tma, wgmma takes every shape above the smallest class, and few-row ones
// with at least this many multiply-adds, M x N x K (16x4096x4096: 2.4x mma.sync on
// the H200).
constexpr int64_t kWgmmaMinMultiplyAdds = int64_t{1} << 27;
// The largest class's fp32 (fma) k tile from this K on: 32, not the table's 8. Four
// times the math a barrier and a copy wait cover (H200, 128x128 tiles, A read 2 k
// at a time: 0.68 -> 0.77x cuBLAS at 4096^3 and 2048^3, 0.75 -> 0.83 at
// 3000x2000x1500, 0.79 at 8192^3; thirteenth session, docs/cuda.md). Shorter K keeps
// 8, so that a few k steps still pipeline (not measured below 1500).
constexpr int64_t kFmaDeepKFrom = 512, kFmaDeepBK = 32;
// The 256-row fp32 tiles (16x8 a thread, 128 accumulators, one block a
// multiprocessor) that plans may ask for; no default takes them now (kFmaMid*).
constexpr int64_t kFmaWideBM = 256;
// fp32 (fma atom) products whose 64x64 tiles are more than one a multiprocessor take
// 128x64x32 tiles (256 threads, 8x4 a thread, two blocks a multiprocessor) through
// tensor maps, from K = 192; four stages from K = 512, else three. Against the plans
// before (64x64x16 with cp.async up to 1024^2 outputs; above, 128x128 tiles, or
// 256x128 ones where whole tiles or K from 2048 filled their last wave), an H100,
// cuBLAS sgemm / tessel: 1000^3 0.63 -> 0.80, 900^3 0.64 -> 0.80, 700x900x500 0.60 ->
// 0.74, 1100x1000x600 0.55 -> 0.67, 2000x1500x300 0.58 -> 0.81, 1700x1100x1700 0.78 ->
// 0.93, 2200x1800x1200 0.54 -> 0.85, 3000x2000x1500 0.90 -> 0.97, 3500x2500x1800
// 0.76 -> 0.88, 6000x5000x1000 0.85 -> 0.92, 3000x3000x300 0.66 -> 0.83 (three
// stages); with four, where 256x128 tiles were taken: 8192^3 0.849 -> 0.867,
// 5000x3000x2500 0.876 -> 0.937, 7000x5000x2500 0.866 -> 0.940, 4096x4096x512 0.817 ->
// 0.857, 4096^3 0.846 either way, 2048^3 0.828 -> 0.824. Four stages against three on
// the mid shapes: within 1% but 1024x1024x2048 +2.4% and, at K = 384, 1500x1500x384
// -4%. Where the 64x64 tiles are one wave or less the 128x64 ones leave
// multiprocessors idle (512^3 0.92 -> 0.48, 1024x512x1024 0.83 -> 0.57); at K = 128
// and 64 they gained nothing. Fifty-third session, docs/cuda.md.
constexpr int64_t kFmaMidMinK = 192, kFmaMidFourStagesK = 512;
constexpr int kFmaMidWorkers = 256;
// The smallest class's mma.sync k tile is 64 with two stages: the kernels of such
// shapes are bound by each k step's fixed work (waits, barrier, copy decisions), not
// by their math (H200, host wall against cuBLAS, against 32x32x32 with three stages:
// tf32 250x130x250 0.66 -> 0.80, 180x200x220 0.86 -> 0.98; bf16 100^3 0.98 -> 1.36,
// 150x90x250 0.48 -> 0.62; fifteenth session, docs/cuda.md).
// There, a 16-bit product whose K fits one k tile of at most 256 and whose rows start
// on 4 bytes (K and N even: the copies go asynchronously) takes 16x32 tiles (4 warps)
// and a single k step: one copy wait and barrier a block, and twice the blocks (H200,
// host wall against cuBLAS, 32x32x64 with two stages -> 16x32x256 with one: bf16
// 250x130x250 0.96 -> 1.77, 200x130x222 0.97 -> 1.78, 150x90x250 0.98 -> 1.35,
// 256x136x256 1.46 -> 1.84; fp16 alike, 0.71-0.75 -> 1.30-1.32; sixteenth session,
// docs/cuda.md). Rows on 2 bytes (K or N odd) copy element by element: there a step
// of 256 lost (17x255x99: 0.92 and 0.56), and one of 128 paid where K is past the
// two-stage tile's 64 (host wall against cuBLAS, two runs, fp16: 17x255x99 0.99-1.20
// -> 1.06-1.32, 33x100x77 1.05-1.43 -> 1.67-1.86, 200x150x101 0.87-0.91 -> 1.58-1.66;
// bf16 1.65-3.05; seventeenth session). Within 64 the two-stage tile is one step
// already, and its 32x32 blocks ran faster (127x193x61 fp16 1.16-1.53 against 1.00-1.41).
constexpr int64_t kCudaOneStepMaxK = 256, kCudaOneStepMaxKElementCopies = 128;
constexpr CudaTile kCudaTiles[] = {
    {256 * 256, 32, 32, 32, 32, 32, 64, 64, 4, 2},
    {1024 * 1024, 64, 64, 16, 64, 64, 32, 256, 4, 3},
    {INT64_MAX, 128, 128, 8, 128, 128, 32, 256, 8, 4},
};

template <size_t N>
int64_t pick(const int64_t (&sizes)[N], int64_t extent) {
  for (int64_t s : sizes)
    if (s >= extent) return s;
  return sizes[N - 1];
}

// tf32's wgmma tile (16-bit operands choose among more: choose_wgmma_tile). Time ~
// waves x tile work / rate: a wave is one tile per multiprocessor, and a 128x128
// tile ran at 0.88 the rate of a 128x256 one (4096^3 bf16 on the H200, tenth
// session, docs/cuda.md).
bool wide_wgmma_tiles_pay(int64_t m, int64_t n) {
  const int64_t sms = cuda_multiprocessors();
  auto waves = [&](int64_t bn) {
    const int64_t tiles = (m + kWgmmaBM - 1) / kWgmmaBM * ((n + bn - 1) / bn);
    return double((tiles + sms - 1) / sms);
  };
  return waves(kWgmmaBN) * 2.0 <= waves(kWgmmaBN / 2) / 0.88;
}

// The 16-bit wgmma tiles of the default plans (tma, a producer warpgroup, 4 stages)
// and their rate relative to 128x256's, fitted with kWgmmaLastWaveFloor (twenty-eighth
// session, docs/results/gpu-h200-2026-12-04b): the values whose picks lose least
// against the best tile measured, on average, over 77 bf16 shapes with every
// dimension >= 1024 on the H200 (34 under all six tiles, 30 under the old and a trial
// rule, 13 under four or two tiles in the twenty-seventh session). Against the rates
// before (128x256 1.0, 192x192 0.94, 128x192 0.93, 192x128 0.92, 128x128 0.85, every
// wave counted whole): 2.9% -> 1.4% below the best tile on average, under 0.75x
// cuBLAS 12 -> 7 of the 77. 12 shapes gained 4.6-21% (3456x2984x5496 128x128 -> 128x256
// 0.65 -> 0.79x, 1672x2744x3488 128x192 -> 192x128 0.62 -> 0.75x); 4 lost 1.6-11%
// (2560x1664x2560 and 5120x1664x1536: 192x192 for 128x128; 5848x1088x4848: 192x192
// for 128x256, 0.83 -> 0.74x).
struct WgmmaTile {
  int64_t bm, bn;
  int warpgroups;
  double rate;
};
constexpr WgmmaTile kWgmmaTiles[] = {{128, 256, 2, 1.0}, {192, 192, 3, 1.0}, {128, 192, 2, 0.94},
                                     {192, 128, 3, 0.92}, {128, 128, 2, 0.80}, {64, 128, 1, 0.55}};
// Past one wave of tiles, a last wave that fills a fraction f of the multiprocessors
// takes kWgmmaLastWaveFloor + (1 - kWgmmaLastWaveFloor) x f of a full wave's time: its
// blocks run faster with fewer beside them. A single wave counts whole, as do split
// plans' waves (the split decision keeps every wave whole): the floor from half a
// wave on fitted about as
// well (1.2% below the best tile) but moved few-tile, long-K shapes off the split
// plans measured for them (1536x1536x8192: 192x192 in two slices, 0.90x, to 128x192
// unsplit), and in a trial with other rates 1280^3 from 128x128 (1.02x) to 192x128
// (0.80x).
constexpr double kWgmmaLastWaveFloor = 0.3;

double wgmma_tile_rate(int64_t bm, int64_t bn) {
  for (const WgmmaTile& t : kWgmmaTiles)
    if (t.bm == bm && t.bn == bn) return t.rate;
  return 1.0;
}

// Split-K (gemm_split_k_kernel, then split_k_sum_kernel) on cuda, for the default
// plans of every atom: the time of S slices is estimated as waves x one slice's
// tile work at one block's rate, plus, when split, the partial sums' traffic
// (written and read, fp32) at memory bandwidth and a second launch; the fewest
// slices of the lowest estimate win. A wave is `per_sm` blocks a multiprocessor,
// each at 1 / per_sm of its share of the device's rate (for wgmma times
// wgmma_tile_rate). Machine numbers of the H200: dense 16-bit wgmma rate, fp32 fma
// rate (what 4096^3 reaches), mma.sync's on small blocks, HBM bandwidth, a launch.
// Slices keep kSplitKMinSteps k tiles, and only outputs of tiles for at most half
// a wave split: 1536x1536x6144 (72 tiles, 3 slices) ran 0.87x unsplit
// (docs/results/gpu-h200-2026-12-01).
constexpr double kCudaMmaFlops = 6e14, kCudaFmaFlops = 4e13, kCudaMmaSyncFlops = 1e14, kCudaBytesPerSecond = 3e12,
                 kCudaLaunchSeconds = 4e-6;
constexpr int64_t kSplitKMaxSlices = 16, kSplitKMinSteps = 4;
// Blocks of few outputs on the fma and mma.sync atoms are small: a multiprocessor
// runs several at once, and one alone runs at about the rate it has among a few. So
// their waves count kCudaSmallBlockOutputs / (BM x BN) blocks a multiprocessor, at
// most 4: 32x32 blocks 4 (forced splits of few-tile, long-K shapes ran best at 2 to 8
// blocks a multiprocessor, docs/results/gpu-h200-2026-12-03g/small-split), 64x64
// blocks 2 (at 4, 600x600x300 and fp32 shapes of K under 1000 split too finely and
// lost 5-25%: mid/). Unsplit, few-tile, long-K shapes ran at 0.04-0.52x cuBLAS (bf16
// 64x64x16384 0.08, fp32 16x4096x4096 0.52).
constexpr int64_t kCudaSmallBlockOutputs = 8192, kCudaSmallBlocksPerSm = 4;

struct SplitK {
  int64_t slices = 1, slice_k = 0;  // S and KS
  double seconds = 0;               // the estimate it won with
};

// Stream-K's split (gemm_stream_k_kernel): `waves` whole waves of `groups` tiles,
// then the rest's k steps in ranges of `steps`.
struct StreamK {
  int64_t groups = 0, steps = 0, waves = 0;  // G, L and W; 0 groups: no stream-K
  int64_t tiles = 0;                         // tiles that ranges share (their counters)
};

// One group a multiprocessor. Whole waves stay whole but the last one, which goes
// with the part-filled wave into equal ranges of k steps: at least a tile's steps a
// group (few shared tiles), and the tiles running at once are neighbours (ranges
// over all the tiles ran every tile at once: 4096^3 missed L2 and ran 40% slower).
StreamK stream_k_ranges(const Plan& p, int64_t m, int64_t n, int64_t k) {
  const int64_t bm = p.tile("BM"), bn = p.tile("BN"), bk = p.tile("BK");
  const int64_t tiles = (m + bm - 1) / bm * ((n + bn - 1) / bn), tile_steps = (k + bk - 1) / bk;
  const int64_t sms = cuda_multiprocessors();
  if (tiles == 0 || tile_steps == 0) return {};
  if (tiles % sms == 0) return {sms, 1, tiles / sms, 1};
  const int64_t waves = std::max<int64_t>(tiles / sms - 1, 0), rest = tiles - waves * sms;
  const int64_t steps = rest * tile_steps, per_group = (steps + sms - 1) / sms;
  return {waves > 0 ? sms : (steps + per_group - 1) / per_group, per_group, waves, rest};
}

// `flops`: the device's rate for this tile; `per_sm`: the blocks of a wave on one
// multiprocessor; `last_wave_floor`: unsplit, past one wave, a part-filled last wave
// costs this + (1 - this) x its fill of a full one (1: every wave whole).
SplitK split_k_estimate(int64_t bm, int64_t bn, int64_t bk, int64_t m, int64_t n, int64_t k, double flops,
                        int64_t per_sm = 1, double last_wave_floor = 1.0) {
  SplitK best;
  const int64_t slots = cuda_multiprocessors() * per_sm;
  const int64_t tiles = (m + bm - 1) / bm * ((n + bn - 1) / bn), steps = (k + bk - 1) / bk;
  const double rate = flops / double(slots);
  for (int64_t want = 1; want <= kSplitKMaxSlices; ++want) {
    const int64_t slice_steps = std::max<int64_t>(1, (steps + want - 1) / want),
                  slices = std::max<int64_t>(1, (steps + slice_steps - 1) / slice_steps);
    if (slices > 1 && (slice_steps < kSplitKMinSteps || tiles * 2 > slots)) break;
    double waves = double((tiles * slices + slots - 1) / slots);
    if (slices == 1 && tiles > slots && tiles % slots)
      waves = double(tiles / slots) + last_wave_floor + (1 - last_wave_floor) * double(tiles % slots) / double(slots);
    double seconds = waves * 2.0 * double(bm * bn * bk * slice_steps) / rate;
    if (slices > 1) seconds += 8.0 * double(slices * m * n) / kCudaBytesPerSecond + kCudaLaunchSeconds;
    if (want == 1 || seconds < best.seconds) best = {slices, slice_steps * bk, seconds};
  }
  return best;
}

// fp32's fma plans split since the twenty-fifth session (64x2048x8192 ran 32 tiles of
// 64x64 on 132 multiprocessors: 0.14x cuBLAS), mma.sync's since the twenty-sixth.
SplitK choose_split_k(const Plan& p, int64_t m, int64_t n, int64_t k) {
  if (p.target != TargetKind::Cuda || m == 0 || n == 0) return {};
  const int64_t bm = p.tile("BM"), bn = p.tile("BN");
  const double flops = p.atom == AtomKind::Wgmma     ? kCudaMmaFlops * wgmma_tile_rate(bm, bn)
                       : p.atom == AtomKind::MmaSync ? kCudaMmaSyncFlops
                                                     : kCudaFmaFlops;
  const int64_t per_sm =
      p.atom == AtomKind::Wgmma ? 1 : std::clamp<int64_t>(kCudaSmallBlockOutputs / (bm * bn), 1, kCudaSmallBlocksPerSm);
  SplitK s = split_k_estimate(bm, bn, p.tile("BK"), m, n, k, flops, per_sm);
  return s.slices > 1 ? s : SplitK{};
}

// The default 16-bit wgmma tile: the lowest estimate over kWgmmaTiles
// (split_k_estimate: waves at the tile's rate, an unsplit last one by its fill,
// kWgmmaLastWaveFloor; split-K where it pays). Measured
// against the one tile of the tenth session: 1536^3 0.65 -> 0.83x cuBLAS (128x192),
// 1024^3 0.76 -> 0.97 (64x128).
const WgmmaTile& choose_wgmma_tile(int64_t m, int64_t n, int64_t k) {
  const WgmmaTile* best = &kWgmmaTiles[0];
  double best_seconds = 0;
  for (const WgmmaTile& t : kWgmmaTiles) {
    const double seconds = split_k_estimate(t.bm, t.bn, kWgmmaBK, m, n, std::max<int64_t>(k, 1),
                                            kCudaMmaFlops * t.rate, 1, kWgmmaLastWaveFloor)
                               .seconds;
    if (&t == &kWgmmaTiles[0] || seconds < best_seconds) best = &t, best_seconds = seconds;
  }
  return *best;
}

// Clusters of two blocks along the tile rows sharing B's boxes (Plan::cluster), a
// call's choice for the default 16-bit plan (resolve_plan; as split-K's, the
// default plan itself stays plain), where, on the 94 bf16 shapes with every dimension >= 1024
// (docs/results/gpu-h200-2026-12-04e/cluster-class), they paid: K longer than
// kWgmmaClusterMinK (a long main loop, where the halved B traffic tells), a B box
// no smaller than A's (the one shared along the rows), more tiles than split-K
// takes, and rows rounded up to whole pairs that add no wave. There, 43 shapes:
// 0.92-1.25x the plain tile (mean 1.06x); everywhere else clusters lost (an added
// wave: 0.57-0.87x). K from 1537 to 2048 (H100, 25 shapes of both 16-bit types,
// docs/results/cuda-2026-12-06-session54): 0.94-1.22x, 16 faster by 3-22%, 6 slower by
// 3-6% (2048^3 0.97 -> 0.93); K from 1064 to 1496: 0.91-1.05x, mostly slower.
constexpr int64_t kWgmmaClusterMinK = 1536;

bool wgmma_cluster_pays(const Plan& p, int64_t m, int64_t n, int64_t k, const GemmOptions& o) {
  const bool sixteen_bit = o.precision == GemmPrecision::BF16 || o.precision == GemmPrecision::F16;
  if (p.target != TargetKind::Cuda || p.atom != AtomKind::Wgmma || !sixteen_bit || !p.tma || p.producers == 0 ||
      p.persistent > 0 || o.split_k > 1 || o.stream_k)
    return false;
  const int64_t bm = p.tile("BM"), bn = p.tile("BN");
  if (k <= kWgmmaClusterMinK || bn < bm) return false;
  const int64_t sms = cuda_multiprocessors(), rows = (m + bm - 1) / bm, cols = (n + bn - 1) / bn;
  const int64_t tiles = rows * cols, paired = (rows + 1) / 2 * 2 * cols;
  return tiles * 2 > sms && (paired + sms - 1) / sms == (tiles + sms - 1) / sms;
}

// The groups of a cpu GEMM read in place in k blocks: the fewest, a multiple of the
// threads, whose tiles stay within kCpuDirectTallElems; equal groups of rows, else of
// columns, else with AVX-512 groups of rows with the last one short (as
// default_gemm_plan's split). Returns {BM, BN} of a group, BM 0 where none fits.
// (Extents past the tile limit stay packed, so that the products here cannot overflow.)
std::pair<int64_t, int64_t> cpu_k_block_groups(int64_t m, int64_t n, int64_t threads) {
  if (m > kCpuDirectTallElems || n > kCpuDirectTallElems) return {0, n};
  int64_t groups = std::max<int64_t>(1, m * n / kCpuDirectTallElems / threads) * threads;
  while (groups < m && (m + groups - 1) / groups * n > kCpuDirectTallElems) groups += threads;
  if (m % groups == 0 && m / groups >= kCpuAtomM) return {m / groups, n};
  if (n % groups == 0 && n / groups >= kCpuAtomN && m * (n / groups) <= kCpuDirectTallElems) return {m, n / groups};
  if (cpu_vector_lanes() == 16 && (m + groups - 1) / groups >= kCpuAtomM) return {(m + groups - 1) / groups, n};
  return {0, n};
}

// A GEMM past the exact sizes, BLIS's blocking in plan terms, for `threads` cores:
// the grid is rows x cols groups, at most one per core, chosen so that a group
// packs least (M / rows + N / cols smallest; the rows of M <= kCpuExact and the
// columns of N <= kCpuExactN are not split); a group owns a BM x BN block of C
// and packs B once per k block for all its rows, and its worker parts of
// kCpuPartM rows are the A blocks (the ic loop, run in order by the group's
// thread). BK (unless one k block takes all of K, kCpuOneKBlockBytes) and BN cut K
// and N into near-equal blocks: only the last of each may be ragged and take the
// guarded copy.
// 2000^3, one thread: 0.80x OpenBLAS with 96x512x256 groups, 0.94-0.97x with
// 2016x1000x250 and 24-row parts (docs/results/cpu-gemm-2026-12-01).
void set_cpu_blocked_tiles(Plan& p, int64_t m, int64_t n, int64_t k, int64_t threads) {
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  m = std::max<int64_t>(1, m), n = std::max<int64_t>(1, n), k = std::max<int64_t>(1, k);
  int64_t rows = 1, cols = 1;
  for (int64_t r = 1; r <= threads; ++r) {
    const int64_t c = threads / r;
    // An extent within the exact sizes stays one block (the small-shape rule above).
    if (r > (m <= kCpuExact ? 1 : ceil_div(m, kCpuAtomM)) || c > (n <= kCpuExactN ? 1 : ceil_div(n, kCpuAtomN)))
      continue;
    if (r * c > rows * cols || (r * c == rows * cols && ceil_div(m, r) + ceil_div(n, c) <
                                                            ceil_div(m, rows) + ceil_div(n, cols)))
      rows = r, cols = c;
  }
  // More columns than threads: a multiple of the thread split's, so that every
  // thread gets as many B blocks.
  const int64_t thread_cols = cols;
  cols = std::max(cols, ceil_div(n, cpu_max_bn()));
  cols = ceil_div(cols, thread_cols) * thread_cols;
  // Groups no taller than kCpuMaxBM, and their fragments within the tile limit.
  const int64_t max_bm = std::min(kCpuMaxBM, kCpuMaxFragmentElems / ceil_div(n, cols) / kCpuPartM * kCpuPartM);
  rows = std::max(rows, ceil_div(m, max_bm));
  // One k block (K <= kCpuMaxBK): a group's A block, B block and fragment should fit
  // in half of L2 together, for re-packing the other operand for one more group
  // costs little there. Halve the longer side up to twice. (1024x128x256, one thread:
  // 528-row groups 1.01x OpenBLAS, one 1032-row group 0.89x; 256x1024x128: 512-wide
  // 0.93x, 1024-wide 0.87x.) With several k blocks the fragment streams anyway (2000^3:
  // 1008-row groups 0.92x, 2016-row ones 0.97x).
  auto group_bytes = [&](int64_t r, int64_t c) {
    const int64_t bm = ceil_div(m, r), bn = ceil_div(n, c);
    return 4 * (bm * k + k * bn + bm * bn);
  };
  for (int split = 0; split < 2 && k <= kCpuMaxBK && group_bytes(rows, cols) > kCpuL2Bytes / 2; ++split) {
    if (ceil_div(m, rows) >= ceil_div(n, cols) && m > kCpuExact && rows < ceil_div(m, kCpuAtomM)) rows *= 2;
    else if (n > kCpuExactN && cols < ceil_div(n, kCpuAtomN)) cols *= 2;
    else break;
  }
  const int64_t bm = ceil_div(m, rows), bn = ceil_div(n, cols);
  const int64_t bk = 4 * k * bn <= kCpuOneKBlockBytes ? k : ceil_div(k, ceil_div(k, cpu_blocking().max_bk));
  // Up to kCpuExact rows: one part of exactly those rows; else parts of kCpuPartM.
  const int64_t parts = bm <= kCpuExact ? 1 : ceil_div(bm, kCpuPartM);
  set_gemm_tile(p, parts == 1 ? bm : parts * kCpuPartM, bn, bk);
  p.workers = p.worker_rows = int(parts);
  p.worker_cols = 1;
}

// Worker grid: rows x cols == workers when the tile divides that way (closest to
// square; for wgmma the fewest columns), else the largest grid that fits; surplus
// workers then only copy.
void choose_worker_grid(Plan& p) {
  if (p.workers < 1 || p.atom_m < 1 || p.atom_n < 1) return;  // validate_plan reports it
  const int64_t bm = p.tile("BM"), bn = p.tile("BN");
  int best_r = 1, best_c = 1;
  for (int r = 1; r <= p.workers; ++r)
    for (int c = 1; r * c <= p.workers; ++c) {
      if (bm % r || bn % c || (bm / r) % p.atom_m || (bn / c) % p.atom_n) continue;
      int prod = r * c, best = best_r * best_c;
      // wgmma: the widest parts (one instruction covers a part's whole width).
      // Otherwise the squarest grid, and among those the squarest parts: a part of
      // pr x pc reads pr + pc operands for pr * pc products a k step.
      auto part_skew = [&](int rr, int cc) { return std::abs(bm / rr - bn / cc); };
      bool better = p.atom == AtomKind::Wgmma ? c < best_c
                    : std::abs(r - c) != std::abs(best_r - best_c)
                        ? std::abs(r - c) < std::abs(best_r - best_c)
                        : part_skew(r, c) < part_skew(best_r, best_c);
      if (prod > best || (prod == best && better)) best_r = r, best_c = c;
    }
  p.worker_rows = best_r;
  p.worker_cols = best_c;
}

// The kernels the front door runs (gemm_kernel.h): gemm_kernel; split-K's two; or,
// for tf32 on the wgmma atom, B transposed first and gemm_kernel on B^T.
enum class GemmKernelKind { Plain, SplitK, SplitKSum, Transpose, PlainTransposedB, StreamK };

// Everything that changes the compiled kernel; compared, not formatted, on every call.
using CacheKey = std::tuple<GemmKernelKind, GemmBeta, Plan, bool, GemmPrecision, std::string>;

// One compiled kernel per kind, plan and options, for the life of the process. The
// public compile() caches too, but keys by the kernel's text: this map spares a
// call the capture and the printing.
Kernel compiled_gemm(const Plan& plan, const GemmOptions& options, bool* fresh,
                     GemmKernelKind kind = GemmKernelKind::Plain, GemmBeta beta = GemmBeta::Any) {
  static std::mutex mutex;
  static std::map<CacheKey, Kernel> cache;
  CacheKey key{kind, beta, plan, options.coalesce_barriers, options.precision, options.arch};
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {
      *fresh = false;
      return it->second;
    }
  }
  CompileSettings settings;
  settings.coalesce_barriers = options.coalesce_barriers;
  settings.cuda_arch = options.arch;
  const DType ab = storage_dtype(options.precision);
  Kernel kernel = compile(kind == GemmKernelKind::Plain              ? gemm_kernel(ab, false, beta)
                          : kind == GemmKernelKind::PlainTransposedB ? gemm_kernel(ab, /*b_transposed=*/true, beta)
                          : kind == GemmKernelKind::SplitK           ? gemm_split_k_kernel(ab)
                          : kind == GemmKernelKind::StreamK          ? gemm_stream_k_kernel(ab)
                          : kind == GemmKernelKind::Transpose        ? transpose_kernel()
                                                                     : split_k_sum_kernel(),
                          plan, settings);
  *fresh = true;
  std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(key, kernel).first->second;
}

// Messages are built only on failure: the checks run on every call.
[[noreturn]] void bad_argument(const std::string& message) {
  user_error(ErrorKind::InvalidArgument, message);
}

// The byte offsets of `rows` rows of `ld` floats fit in 64 bits.
bool span_fits(int64_t rows, int64_t ld) {
  int64_t bytes = 0;
  return !__builtin_mul_overflow(rows, ld, &bytes) && !__builtin_mul_overflow(bytes, int64_t{4}, &bytes);
}

void validate_sizes(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  // Every call checks; the common, valid case in one expression.
  if (m >= 0 && n >= 0 && k >= 0 && lda >= std::max<int64_t>(1, k) && ldb >= std::max<int64_t>(1, n) &&
      ldc >= std::max<int64_t>(1, n) && span_fits(m, lda) && span_fits(k, ldb) && span_fits(m, ldc))
    return;
  if (!(m >= 0 && n >= 0 && k >= 0))
    bad_argument("sizes must be non-negative, got M = " + std::to_string(m) +
                ", N = " + std::to_string(n) + ", K = " + std::to_string(k));
  auto check_ld = [](const char* name, int64_t ld, const char* dim, int64_t cols) {
    if (!(ld >= std::max<int64_t>(1, cols)))
      bad_argument(std::string(name) + " = " + std::to_string(ld) + " is smaller than the row (" +
                  dim + " = " + std::to_string(cols) + ")");
  };
  check_ld("lda", lda, "K", k);
  check_ld("ldb", ldb, "N", n);
  check_ld("ldc", ldc, "N", n);
  // Every element offset must fit in 64 bits.
  auto check_span = [](const char* name, int64_t rows, int64_t ld) {
    if (!span_fits(rows, ld))
      bad_argument(std::string(name) + ": " + std::to_string(rows) + " rows x ld " +
                  std::to_string(ld) + " overflows 64-bit byte offsets");
  };
  check_span("A", m, lda);
  check_span("B", k, ldb);
  check_span("C", m, ldc);
}

void validate_pointers(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                       const float* c) {
  if (m == 0 || n == 0) return;  // an empty output: nothing is read or written
  if (!(a || m * k == 0))
    bad_argument("A is null but M x K = " + std::to_string(m) + " x " + std::to_string(k));
  if (!(b || k * n == 0))
    bad_argument("B is null but K x N = " + std::to_string(k) + " x " + std::to_string(n));
  if (!(c || m * n == 0))
    bad_argument("C is null but M x N = " + std::to_string(m) + " x " + std::to_string(n));
}

// tf32 on the wgmma atom: the instruction reads 32-bit B only K-major (N x K rows),
// so B is transposed into scratch first (transpose_kernel) and gemm_kernel's
// b_transposed variant reads that.
bool transposes_b(const Plan& p, GemmPrecision precision) {
  return p.target == TargetKind::Cuda && p.atom == AtomKind::Wgmma && precision == GemmPrecision::TF32;
}

// A row of n floats (at least one) padded to whole 128-byte lines.
int64_t floats_on_lines(int64_t n) { return (std::max<int64_t>(n, 1) + 31) / 32 * 32; }

}  // namespace

// B^T's rows start on 128-byte lines: K rounded up to 32 floats. Tensor maps take
// any multiple of 16 bytes, but a row off the line costs the tma copies a second line
// for most rows (tf32 2500x3500x1500 on the H200: 0.731 -> 0.827 of cuBLAS with 32
// floats instead of 4; docs/cuda.md). The transpose writes this scratch anyway, so
// the padding costs only memory.
int64_t gemm_transposed_b_ld(int64_t k) { return floats_on_lines(k); }

// Split-K's partial rows start on 128-byte lines too: the slices' stores and the
// sum's loads then take their vector paths whatever N is, and no row touches a
// line more than it must. The partials are scratch, so this too costs only memory.
int64_t gemm_split_partials_ld(int64_t n) { return floats_on_lines(n); }

// 32 x 128 tiles of B over 256 workers of 4 x 4 (8 x 32): of seven plans on the
// H200 the fastest (tf32 4096^3 GEMM with its transpose: 0.78 of cuBLAS, against
// 0.73 with 64 x 64 tiles over 16 x 16 workers; docs/cuda.md).
Plan gemm_transpose_plan() {
  Plan p;
  p.target = TargetKind::Cuda;
  p.tiles = {{"BR", 32}, {"BC", 128}};
  p.workers = 256;
  p.worker_rows = 8;
  p.worker_cols = 32;
  return p;
}

namespace {

// An operand as a launch reads it: where, its leading dimension, and whether it is
// a copy (below).
struct TmaOperand {
  const void* data;
  int64_t ld;
  bool copied;
};

#ifdef TESSEL_WITH_CUDA
// Tensor maps (the tma plans' copies) take base addresses and row strides of
// 16-byte multiples. An operand that is not so is first copied, on the launch's
// stream, into device scratch of the calling thread with rows padded to 16 bytes.
// The copy's leading dimension depends on the shape and ld alone, so a repeated
// call's bound launch stays valid. Copies make unaligned shapes as fast as aligned
// ones (1000x1000x1001 bf16 on the H200: the copy of A, then the tma kernel).
TmaOperand tma_operand(int slot, const void* data, int64_t rows, int64_t cols, int64_t ld, int64_t bytes) {
  if (ld * bytes % 16 == 0 && reinterpret_cast<uintptr_t>(data) % 16 == 0) return {data, ld, false};
  const int64_t padded = ld * bytes % 16 == 0 ? ld : (std::max<int64_t>(1, cols) * bytes + 15) / 16 * 16 / bytes;
  return {cuda_thread_scratch(slot, size_t(std::max<int64_t>(1, rows * padded * bytes))), padded, true};
}

// Queues the copy of an operand that tma_operand moved to scratch.
void copy_tma_operand(const TmaOperand& to, const void* data, int64_t rows, int64_t cols, int64_t ld, int64_t bytes) {
  if (to.copied) copy_rows_on_device(const_cast<void*>(to.data), to.ld * bytes, data, ld * bytes, cols * bytes, rows);
}
#endif

// The tuning cache's measured winner for a call's kernel (gemm_kernel of its
// operands' dtype: kernels/gemm.tir, kernels/front_door/gemm_bf16.tir and
// gemm_f16.tir), target, thread count (0 = all cores, as `tessel tune` counts
// them) and shape M, N, K: the exact shape, else the nearest of its class.
// `tessel tune kernels/gemm.tir --shapes "M=..,N=..,K=.."` fills it. tf32 (whose
// wgmma plans transpose B first) and the sim keep the default rules.
std::optional<Plan> tuned_gemm_plan(int64_t m, int64_t n, int64_t k, const GemmOptions& o, std::string* source) {
  if (o.target == TargetKind::Sim || o.precision == GemmPrecision::TF32) return std::nullopt;
  static const std::string f32 = kernel_hash(gemm_kernel(DType::F32)), bf16 = kernel_hash(gemm_kernel(DType::BF16)),
                           f16 = kernel_hash(gemm_kernel(DType::F16));
  const std::string& hash = o.precision == GemmPrecision::BF16  ? bf16
                            : o.precision == GemmPrecision::F16 ? f16
                                                                : f32;
  const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool exact = false;
  std::optional<TunedShape> hit = lookup_tuned_shape(hash, o.target, threads, {{"M", m}, {"N", n}, {"K", k}}, &exact);
  if (!hit) return std::nullopt;
  *source = exact ? "tuning cache (exact shape)" : "tuning cache (nearest shape of its class)";
  return hit->plan;
}

// The plan a call runs: options.plan, else the tuning cache's winner, else the
// default plan for the shape; `source` says which.
Plan resolve_plan(int64_t m, int64_t n, int64_t k, const GemmOptions& options, std::string* source) {
  if (options.target != TargetKind::Cuda && options.precision != GemmPrecision::F32)
    user_error(ErrorKind::Unsupported, std::string("dtype ") + precision_name(options.precision) +
                                           " runs on the cuda target only (" + target_name(options.target) +
                                           " computes fp32)");
#ifndef TESSEL_WITH_CUDA
  if (options.target == TargetKind::Cuda)
    user_error(ErrorKind::Unsupported, "the cuda target is not built: tessel was built without the CUDA toolkit");
#endif
  Plan plan;
  if (options.plan) {
    plan = *options.plan;
    *source = "requested";
  } else if (std::optional<Plan> tuned = tuned_gemm_plan(m, n, k, options, source)) {
    plan = *tuned;
  } else {
    plan = default_gemm_plan(options.target, m, n, k, options.precision, options.arch, options.threads);
    if (wgmma_cluster_pays(plan, m, n, k, options)) plan.cluster = 2;
    *source = "default rules";
  }
  plan.target = options.target;
  if (plan.atom == AtomKind::MmaSync && options.precision == GemmPrecision::F32)
    user_error(ErrorKind::Plan, "the mma.sync atom computes fp32 operands in tf32; ask for dtype tf32, or plan the fma atom");
  if (plan.atom == AtomKind::Wgmma && options.precision == GemmPrecision::F32)
    user_error(ErrorKind::Plan, "the wgmma atom computes fp32 operands in tf32; ask for dtype tf32, or plan the fma atom");
  if (plan.atom == AtomKind::Wgmma && options.precision == GemmPrecision::TF32 && !plan.tma)
    user_error(ErrorKind::Plan, "tf32 on the wgmma atom reads B transposed through tma: plan copy=tma");
  if (options.plan) {
    if (plan.target == TargetKind::Cpu && plan.atom_m == 1 && plan.atom_n == 1 &&
        plan.tile("BM") % kCpuAtomM == 0 && plan.tile("BN") % kCpuAtomN == 0) {
      plan.atom_m = kCpuAtomM;  // the vector micro-kernel when the tile allows it
      plan.atom_n = kCpuAtomN;
    }
    // A grid that covers the workers and splits the tile in whole atom rows is the
    // caller's (a default plan's rows of parts, whose columns need not be whole atoms);
    // else one is chosen.
    const auto bm = plan.tiles.find("BM"), bn = plan.tiles.find("BN");
    const bool grid_fits = bm != plan.tiles.end() && bn != plan.tiles.end() && plan.atom_m >= 1 &&
                           plan.worker_rows >= 1 && plan.worker_cols >= 1 &&
                           plan.worker_rows * plan.worker_cols == plan.workers && bm->second % plan.worker_rows == 0 &&
                           bn->second % plan.worker_cols == 0 && (bm->second / plan.worker_rows) % plan.atom_m == 0;
    if (!grid_fits) choose_worker_grid(plan);  // (which leaves bad plans to validate_plan)
  }
  validate_plan(plan);
  return plan;
}

TensorArg matrix_arg(const void* data, DType dtype, int64_t rows, int64_t cols, int64_t ld, bool on_device) {
  TensorArg t;
  t.data = const_cast<void*>(data);
  t.dtype = dtype;
  t.shape = {rows, cols};
  t.strides = {ld, 1};
  t.on_device = on_device;
  return t;
}

KernelArgs gemm_args(int64_t m, int64_t n, int64_t k, float alpha, const void* a, int64_t lda, const void* b,
                     int64_t ldb, float beta, void* c, int64_t ldc, DType ab, bool on_device) {
  KernelArgs args;
  args.tensors = {{"A", matrix_arg(a, ab, m, k, lda, on_device)},
                  {"B", matrix_arg(b, ab, k, n, ldb, on_device)},
                  {"C", matrix_arg(c, DType::F32, m, n, ldc, on_device)}};
  args.scalars = {{"alpha", alpha}, {"beta", beta}};
  return args;
}

// The split of a call: options.split_k, else for default plans choose_split_k.
SplitK gemm_split(const Plan& p, int64_t m, int64_t n, int64_t k, const GemmOptions& o) {
  if (o.split_k == 1 || k == 0 || p.target != TargetKind::Cuda) return {};
  if (transposes_b(p, o.precision)) {
    if (o.split_k > 1)
      user_error(ErrorKind::Unsupported, "split_k = " + std::to_string(o.split_k) +
                                             ": tf32 on the wgmma atom does not split K (plan mma.sync)");
    return {};
  }
  if (o.split_k == 0) return o.plan ? SplitK{} : choose_split_k(p, m, n, k);
  const int64_t bk = p.tile("BK"), steps = (k + bk - 1) / bk, slice_steps = (steps + o.split_k - 1) / o.split_k;
  return {(steps + slice_steps - 1) / slice_steps, slice_steps * bk};
}

}  // namespace

int64_t gemm_split_k_slices(const Plan& plan, int64_t m, int64_t n, int64_t k, const GemmOptions& options) {
  return gemm_split(plan, m, n, k, options).slices;
}

namespace {

// Split-K's partial sums: S x M x N fp32, rows gemm_split_partials_ld(N) apart.
std::map<std::string, int64_t> split_sizes(const SplitK& split, int64_t m, int64_t n) {
  const int64_t ldp = gemm_split_partials_ld(n);
  return {{"S", split.slices}, {"KS", split.slice_k}, {"sps", m * ldp}, {"ldp", ldp}};
}

#ifdef TESSEL_WITH_CUDA
// Split-K's partial sums in the thread's scratch (slot 2), sized as split_sizes lays them out.
void* split_partials(const SplitK& split, int64_t m, int64_t n) {
  return cuda_thread_scratch(2, size_t(split.slices * m * gemm_split_partials_ld(n)) * sizeof(float));
}

// Stream-K's partial tiles (slot 2: 2G of BM x BN fp32) and its tile counters (slot
// 3, u32), zeroed when first handed out; the kernel leaves every counter at 0.
void* stream_k_partials(const StreamK& s, const Plan& p) {
  return cuda_thread_scratch(2, size_t(2 * s.groups * p.tile("BM") * p.tile("BN")) * sizeof(float));
}
void* stream_k_counters(const StreamK& s) {
  thread_local void* zeroed = nullptr;
  thread_local size_t zeroed_bytes = 0;
  const size_t bytes = size_t(s.tiles) * sizeof(uint32_t);
  void* t = cuda_thread_scratch(3, bytes);
  if (t != zeroed) zeroed = t, zeroed_bytes = 0;
  if (bytes > zeroed_bytes) {
    cuda_zero_words(t, size_t(s.tiles));
    zeroed_bytes = bytes;
  }
  return t;
}

// Device-event timing of a call's queued work, when asked (GemmOptions::time_device).
template <class Work>
void timed_on_device(const GemmOptions& o, GemmReport* report, Work work) {
  if (!o.time_device) return work();
  DeviceTimer timer;
  timer.start();
  work();
  report->device_us = timer.stop_ms() * 1e3;
}

// A and B as a plan's launch takes them: in place, or for tma plans where tensor
// maps cannot describe them, their copies (tma_operand); B transposed
// (transposes_b): its scratch, which the transpose launch fills.
std::pair<TmaOperand, TmaOperand> device_operands(const Plan& plan, int64_t m, int64_t n, int64_t k, const void* a,
                                                  int64_t lda, const void* b, int64_t ldb, GemmPrecision precision) {
  const int64_t bytes = dtype_bytes(storage_dtype(precision));
  if (!plan.tma) return {{a, lda, false}, {b, ldb, false}};
  if (transposes_b(plan, precision)) {
    const int64_t ld = gemm_transposed_b_ld(k);
    void* bt = cuda_thread_scratch(1, size_t(std::max<int64_t>(1, n) * ld * bytes));
    return {tma_operand(0, a, m, k, lda, bytes), {bt, ld, false}};
  }
  return {tma_operand(0, a, m, k, lda, bytes), tma_operand(1, b, k, n, ldb, bytes)};
}

// The launches of one cuda call on device arrays, bound once (leading dimensions
// as device_operands gives them): the GEMM, or split-K's slices and then its sum.
struct CudaLaunches {
  Plan plan;
  SplitK split;
  StreamK stream;
  BoundLaunch main;
  std::optional<BoundLaunch> sum;
  std::optional<BoundLaunch> transpose;  // B into B^T before main (transposes_b)
};

// Queues one call: operand copies, then the launches; returns their wall time.
double run_cuda(CudaLaunches& l, int64_t m, int64_t n, int64_t k, float alpha, const void* a, int64_t lda,
                const void* b, int64_t ldb, float beta, float* c, const GemmOptions& o, const LaunchOptions& lo,
                GemmReport* report) {
  const int64_t bytes = dtype_bytes(storage_dtype(o.precision));
  auto [ta, tb] = device_operands(l.plan, m, n, k, a, lda, b, ldb, o.precision);
  if (l.transpose) {  // X = B, Y = B^T
    l.transpose->set_tensor(0, const_cast<void*>(b));
    l.transpose->set_tensor(1, const_cast<void*>(tb.data));
  }
  // Tensors in declaration order: A, B, then C or P; the sum's P, C.
  l.main.set_tensor(0, const_cast<void*>(ta.data));
  l.main.set_tensor(1, const_cast<void*>(tb.data));
  BoundLaunch& out = l.sum ? *l.sum : l.main;
  if (l.stream.groups > 0) {  // tensors A, B, C, P, T
    l.main.set_tensor(3, stream_k_partials(l.stream, l.plan));
    l.main.set_tensor(4, stream_k_counters(l.stream));
  }
  if (l.sum) {
    void* partials = split_partials(l.split, m, n);
    l.main.set_tensor(2, partials);
    l.sum->set_tensor(0, partials);
  }
  out.set_tensor(l.sum ? 1 : 2, c);
  out.set_scalar(0, alpha);
  out.set_scalar(1, beta);
  double us = 0;
  timed_on_device(o, report, [&] {
    copy_tma_operand(ta, a, m, k, lda, bytes);
    copy_tma_operand(tb, b, k, n, ldb, bytes);
    if (l.transpose) us += l.transpose->run(lo).run_us;
    us += l.main.run(lo).run_us;
    if (l.sum) us += l.sum->run(lo).run_us;
  });
  return us;
}

// Split-K's sum kernel under its default plan for these sizes (compiled once).
Kernel compiled_split_sum(const SplitK& split, int64_t m, int64_t n, int64_t ldc, const GemmOptions& o, bool* fresh) {
  std::map<std::string, int64_t> sizes = split_sizes(split, m, n);
  sizes.insert({{"M", m}, {"N", n}, {"ldc", ldc}});
  return compiled_gemm(default_plan(split_k_sum_kernel(), TargetKind::Cuda, sizes), o, fresh,
                       GemmKernelKind::SplitKSum);
}

// Binds a call's launches on device arrays: `kernel`, split-K's `sum` after it, or
// the `transpose` of B before it.
CudaLaunches bind_cuda(const Kernel& kernel, const std::optional<Kernel>& sum, const std::optional<Kernel>& transpose,
                       const Plan& plan, const SplitK& split, const StreamK& stream, int64_t m, int64_t n, int64_t k,
                       float alpha, const void* a, int64_t lda, const void* b, int64_t ldb, float beta, float* c,
                       int64_t ldc, const GemmOptions& o) {
  const DType ab = storage_dtype(o.precision);
  auto [ta, tb] = device_operands(plan, m, n, k, a, lda, b, ldb, o.precision);
  CudaLaunches l{plan, split, stream, {}, {}, {}};
  if (stream.groups > 0) {
    const int64_t bm = plan.tile("BM"), bn = plan.tile("BN");
    KernelArgs args = gemm_args(m, n, k, alpha, ta.data, ta.ld, tb.data, tb.ld, beta, c, ldc, ab, true);
    TensorArg p;
    p.data = stream_k_partials(stream, plan);
    p.dtype = DType::F32;
    p.shape = {2 * stream.groups, bm, bn};
    p.strides = {bm * bn, bn, 1};
    p.on_device = true;
    TensorArg t;
    t.data = stream_k_counters(stream);
    t.dtype = DType::U32;
    t.shape = {stream.tiles};
    t.strides = {1};
    t.on_device = true;
    args.tensors["P"] = p;
    args.tensors["T"] = t;
    args.sizes = {{"G", stream.groups}, {"W", stream.waves}, {"L", stream.steps}, {"TB", plan.tile_band}};
    l.main = kernel.bind(args);
    return l;
  }
  if (transpose) {
    KernelArgs t;
    t.tensors = {{"X", matrix_arg(b, ab, k, n, ldb, true)}, {"Y", matrix_arg(tb.data, ab, n, k, tb.ld, true)}};
    l.transpose = transpose->bind(t);
    KernelArgs args = gemm_args(m, n, k, alpha, ta.data, ta.ld, tb.data, tb.ld, beta, c, ldc, ab, true);
    args.tensors["B"].strides = {1, tb.ld};  // B^T, N x K rows: element (k, n) at n * ld + k
    l.main = kernel.bind(args);
    return l;
  }
  if (split.slices == 1) {
    l.main = kernel.bind(gemm_args(m, n, k, alpha, ta.data, ta.ld, tb.data, tb.ld, beta, c, ldc, ab, true));
    return l;
  }
  const int64_t ldp = gemm_split_partials_ld(n);
  TensorArg p;
  p.data = split_partials(split, m, n);
  p.dtype = DType::F32;
  p.shape = {split.slices, m, n};
  p.strides = {m * ldp, ldp, 1};
  p.on_device = true;
  KernelArgs args;
  args.tensors = {{"A", matrix_arg(ta.data, ab, m, k, ta.ld, true)}, {"B", matrix_arg(tb.data, ab, k, n, tb.ld, true)},
                  {"P", p}};
  args.sizes = {{"KS", split.slice_k}};
  l.main = kernel.bind(args);
  KernelArgs sum_args;
  sum_args.tensors = {{"P", p}, {"C", matrix_arg(c, DType::F32, m, n, ldc, true)}};
  sum_args.scalars = {{"alpha", alpha}, {"beta", beta}};
  l.sum = sum->bind(sum_args);
  return l;
}

// Host arrays of fp32: A and B go to the device rounded to the storage type, rows
// padded to 16 bytes (what tensor maps take), C only when beta != 0; the call runs
// on those as device arrays, and C comes back.
GemmReport gemm_from_host(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                          const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const GemmOptions& o) {
  auto start = std::chrono::steady_clock::now();
  DType st = storage_dtype(o.precision);
  size_t esz = dtype_bytes(st);
  auto padded_ld = [&](int64_t cols) { return int64_t((std::max<int64_t>(1, cols) * esz + 15) / 16 * 16 / esz); };
  auto pack = [&](const float* src, int64_t rows, int64_t cols, int64_t ld) {
    const int64_t out_ld = padded_ld(cols);
    DeviceBuffer buf(std::max<size_t>(1, rows * out_ld * esz));
    std::vector<char> host(rows * out_ld * esz);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = 0; col < cols; ++col) {
        float x = src[r * ld + col];
        char* dst = host.data() + (r * out_ld + col) * esz;
        if (st == DType::F32) std::memcpy(dst, &x, 4);
        else {
          uint16_t h = st == DType::BF16 ? float_to_bf16(x) : float_to_f16(x);
          std::memcpy(dst, &h, 2);
        }
      }
    buf.upload(host.data(), host.size());
    return buf;
  };
  DeviceBuffer da = pack(a, m, k, lda), db = pack(b, k, n, ldb);
  DeviceBuffer dc(std::max<int64_t>(1, m * n) * sizeof(float));
  if (beta != 0) {
    std::vector<float> packed(m * n);
    for (int64_t r = 0; r < m; ++r) std::memcpy(&packed[r * n], c + r * ldc, n * sizeof(float));
    dc.upload(packed.data(), packed.size() * sizeof(float));
  }
  GemmOptions on_device = o;
  on_device.device_pointers = true;
  on_device.report = true;
  GemmReport report = gemm(m, n, k, alpha, static_cast<const float*>(da.get()), padded_ld(k),
                           static_cast<const float*>(db.get()), padded_ld(n), beta, static_cast<float*>(dc.get()),
                           std::max<int64_t>(1, n), on_device);
  cuda_synchronize();
  std::vector<float> out(m * n);
  dc.download(out.data(), out.size() * sizeof(float));
  for (int64_t r = 0; r < m; ++r) std::memcpy(c + r * ldc, &out[r * n], n * sizeof(float));
  report.run_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return o.report ? report : GemmReport{};
}
#endif

// A bound call: the launches a repeated call with the same shape, leading
// dimensions and options re-points and runs, with no plan choice, cache lookup,
// name binding, lock or allocation (with GemmOptions::report false, no clock read
// and no plan copy either). What every call reads comes first (fewer cache lines
// after a kernel that evicted them).
struct BoundGemm {
  bool valid = false;
  BoundLaunch launch;  // cpu
#ifdef TESSEL_WITH_CUDA
  CudaLaunches cuda;
#endif
  Plan plan;                // the plan it runs
  std::string plan_source;  // GemmReport::plan_source
};

// The last call's bound launch, per thread (gemm's memo). Calls that ask for fence
// counts or a cuda arch, and sim calls, always take the full path.
struct LastCall {
  // Shape, leading dimensions, options, whether a plan was requested, the kernel's beta form.
  std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, TargetKind, GemmPrecision, bool, bool, bool, int,
             int, bool, GemmBeta>
      key;
  BoundGemm bound;
  std::optional<Plan> requested;  // options.plan of the call that made it
};

// The GEMM kernel's form for a call's beta (gemm_kernel.h): on cuda with beta 0, the
// epilogue without C's loads, so that NVRTC compiles one path instead of two.
// Elsewhere Any: the cpu kernels already run a copy of their body for beta 0 (the
// homes' leaf, cpu_emit.cpp) and compile in tens of milliseconds; the sim is a checker.
GemmBeta beta_form(const GemmOptions& o, float beta) {
  return o.target == TargetKind::Cuda && beta == 0 ? GemmBeta::Zero : GemmBeta::Any;
}

// The form a plan compiles: Zero on the wgmma atom and on the fma atom's 256-row
// tiles. The fp32 (fma atom) kernels of 128x128 tiles ran 3-7% slower with it on an
// H100 (3000x2000x1500 0.87 -> 0.82 of cuBLAS, 2000x3000x1200 0.86 -> 0.80;
// docs/cuda.md, forty-fourth session), not understood: they keep the kernel with
// both paths. The 256x128 one ran 1-2% faster with it (an H100, fifty-first session:
// 4096^3 0.833 -> 0.844, 2048^3 0.80 -> 0.81) and compiles in two thirds of the time.
GemmBeta plan_beta_form(const Plan& plan, GemmBeta form) {
  const bool wide_fma = plan.atom == AtomKind::Fma && plan.tile("BM") >= kFmaWideBM;
  return plan.atom == AtomKind::Wgmma || wide_fma ? form : GemmBeta::Any;
}

bool fast_path_allowed(const GemmOptions& o) {
  return !o.count_fences && o.arch.empty() &&
         (o.target == TargetKind::Cpu || (o.target == TargetKind::Cuda && o.device_pointers));
}

void validate_options(const GemmOptions& options) {
  if (!(options.threads >= 0 && options.threads <= 4096))
    bad_argument("threads = " + std::to_string(options.threads) + " out of range [0, 4096]");
  if (!(options.split_k >= 0 && options.split_k <= 4096))
    bad_argument("split_k = " + std::to_string(options.split_k) + " out of range [0, 4096]");
  if (options.split_k > 1 && options.target != TargetKind::Cuda)
    user_error(ErrorKind::Unsupported, "split_k = " + std::to_string(options.split_k) + ": split-K runs on the cuda "
                                       "target only (" + target_name(options.target) + " takes 0 or 1)");
  if (options.stream_k && (options.target != TargetKind::Cuda || options.split_k > 1))
    user_error(ErrorKind::Unsupported, std::string("stream_k: stream-K runs on the cuda target, without split_k (") +
                                           target_name(options.target) + ", split_k " +
                                           std::to_string(options.split_k) + ")");
}

LaunchOptions launch_options(const GemmOptions& options) {
  LaunchOptions lo;
  lo.threads = options.threads;
  lo.sim_seed = options.sim_seed;
  lo.timed = options.report;
  return lo;
}

// Runs a bound call on new operands; with options.report, fills the report's plan
// and time.
void run_bound(BoundGemm& g, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, const GemmOptions& options,
               const LaunchOptions& lo, GemmReport* report) {
#ifdef TESSEL_WITH_CUDA
  if (options.target == TargetKind::Cuda) {
    double us = run_cuda(g.cuda, m, n, k, alpha, a, lda, b, ldb, beta, c, options, lo, report);
    if (options.report) {
      report->plan = g.plan;
      report->plan_source = g.plan_source;
      report->split_k = g.cuda.split.slices;
      report->stream_k_groups = g.cuda.stream.groups;
      report->run_us = us;
    }
    return;
  }
#else
  (void)m, (void)n, (void)k, (void)lda, (void)ldb;
#endif
  // In gemm_kernel's declaration order: tensors A, B, C; scalars alpha, beta. The
  // run checks the new pointers for overlap before anything runs.
  void* const tensors[] = {const_cast<float*>(a), const_cast<float*>(b), c};
  const double scalars[] = {alpha, beta};
  LaunchReport r = g.launch.run_with(tensors, 3, scalars, 2, lo);
  if (options.report) {
    report->plan = g.plan;
    report->plan_source = g.plan_source;
    report->run_us = r.run_us;
  }
}

// A call's plan and its compiled kernels: the GEMM, and split-K's sum or tf32's
// transpose of B where the plan has one.
struct CompiledGemm {
  GemmReport report;  // plan, plan_source, split_k, compile_ms
  SplitK split;
  StreamK stream;
  Kernel kernel;
  std::optional<Kernel> sum, transpose;
};

// form: the values of beta the call's GEMM kernel may serve (plan_beta_form; split-K
// and stream-K kernels serve any).
CompiledGemm compile_gemm_call(int64_t m, int64_t n, int64_t k, int64_t ldc, const GemmOptions& options,
                               GemmBeta form = GemmBeta::Any);

// Binds the compiled call to these operands and runs it; keeps the binding in
// *keep when given (cpu, and cuda on device arrays).
void bind_and_run(const CompiledGemm& cg, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                  const GemmOptions& options, const LaunchOptions& lo, BoundGemm* keep, GemmReport* report);

}  // namespace

void set_gemm_tile(Plan& plan, int64_t bm, int64_t bn, int64_t bk) {
  plan.tiles["BM"] = bm;
  plan.tiles["BN"] = bn;
  plan.tiles["BK"] = bk;
}

std::string gemm_tile_string(const Plan& plan) {
  return std::to_string(plan.tile("BM")) + "x" + std::to_string(plan.tile("BN")) + "x" +
         std::to_string(plan.tile("BK"));
}

Plan default_gemm_plan(TargetKind target, int64_t m, int64_t n, int64_t k, GemmPrecision precision,
                       const std::string& cuda_arch, int cpu_threads) {
  Plan p;
  p.target = target;
  if (target == TargetKind::Cuda) {
    const CudaTile* t = kCudaTiles;
    while (m * n > t->max_mn) ++t;
    bool mma = precision != GemmPrecision::F32;
    const bool deep_fma = t->max_mn == INT64_MAX && k >= kFmaDeepKFrom;
    set_gemm_tile(p, mma ? t->bm_mma : t->bm, mma ? t->bn_mma : t->bn,
                  mma ? t->bk_mma : deep_fma ? kFmaDeepBK : t->bk_f32);
    p.atom = mma ? AtomKind::MmaSync : AtomKind::Fma;
    p.workers = mma ? t->mma_warps : t->fma_threads;
    p.atom_m = mma ? 16 : (p.tile("BM") * p.tile("BN") / p.workers >= 64 ? 8 : 4);
    p.atom_n = mma ? 8 : p.atom_m;
    p.copy_batch = 4;
    // cp.async multi-stage pipeline: copies of the next k tiles overlap this one's math.
    p.async_copy = true;
    p.window = mma ? t->mma_window : 2;
    bool sixteen_bit = precision == GemmPrecision::BF16 || precision == GemmPrecision::F16;
    const bool rows_on_4_bytes = k % 2 == 0 && n % 2 == 0;  // else element-by-element copies
    if (mma && sixteen_bit && t == kCudaTiles &&
        (rows_on_4_bytes ? k <= kCudaOneStepMaxK : k > t->bk_mma && k <= kCudaOneStepMaxKElementCopies)) {
      set_gemm_tile(p, 16, 32, (k + 63) / 64 * 64);
      p.window = 1;
    }
    std::string arch = cuda_arch;
#ifdef TESSEL_WITH_CUDA
    if (arch.empty()) {
      static const std::string device_arch = default_cuda_arch();  // asked once: plans are chosen per call
      arch = device_arch;
    }
#endif
    bool sm90 = arch.empty() || arch == "sm_90" || arch == "sm_90a";
    // Tensor maps take rows of 16-byte multiples. Other operands are copied first
    // (tma_operand in gemm()), which pays from kWgmmaMinMultiplyAdds on: N or K off
    // multiples of 8 below that keep cp.async.
    const bool big = m * n * k >= kWgmmaMinMultiplyAdds;
    const bool tma_rows = (n % 8 == 0 && k % 8 == 0) || big;
    const bool mid = t->max_mn > kCudaTiles[0].max_mn || big;
    if (sixteen_bit && sm90 && (t->max_mn == INT64_MAX || (tma_rows && mid))) {
      p.atom = AtomKind::Wgmma;
      set_gemm_tile(p, kWgmmaBM, kWgmmaBN, kWgmmaBK);
      p.workers = kWgmmaWarpgroups;
      p.atom_m = p.atom_n = 64;
      p.window = kWgmmaWindow;
      if (tma_rows) {
        // The copy engine and a producer warpgroup (2026-11-30, H200, bf16: 1.24x
        // cp.async at 4096^3, 2.2x mma.sync at 1024^3). 128x128 tiles where the
        // wider ones leave more multiprocessors idle than they gain (below).
        p.async_copy = false;
        p.tma = true;
        p.producers = 1;
        const WgmmaTile& tile = choose_wgmma_tile(m, n, k);
        set_gemm_tile(p, tile.bm, tile.bn, kWgmmaBK);
        p.workers = tile.warpgroups;
      }
    }
    // fp32 rows on 16 bytes suit tensor maps; others are copied first where that pays.
    const bool fp32_tma = !mma && sm90 && ((n % 4 == 0 && k % 4 == 0) || big);
    // The deep fp32 (fma) tiles stage through tensor maps: the leader thread issues
    // two boxes a stage where every thread computed its cp.async addresses (H200,
    // thirty-seventh session, against cuBLAS: 4096^3 0.80 -> 0.85, 8192^3 0.81 ->
    // 0.86, 5000x3000x2500 0.82 -> 0.90, 3000x2000x1500 0.83 -> 0.90; 2048^3 0.80
    // unchanged). Three stages (four leave one 128x128 block a multiprocessor: 0.81
    // at 3000x2000x1500).
    if (fp32_tma && deep_fma) {
      p.async_copy = false;
      p.tma = true;
      p.window = 3;
    }
    // fp32 products whose 64x64 tiles are more than one wave take 128x64 tiles
    // through tensor maps (kFmaMid*).
    const int64_t tiles_64 = (m + 63) / 64 * ((n + 63) / 64);
    if (fp32_tma && k >= kFmaMidMinK && tiles_64 > cuda_multiprocessors()) {
      set_gemm_tile(p, 128, 64, kFmaDeepBK);
      p.workers = kFmaMidWorkers;
      p.atom_m = p.atom_n = 4;
      p.async_copy = false;
      p.tma = true;
      p.window = k >= kFmaMidFourStagesK ? 4 : 3;
    }
    // tf32 on wgmma reads B K-major: gemm() transposes it first (transposes_b), which
    // pays for itself from the same size on. 32-element k tiles fill the 128-byte
    // swizzled lines, as 64 do for 16-bit operands.
    if (precision == GemmPrecision::TF32 && sm90 && big) {
      p.atom = AtomKind::Wgmma;
      set_gemm_tile(p, kWgmmaBM, wide_wgmma_tiles_pay(m, n) ? kWgmmaBN : kWgmmaBN / 2, kWgmmaBK / 2);
      p.workers = kWgmmaWarpgroups;
      p.atom_m = p.atom_n = 64;
      p.window = kWgmmaWindow;
      p.async_copy = false;
      p.tma = true;
      p.producers = 1;
    }
  } else if (target == TargetKind::Cpu) {
    // M or K up to kCpuExact, N up to kCpuExactN, is one block of exactly that extent
    // (N: 127x193x61 1.11x, 64x200x128 1.20x faster than up to 128 only): no padding is
    // filled, packed, multiplied or scaled, and no copy takes the guarded path (the
    // micro-kernel runs leftover rows and columns with edge kernels). One kernel per
    // such extent. When all three are, A and B are read in place, not packed.
    p.direct = m <= kCpuExact && n <= kCpuExactN && k <= kCpuExact;
    // One group per core by default: the thread pool's, std::thread::hardware_concurrency().
    static const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
    const int64_t threads = cpu_threads > 0 ? cpu_threads : cores;
    // So is a product of at most one block row (kCpuAtomM) whatever B's size: packing
    // would read all of B for that one row of blocks, write it and read it again (with
    // the atoms above, one thread: 2x1000x1000 1.77x, 5x600x600 3.05x, 7x844x360 2.56x,
    // 1x2954x1093 1.74x faster; 16 and 24 rows, two block rows, were not faster). Its
    // one k block stays within the tile limit.
    const bool one_block_row = m <= kCpuAtomM && k <= kCpuMaxFragmentElems;
    if (threads <= kCpuDirectMaxThreads && (4 * k * n <= kCpuDirectBBytes || one_block_row) &&
        m * n <= (n <= kCpuExactN ? kCpuDirectTallElems : kCpuDirectWideElems))
      p.direct = true;
    // Read in place in k blocks, where B is too large to read whole and the rows of A
    // and B spread over the cache sets (B's rows of a narrow product whatever their
    // stride, and K whole up to kCpuWholeKBBytes, where the machine says so): groups
    // as cpu_k_block_groups finds them.
    const CpuBlocking blocking = cpu_blocking();
    const bool narrow = blocking.narrow_in_place_past_l2 && n <= kCpuNarrowInPlaceN;
    const bool b_in_place = (blocking.in_place_past_l2 && cpu_row_stride_spreads(n)) || narrow;
    const bool k_block_candidate = !p.direct && b_in_place && threads <= kCpuDirectMaxThreads &&
                                   k >= kCpuDirectBK && 4 * k * n > kCpuDirectBBytes &&
                                   cpu_row_stride_spreads(k, narrow ? kCpuNarrowMinSets : kCpuSpreadSets);
    const auto [group_bm, group_bn] = k_block_candidate ? cpu_k_block_groups(m, n, threads)
                                                        : std::pair<int64_t, int64_t>{0, n};
    const bool k_blocks = group_bm > 0 && group_bm * group_bn <= kCpuDirectTallElems;
    p.direct = p.direct || k_blocks;
    const bool whole_k = !k_blocks || (narrow && 4 * k * n <= kCpuWholeKBBytes);
    const int64_t bk = whole_k ? k : std::min(k, kCpuDirectBK);
    p.atom_m = kCpuAtomM;
    p.atom_n = kCpuAtomN;
    p.copy_batch = 16;
    if (!p.direct) {
      set_cpu_blocked_tiles(p, m, n, k, threads);
      return p;  // the worker grid is the blocking's (rows only)
    }
    set_gemm_tile(p, std::max<int64_t>(1, m), std::max<int64_t>(1, n), std::max<int64_t>(1, bk));
    p.workers = 1;
    // A rest of 1 to 4 columns past 32 that the edge takes as dot products (AVX-512)
    // costs less than a wider atom's masked vector (33^3: 0.93 -> 0.80 us, Zen 4).
    const bool dot_rest = cpu_vector_lanes() == 16 && n % kCpuAtomN == n % 16 && cpu_edge_dot_columns(m, n, bk);
    for (const auto& [atom_m, atom_n] : kCpuNarrowAtoms)
      if (n > kCpuAtomN && n <= atom_n && !dot_rest) {
        // One block of columns, not a 32-wide one and a thin rest (docs/cpu_microkernel.md).
        p.atom_m = atom_m;
        p.atom_n = atom_n;
        break;
      }
    cpu_short_product_atom(p, m, n);
    if (k_blocks) set_gemm_tile(p, group_bm, group_bn, bk);
    for (int64_t g = k_blocks ? 1 : threads; g > 1; --g) {
      if (m * n * k < g * kCpuSplitMinWork) continue;
      if (m % g == 0 && m / g >= kCpuAtomM) {
        set_gemm_tile(p, m / g, n, k);
        break;
      }
      if (n % g == 0 && n / g >= kCpuAtomN) {
        set_gemm_tile(p, m, n / g, k);
        break;
      }
      // Groups of whole rows, the last one short: its block across the edge runs in
      // masked vectors with AVX-512 (cpu_mma_edge), where elsewhere it is a scalar
      // loop (127x193x61 as 64 + 63 rows ran 2.7x slower on AVX2).
      if (cpu_vector_lanes() == 16 && (m + g - 1) / g >= kCpuAtomM) {
        set_gemm_tile(p, (m + g - 1) / g, n, k);
        break;
      }
      // Too few rows: groups of whole vectors of columns, the last one short (two
      // threads: 3x2001x999 2.07x faster than the packed plan of before, which had them).
      if (cpu_vector_lanes() == 16 && (n + g - 1) / g >= kCpuAtomN) {
        set_gemm_tile(p, m, (n + 16 * g - 1) / (16 * g) * 16, k);
        break;
      }
    }
    // One block is the whole problem: a kernel for this M, N and K (Plan::sizes),
    // whose bounds, guards and the edge blocks' tests are constants. Such a plan
    // is one shape's already (its tiles are the shape).
    if (p.tile("BM") == m && p.tile("BN") == n && p.tile("BK") == k) p.sizes = {{"M", m}, {"N", n}, {"K", k}};
  } else {
    set_gemm_tile(p, pick(kSimBlockM, m), pick(kSimBlockN, n), pick(kSimBlockK, k));
    p.workers = 4;
    p.copy_batch = 4;
  }
  choose_worker_grid(p);
  return p;
}

namespace {

CompiledGemm compile_gemm_call(int64_t m, int64_t n, int64_t k, int64_t ldc, const GemmOptions& options,
                               GemmBeta form) {
  CompiledGemm cg;
  GemmReport& report = cg.report;
  report.plan = resolve_plan(m, n, k, options, &report.plan_source);
  // A tuned winner was measured unsplit: split-K as for a requested plan.
  GemmOptions chosen = options;
  if (report.plan_source != "default rules") chosen.plan = report.plan;
  const bool transposed_b = transposes_b(report.plan, options.precision);
  if (options.stream_k && k > 0) {
    if (report.plan.atom != AtomKind::Wgmma || transposed_b)
      user_error(ErrorKind::Unsupported, "stream_k: stream-K runs 16-bit plans on the wgmma atom, not " +
                                             report.plan.to_string());
    report.plan.persistent = 0;  // its groups walk the tiles themselves
    cg.stream = stream_k_ranges(report.plan, m, n, k);
    report.stream_k_groups = cg.stream.groups;
  } else {
    cg.split = gemm_split(report.plan, m, n, k, chosen);
  }
  const SplitK& split = cg.split;
  report.split_k = split.slices;
  bool fresh = false;
  const auto compile_start = std::chrono::steady_clock::now();
#ifdef TESSEL_WITH_CUDA
  // A call's second kernel (split-K's sum, or the transpose of B that tf32 on wgmma
  // runs first) compiles beside the main one.
  std::future<std::pair<Kernel, bool>> second;
  if (split.slices > 1 || transposed_b)
    second = std::async(std::launch::async, [&] {
      bool second_fresh = false;
      Kernel s = split.slices > 1
                     ? compiled_split_sum(split, m, n, ldc, options, &second_fresh)
                     : compiled_gemm(gemm_transpose_plan(), options, &second_fresh, GemmKernelKind::Transpose);
      return std::make_pair(s, second_fresh);
    });
#endif
  cg.kernel = compiled_gemm(report.plan, options, &fresh,
                            cg.stream.groups > 0 ? GemmKernelKind::StreamK
                            : split.slices > 1   ? GemmKernelKind::SplitK
                            : transposed_b   ? GemmKernelKind::PlainTransposedB
                                             : GemmKernelKind::Plain,
                            plan_beta_form(report.plan, form));
#ifdef TESSEL_WITH_CUDA
  if (second.valid()) {
    auto [s, second_fresh] = second.get();
    (split.slices > 1 ? cg.sum : cg.transpose) = s;
    fresh |= second_fresh;
  }
#endif
  report.compile_ms =
      fresh ? std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start).count() : 0;
  return cg;
}

void bind_and_run(const CompiledGemm& cg, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                  const GemmOptions& options, const LaunchOptions& lo, BoundGemm* keep, GemmReport* report) {
  const auto start = std::chrono::steady_clock::now();
  if (cg.report.plan.target == TargetKind::Cuda) {
#ifdef TESSEL_WITH_CUDA
    CudaLaunches launches = bind_cuda(cg.kernel, cg.sum, cg.transpose, cg.report.plan, cg.split, cg.stream, m, n, k,
                                      alpha, a, lda, b, ldb, beta, c, ldc, options);
    run_cuda(launches, m, n, k, alpha, a, lda, b, ldb, beta, c, options, lo, report);
    if (keep) keep->cuda = std::move(launches);
#endif
  } else {
    BoundLaunch launch =
        cg.kernel.bind(gemm_args(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, DType::F32, false));
    LaunchReport r = launch.run(lo);
    report->races = r.races;
    report->race_messages = r.race_messages;
    if (keep) keep->launch = launch;
  }
  if (keep) {
    keep->valid = true;
    keep->plan = cg.report.plan;
    keep->plan_source = cg.report.plan_source;
  }
  report->run_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

GemmReport gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                const GemmOptions& options) {
  validate_sizes(m, n, k, lda, ldb, ldc);
  validate_pointers(m, n, k, a, b, c);
  validate_options(options);
#ifdef TESSEL_WITH_CUDA
  if (options.target == TargetKind::Cuda && !options.device_pointers)
    return gemm_from_host(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options);
#endif
  const LaunchOptions lo = launch_options(options);
  thread_local LastCall last;
  const bool fast = fast_path_allowed(options) && m > 0 && n > 0;
  const GemmBeta form = beta_form(options, beta);
  auto key = std::make_tuple(m, n, k, lda, ldb, ldc, options.target, options.precision, options.coalesce_barriers,
                             options.device_pointers, options.plan.has_value(), options.split_k, options.threads,
                             options.stream_k, form);
  if (fast && last.bound.valid && last.key == key && (!options.plan || *last.requested == *options.plan)) {
    GemmReport report;
    run_bound(last.bound, m, n, k, alpha, a, lda, b, ldb, beta, c, options, lo, &report);
    return report;
  }

  CompiledGemm cg = compile_gemm_call(m, n, k, ldc, options, form);
  GemmReport& report = cg.report;
  if (options.count_fences) {
    // Fences one group executes for this shape (group 0; the count is the same for all).
    std::map<std::string, int64_t> sizes = split_sizes(cg.split, m, n);
    sizes.insert({{"M", m}, {"N", n}, {"K", k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}});
    const CompiledGroup& g = cg.kernel.group();
    auto lookup = [&](const std::string& name, int64_t* v) {
      if (auto it = sizes.find(name); it != sizes.end()) return *v = it->second, true;
      if (name == "alpha" || name == "beta")  // branch conditions compare with 0
        return *v = (name == "alpha" ? alpha : beta) == 0 ? 0 : 1, true;
      for (const LoopDim& d : g.program.grid)
        if (d.iv == name) return *v = 0, true;
      return false;
    };
    report.fences = g.barriers;
    report.fences_dynamic_before = count_fences_executed(g.unplanned, lookup);
    report.fences_dynamic_after = count_fences_executed(g.program, lookup);
  }
  if (m == 0 || n == 0) return options.report ? report : GemmReport{};

  if (fast) {
    last.bound.valid = false;  // until the new binding is in
    bind_and_run(cg, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options, lo, &last.bound, &report);
    last.key = key;
    last.requested = options.plan;
  } else {
    bind_and_run(cg, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options, lo, nullptr, &report);
  }
  if (!options.report) return GemmReport{};
  return report;
}

// The group coordinates of a one-group launch (PreparedGemm's shortcuts).
const int64_t kOneGroupOrigin[8] = {};

struct PreparedGemm::State {
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  GemmOptions options;
  LaunchOptions launch;
  bool fast = false;   // bound once (else each run is a gemm() call)
  CompiledGemm compiled;
  BoundGemm bound;     // after the first run
  // A one-group cpu launch runs its group function directly while A, B and C are
  // those of the last run through `bound` (which checked their overlap), with
  // scratch of its own: a PreparedGemm is not run from two threads at once.
  std::optional<BoundCpuGroup> group;
  const float *a = nullptr, *b = nullptr, *c = nullptr;
  std::unique_ptr<float, decltype(&std::free)> scratch{nullptr, &std::free};
  Direct direct;  // the registers' form of `group` (PreparedGemm::run)
};

PreparedGemm::PreparedGemm(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                           const GemmOptions& options) {
  validate_sizes(m, n, k, lda, ldb, ldc);
  validate_options(options);
  auto s = std::make_shared<State>();
  s->m = m, s->n = n, s->k = k, s->lda = lda, s->ldb = ldb, s->ldc = ldc;
  s->options = options;
  s->options.report = false;
  s->options.count_fences = false;
  s->options.time_device = false;
  s->launch = launch_options(s->options);
  s->fast = (options.target == TargetKind::Cpu || (options.target == TargetKind::Cuda && options.device_pointers)) &&
            m > 0 && n > 0;
  if (s->fast) s->compiled = compile_gemm_call(m, n, k, ldc, s->options);
  direct_ = &s->direct;
  state_ = std::move(s);
}

void PreparedGemm::run_group(float alpha, const float* a, const float* b, float beta, float* c) {
  State& s = *state_;
  // The warm path of a one-group cpu launch: A, B and C are those of the last run,
  // which checked them. Everything else is in run_other, out of line, so that this
  // path saves no registers and sets up no frame: calls of 8^3 to 16^3 ran 1.08-1.2x
  // faster (docs/results/cpu-gemm-2026-12-05-session38).
  if (s.group && a == s.a && b == s.b && c == s.c) {
    const BoundCpuGroup& g = *s.group;
    float* const tensors[] = {const_cast<float*>(a), const_cast<float*>(b), c};  // gemm_kernel's order
    const double scalars[] = {alpha, beta};
    if (cpu_scratch_poisoned())
      std::fill(s.scratch.get(), s.scratch.get() + g.entry.scratch_floats, std::numeric_limits<float>::quiet_NaN());
    g.entry.fn(g.sizes, scalars, tensors, kOneGroupOrigin, s.scratch.get());
    return;
  }
  run_other(alpha, a, b, beta, c);
}

void PreparedGemm::run_other(float alpha, const float* a, const float* b, float beta, float* c) {
  State& s = *state_;
  if (!s.fast) {  // host arrays on cuda, the sim, an empty output: the front door
    gemm(s.m, s.n, s.k, alpha, a, s.lda, b, s.ldb, beta, c, s.ldc, s.options);
    return;
  }
  validate_pointers(s.m, s.n, s.k, a, b, c);
  if (s.bound.valid) {
    run_bound(s.bound, s.m, s.n, s.k, alpha, a, s.lda, b, s.ldb, beta, c, s.options, s.launch, nullptr);
  } else {
    GemmReport first;
    bind_and_run(s.compiled, s.m, s.n, s.k, alpha, a, s.lda, b, s.ldb, beta, c, s.ldc, s.options, s.launch,
                 &s.bound, &first);
    if (s.options.target == TargetKind::Cpu) s.group = bound_cpu_group(s.bound.launch);
    if (s.group) {
      const size_t bytes = size_t(std::max<int64_t>(1, s.group->entry.scratch_floats)) * sizeof(float);
      s.scratch.reset(static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
      if (!s.scratch) s.group.reset();
    }
  }
  s.a = a, s.b = b, s.c = c;
  if (s.group && s.group->entry.regs_t3s2)
    s.direct = Direct{s.group->entry.regs_t3s2, s.group->sizes, kOneGroupOrigin, s.scratch.get(), a, b, c};
}

const Plan& PreparedGemm::plan() const {
  static const Plan none;
  return state_->fast ? state_->compiled.report.plan : none;
}

double PreparedGemm::compile_ms() const { return state_->compiled.report.compile_ms; }

std::string explain_gemm(int64_t m, int64_t n, int64_t k, const GemmOptions& options, float beta) {
  validate_sizes(m, n, k, std::max<int64_t>(1, k), std::max<int64_t>(1, n), std::max<int64_t>(1, n));
  std::string source;
  Plan plan = resolve_plan(m, n, k, options, &source);
  CompileOptions co;
  co.coalesce_barriers = options.coalesce_barriers;
  co.keep_stages = true;
  CompiledGroup g =
      compile_to_group(gemm_kernel(storage_dtype(options.precision), transposes_b(plan, options.precision),
                                   plan_beta_form(plan, beta_form(options, beta))),
                       plan, co);
  std::ostringstream out;
  for (const CompileStage& s : g.stages) {
    out << "// ---- " << s.name << " ----\n" << s.ir;
    if (s.name == "tile-ir") out << "// ---- plan (" << source << ") ----\n" << plan.to_string() << "\n";
  }
  out << "// ---- barrier statistics ----\n" << print_barrier_stats(g.barriers);
  if (plan.target == TargetKind::Cpu) out << "// ---- cpu (emitted C++) ----\n" << emit_cpu(g.program);
  if (plan.target == TargetKind::Cuda) {
#ifdef TESSEL_WITH_CUDA
    auto kernel = compile_cuda(g.program, options.arch);
    const CudaCompileInfo& info = kernel->info();
    out << "// ---- cuda (" << info.nvrtc.arch << ", " << info.source.threads << " threads, "
        << info.source.shared_bytes << " bytes of shared memory) ----\n"
        << info.source.code << "// ---- ptxas ----\n" << info.nvrtc.log << "\n// ---- ptx ----\n"
        << info.nvrtc.ptx;
#endif
  }
  return out.str();
}

}  // namespace tessel
