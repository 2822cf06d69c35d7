#include "ops/gemm.h"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ops/gemm_kernel.h"
#include "target/cpu/cpu_jit.h"
#include "tessel/error.h"

namespace tessel {
namespace {

// Machine parameters of the cpu target's GEMM (AVX-512, one core's caches): the
// micro-tile held in registers and the largest cache blocks.
constexpr int64_t kCpuAtomM = 12, kCpuAtomN = 32;
constexpr int64_t kCpuBlockM[] = {12, 24, 48, 96};
constexpr int64_t kCpuBlockN[] = {32, 64, 128, 256};
constexpr int64_t kCpuBlockK[] = {16, 32, 64, 128, 256};
// The sim interprets every element: small tiles, a few workers.
constexpr int64_t kSimBlockM[] = {8, 16};
constexpr int64_t kSimBlockN[] = {8, 16};
constexpr int64_t kSimBlockK[] = {4, 8};

template <size_t N>
int64_t pick(const int64_t (&sizes)[N], int64_t extent) {
  for (int64_t s : sizes)
    if (s >= extent) return s;
  return sizes[N - 1];
}

// Worker grid: rows x cols == workers when the tile divides that way (closest to
// square), else the largest grid that fits; surplus workers then only copy.
void choose_worker_grid(Plan& p) {
  int best_r = 1, best_c = 1;
  for (int r = 1; r <= p.workers; ++r)
    for (int c = 1; r * c <= p.workers; ++c) {
      if (p.bm % r || p.bn % c || (p.bm / r) % p.atom_m || (p.bn / c) % p.atom_n) continue;
      int prod = r * c, best = best_r * best_c;
      bool squarer = std::abs(r - c) < std::abs(best_r - best_c);
      if (prod > best || (prod == best && squarer)) best_r = r, best_c = c;
    }
  p.worker_rows = best_r;
  p.worker_cols = best_c;
}

struct CompiledGemm {
  CompiledGroup group;
  std::shared_ptr<const CpuKernel> cpu;
  double compile_ms = 0;
};

std::string cache_key(const Plan& p, const GemmOptions& o) {
  return std::string(target_name(p.target)) + " " + p.to_string() + " " +
         std::to_string(p.worker_rows) + "x" + std::to_string(p.worker_cols) +
         (o.coalesce_barriers ? " coalesce" : " no-coalesce");
}

// One compiled kernel per plan and options, for the life of the process.
std::shared_ptr<const CompiledGemm> compiled_gemm(const Plan& plan, const GemmOptions& options,
                                                  bool* fresh) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const CompiledGemm>> cache;
  std::string key = cache_key(plan, options);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {
      *fresh = false;
      return it->second;
    }
  }
  auto start = std::chrono::steady_clock::now();
  auto c = std::make_shared<CompiledGemm>();
  CompileOptions co;
  co.coalesce_barriers = options.coalesce_barriers;
  c->group = compile_to_group(gemm_kernel(), plan, co);
  if (plan.target == TargetKind::Cpu) c->cpu = compile_cpu(c->group.program);
  c->compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  *fresh = true;
  std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(key, c).first->second;
}

void check_arg(bool ok, const std::string& message) {
  if (!ok) user_error(ErrorKind::InvalidArgument, message);
}

void validate_sizes(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  check_arg(m >= 0 && n >= 0 && k >= 0,
            "sizes must be non-negative, got M = " + std::to_string(m) +
                ", N = " + std::to_string(n) + ", K = " + std::to_string(k));
  auto check_ld = [](const char* name, int64_t ld, const char* dim, int64_t cols) {
    check_arg(ld >= std::max<int64_t>(1, cols),
              std::string(name) + " = " + std::to_string(ld) + " is smaller than the row (" +
                  dim + " = " + std::to_string(cols) + ")");
  };
  check_ld("lda", lda, "K", k);
  check_ld("ldb", ldb, "N", n);
  check_ld("ldc", ldc, "N", n);
  // Every element offset must fit in 64 bits.
  auto check_span = [](const char* name, int64_t rows, int64_t ld) {
    int64_t bytes = 0;
    check_arg(!__builtin_mul_overflow(rows, ld, &bytes) &&
                  !__builtin_mul_overflow(bytes, int64_t{4}, &bytes),
              std::string(name) + ": " + std::to_string(rows) + " rows x ld " +
                  std::to_string(ld) + " overflows 64-bit byte offsets");
  };
  check_span("A", m, lda);
  check_span("B", k, ldb);
  check_span("C", m, ldc);
}

void validate_pointers(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                       const float* c) {
  check_arg(a || m * k == 0, "A is null but M x K = " + std::to_string(m) + " x " + std::to_string(k));
  check_arg(b || k * n == 0, "B is null but K x N = " + std::to_string(k) + " x " + std::to_string(n));
  check_arg(c || m * n == 0, "C is null but M x N = " + std::to_string(m) + " x " + std::to_string(n));
}

Plan resolve_plan(int64_t m, int64_t n, int64_t k, const GemmOptions& options) {
  Plan plan = options.plan ? *options.plan : default_gemm_plan(options.target, m, n, k);
  plan.target = options.target;
  if (options.plan) {
    if (plan.target == TargetKind::Cpu && plan.atom_m == 1 && plan.atom_n == 1 &&
        plan.bm % kCpuAtomM == 0 && plan.bn % kCpuAtomN == 0) {
      plan.atom_m = kCpuAtomM;  // the vector micro-kernel when the tile allows it
      plan.atom_n = kCpuAtomN;
    }
    choose_worker_grid(plan);
  }
  validate_plan(plan);
  return plan;
}

}  // namespace

Plan default_gemm_plan(TargetKind target, int64_t m, int64_t n, int64_t k) {
  Plan p;
  p.target = target;
  if (target == TargetKind::Cpu) {
    p.bm = pick(kCpuBlockM, m);
    p.bn = pick(kCpuBlockN, n);
    p.bk = pick(kCpuBlockK, k);
    p.atom_m = kCpuAtomM;
    p.atom_n = kCpuAtomN;
    p.workers = 1;
    p.copy_batch = 16;
  } else {
    p.bm = pick(kSimBlockM, m);
    p.bn = pick(kSimBlockN, n);
    p.bk = pick(kSimBlockK, k);
    p.workers = 4;
    p.copy_batch = 4;
  }
  choose_worker_grid(p);
  return p;
}

GemmReport gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                const GemmOptions& options) {
  validate_sizes(m, n, k, lda, ldb, ldc);
  validate_pointers(m, n, k, a, b, c);
  check_arg(options.threads >= 0 && options.threads <= 4096,
            "threads = " + std::to_string(options.threads) + " out of range [0, 4096]");
  GemmReport report;
  report.plan = resolve_plan(m, n, k, options);
  bool fresh = false;
  auto compiled = compiled_gemm(report.plan, options, &fresh);
  report.compile_ms = fresh ? compiled->compile_ms : 0;
  report.fences = compiled->group.barriers;

  LaunchArgs args;
  args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}};
  args.scalars = {{"alpha", alpha}, {"beta", beta}};
  args.tensors = {{"A", const_cast<float*>(a)}, {"B", const_cast<float*>(b)}, {"C", c}};
  // Fences one group executes for this shape (group 0; the count is the same for all).
  auto lookup = [&](const std::string& name, int64_t* v) {
    if (auto it = args.sizes.find(name); it != args.sizes.end()) return *v = it->second, true;
    if (auto it = args.scalars.find(name); it != args.scalars.end())
      return *v = it->second == 0 ? 0 : 1, true;  // branch conditions compare with 0
    for (const LoopDim& d : compiled->group.program.grid)
      if (d.iv == name) return *v = 0, true;
    return false;
  };
  report.fences_dynamic_before = count_fences_executed(compiled->group.unplanned, lookup);
  report.fences_dynamic_after = count_fences_executed(compiled->group.program, lookup);
  if (m == 0 || n == 0) return report;

  auto start = std::chrono::steady_clock::now();
  if (report.plan.target == TargetKind::Cpu) {
    compiled->cpu->run(args, options.threads);
  } else {
    SimOptions so;
    so.seed = options.sim_seed;
    SimResult r = run_sim(compiled->group.program, args, so);
    report.races = r.race_count;
    report.race_list = r.races;
  }
  report.run_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::string explain_gemm(int64_t m, int64_t n, int64_t k, const GemmOptions& options) {
  validate_sizes(m, n, k, std::max<int64_t>(1, k), std::max<int64_t>(1, n), std::max<int64_t>(1, n));
  Plan plan = resolve_plan(m, n, k, options);
  CompileOptions co;
  co.coalesce_barriers = options.coalesce_barriers;
  co.keep_stages = true;
  CompiledGroup g = compile_to_group(gemm_kernel(), plan, co);
  std::ostringstream out;
  for (const CompileStage& s : g.stages) {
    out << "// ---- " << s.name << " ----\n" << s.ir;
    if (s.name == "tile-ir") out << "// ---- plan ----\n" << plan.to_string() << "\n";
  }
  out << "// ---- barrier statistics ----\n" << print_barrier_stats(g.barriers);
  return out.str();
}

}  // namespace tessel
