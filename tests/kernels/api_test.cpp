// The public API's refusals (include/tessel/tessel.h): plans that bind a tile name
// the kernel lacks or leave one unbound, arguments that are missing, contradict
// each other, or overlap a written tensor. Each is a typed error naming the culprit.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "ops/library.h"
#include "plan/default_plan.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

void expect_error(ErrorKind kind, const std::string& needle, const std::function<void()>& f) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

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

}  // namespace
}  // namespace tessel
