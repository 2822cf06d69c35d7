// A Plan says how to realize a TileIR kernel on a target: the tile sizes that bind
// the kernel's tile parameters, how a group's work is spread over its workers, the
// atom that realizes `mma`, and the schedule of copies.
#pragma once
#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessel {

enum class TargetKind { Sim, Cpu, Cuda };

// The instruction that realizes mma. Fma: each worker updates its fragment part with
// register-blocked scalar FMAs. MmaSync: a worker is a CUDA warp (32 lanes) and its
// part is a grid of 16 x 8 mma.sync tiles (m16n8k16 for bf16/f16 operands, m16n8k8
// tf32 for f32 operands), fp32 accumulation. Wgmma: a worker is a Hopper warpgroup
// (128 lanes) and its part is a grid of 64 x N wgmma.mma_async tiles (bf16/f16
// operands read from shared memory, N = the part's width, at most 256), fp32
// accumulation; it needs sm_90.
enum class AtomKind { Fma, MmaSync, Wgmma };
const char* atom_name(AtomKind a);
// Threads that run one worker together: 1 (fma), 32 (a warp), 128 (a warpgroup).
int atom_lanes(AtomKind a);
const char* target_name(TargetKind t);
// Parses "sim" / "cpu" / "cuda"; an unknown name is a user error (InvalidArgument).
TargetKind parse_target(const std::string& name);

struct Plan {
  TargetKind target = TargetKind::Cpu;
  // Binds the kernel's tile parameters by name (`tile("BM")` -> tiles["BM"]). The
  // lowering refuses a plan that leaves one of the kernel's tile parameters unbound
  // or binds a name the kernel does not declare (ErrorKind::Plan, naming it).
  std::map<std::string, int64_t> tiles;
  int workers = 1;                    // workers in one group
  int worker_rows = 1, worker_cols = 1;  // fragment distribution: worker grid over BM x BN
  int copy_batch = 4;                 // contiguous elements a worker copies per turn
  int window = 1;                     // pipeline window (1 = single buffered)
  bool async_copy = false;            // copies issue / commit / wait (a copy engine)
  int64_t atom_m = 1, atom_n = 1;     // register block of the mma atom
  AtomKind atom = AtomKind::Fma;      // MmaSync: atom 16x8; Wgmma: atom 64x64
  // Register sets of the mma operand fragments (cuda fma and mma.sync atoms): 2 loads
  // the next k step's fragments from shared memory while the current ones compute.
  int frag_buffers = 1;
  // Copies of the staged tiles in `pipeline` loops by the copy engine (TMA): per
  // stage (window W) a "full" mbarrier slot that the copies complete on and an
  // "empty" one the consumers release it on (src/passes/tma_pipeline.h). Replaces
  // async_copy for those loops. cuda: the wgmma and fma atoms (128-byte-swizzled
  // lines; the fma atom with k tiles of 32 fp32), not mma.sync.
  bool tma = false;
  // With tma: workers that only issue the copies (a producer role), beside the
  // `workers` that compute (the consumer role). 0: every worker computes and one
  // of them issues the copies.
  int producers = 0;
  // A persistent grid: `persistent` groups (the SM count on cuda) each walk the
  // output tiles t = g, g + persistent, ... in bands of `tile_band` tile rows, column
  // by column inside a band (tiles that share operands run close together, for L2).
  // 0: one group per tile. src/passes/persistent_tiles.h.
  int persistent = 0;
  int tile_band = 8;
  // With producers (cuda: sm_90), groups that stage the same tiles run in clusters
  // of `cluster` and share them: each copies a part, multicast to all (1: none;
  // src/passes/tma_pipeline.h). Not with a persistent grid.
  int cluster = 1;
  // mma operands loaded from a tensor (rows contiguous) and read by nothing else are
  // read in place, inside the tensor's extents, instead of staged (packed) in shared
  // memory (cpu and sim; for small problems, where packing does not pay).
  bool direct = false;
  // Size parameters fixed to these values (passes/specialize_sizes.h), each named
  // once: the kernel runs only with them, and its bounds and addresses are
  // constants. Empty: every size is a launch argument. For small problems, where
  // the kernel's own arithmetic is a large part of a call. (A vector, not a map: a
  // call's report may copy its plan, and a map allocates a node per entry.)
  std::vector<std::pair<std::string, int64_t>> sizes;

  auto operator<=>(const Plan&) const = default;  // a key for compiled-kernel caches
  // "BK=32 BM=64 BN=64 workers=4(2x2) copy_batch=4 window=1 copy=sync atom=1x1"
  // (copy=tma, and " producers=P" when there are producers, " cluster=C", " persistent=G band=B", " direct",
  // " sizes(M=64 N=64 K=64)")
  std::string to_string() const;
  // The value bound to tile parameter `name`; a Plan error naming it when unbound.
  int64_t tile(const std::string& name) const;
};

// Checks a plan against its target's limits (every tile value positive and small
// enough, workers, window, atom ...); a violation is a user error (ErrorKind::Plan)
// whose message carries the numbers. Checks that depend on the kernel (that a
// fragment divides over the worker grid, that mma operands suit the atom) are the
// lowering's.
void validate_plan(const Plan& plan);

}  // namespace tessel
