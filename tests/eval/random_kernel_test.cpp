// The random kernel generator: 1000 kernels verify (inside random_kernel), evaluate,
// survive a text round trip bit for bit, write only finite values, and between them
// cover every op and feature the generator promises.
#include "eval/random_kernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <set>

#include "ir/tile_text.h"
#include "ir/tile_verify.h"

namespace tessel {
namespace {

constexpr int kKernels = 1000;

// What a kernel uses, accumulated over many.
struct Coverage {
  std::set<TileOpKind> kinds;
  std::set<size_t> grid_dims, carried, ranks, nests;
  std::set<DType> dtypes;
  std::set<ReduceOp> reduces;
  std::set<CmpOp> cmps;
  bool nondefault_dims = false, zero_stride = false, unit_axis = false, padding = false,
       ragged = false, inout = false, index_if = false, scalar_if = false;

  void add(const RandomKernel& rk) {
    const TileKernel& k = rk.kernel;
    for (const TensorParam& t : k.tensors) {
      ranks.insert(t.shape.size());
      dtypes.insert(t.dtype);
      inout |= t.access == Access::InOut;
      for (const Expr& s : t.strides) {
        int64_t v;
        zero_stride |= expr_is_const(s, &v) && v == 0;
      }
    }
    for (const auto& [name, v] : rk.tiles) {
      for (const char* size : {"M", "N", "K"})
        if (rk.sizes.count(size) && rk.sizes.at(size) % v != 0) ragged = true;
    }
    walk(k.body, k);
    nests.insert(std::count_if(k.body.ops.begin(), k.body.ops.end(),
                               [](const TileOp& op) { return op.kind == TileOpKind::Parallel; }));
  }
  void walk(const Region& r, const TileKernel& k) {
    for (const TileOp& op : r.ops) {
      kinds.insert(op.kind);
      if (op.kind == TileOpKind::Parallel) grid_dims.insert(op.loops.size());
      if (op.kind == TileOpKind::Serial || op.kind == TileOpKind::Pipeline) carried.insert(op.operands.size());
      if (op.kind == TileOpKind::Reduce) reduces.insert(op.reduce);
      if (op.kind == TileOpKind::Cmp) cmps.insert(op.cmp);
      if (op.kind == TileOpKind::If) (op.cond.on_scalar ? scalar_if : index_if) = true;
      if (op.kind == TileOpKind::Load || op.kind == TileOpKind::Store) {
        int rank = k.find_tensor(op.param)->rank();
        nondefault_dims |= op.dims != default_tile_dims(rank);
        unit_axis |= op.dims[0] == -1 || op.dims[1] == -1;
        padding |= op.kind == TileOpKind::Load && op.constant != 0;
      }
      for (const Region& sub : op.regions) walk(sub, k);
    }
  }
};

// Runs the evaluator with outputs poisoned by `poison`.
std::map<std::string, std::vector<double>> run(const RandomKernel& rk, const TileKernel& k, double poison) {
  auto tensors = random_kernel_tensors(rk, rk.seed + 1);
  for (const TensorParam& t : k.tensors)
    if (t.access == Access::Out) std::fill(tensors[t.name].begin(), tensors[t.name].end(), poison);
  EvalArgs args = eval_args(rk, tensors);
  evaluate(k, args);
  return tensors;
}

TEST(RandomKernel, ThousandKernelsVerifyEvaluateAndRoundTrip) {
  Coverage cov;
  auto start = std::chrono::steady_clock::now();
  for (uint64_t seed = 0; seed < kKernels; ++seed) {
    RandomKernel rk = random_kernel(seed);  // verified inside
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + print_tile_kernel(rk.kernel));
    cov.add(rk);
    ASSERT_GT(rk.tolerance, 0);
    // Written elements are the same under both poisons, and finite: domain-safe ops.
    auto a = run(rk, rk.kernel, NAN), b = run(rk, rk.kernel, 1e300);
    for (const TensorParam& t : rk.kernel.tensors) {
      if (t.access == Access::In) continue;
      int64_t written = 0;
      const std::vector<double>&x = a[t.name], &y = b[t.name];
      for (size_t e = 0; e < x.size(); ++e) {
        if (t.access == Access::Out && !(x[e] == y[e])) continue;  // never written
        ++written;
        ASSERT_TRUE(std::isfinite(x[e])) << t.name << "[" << e << "] = " << x[e];
      }
      EXPECT_GT(written, 0) << "output " << t.name << " is never written";
    }
    // The printed kernel parses back and computes the same, bit for bit.
    TileKernel back = parse_tile_kernel(print_tile_kernel(rk.kernel));
    verify_tile_kernel(back);
    auto c = run(rk, back, NAN);
    for (const auto& [name, v] : a)
      for (size_t e = 0; e < v.size(); ++e)
        ASSERT_TRUE(v[e] == c[name][e] || (std::isnan(v[e]) && std::isnan(c[name][e])))
            << name << "[" << e << "]";
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d random kernels generated, evaluated 3 times and round-tripped in %.2f s\n",
              kKernels, seconds);

  for (int k = 0; k <= static_cast<int>(TileOpKind::Yield); ++k)
    EXPECT_TRUE(cov.kinds.count(static_cast<TileOpKind>(k)))
        << "no kernel has a " << tile_op_name(static_cast<TileOpKind>(k));
  EXPECT_EQ(cov.grid_dims, (std::set<size_t>{1, 2, 3}));
  EXPECT_EQ(cov.nests, (std::set<size_t>{1, 2}));
  EXPECT_EQ(cov.ranks, (std::set<size_t>{1, 2, 3}));
  for (size_t n : {0, 1, 2, 3}) EXPECT_TRUE(cov.carried.count(n)) << n << " carried values";
  EXPECT_EQ(cov.dtypes, (std::set<DType>{DType::F32, DType::BF16, DType::F16}));
  EXPECT_EQ(cov.reduces.size(), 3u);
  EXPECT_EQ(cov.cmps.size(), 6u);
  EXPECT_TRUE(cov.nondefault_dims && cov.zero_stride && cov.unit_axis && cov.padding && cov.ragged &&
              cov.inout && cov.index_if && cov.scalar_if);
}

// The suggested tolerance against fp32 arithmetic (the evaluator's fp32 model): never
// exceeded, and not vacuous (most kernels do show some rounding error).
TEST(RandomKernel, Fp32ModelStaysWithinTolerance) {
  int rounded = 0;
  for (uint64_t seed = 0; seed < kKernels; ++seed) {
    RandomKernel rk = random_kernel(seed);
    auto want = random_kernel_tensors(rk, seed), got = want;
    EvalArgs a = eval_args(rk, want), b = eval_args(rk, got);
    b.fp32_model = true;
    evaluate(rk.kernel, a);
    evaluate(rk.kernel, b);
    double worst = 0;
    for (const TensorParam& t : rk.kernel.tensors) {
      if (t.access == Access::In) continue;
      double e = relative_error(std::span<const double>(got[t.name]),
                                std::span<const double>(want[t.name]), rk.error_floor);
      ASSERT_LE(e, rk.tolerance) << "seed " << seed << ", output " << t.name << "\n"
                                 << print_tile_kernel(rk.kernel);
      worst = std::max(worst, e);
    }
    rounded += worst > 0;
  }
  EXPECT_GT(rounded, kKernels / 2);
}

TEST(RandomKernel, NarrowTensorsCanBeLeftOut) {
  RandomKernelOptions f32_only;
  f32_only.narrow_tensors = false;
  int narrow = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    for (const TensorParam& t : random_kernel(seed).kernel.tensors) narrow += t.dtype != DType::F32;
    for (const TensorParam& t : random_kernel(seed, f32_only).kernel.tensors)
      EXPECT_EQ(t.dtype, DType::F32) << "seed " << seed << ", tensor " << t.name;
  }
  EXPECT_GT(narrow, 0);
}

TEST(RandomKernel, SameSeedSameKernel) {
  for (uint64_t seed : {3u, 77u, 12345u}) {
    RandomKernel a = random_kernel(seed), b = random_kernel(seed);
    EXPECT_EQ(print_tile_kernel(a.kernel), print_tile_kernel(b.kernel));
    EXPECT_EQ(a.sizes, b.sizes);
    EXPECT_EQ(a.tiles, b.tiles);
    EXPECT_EQ(a.scalars, b.scalars);
  }
  EXPECT_NE(print_tile_kernel(random_kernel(1).kernel), print_tile_kernel(random_kernel(2).kernel));
}

}  // namespace
}  // namespace tessel
