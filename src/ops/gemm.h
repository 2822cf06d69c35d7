// The GEMM front door: C = alpha * A * B + beta * C, fp32, row-major with leading
// dimensions, on any target. Captures the DSL kernel (gemm_kernel.h), picks or
// checks a plan, compiles (cached per plan in the process, and on disk for the
// cpu target) and launches.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ops/gemm_precision.h"
#include "passes/plan_barriers.h"
#include "plan/plan.h"
#include "target/cpu/cpu_jit.h"
#include "target/sim/sim.h"

namespace tessel {

struct GemmOptions {
  TargetKind target = TargetKind::Cpu;
  std::optional<Plan> plan;  // explicit plan (its target is overridden by `target`)
  int threads = 0;           // cpu: threads for the grid (0 = all cores)
  bool coalesce_barriers = true;
  bool count_fences = false;  // fill GemmReport::fences and the dynamic counts
  uint64_t sim_seed = 1;
  // cuda: how A and B are stored and multiplied (cpu and sim: fp32 only).
  GemmPrecision precision = GemmPrecision::F32;
  // cuda: a, b and c are device addresses (a and b hold the precision's storage
  // type; cast them). Otherwise they are host arrays of fp32 that the call copies
  // to the device (rounding A and B to the storage type) and C back.
  bool device_pointers = false;
  bool time_device = false;  // cuda: measure the launch with device events (device_us)
  std::string arch;          // cuda: "" = the GPU's compute capability (sm_90 without one)
  // cuda: split-K, K cut into this many slices whose partial sums a second kernel
  // adds in a fixed order (deterministic). 0: the default plan's choice (none for
  // an explicit plan), 1: never. Other targets take 0 or 1.
  int split_k = 0;
  // cuda, 16-bit plans on the wgmma atom: stream-K (gemm_stream_k_kernel): one group
  // a multiprocessor, each running an equal share of all tiles' k steps; tiles that
  // groups share are summed in a fixed order (deterministic). Not with split_k > 1.
  bool stream_k = false;
  // false: gemm returns an empty GemmReport (errors are still thrown). A repeated
  // call (same shape and options as this thread's last) then costs the checks and
  // the kernel alone: no plan copy, no clock read, no allocation, no lock.
  bool report = true;
};

struct GemmReport {
  Plan plan;
  // Where the plan came from: "requested" (GemmOptions::plan), "tuning cache (exact
  // shape)", "tuning cache (nearest shape of its class)" or "default rules".
  std::string plan_source;
  double compile_ms = 0;  // cold compile of this plan's kernel (0 when already compiled)
  double run_us = 0;      // wall time of the launch
  double device_us = 0;   // cuda with time_device: device-event time of the call's work
  int64_t split_k = 1;    // cuda: the K slices run (1: no split)
  int64_t stream_k_groups = 0;  // cuda: the groups of a stream-K run (0: none)
  int64_t races = 0;      // sim only
  std::vector<std::string> race_messages;  // sim: the first few
  BarrierStats fences;  // with GemmOptions::count_fences
  int64_t fences_dynamic_before = 0, fences_dynamic_after = 0;  // per group, this shape
};

// The GEMM kernel's tile parameters BM, BN, BK in a plan (Plan::tiles), and the
// "BMxBNxBK" form the CLI and the bench print.
void set_gemm_tile(Plan& plan, int64_t bm, int64_t bn, int64_t bk);
std::string gemm_tile_string(const Plan& plan);

// The plan used when none is given: tiles clamped to the problem so that small
// shapes do not compute mostly padding, rounded to a few sizes so that the number
// of distinct kernels stays small.
// On the cpu, a plan whose one block is the whole product fixes M, N and K
// (Plan::sizes): its kernel runs that shape only, so clear them to run the plan on
// other shapes.
// cuda_arch ("sm_90"; "" = the device's, sm_90 without one) decides whether the
// wgmma atom is available. cpu_threads: the threads a cpu call runs on (0: all
// cores); the cpu plan makes at most that many groups.
Plan default_gemm_plan(TargetKind target, int64_t m, int64_t n, int64_t k,
                        GemmPrecision precision = GemmPrecision::F32, const std::string& cuda_arch = "",
                        int cpu_threads = 0);

// The K slices a call with this plan and these options runs (1: no split-K); see
// GemmOptions::split_k. Default plans on cuda split where the output has too few
// tiles to fill the device and the partial sums cost less than the idle time.
int64_t gemm_split_k_slices(const Plan& plan, int64_t m, int64_t n, int64_t k, const GemmOptions& options = {});

// The leading dimension (in floats) of the B^T scratch that tf32 on the wgmma atom
// reads (B transposed first, N rows of K): K rounded up to whole 128-byte lines.
int64_t gemm_transposed_b_ld(int64_t k);

// The leading dimension (in floats) of split-K's partial sums (S planes of M rows):
// N rounded up to whole 128-byte lines.
int64_t gemm_split_partials_ld(int64_t n);

// tf32 on the wgmma atom reads B K-major: gemm() first transposes B into device
// scratch (transpose_kernel, gemm_kernel.h) under this plan, then runs gemm_kernel's
// b_transposed variant. Split-K does not apply there.
Plan gemm_transpose_plan();

// Checks sizes, leading dimensions and pointers (user errors, InvalidArgument,
// with the numbers), then runs. M == 0 or N == 0 does nothing; K == 0 scales C by
// beta; beta == 0 never reads C.
GemmReport gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                const GemmOptions& options = {});

// One GEMM shape prepared for many calls, as a JIT library's dispatched kernel:
// construction checks the sizes and options, chooses the plan and compiles (or
// finds) the kernel; the first run() binds it, and every later run() only checks
// the pointers (non-null, and not overlapping C; not again where they are the last
// run's) and launches: no lookup, no allocation, no lock, no clock read (cpu, and
// cuda on device arrays; elsewhere, host arrays on cuda or the sim, run() is a
// gemm() call). Cheap to copy (the copies share one binding); not for use from two
// threads at once.
//   PreparedGemm g(m, n, k, k, n, n);   // row-major, packed
//   for (...) g.run(1.0f, a, b, 0.0f, c);
class PreparedGemm {
 public:
  PreparedGemm(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
               const GemmOptions& options = {});
  // Inline: where the unit takes the tensors in registers (cpu_jit.h, CpuGroupRegsFn:
  // units of tiny kernels) and A, B and C are the last run's, a call is this test and
  // a jump, with no frame here (4x4x4: 6.3 -> 5.4 ns a call, libxsmm 4.6).
  void run(float alpha, const float* a, const float* b, float beta, float* c) {
    const Direct& d = *direct_;
    if (a == d.a && b == d.b && c == d.c && d.fn && !cpu_scratch_poisoned())
      return d.fn(d.sizes, d.group, d.scratch, const_cast<float*>(a), const_cast<float*>(b), c, alpha, beta);
    run_group(alpha, a, b, beta, c);
  }
  const Plan& plan() const;   // the plan chosen (an empty plan where run() is a gemm() call)
  double compile_ms() const;  // construction's cold compile (0 when the kernel was cached)

 private:
  void run_group(float alpha, const float* a, const float* b, float beta, float* c);
  __attribute__((noinline)) void run_other(float alpha, const float* a, const float* b, float beta, float* c);
  struct Direct {  // set by run_other where the bound unit exports CpuGroupRegsFn
    CpuGroupRegsFn fn = nullptr;
    const int64_t *sizes = nullptr, *group = nullptr;
    float* scratch = nullptr;
    const float *a = nullptr, *b = nullptr, *c = nullptr;
  };
  struct State;
  std::shared_ptr<State> state_;
  Direct* direct_ = nullptr;  // in *state_, shared by the copies
};

// TileIR, plan, and GroupIR after every compile step, with barrier statistics;
// for the cpu target also the emitted C++, for the cuda target the CUDA source,
// the PTX and ptxas's report (no GPU needed). beta picks the kernel a call with
// that beta compiles (on cuda, one without C's loads for beta == 0).
std::string explain_gemm(int64_t m, int64_t n, int64_t k, const GemmOptions& options, float beta = 0);

}  // namespace tessel
