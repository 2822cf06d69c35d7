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

const char* atom_name(AtomKind a) { return a == AtomKind::MmaSync ? "mma.sync" : "fma"; }

std::string Plan::to_string() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) +
         " workers=" + std::to_string(workers) + "(" + std::to_string(worker_rows) + "x" +
         std::to_string(worker_cols) + ") copy_batch=" + std::to_string(copy_batch) +
 " window=" + std::to_string(window) + (async_copy ? " copy=async" : " copy=sync") + " atom=" + std::to_string(atom_m) + "x" +
         std::to_string(atom_n) + (atom == AtomKind::Fma ? "" : std::string(" ") + atom_name(atom));
}

namespace {
// Target limits. The sim interprets every element, so it keeps tiles small; the CPU
// keeps one group's staging and fragments in a thread's scratch, bounded to stay
// in cache-sized territory.
constexpr int64_t kMaxTileElems = int64_t{1} << 22;  // per staging buffer or fragment
constexpr int kMaxWorkers = 1024;
constexpr int kMaxWindow = 8;

void check(bool ok, const std::string& message) {
  if (!ok) user_error(ErrorKind::Plan, message);
}
}  // namespace

void validate_plan(const Plan& p) {
  std::string tile = std::to_string(p.bm) + "x" + std::to_string(p.bn) + "x" + std::to_string(p.bk);
  check(p.bm > 0 && p.bn > 0 && p.bk > 0, "tile " + tile + ": every extent must be positive");
  check(p.bm * p.bn <= kMaxTileElems && p.bm * p.bk <= kMaxTileElems &&
            p.bk * p.bn <= kMaxTileElems,
        "tile " + tile + " does not fit: a tile may hold at most " +
            std::to_string(kMaxTileElems) + " elements");
  check(p.workers >= 1 && p.workers <= kMaxWorkers,
        "workers " + std::to_string(p.workers) + " out of range [1, " +
            std::to_string(kMaxWorkers) + "]");
  check(p.worker_rows >= 1 && p.worker_cols >= 1 &&
            p.worker_rows * p.worker_cols <= p.workers,
        "worker grid " + std::to_string(p.worker_rows) + "x" + std::to_string(p.worker_cols) +
            " does not fit in " + std::to_string(p.workers) + " workers");
  check(p.copy_batch >= 1, "copy batch " + std::to_string(p.copy_batch) + " must be positive");
  check(p.window >= 1 && p.window <= kMaxWindow,
        "window " + std::to_string(p.window) + " out of range [1, " +
            std::to_string(kMaxWindow) + "]");
  check(p.atom_m >= 1 && p.atom_n >= 1, "atom extents must be positive");
  check(p.atom == AtomKind::Fma || (p.atom_m == 16 && p.atom_n == 8),
        "the mma.sync atom is 16x8, got atom " + std::to_string(p.atom_m) + "x" +
            std::to_string(p.atom_n));
  int64_t part_m = p.bm / p.worker_rows, part_n = p.bn / p.worker_cols;
  check(p.bm % p.worker_rows == 0 && p.bn % p.worker_cols == 0,
        "tile " + tile + " does not divide over the worker grid " +
            std::to_string(p.worker_rows) + "x" + std::to_string(p.worker_cols));
  check(part_m % p.atom_m == 0 && part_n % p.atom_n == 0,
        "a worker's fragment " + std::to_string(part_m) + "x" + std::to_string(part_n) +
            " is not a multiple of the atom " + std::to_string(p.atom_m) + "x" +
            std::to_string(p.atom_n));
}

}  // namespace tessel
