#include "plan/default_plan.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "tessel/error.h"

namespace tessel {
namespace {

void walk(const Region& region, const std::function<void(const TileOp&)>& visit) {
  for (const TileOp& op : region.ops) {
    visit(op);
    for (const Region& r : op.regions) walk(r, visit);
  }
}

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n && p < (int64_t{1} << 30)) p *= 2;
  return p;
}

bool is_tile_param(const TileKernel& k, const std::string& name) {
  for (const std::string& t : k.tile_params)
    if (t == name) return true;
  return false;
}

// An expression with the plan's tiles bound.
Expr bind_tiles(const Expr& e, const Plan& plan) {
  return expr_substitute(e, [&](const std::string& name) -> Expr {
    auto it = plan.tiles.find(name);
    return it == plan.tiles.end() ? nullptr : expr_const(it->second);
  });
}

// Every tile extent of the kernel (values' shapes) with the plan's tiles bound:
// {rows}, {cols}. Extents that do not fold to a constant are left out. On the wgmma
// atom a warpgroup reads whole operands from shared memory and the workers split
// only the accumulators, so the mmas' A and B operands are left out too (192-row
// accumulators on three warpgroups, with B tiles of 64 rows).
void tile_extents(const TileKernel& k, const Plan& plan, std::set<int64_t>* rows,
                  std::set<int64_t>* cols) {
  auto bind = [&](const Expr& e) {
    return expr_substitute(e, [&](const std::string& name) -> Expr {
      auto it = plan.tiles.find(name);
      return it == plan.tiles.end() ? nullptr : expr_const(it->second);
    });
  };
  std::set<int> wgmma_operands;
  if (plan.atom == AtomKind::Wgmma)
    walk(k.body, [&](const TileOp& op) {
      if (op.kind == TileOpKind::Mma) wgmma_operands.insert(op.operands.begin(), op.operands.begin() + 2);
    });
  for (const Value& v : k.values) {
    if (v.type.is_scalar() || wgmma_operands.count(v.id)) continue;
    int64_t r = 0, c = 0;
    if (expr_is_const(bind(v.type.shape[0]), &r)) rows->insert(r);
    if (expr_is_const(bind(v.type.shape[1]), &c)) cols->insert(c);
  }
}

// Memory-bound kernels on the GPU (no mma): a thread owns 8 consecutive columns (16-
// to 32-byte vectors), a group spans up to 2048 columns with 1 to 8 rows, so that a
// group moves 8-16 KiB per step and a row's reductions stay inside the group. Long
// rows walk 2048-column steps with one row per group; rows up to 1024 take one step
// with 2 to 8 rows. (Measured on the H200 against other shapes of the same kernels:
// parts of 1-4 columns or 1024 threads were slower, parts over 32 columns spilled;
// 16 bf16 columns a thread instead of 8 was slower on 4 of 6 bf16 cases.)
void cuda_rows_and_columns(const TileKernel& kernel, const std::map<std::string, int64_t>& covers,
                           const std::set<std::string>& col_params, Plan& plan) {
  constexpr int64_t kMaxColumns = 2048, kColumnsPerThread = 8, kRowElements = 2048;
  int64_t columns = 1;
  for (const std::string& t : kernel.tile_params) {
    if (!col_params.count(t)) continue;
    auto it = covers.find(t);
    int64_t c = std::min(kMaxColumns, it == covers.end() ? kMaxColumns : pow2_at_least(it->second));
    plan.tiles[t] = c;
    columns = std::max(columns, c);
  }
  int64_t rows = std::clamp<int64_t>(kRowElements / columns, 1, 8);
  for (const std::string& t : kernel.tile_params)
    if (!col_params.count(t)) plan.tiles[t] = rows;
  int wc = static_cast<int>(std::clamp<int64_t>(columns / kColumnsPerThread, 1, 256));
  int wr = static_cast<int>(std::min<int64_t>(rows, 512 / wc));
  plan.workers = std::max(1, wr) * wc;
  fit_worker_grid(kernel, plan);  // the largest grid within that count that divides every tile
}

// The cpu mma atom: the micro-kernel's register block MR x NR (target/cpu/
// cpu_microkernel.h) where every mma accumulator's worker part allows one: NR 32 or
// 16 columns, MR up to 16 rows; else 1 x 1 (scalar loops). Measured on a kernel of
// two chained 64 x 64 x 64 mmas a step: 16 x 32 ran about 11x faster than 1 x 1.
void cpu_atom(const TileKernel& kernel, Plan& plan, bool keep_if_it_fits) {
  std::vector<std::pair<int64_t, int64_t>> parts;
  walk(kernel.body, [&](const TileOp& op) {
    if (op.kind != TileOpKind::Mma) return;
    const TileType& t = kernel.values.at(op.results[0]).type;
    int64_t r = 0, c = 0;
    auto bind = [&](const Expr& e) {
      return expr_substitute(e, [&](const std::string& name) -> Expr {
        auto it = plan.tiles.find(name);
        return it == plan.tiles.end() ? nullptr : expr_const(it->second);
      });
    };
    if (!expr_is_const(bind(t.shape[0]), &r) || !expr_is_const(bind(t.shape[1]), &c)) {
      parts.push_back({0, 0});  // unknown: no atom
      return;
    }
    parts.push_back({r > 1 ? r / plan.worker_rows : r, c > 1 ? c / plan.worker_cols : c});
  });
  auto divides = [&](int64_t n, bool rows) {
    for (auto [r, c] : parts)
      if ((rows ? r : c) <= 0 || (rows ? r : c) % n) return false;
    return !parts.empty();
  };
  if (keep_if_it_fits && divides(plan.atom_m, true) && divides(plan.atom_n, false)) return;
  plan.atom_m = plan.atom_n = 1;
  for (int64_t nr : {32, 16}) {
    if (!divides(nr, false)) continue;
    for (int64_t mr : {16, 8, 4, 2, 1})
      if (divides(mr, true)) {
        plan.atom_m = mr;
        plan.atom_n = nr;
        return;
      }
  }
}

// Does every mma of the kernel multiply 16-bit operands (loads of bf16 or f16
// tensors, or tiles cast to one)? Loads give f32 tiles; what is staged for an mma
// is the tensor's dtype, so a load's operand counts by its tensor.
bool sixteen_bit_mmas(const TileKernel& kernel) {
  std::map<int, const TileOp*> producer;
  walk(kernel.body, [&](const TileOp& op) {
    for (int r : op.results) producer[r] = &op;
  });
  auto sixteen = [](DType t) { return t == DType::BF16 || t == DType::F16; };
  bool any = false, all = true;
  walk(kernel.body, [&](const TileOp& op) {
    if (op.kind != TileOpKind::Mma) return;
    any = true;
    for (int i = 0; i < 2; ++i) {
      int v = op.operands.at(i);
      auto it = producer.find(v);
      const TileOp* def = it == producer.end() ? nullptr : it->second;
      const TensorParam* t = def && def->kind == TileOpKind::Load ? kernel.find_tensor(def->param) : nullptr;
      all &= t ? sixteen(t->dtype) : sixteen(kernel.values.at(v).type.dtype);
    }
  });
  return any && all;
}

// The warp grid of an mma.sync plan (at most plan.workers warps): a warp's part of
// every fragment is whole 16x8 mma tiles, and no reduction crosses warps (the cuda
// target reduces inside a warp only): a kernel that reduces along rows (axis 1)
// stacks its warps along the rows, one that reduces along columns side by side.
// A loaded tile that only mmas read is staged, not split, so its extents do not
// count.
void mma_sync_worker_grid(const TileKernel& kernel, Plan& plan) {
  bool along_rows = false, along_cols = false;
  std::map<int, bool> loaded, other_use;  // value -> a load's result; read by other than an mma's a or b
  walk(kernel.body, [&](const TileOp& op) {
    if (op.kind == TileOpKind::Reduce) (op.axis == 1 ? along_rows : along_cols) = true;
    if (op.kind == TileOpKind::Load) loaded[op.results.at(0)] = true;
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (op.kind != TileOpKind::Mma || i == 2) other_use[op.operands[i]] = true;
  });
  std::set<int64_t> rows, cols;
  for (const Value& v : kernel.values) {
    if (v.type.is_scalar() || (loaded[v.id] && !other_use[v.id])) continue;
    int64_t r = 0, c = 0;
    if (expr_is_const(bind_tiles(v.type.shape[0], plan), &r)) rows.insert(r);
    if (expr_is_const(bind_tiles(v.type.shape[1], plan), &c)) cols.insert(c);
  }
  auto fits = [](int w, int64_t atom, const std::set<int64_t>& extents) {
    for (int64_t e : extents)
      if (e > 1 && e % (atom * w)) return false;
    return true;
  };
  int best_r = 1, best_c = 1;
  for (int r = 1; r <= plan.workers && (r == 1 || !along_cols); r *= 2)
    for (int c = 1; r * c <= plan.workers && (c == 1 || !along_rows); c *= 2)
      if (fits(r, 16, rows) && fits(c, 8, cols) &&
          (r * c > best_r * best_c || (r * c == best_r * best_c && std::abs(r - c) < std::abs(best_r - best_c))))
        best_r = r, best_c = c;
  plan.worker_rows = best_r;
  plan.worker_cols = best_c;
  plan.workers = best_r * best_c;
}

// cuda kernels whose mmas all take 16-bit operands run on tensor cores: the
// mma.sync atom (a worker is a warp; mma_sync_worker_grid), so that a row's
// reductions and broadcasts stay inside a warp (see cuda_emit.cpp). 4 warps;
// mma tiles of at least 16 (the atom's m and k); the next tiles copied
// asynchronously, 2 in flight (window 2).
// Where the warps stack along the rows (row reductions) and the rows to cover
// are at least twice the row tile, the row tile doubles over the same 4 warps:
// each warp then holds two 16-row mma tiles, so each b fragment it reads from
// shared memory (ldmatrix) serves two mmas, and each staged b tile twice the rows.
// (Measured on the H200 with two chained bf16 mmas and running row statistics,
// 1024 to 4096 rows: 64 rows over 4 warps < 128 rows over 8 warps
// (docs/results/gpu-h200-2026-12-01b) < 128 rows over 4 warps, by 3-18% on each
// of 6 shapes; at 16 rows a warp the ldmatrix traffic was three quarters of the
// shared-memory bandwidth; docs/results/gpu-h200-2026-12-01d.)
void cuda_warp_rows(const TileKernel& kernel, const std::set<std::string>& mma_params,
                    const std::map<std::string, int64_t>& covers, Plan& plan) {
  for (const std::string& t : mma_params)
    if (plan.tiles.count(t)) plan.tiles[t] = std::max<int64_t>(16, plan.tiles[t]);
  plan.atom = AtomKind::MmaSync;
  plan.atom_m = 16;
  plan.atom_n = 8;
  plan.workers = 4;
  mma_sync_worker_grid(kernel, plan);
  plan.async_copy = true;
  plan.window = 2;
  if (plan.worker_cols != 1 || plan.worker_rows != 4) return;
  // The one tile parameter that gives the accumulators' rows.
  std::set<std::string> row_params;
  walk(kernel.body, [&](const TileOp& op) {
    if (op.kind != TileOpKind::Mma) return;
    const Expr& rows = kernel.values.at(op.results.at(0)).type.shape[0];
    if (rows && rows->kind == ExprKind::Sym && is_tile_param(kernel, rows->name)) row_params.insert(rows->name);
    else row_params.insert("");  // rows not a tile parameter: leave the plan alone
  });
  if (row_params.size() != 1 || row_params.count("")) return;
  const std::string& t = *row_params.begin();
  auto cover = covers.find(t);
  if (cover == covers.end() || !plan.tiles.count(t) || cover->second < 2 * plan.tiles[t]) return;
  Plan wide = plan;
  wide.tiles[t] *= 2;
  mma_sync_worker_grid(kernel, wide);
  if (wide.worker_rows == 4 && wide.worker_cols == 1) plan = wide;
}

}  // namespace

void fit_worker_grid(const TileKernel& kernel, Plan& plan) {
  if (plan.target == TargetKind::Cuda && plan.atom == AtomKind::MmaSync && sixteen_bit_mmas(kernel)) {
    mma_sync_worker_grid(kernel, plan);
    return;
  }
  std::set<int64_t> rows, cols;
  tile_extents(kernel, plan, &rows, &cols);
  auto divides = [](int w, const std::set<int64_t>& extents) {
    for (int64_t e : extents)
      if (e > 1 && e % w) return false;
    return true;
  };
  // More workers along an axis than its largest extent would only add replicas.
  int64_t max_rows = rows.empty() ? 1 : *rows.rbegin(), max_cols = cols.empty() ? 1 : *cols.rbegin();
  int best_r = 1, best_c = 1;
  for (int r = 1; r <= plan.workers && r <= max_rows; ++r) {
    if (!divides(r, rows)) continue;
    for (int c = 1; r * c <= plan.workers && c <= max_cols; ++c) {
      if (!divides(c, cols)) continue;
      // Ties: the most balanced grid; on the wgmma atom the fewest columns (the
      // widest parts: one instruction covers a part's whole width).
      int prod = r * c, best = best_r * best_c;
      bool better = plan.atom == AtomKind::Wgmma ? c < best_c : std::abs(r - c) < std::abs(best_r - best_c);
      if (prod > best || (prod == best && better)) best_r = r, best_c = c;
    }
  }
  plan.worker_rows = best_r;
  plan.worker_cols = best_c;
  plan.workers = best_r * best_c;
  // A cpu register block that the new parts no longer allow is chosen again.
  if (plan.target == TargetKind::Cpu && plan.atom == AtomKind::Fma && (plan.atom_m > 1 || plan.atom_n > 1))
    cpu_atom(kernel, plan, true);
}

Plan default_plan(const TileKernel& kernel, TargetKind target,
                  const std::map<std::string, int64_t>& sizes) {
  Plan plan;
  plan.target = target;
  plan.workers = target == TargetKind::Sim ? 4 : target == TargetKind::Cpu ? 1 : 128;
  plan.copy_batch = 4;
  // Which tile parameters an mma reads, and which name column extents.
  std::set<std::string> mma_params, col_params;
  auto note = [&](const Expr& e, std::set<std::string>& into) {
    if (e) expr_symbols(e, [&](const std::string& s) { into.insert(s); });
  };
  walk(kernel.body, [&](const TileOp& op) {
    if (op.kind == TileOpKind::Mma)
      for (int v : op.operands)
        for (const Expr& e : kernel.values.at(v).type.shape) note(e, mma_params);
  });
  for (const Value& v : kernel.values)
    if (!v.type.is_scalar()) note(v.type.shape[1], col_params);
  // On the cpu, kernels without an mma stream rows: long column tiles (vectorized
  // inner loops) and a few rows (measured: 8x1024 ran a row-wise kernel 1.5x faster than
  // 64x64 on one core).
  bool streaming = mma_params.empty();
  auto cap = [&](const std::string& t) -> int64_t {
    if (target == TargetKind::Sim) return 16;
    if (target == TargetKind::Cpu && streaming) return col_params.count(t) ? 1024 : 8;
    if (target == TargetKind::Cpu || mma_params.count(t)) return 64;
    return col_params.count(t) ? 256 : 8;
  };
  // ceildiv(S, T) in a loop extent: T covers S.
  std::map<std::string, int64_t> covers;
  const SymbolLookup lookup = lookup_in(sizes);
  walk(kernel.body, [&](const TileOp& op) {
    for (const LoopDim& d : op.loops) {
      const Expr& e = d.extent;
      if (!e || e->kind != ExprKind::CeilDiv || !e->rhs || e->rhs->kind != ExprKind::Sym) continue;
      if (!is_tile_param(kernel, e->rhs->name)) continue;
      bool known = true;
      expr_symbols(e->lhs, [&](const std::string& s) { known &= sizes.count(s) > 0; });
      if (!known) continue;
      int64_t s = 0;
      try {
        s = expr_eval(e->lhs, lookup);
      } catch (const Error&) {
        continue;
      }
      int64_t& c = covers[e->rhs->name];
      c = std::max(c, s);
    }
  });
  // A tile extent T that no loop walks, at coordinate 0 of a tensor dimension of
  // size S, spans that dimension: no other tile reads the rest of it, so T takes the
  // power of two >= S, past the cap (a cap would silently leave the rest out).
  std::map<std::string, int64_t> spans;
  walk(kernel.body, [&](const TileOp& op) {
    if (op.kind != TileOpKind::Load && op.kind != TileOpKind::Store) return;
    const TensorParam* tensor = kernel.find_tensor(op.param);
    int value = op.kind == TileOpKind::Load ? op.results[0] : op.operands[0];
    const TileType& type = kernel.values.at(value).type;
    if (!tensor || type.is_scalar()) return;
    for (int a = 0; a < 2; ++a) {
      int d = op.dims[a];
      const Expr& extent = type.shape[a];
      int64_t origin = -1, s = 0;
      if (d < 0 || d >= tensor->rank() || d >= static_cast<int>(op.coords.size())) continue;
      if (!extent || extent->kind != ExprKind::Sym || !is_tile_param(kernel, extent->name)) continue;
      if (covers.count(extent->name) || !expr_is_const(op.coords[d], &origin) || origin != 0) continue;
      try {
        s = expr_eval(tensor->shape[d], lookup);
      } catch (const Error&) {
        continue;
      }
      int64_t& c = spans[extent->name];
      c = std::max(c, s);
    }
  });
  for (const std::string& t : kernel.tile_params) {
    auto it = covers.find(t);
    int64_t want = it == covers.end() ? cap(t) : pow2_at_least(std::max<int64_t>(1, it->second));
    plan.tiles[t] = std::min(want, cap(t));
    auto span = spans.find(t);
    if (span != spans.end()) plan.tiles[t] = pow2_at_least(std::max<int64_t>(1, span->second));
  }
  if (target == TargetKind::Cuda && mma_params.empty()) {
    cuda_rows_and_columns(kernel, covers, col_params, plan);
    return plan;
  }
  if (target == TargetKind::Cuda && sixteen_bit_mmas(kernel)) {
    cuda_warp_rows(kernel, mma_params, covers, plan);
    return plan;
  }
  fit_worker_grid(kernel, plan);
  if (target == TargetKind::Cpu && !streaming) cpu_atom(kernel, plan, false);
  return plan;
}

}  // namespace tessel
