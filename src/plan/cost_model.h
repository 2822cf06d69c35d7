// The planner's cost model: predicted time of one launch = a linear function of
// features read off the realized GroupIR program (every phase) for one shape.
//
// Features (plan/cost_model.cpp states how each is counted). Work a group does is
// counted per worker where workers run at once (cuda: a worker's share, once for each
// turn a group of more than 4 warps takes on a multiprocessor's 4 schedulers) and whole
// where one thread runs the group's workers in turn (cpu, sim), then multiplied by
// the waves: ceil(groups / parallel slots), so a tail wave costs a full one. On cuda
// the slots are the multiprocessors times the groups resident on one at once
// (resident_groups: threads, shared memory, registers), since a latency-bound
// group's time hardly grows with the others on its multiprocessor.
//   launch       1 per phase
//   pool         1 per phase whose grid has more than one group (the cpu's thread
//                pool hand-off; a one-group grid runs inline)
//   waves        waves (per-group dispatch and fill/drain of a group's pipeline)
//   flops_A      2mnk of mma whose atom's register block has area atom_m * atom_n
//                A = 1 (scalar), <= 64, <= 256, <= 384, big (> 384: spills on the cpu);
//                the cuda mma atoms count as 384
//   mma_blocks   atom-block calls (m/atom_m * n/atom_n per mma executed)
//   mma_acc      accumulator elements an mma executed loads and stores (m * n): a
//                block call's fixed part, paid again for every k tile
//   bytes_in     bytes read from global memory (staging copies, fragment loads)
//   bytes_out    bytes written to global memory
//   bytes_shared bytes moved between shared buffers and fragments
//   ew_elems     elements of elementwise ops and reductions on fragments whose rows
//                are whole vectors (cpu: columns a multiple of the ISA's fp32 lanes;
//                elsewhere: extents that are powers of two)
//   ew_elems_odd the same on other fragments: each row ends in a part of a vector
//                (measured slower on the cpu)
//   ew_rows      rows of elementwise ops and reductions (one inner loop each)
//   ew_elems_l2  elements of elementwise ops and reductions (also counted above) on
//                fragments that do not fit the L1 data cache five times (an op
//                chain's operands and results and the global rows loaded and
//                stored, each the tile's size): they stream from L2 (cpu only)
//   gl_access    global memory instructions: a copy's 16-byte vectors where every
//                global row it touches starts on 16 bytes at this shape, 4-byte
//                pieces for an async copy of rows on 4, else one per element (the
//                cuda emitter's paths); a fragment's global load or store, 16 bytes
//                each (counted on cuda only)
//   bytes_sm     bytes read from and written to global memory by all groups, per
//                cuda multiprocessor: the memory bandwidth bound (cuda only; not per
//                worker, not times the waves)
//   sync_sm      barrier waits of all threads, per cuda multiprocessor, in units of a
//                full one (2048 threads): the average group's fences and barriers x
//                its threads x the groups / the multiprocessors / 2048. A thread
//                waits at a barrier for its group's slowest round trip, and round
//                trips take longer the more threads the multiprocessor holds (cuda
//                only; not per worker, not times the waves)
//   gl_trips     a thread's rolled trips of copies moved element by element (global
//                rows off 16 bytes, and off 4 where the copy is async): the emitter
//                loads a thread's share in batches of 8, and a share of more than one
//                batch is a rolled loop whose every trip waits for its loads; 0 for a
//                share of one batch (straight-line code). Per thread, not per worker
//                (cuda only)
//   chain_elems  elements a thread copies from global memory (copies a thread issues
//                itself: not tma), its share of each copy: a block's serial chain of
//                copies, k step after k step, which is its time when the grid is too
//                small to hide it. Per thread, not per worker (cuda only)
//   live_sm      elements a thread holds of a fragment beyond 8, per op that reads or
//                writes the fragment, times every group's threads, per cuda
//                multiprocessor in units of a full one (2048 threads): a thread's
//                part of 16 elements in one pass ran 1.5x its prediction where one of
//                8 ran as predicted (a row kernel, the fifth H200 run). Not per worker, not
//                times the waves (cuda only)
//   transcend    elements of exp, log, tanh, sqrt and friends
//   fences       fences and barriers executed
//   loop_iters   loop iterations executed (control overhead)
// Loops are counted at the midpoint of every enclosing loop and grid coordinate (a
// causal bound counts about half), the last iteration of a loop or grid dimension
// apart from the others (its tile is the ragged one). Tiles count whole (a ragged
// edge costs a full tile) except a cpu mma's: the cpu skips the rows, columns and k
// steps of a ragged tile that hold no data (GroupOp::m_valid, n_valid, k_valid).
//
// Coefficients (microseconds per unit) come from a calibration: measured runs fitted
// by non-negative least squares on relative error (fit_calibration); without one,
// fallback_calibration gives rough per-target numbers (docs/planner.md).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plan/candidates.h"

namespace tessel {

inline constexpr int kNumFeatures = 26;
using Features = std::array<double, kNumFeatures>;
extern const std::array<const char*, kNumFeatures> kFeatureNames;
int feature_index(const std::string& name);  // -1 when unknown

// Parallel slots groups spread over: cpu threads, cuda SMs, 1 on the sim.
struct MachineShape {
  int slots = 1;
  int64_t l1_bytes = 0;  // a core's L1 data cache (cpu); 0: not modelled
  int cpu_lanes = 0;     // fp32 lanes of the cpu emitter's vectors (its ISA); 0: not modelled
  bool occupancy = false;  // cuda: several groups share a multiprocessor (resident_groups)
};

// cuda: groups of program `p` resident on one multiprocessor at once, at least 1:
// bounded by its threads, blocks, shared memory and registers (plan/machine.h).
// Registers are a stated proxy (`registers_per_thread`), since ptxas runs only on
// the few candidates compiled.
int64_t resident_groups(const GroupProgram& p);
// The proxy: 32 registers (addresses, indices, loop state) plus the thread's fragment
// registers, within the cap the emitter's launch bounds give ptxas; for the warp-level
// mma atoms at least 3/4 of that cap (measured by ptxas: plan/cost_model.cpp).
int64_t registers_per_thread(const GroupProgram& p);
MachineShape machine_shape(TargetKind target, int threads);

Features program_features(const LegalCandidate& candidate, const std::map<std::string, int64_t>& sizes,
                          const MachineShape& machine);

struct Calibration {
  TargetKind target = TargetKind::Cpu;
  int threads = 0;
  std::string machine;   // a stamp: cpu model / device, as measured
  std::string fitted_on; // what the fit saw (command, shape seed), for the record
  int samples = 0;
  double fit_median_rel_err = 0;
  std::array<double, kNumFeatures> coef{};  // us per unit
};

// Rough coefficients for a target when no calibration exists.
Calibration fallback_calibration(TargetKind target, int threads);

double predict_us(const Calibration& c, const Features& f);
// The terms of the prediction: coef[i] * f[i].
std::array<double, kNumFeatures> predict_terms(const Calibration& c, const Features& f);

// One measured run for calibration.
struct Sample {
  Features features{};
  double us = 0;
};
// Non-negative least squares on relative error: minimizes sum ((pred - us) / us)^2
// with every coefficient >= 0. Fewer than 2 samples is a user error.
Calibration fit_calibration(const std::vector<Sample>& samples, TargetKind target, int threads);

// Text form ("tessel-calibration 1", then "key value" lines, one coefficient per
// feature by name). Parsing refuses unknown versions, missing or negative
// coefficients (ErrorKind::InvalidArgument, naming the file).
std::string print_calibration(const Calibration& c);
Calibration parse_calibration(const std::string& text, const std::string& where);

// Kendall's tau-b between two orderings of the same items (1 = same order).
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace tessel
