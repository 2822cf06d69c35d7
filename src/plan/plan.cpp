#include "plan/plan.h"

#include "tessel/error.h"

namespace tessel {

const char* target_name(TargetKind t) {
  switch (t) {
    case TargetKind::Sim: return "sim";
    case TargetKind::Cpu: return "cpu";
    case TargetKind::Cuda: return "cuda";
  }
  return "?";
}

TargetKind parse_target(const std::string& name) {
  if (name == "sim") return TargetKind::Sim;
  if (name == "cpu") return TargetKind::Cpu;
  if (name == "cuda") return TargetKind::Cuda;
  user_error(ErrorKind::InvalidArgument, "unknown target '" + name + "' (expected cpu, sim or cuda)");
}

const char* atom_name(AtomKind a) {
  switch (a) {
    case AtomKind::Fma: return "fma";
    case AtomKind::MmaSync: return "mma.sync";
    case AtomKind::Wgmma: return "wgmma";
  }
  return "?";
}

int atom_lanes(AtomKind a) {
  switch (a) {
    case AtomKind::Fma: return 1;
    case AtomKind::MmaSync: return 32;
    case AtomKind::Wgmma: return 128;
  }
  return 1;
}

std::string Plan::to_string() const {
  std::string fixed;
  for (const auto& [name, value] : sizes) fixed += (fixed.empty() ? "" : " ") + name + "=" + std::to_string(value);
  std::string s;
  for (const auto& [name, value] : tiles) s += name + "=" + std::to_string(value) + " ";
  return s + "workers=" + std::to_string(workers) + "(" + std::to_string(worker_rows) + "x" +
         std::to_string(worker_cols) + ") copy_batch=" + std::to_string(copy_batch) +
         " window=" + std::to_string(window) + (tma ? " copy=tma" : async_copy ? " copy=async" : " copy=sync") +
         " atom=" + std::to_string(atom_m) + "x" + std::to_string(atom_n) +
         (atom == AtomKind::Fma ? "" : std::string(" ") + atom_name(atom)) +
         (frag_buffers == 1 ? "" : " frag_buffers=" + std::to_string(frag_buffers)) +
         (producers == 0 ? "" : " producers=" + std::to_string(producers)) +
         (cluster == 1 ? "" : " cluster=" + std::to_string(cluster)) +
         (persistent == 0 ? ""
                          : " persistent=" + std::to_string(persistent) + " band=" + std::to_string(tile_band)) +
         (direct ? " direct" : "") + (fixed.empty() ? "" : " sizes(" + fixed + ")");
}

int64_t Plan::tile(const std::string& name) const {
  auto it = tiles.find(name);
  if (it == tiles.end())
    user_error(ErrorKind::Plan, "the plan binds no tile parameter " + name);
  return it->second;
}

namespace {
// Target limits. What one group's buffers need depends on the kernel too, so it is
// checked on the GroupIR (verify_group_limits, ir/group_verify.h: sim elements,
// cpu scratch, cuda shared memory per block); here, what the plan alone decides.
constexpr int64_t kMaxTileElems = int64_t{1} << 22;  // per staging buffer or fragment
constexpr int kMaxWorkers = 1024;
constexpr int kCudaMaxThreadsPerBlock = 1024;
constexpr int kMaxWindow = 8;
constexpr int kMaxCopyBatch = 1 << 16;  // elements a worker copies per turn
constexpr int kMaxPersistentGroups = 1 << 16;
constexpr int kMaxClusterGroups = 8;  // the cuda target's portable cluster size

// Messages are built only on failure: plans are checked on every call.
[[noreturn]] void bad_plan(const std::string& message) { user_error(ErrorKind::Plan, message); }
}  // namespace

void validate_plan(const Plan& p) {
  for (const auto& [name, value] : p.tiles)
    if (!(value > 0 && value <= kMaxTileElems))
      bad_plan("tile parameter " + name + " = " + std::to_string(value) + " out of range [1, " +
               std::to_string(kMaxTileElems) + "]");
  for (size_t i = 0; i < p.sizes.size(); ++i) {
    const auto& [name, value] = p.sizes[i];
    if (value < 0) bad_plan("size " + name + " = " + std::to_string(value) + " is negative");
    for (size_t j = 0; j < i; ++j)
      if (p.sizes[j].first == name) bad_plan("the plan fixes size " + name + " twice");
  }
  if (!(p.workers >= 1 && p.workers <= kMaxWorkers))
    bad_plan("workers " + std::to_string(p.workers) + " out of range [1, " +
            std::to_string(kMaxWorkers) + "]");
  if (!(p.worker_rows >= 1 && p.worker_cols >= 1 &&
        int64_t{p.worker_rows} * p.worker_cols <= p.workers))
    bad_plan("worker grid " + std::to_string(p.worker_rows) + "x" + std::to_string(p.worker_cols) +
            " does not fit in " + std::to_string(p.workers) + " workers");
  if (!(p.copy_batch >= 1 && p.copy_batch <= kMaxCopyBatch))
    bad_plan("copy batch " + std::to_string(p.copy_batch) + " out of range [1, " +
             std::to_string(kMaxCopyBatch) + "]");
  if (!(p.window >= 1 && p.window <= kMaxWindow))
    bad_plan("window " + std::to_string(p.window) + " out of range [1, " +
            std::to_string(kMaxWindow) + "]");
  if (!(p.atom_m >= 1 && p.atom_n >= 1 && p.atom_m <= kMaxTileElems && p.atom_n <= kMaxTileElems))
    bad_plan("atom " + std::to_string(p.atom_m) + "x" + std::to_string(p.atom_n) +
             ": each extent in [1, " + std::to_string(kMaxTileElems) + "]");
  if (p.atom == AtomKind::MmaSync && !(p.atom_m == 16 && p.atom_n == 8))
    bad_plan("the mma.sync atom is 16x8, got atom " + std::to_string(p.atom_m) + "x" +
            std::to_string(p.atom_n));
  if (p.atom == AtomKind::Wgmma && !(p.atom_m == 64 && p.atom_n == 64))
    bad_plan("the wgmma atom is 64x64, got atom " + std::to_string(p.atom_m) + "x" +
            std::to_string(p.atom_n));
  if (!(p.frag_buffers == 1 || p.frag_buffers == 2))
    bad_plan("frag_buffers " + std::to_string(p.frag_buffers) + " out of range [1, 2]");
  if (p.frag_buffers == 2 && (p.target != TargetKind::Cuda || p.atom == AtomKind::Wgmma))
    bad_plan("double-buffered fragments (frag_buffers 2) are a cuda fma / mma.sync choice; the " +
             std::string(target_name(p.target)) + " target with the " + atom_name(p.atom) +
             " atom reads its operands where they are");
  if (p.atom != AtomKind::Fma && p.target != TargetKind::Cuda)
    bad_plan(std::string("the ") + atom_name(p.atom) + " atom runs on the cuda target only");
  if (!(p.producers >= 0 && p.producers <= kMaxWorkers - p.workers))
    bad_plan("producers " + std::to_string(p.producers) + " out of range [0, " +
             std::to_string(kMaxWorkers - p.workers) + "] (workers + producers <= " +
             std::to_string(kMaxWorkers) + ")");
  if (!(p.persistent >= 0 && p.persistent <= kMaxPersistentGroups))
    bad_plan("persistent " + std::to_string(p.persistent) + " out of range [0, " +
             std::to_string(kMaxPersistentGroups) + "] (groups of a persistent grid; 0 = one per tile)");
  if (!(p.tile_band >= 1 && p.tile_band <= kMaxPersistentGroups))
    bad_plan("tile_band " + std::to_string(p.tile_band) + " out of range [1, " +
             std::to_string(kMaxPersistentGroups) + "]");
  if (!(p.cluster >= 1 && p.cluster <= kMaxClusterGroups))
    bad_plan("cluster " + std::to_string(p.cluster) + " out of range [1, " + std::to_string(kMaxClusterGroups) +
             "] (groups that share their staged tiles; 1 = none)");
  if (p.cluster > 1 && (p.producers == 0 || p.persistent > 0))
    bad_plan("cluster " + std::to_string(p.cluster) + ": clusters share the copies of a producer role over a grid "
             "of one group per tile (plan copy=tma, producers >= 1, persistent=0)");
  if (p.producers > 0 && !p.tma)
    bad_plan("producers " + std::to_string(p.producers) +
             ": producer workers issue tma copies; plan copy=tma");
  // The cuda copy engine fills 128-byte-swizzled lines, which the wgmma and fma
  // atoms read; mma.sync's ldmatrix reads take the padded lines of thread copies.
  if (p.tma && p.target == TargetKind::Cuda && p.atom == AtomKind::MmaSync)
    bad_plan("copy=tma on the cuda target stages operands for the wgmma and fma atoms; this plan has the "
             "mma.sync atom (plan copy=async)");
  if (p.tma && p.target == TargetKind::Cpu)
    bad_plan("copy=tma is a copy engine's protocol: the sim and cuda targets, not cpu");
  // A cuda worker is atom_lanes threads (a warp for mma.sync, a warpgroup for wgmma).
  const int64_t all_workers = int64_t{p.workers} + p.producers;
  if (p.target == TargetKind::Cuda && all_workers * atom_lanes(p.atom) > kCudaMaxThreadsPerBlock)
    bad_plan("workers " + std::to_string(all_workers) + " x " + std::to_string(atom_lanes(p.atom)) +
             " threads (" + atom_name(p.atom) + " atom) = " +
             std::to_string(all_workers * atom_lanes(p.atom)) +
             " threads per block; the cuda target allows at most " +
             std::to_string(kCudaMaxThreadsPerBlock));
}

}  // namespace tessel
