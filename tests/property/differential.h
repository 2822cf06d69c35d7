// The differential check shared by the property test (tests/property) and the
// differential fuzzer (fuzz/fuzz_differential.cpp): a random kernel
// (eval/random_kernel.h) with a random plan runs on sim and cpu, and every output
// is compared in full with the FP64 evaluator; on sim, 0 races. The fuzzer adds the
// per-pass check: the output of every compile step (lower, pipeline, plan_barriers,
// and a GroupIR text round trip) is re-verified and re-simulated, race-free and
// numerically right.
//
// Header-only, so that the fuzz targets (built by clang, apart from the tests) and
// the test executable share it without a library of their own.
//
// The fuzzer also runs the final program in two worker orders on the sim and
// compares the bits: a race-free program is deterministic, so a difference is a race
// the detector missed. (The sim runs each op for every worker, in a shuffled order,
// before the next op, so this sees conflicts within one op, such as two workers
// storing different values to one element; the detector remains the judge of the
// rest.)
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/phases.h"
#include "eval/evaluate.h"
#include "eval/random_kernel.h"
#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "ir/tile_text.h"
#include "lower/lower.h"
#include "passes/pipeline.h"
#include "passes/plan_barriers.h"
#include "plan/default_plan.h"
#include "runtime/tensor_check.h"
#include "target/cpu/cpu_jit.h"
#include "target/sim/sim.h"
#include "tessel/error.h"
#include "tessel/tessel.h"

namespace tessel::difftest {

// One random schedule for a kernel: sim and cpu both run it (plan.target aside).
struct PlanChoice {
  Plan plan;
  int threads = 1;        // cpu threads over the grid
  uint64_t sim_seed = 1;  // sim worker order
};

// What the random choices draw from. The libFuzzer target fills the same fields
// from its input bytes.
struct PlanDraw {
  int workers = 4;     // before fit_worker_grid
  int window = 1;      // 1-3
  bool async = false;  // async copies
  int copy_batch = 4;  // 1, 2, 3, 4 or 8
  int atom_pick = 0;   // index into the atom extents that divide every mma part
  int threads = 1;     // cpu: 1-2
  uint64_t sim_seed = 1;
};

inline constexpr int kWorkerChoices[] = {1, 2, 3, 4, 6, 8};
inline constexpr int kCopyBatchChoices[] = {1, 2, 3, 4, 8};

namespace detail {

inline void walk(const Region& region, const std::function<void(const TileOp&)>& visit) {
  for (const TileOp& op : region.ops) {
    visit(op);
    for (const Region& r : op.regions) walk(r, visit);
  }
}

inline int64_t bound_extent(const Expr& e, const std::map<std::string, int64_t>& tiles) {
  Expr b = expr_substitute(e, [&](const std::string& name) -> Expr {
    auto it = tiles.find(name);
    return it == tiles.end() ? nullptr : expr_const(it->second);
  });
  int64_t v = 0;
  return expr_is_const(b, &v) ? v : 1;
}

// The atom extents (m, n) that divide every worker's accumulator part of every mma
// (the lowering's condition; an extent of 1 is replicated, a part of 1).
inline std::vector<std::pair<int64_t, int64_t>> atom_choices(const TileKernel& k, const Plan& p) {
  std::vector<int64_t> parts_m, parts_n;
  walk(k.body, [&](const TileOp& op) {
    if (op.kind != TileOpKind::Mma) return;
    const TileType& acc = k.values.at(op.operands[2]).type;
    int64_t rows = bound_extent(acc.shape[0], p.tiles), cols = bound_extent(acc.shape[1], p.tiles);
    parts_m.push_back(rows > 1 ? rows / p.worker_rows : rows);
    parts_n.push_back(cols > 1 ? cols / p.worker_cols : cols);
  });
  if (parts_m.empty()) return {{1, 1}};
  auto divisors = [](const std::vector<int64_t>& parts) {
    std::vector<int64_t> out;
    for (int64_t d = 1; d <= 8; ++d) {
      bool all = true;
      for (int64_t v : parts) all &= v % d == 0;
      if (all) out.push_back(d);
    }
    return out;
  };
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t m : divisors(parts_m))
    for (int64_t n : divisors(parts_n)) out.push_back({m, n});
  return out;
}

}  // namespace detail

inline PlanChoice make_plan(const RandomKernel& rk, const PlanDraw& d) {
  PlanChoice c;
  Plan& p = c.plan;
  p.target = TargetKind::Sim;
  p.tiles = rk.tiles;
  p.workers = d.workers;
  fit_worker_grid(rk.kernel, p);
  p.window = d.window;
  p.async_copy = d.async;
  p.copy_batch = d.copy_batch;
  auto atoms = detail::atom_choices(rk.kernel, p);
  auto [am, an] = atoms[static_cast<size_t>(d.atom_pick) % atoms.size()];
  p.atom_m = am;
  p.atom_n = an;
  c.threads = d.threads;
  c.sim_seed = d.sim_seed;
  return c;
}

// The property test's plan: tiles from the generator, workers in {1, 2, 3, 4, 6, 8}
// (then fit to the kernel's tiles), window 1-3, sync or async copies, a copy batch, an
// atom that suits every mma, 1-2 cpu threads and a sim worker order. `wide` (the
// fuzzer's other plans) draws from more: 1-16 workers, window 1-4, copy batch 1-9,
// 1-3 threads.
inline PlanChoice random_plan(const RandomKernel& rk, uint64_t seed, bool wide = false) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + 0x51);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  PlanDraw d;
  d.workers = kWorkerChoices[pick(6)];
  d.window = 1 + pick(3);
  d.async = pick(2);
  d.copy_batch = kCopyBatchChoices[pick(5)];
  d.atom_pick = pick(64);
  d.threads = 1 + pick(2);
  d.sim_seed = 1 + rng() % 1000000000;  // small enough for `tessel run --seed`
  if (wide) {
    d.workers = 1 + pick(16);
    d.window = 1 + pick(4);
    d.copy_batch = 1 + pick(9);
    d.threads = 1 + pick(3);
  }
  return make_plan(rk, d);
}

// The kernel's tensors on the generator's inputs, and the evaluator's outputs.
struct Reference {
  std::map<std::string, std::vector<double>> inputs;  // every tensor, outputs NaN
  std::map<std::string, std::vector<double>> want;    // after the evaluator
};

inline Reference reference(const RandomKernel& rk) {
  Reference r;
  r.inputs = random_kernel_tensors(rk, rk.seed);
  r.want = r.inputs;
  EvalArgs ea = eval_args(rk, r.want);
  evaluate(rk.kernel, ea);
  return r;
}

// One run's verdict. `what` names the target or stage.
struct Verdict {
  std::string what;
  bool ok = true;
  double worst = 0;
  std::map<std::string, double> rel_err;  // per written tensor
  int64_t races = 0;
  std::vector<std::string> race_messages;
  std::string error;  // a tessel::Error's message

  std::string summary(double tolerance) const {
    std::ostringstream s;
    s << what << ": ";
    if (!error.empty()) return s.str() + "error: " + error;
    s << "rel_err " << worst << " (tolerance " << tolerance << ")";
    for (const auto& [n, e] : rel_err) s << " " << n << "=" << e;
    s << ", races " << races;
    for (size_t i = 0; i < race_messages.size() && i < 4; ++i) s << "\n    " << race_messages[i];
    return s.str();
  }
};

// Compares the written tensors of `got` with the reference.
inline void judge(const RandomKernel& rk, const Reference& ref,
                  const std::map<std::string, std::vector<float>>& got, Verdict& v) {
  for (const TensorParam& t : rk.kernel.tensors) {
    if (t.access == Access::In) continue;
    double e = relative_error(std::span<const float>(got.at(t.name)),
                              std::span<const double>(ref.want.at(t.name)), rk.error_floor);
    v.rel_err[t.name] = e;
    v.worst = std::max(v.worst, e);
  }
  // NaN-safe: a NaN error is a failure.
  v.ok = !(v.worst > rk.tolerance) && v.worst == v.worst && v.races == 0;
}

inline std::map<std::string, std::vector<float>> float_inputs(const Reference& ref) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, v] : ref.inputs) out[name].assign(v.begin(), v.end());
  return out;
}

// Through the public API: compile with the plan for `target`, launch, compare.
inline Verdict run_target(const RandomKernel& rk, const Reference& ref, const PlanChoice& choice,
                          TargetKind target) {
  Verdict v;
  v.what = target_name(target);
  try {
    Plan plan = choice.plan;
    plan.target = target;
    Kernel k = compile(rk.kernel, plan);
    auto data = float_inputs(ref);
    KernelArgs args;
    args.sizes = rk.sizes;
    args.scalars = rk.scalars;
    for (const TensorParam& t : rk.kernel.tensors) {
      TensorLayout l = check_tensor(t, rk.sizes);
      TensorArg a;
      a.data = data[t.name].data();
      a.shape = l.shape;
      a.strides = l.strides;
      args.tensors[t.name] = a;
    }
    LaunchOptions lo;
    lo.threads = choice.threads;
    lo.sim_seed = choice.sim_seed;
    LaunchReport r = k.launch(args, lo);
    v.races = r.races;
    v.race_messages = r.race_messages;
    judge(rk, ref, data, v);
  } catch (const Error& e) {
    v.ok = false;
    v.error = e.what();
  }
  return v;
}

// The compile steps of src/compiler/compile.cpp, each kept: one program per phase.
struct Stages {
  std::vector<std::string> names;
  std::vector<std::vector<GroupProgram>> programs;  // [stage][phase]
  int loops_pipelined = 0, loops_skipped = 0;
};

// Runs the steps one by one, verifying each output; also plan_barriers without the
// pipeline pass, and the final program through its text. The last stage must equal
// what compile_to_group produces (so this list follows compile.cpp). Throws
// tessel::Error for what the lowering refuses; a verifier error on a pass output,
// or a mismatch with compile_to_group, is returned in `problem`.
inline Stages compile_stages(const RandomKernel& rk, const Plan& plan, std::string* problem) {
  Stages s;
  s.names = {"lower", "pipeline", "plan-barriers (no pipeline)", "pipeline + plan-barriers",
             "text round trip"};
  s.programs.resize(s.names.size());
  for (const TileKernel& phase : split_phases(rk.kernel)) {
    GroupProgram lowered = lower_to_group(phase, plan);
    GroupProgram piped = lowered;
    PipelineOptions po;
    po.window = plan.window;
    po.async = plan.async_copy;
    po.async_consumers = plan.atom == AtomKind::Wgmma;
    PipelineStats ps = pipeline_loops(piped, po);
    s.loops_pipelined += ps.loops_pipelined;
    s.loops_skipped += ps.loops_skipped;
    GroupProgram planned_only = lowered;
    plan_barriers(planned_only);
    GroupProgram planned = piped;
    plan_barriers(planned);
    std::vector<GroupProgram> outs = {lowered, piped, planned_only, planned};
    for (size_t i = 0; i < outs.size(); ++i) {
      try {
        verify_group_program(outs[i]);
      } catch (const Error& e) {
        *problem += "the " + s.names[i] + " output does not verify: " + e.what() + "\n" +
                    print_group_program(outs[i]);
        return s;
      }
    }
    std::string text = print_group_program(planned);
    GroupProgram parsed;
    try {
      parsed = parse_group_program(text);
      verify_group_program(parsed);
    } catch (const Error& e) {
      *problem += std::string("the printed GroupIR does not parse and verify: ") + e.what() + "\n" + text;
      return s;
    }
    if (print_group_program(parsed) != text) {
      *problem += "the GroupIR text round trip differs:\n" + text + "---\n" + print_group_program(parsed);
      return s;
    }
    CompiledGroup official = compile_to_group(phase, plan, CompileOptions{});
    if (print_group_program(official.program) != text) {
      *problem += "compile_to_group differs from the steps run one by one (compile.cpp changed?)";
      return s;
    }
    outs.push_back(std::move(parsed));
    for (size_t i = 0; i < outs.size(); ++i) s.programs[i].push_back(std::move(outs[i]));
  }
  return s;
}

// Runs one stage's programs (every phase, in order) on the sim, directly.
// `outputs`, when given, receives the tensors after the run.
inline Verdict simulate_stage(const RandomKernel& rk, const Reference& ref,
                              const std::vector<GroupProgram>& phases, const std::string& name,
                              uint64_t sim_seed,
                              std::map<std::string, std::vector<float>>* outputs = nullptr) {
  Verdict v;
  v.what = "sim, " + name;
  try {
    auto data = float_inputs(ref);
    LaunchArgs args;
    args.sizes = rk.sizes;
    args.scalars = rk.scalars;
    static float empty = 0;  // a tensor of no elements still needs a pointer (as Kernel::launch gives)
    for (auto& [n, d] : data) args.tensors[n] = d.empty() ? &empty : d.data();
    for (const GroupProgram& p : phases) {
      SimOptions so;
      so.seed = sim_seed;
      SimResult r = run_sim(p, args, so);
      v.races += r.race_count;
      for (const Race& race : r.races) v.race_messages.push_back(race.message);
    }
    judge(rk, ref, data, v);
    if (outputs) *outputs = std::move(data);
  } catch (const Error& e) {
    v.ok = false;
    v.error = e.what();
  }
  return v;
}

// A race-free program computes the same bits whatever order the sim runs its
// workers in: two orders that differ show a race the detector missed. Compares the
// last stage's outputs under `sim_seed` and another order.
inline Verdict same_in_any_order(const RandomKernel& rk, const Reference& ref, const Stages& stages,
                                 uint64_t sim_seed) {
  std::map<std::string, std::vector<float>> first, second;
  const std::string& name = stages.names.back();
  Verdict a = simulate_stage(rk, ref, stages.programs.back(), name, sim_seed, &first);
  Verdict b = simulate_stage(rk, ref, stages.programs.back(), name, sim_seed * 7919 + 13, &second);
  Verdict v;
  v.what = "sim, two worker orders";
  if (!a.error.empty() || !b.error.empty()) {
    v.ok = false;
    v.error = a.error.empty() ? b.error : a.error;
    return v;
  }
  v.races = a.races + b.races;
  for (const auto& [n, x] : first) {
    const std::vector<float>& y = second.at(n);
    for (size_t i = 0; i < x.size(); ++i) {
      bool same = x[i] == y[i] || (x[i] != x[i] && y[i] != y[i]);
      if (!same) {
        v.ok = false;
        v.error = "tensor " + n + " element " + std::to_string(i) + " is " + std::to_string(x[i]) +
                  " in one order and " + std::to_string(y[i]) + " in another, with no race reported";
        return v;
      }
    }
  }
  v.ok = v.races == 0;
  return v;
}

// How to run the kernel again by hand: the CLI on its text (its inputs are its own
// random ones, so it reproduces a race or a wrong structure, not these numbers; the
// plan's copy batch and atom have no CLI flag).
inline std::string repro_command(const RandomKernel& rk, const PlanChoice& c, TargetKind target) {
  std::ostringstream s;
  s << "tessel run random_" << rk.seed << ".tir";
  for (const auto& [n, v] : rk.sizes) s << " --size " << n << "=" << v;
  for (const auto& [n, v] : rk.tiles) s << " --tile " << n << "=" << v;
  for (const auto& [n, v] : rk.scalars) s << " --scalar " << n << "=" << v;
  s << " --workers " << c.plan.workers << " --window " << c.plan.window << " --copy "
    << (c.plan.async_copy ? "async" : "sync") << " --target " << target_name(target);
  if (target == TargetKind::Cpu) s << " --threads " << c.threads;
  if (target == TargetKind::Sim) s << " --seed " << c.sim_seed;
  s << " --check";
  return s.str();
}

// Everything needed to reproduce a failing seed.
inline std::string describe(const RandomKernel& rk, const PlanChoice& c,
                            const std::vector<Verdict>& verdicts) {
  std::ostringstream s;
  s << "==== kernel seed " << rk.seed << "\nplan: " << c.plan.to_string() << ", cpu threads "
    << c.threads << ", sim seed " << c.sim_seed << "\n";
  for (const Verdict& v : verdicts) s << (v.ok ? "  ok   " : "  FAIL ") << v.summary(rk.tolerance) << "\n";
  s << "reproduce: " << repro_command(rk, c, TargetKind::Sim) << "\n";
  s << "     (cpu) " << repro_command(rk, c, TargetKind::Cpu) << "\n";
  s << "----- random_" << rk.seed << ".tir\n" << print_tile_kernel(rk.kernel) << "-----\n";
  return s.str();
}

}  // namespace tessel::difftest
