// The public API's refusals (include/tessel/tessel.h): plans that bind a tile name
// the kernel lacks or leave one unbound, arguments that are missing, contradict
// each other, or overlap a written tensor. Each is a typed error naming the culprit.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "../expect_error.h"
#include "eval/evaluate.h"
#include "ir/tile_text.h"
#include "ir/tile_verify.h"
#include "ops/library.h"
#include "plan/default_plan.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

using test::expect_error;

TEST(Api, PlanBindingAnUndeclaredTileIsAPlanErrorNamingIt) {
  Plan p = default_plan(softmax_kernel(), TargetKind::Sim, {{"M", 8}, {"N", 8}});
  p.tiles["BK"] = 16;
  expect_error(ErrorKind::Plan, "BK", [&] { compile(softmax_kernel(), p); });
}

TEST(Api, PlanLeavingATileUnboundIsAPlanErrorNamingIt) {
  Plan p = default_plan(softmax_kernel(), TargetKind::Sim, {{"M", 8}, {"N", 8}});
  p.tiles.erase("BC");
  expect_error(ErrorKind::Plan, "BC", [&] { compile(softmax_kernel(), p); });
}

// Plan::sizes: a name the kernel lacks, a negative value and a name fixed twice are
// plan errors; a launch with other values than the fixed ones is refused before
// anything runs, on every target, and one with those values runs.
TEST(Api, FixedSizesAreCheckedAtCompileAndLaunch) {
  const int64_t m = 6, n = 10;
  for (TargetKind target : {TargetKind::Sim, TargetKind::Cpu}) {
    Plan p = default_plan(softmax_kernel(), target, {{"M", m}, {"N", n}});
    p.sizes = {{"Q", 3}};
    expect_error(ErrorKind::Plan, "size Q", [&] { compile(softmax_kernel(), p); });
    p.sizes = {{"M", -1}};
    expect_error(ErrorKind::Plan, "size M = -1", [&] { compile(softmax_kernel(), p); });
    p.sizes = {{"M", m}, {"M", m}};
    expect_error(ErrorKind::Plan, "size M twice", [&] { compile(softmax_kernel(), p); });
    p.sizes = {{"M", m}, {"N", n}};
    Kernel k = compile(softmax_kernel(), p);
    std::vector<float> x(m * (n + 1), 0.5f), y(m * (n + 1), NAN);
    KernelArgs args;
    args.tensors["X"] = TensorArg::host(x.data(), {m, n + 1});
    args.tensors["Y"] = TensorArg::host(y.data(), {m, n + 1});
    expect_error(ErrorKind::InvalidArgument, "compiled for N = 10", [&] { k.launch(args); });
    EXPECT_TRUE(std::isnan(y[0]));
    args.tensors["X"] = TensorArg::host(x.data(), {m, n});
    args.tensors["Y"] = TensorArg::host(y.data(), {m, n});
    k.launch(args);
    for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(y[i], 1.0 / n, 1e-6) << i;  // equal inputs: uniform rows
  }
}

TEST(Api, ArgumentsAreCheckedByName) {
  const int64_t m = 6, n = 10;
  std::vector<float> x(m * n, 0.5f), y(m * n, NAN);
  Kernel k = compile(softmax_kernel(), TargetKind::Sim, {{"M", m}, {"N", n}});
  KernelArgs args;
  args.tensors["X"] = TensorArg::host(x.data(), {m, n});
  expect_error(ErrorKind::InvalidArgument, "missing tensor argument Y", [&] { k.launch(args); });
  args.tensors["Y"] = TensorArg::host(y.data(), {m, n + 1});
  expect_error(ErrorKind::InvalidArgument, "size N", [&] { k.launch(args); });
  args.tensors["Y"] = TensorArg::host(y.data(), {m, n});
  args.tensors["Z"] = TensorArg::host(y.data(), {m, n});
  expect_error(ErrorKind::InvalidArgument, "no tensor Z", [&] { k.launch(args); });
  args.tensors.erase("Z");
  args.tensors["Y"] = TensorArg::host(nullptr, {m, n});
  expect_error(ErrorKind::InvalidArgument, "null pointer", [&] { k.launch(args); });
}

// Softmax in place (Y on X's storage) is refused before anything runs, and X is
// left as it was.
TEST(Api, OverlappingWrittenTensorIsRefusedAndNothingRuns) {
  const int64_t m = 6, n = 10;
  std::vector<float> x(m * n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
  std::vector<float> before = x;
  for (TargetKind target : {TargetKind::Sim, TargetKind::Cpu}) {
    Kernel k = compile(softmax_kernel(), target, {{"M", m}, {"N", n}});
    KernelArgs args;
    args.tensors["X"] = TensorArg::host(x.data(), {m, n});
    args.tensors["Y"] = TensorArg::host(x.data() + 3, {m, n});
    expect_error(ErrorKind::InvalidArgument, "overlap", [&] { k.launch(args); });
    EXPECT_EQ(x, before) << target_name(target);
  }
}

// Y = 2 X, tile by tile; with `declare`, Y may share X's memory (in place).
TileKernel twice_kernel(bool declare) {
  KernelBuilder kb("twice");
  Sym M = kb.size("M"), N = kb.size("N");
  Sym BM = kb.tile("BM"), BN = kb.tile("BN");
  Tensor X = kb.tensor("X", {M, N}, Access::In);
  Tensor Y = kb.tensor("Y", {M, N}, Access::Out);
  if (declare) kb.allow_overlap(Y, X);
  kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
    Tile x = kb.load(X, {i * BM, j * BN}, BM, BN);
    kb.store(Y, {i * BM, j * BN}, kb.add(x, x));
  });
  return kb.finish();
}

// An overlap the kernel declares is let through on every target (and survives the
// text form); undeclared, the same launch is refused.
TEST(Api, DeclaredOverlapRunsInPlace) {
  const int64_t m = 7, n = 13;
  TileKernel declared = twice_kernel(true);
  EXPECT_NE(print_tile_kernel(declared).find("overlaps(X)"), std::string::npos);
  EXPECT_EQ(print_tile_kernel(parse_tile_kernel(print_tile_kernel(declared))), print_tile_kernel(declared));
  for (TargetKind target : {TargetKind::Sim, TargetKind::Cpu}) {
    std::vector<float> x(m * n);
    for (int64_t i = 0; i < m * n; ++i) x[i] = std::sin(0.3f * i) + 2;
    std::vector<float> before = x;
    KernelArgs args;
    args.tensors["X"] = TensorArg::host(x.data(), {m, n});
    args.tensors["Y"] = TensorArg::host(x.data(), {m, n});
    Kernel undeclared = compile(twice_kernel(false), target, {{"M", m}, {"N", n}});
    expect_error(ErrorKind::InvalidArgument, "overlap", [&] { undeclared.launch(args); });
    EXPECT_EQ(x, before);
    LaunchReport r = compile(declared, target, {{"M", m}, {"N", n}}).launch(args);
    EXPECT_EQ(r.races, 0) << target_name(target);
    for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(x[i], 2 * before[i]) << target_name(target) << " element " << i;
  }
}

TEST(Api, OverlapWithAnUnknownTensorIsAVerifyError) {
  TileKernel k = twice_kernel(true);
  k.tensors[1].may_overlap = {"Z"};
  expect_error(ErrorKind::Verify, "'Z'", [&] { verify_tile_kernel(k); });
  k.tensors[1].may_overlap = {"Y"};
  expect_error(ErrorKind::Verify, "itself", [&] { verify_tile_kernel(k); });
}

// A bound launch re-pointed at new tensors computes on them: every output is
// compared with the evaluator, poisoned with NaN first.
TEST(Api, BoundLaunchRunsOnReplacedTensors) {
  const int64_t m = 5, n = 19;
  TileKernel kernel = softmax_kernel();
  for (TargetKind target : {TargetKind::Sim, TargetKind::Cpu}) {
    Kernel k = compile(kernel, target, {{"M", m}, {"N", n}});
    std::vector<float> x1(m * n), x2(m * n), x3(m * n), y1(m * n, NAN), y2(m * n, NAN), y3(m * n, NAN);
    for (int64_t i = 0; i < m * n; ++i) {
      x1[i] = std::sin(0.7f * i) * 3;
      x2[i] = std::cos(1.3f * i) * 5;
      x3[i] = std::sin(2.1f * i + 1) * 4;
    }
    KernelArgs args;
    args.tensors["X"] = TensorArg::host(x1.data(), {m, n});
    args.tensors["Y"] = TensorArg::host(y1.data(), {m, n});
    BoundLaunch launch = k.bind(args);
    EXPECT_EQ(launch.run().races, 0);
    launch.set_tensor(0, x2.data());
    launch.set_tensor(1, y2.data());
    EXPECT_EQ(launch.run().races, 0);
    void* const third[] = {x3.data(), y3.data()};  // every argument in one call
    EXPECT_EQ(launch.run_with(third, 2, nullptr, 0).races, 0);
    for (auto [x, y] : {std::pair{&x1, &y1}, std::pair{&x2, &y2}, std::pair{&x3, &y3}}) {
      std::vector<double> want(m * n), xd(x->begin(), x->end());
      EvalArgs e;
      e.sizes = {{"M", m}, {"N", n}, {"ldx", n}, {"ldy", n}};
      e.tiles = k.plan().tiles;
      e.tensors = {{"X", std::span<double>(xd)}, {"Y", std::span<double>(want)}};
      evaluate(kernel, e);
      EXPECT_LE(relative_error(*y, want), error_bound(DType::F32, DType::F32, n)) << target_name(target);
    }
  }
}

TEST(Api, BoundLaunchRefusesANullOrOverlappingReplacement) {
  const int64_t m = 4, n = 8;
  std::vector<float> x(m * n, 1.0f), y(m * n, NAN);
  Kernel k = compile(softmax_kernel(), TargetKind::Cpu, {{"M", m}, {"N", n}});
  KernelArgs args;
  args.tensors["X"] = TensorArg::host(x.data(), {m, n});
  args.tensors["Y"] = TensorArg::host(y.data(), {m, n});
  BoundLaunch launch = k.bind(args);
  expect_error(ErrorKind::InvalidArgument, "null pointer", [&] { launch.set_tensor(1, nullptr); });
  expect_error(ErrorKind::InvalidArgument, "out of range", [&] { launch.set_tensor(2, y.data()); });
  expect_error(ErrorKind::InvalidArgument, "out of range", [&] { launch.set_scalar(0, 1.0); });
  // An overlap is refused by the run, before anything runs.
  std::vector<float> before = x;
  launch.set_tensor(1, x.data() + 1);
  expect_error(ErrorKind::InvalidArgument, "overlap", [&] { launch.run(); });
  EXPECT_EQ(x, before);
  // The same pointer again stores nothing, and the overlap is still refused.
  launch.set_tensor(1, x.data() + 1);
  expect_error(ErrorKind::InvalidArgument, "overlap", [&] { launch.run(); });
  EXPECT_EQ(x, before);
  // run_with: as many arguments as the kernel has, none null, none overlapping.
  void* const one[] = {x.data()};
  void* const with_null[] = {x.data(), nullptr};
  void* const overlapping[] = {x.data(), x.data() + 1};
  expect_error(ErrorKind::InvalidArgument, "has 2 tensors and 0 scalars, given 1 and 0",
               [&] { launch.run_with(one, 1, nullptr, 0); });
  expect_error(ErrorKind::InvalidArgument, "null pointer", [&] { launch.run_with(with_null, 2, nullptr, 0); });
  expect_error(ErrorKind::InvalidArgument, "overlap", [&] { launch.run_with(overlapping, 2, nullptr, 0); });
  EXPECT_EQ(x, before);
  // Swapping X and Y's memory passes through an overlapping state between the two
  // replacements; only the state at run() counts.
  std::vector<float> x2(m * n, 3.0f);
  launch.set_tensor(1, y.data());
  launch.set_tensor(0, x2.data());
  launch.run();
  for (float v : y) EXPECT_FLOAT_EQ(v, 1.0f / n);
  launch.set_tensor(0, y.data());
  launch.set_tensor(1, x2.data());
  launch.run();
  for (float v : x2) EXPECT_FLOAT_EQ(v, 1.0f / n);
}

}  // namespace
}  // namespace tessel
