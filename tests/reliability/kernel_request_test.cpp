// A cpu kernel compiled by an earlier process is found through its request entry
// (target/cpu/cpu_jit.h: find_cpu_kernel) without lowering or emitting anything,
// runs right, and still shows its GroupIR when asked; a request entry that is
// damaged or points nowhere falls back to the full compile. Each test has its own
// empty cache directory, and clears the in-memory caches where a fresh process
// would start without them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../file_test_util.h"
#include "ir/group_text.h"
#include "ir/tile_text.h"
#include "plan/default_plan.h"
#include "runtime/kernel_cache.h"
#include "target/cpu/cpu_jit.h"
#include "tessel/tessel.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

using test::count;
using test::slurp;
using test::spill;

// Two parallel nests, so two phases, each with a request entry: Y = 2 X, then Y += X.
constexpr const char* kTwoSteps =
    R"(kernel two_steps(sizes n, ld; tiles T; tensors X: f32[n, n] strides(ld, 1) in, Y: f32[n, n] strides(ld, 1) inout;
    scalars) {
  parallel i = ceildiv(n, T), j = ceildiv(n, T) {
    %x = load X[(i * T), (j * T)] : f32[T, T]
    %two = const 2 : f32
    %y = mul %x, %two : f32[T, T]
    store %y to Y[(i * T), (j * T)]
  }
  parallel a = ceildiv(n, T), b = ceildiv(n, T) {
    %x2 = load X[(a * T), (b * T)] : f32[T, T]
    %y2 = load Y[(a * T), (b * T)] : f32[T, T]
    %s = add %y2, %x2 : f32[T, T]
    store %s to Y[(a * T), (b * T)]
  }
}
)";

class KernelRequest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/tessel-test-request-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    const char* s = std::getenv("TESSEL_CACHE_DIR");
    saved_ = s ? s : "";
    had_ = s != nullptr;
    setenv("TESSEL_CACHE_DIR", dir, 1);
    forget();
    kernel_ = parse_tile_kernel(kTwoSteps);
    plan_ = default_plan(kernel_, TargetKind::Cpu, {{"n", kN}, {"ld", kLd}});
  }
  void TearDown() override {
    if (had_) setenv("TESSEL_CACHE_DIR", saved_.c_str(), 1);
    else unsetenv("TESSEL_CACHE_DIR");
    unsetenv("TESSEL_PASS_TIMING");
    forget();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // What a fresh process starts without.
  static void forget() {
    clear_compiled_kernels();
    clear_cpu_memory_cache();
  }

  // Compiles with each compile step's timing on stderr, which is returned: a
  // request hit prints "cpu-request" and no "tessel: lower".
  Kernel compile_logged(const Plan& plan, std::string* log) {
    setenv("TESSEL_PASS_TIMING", "1", 1);
    ::testing::internal::CaptureStderr();
    Kernel k = compile(kernel_, plan);
    *log = ::testing::internal::GetCapturedStderr();
    unsetenv("TESSEL_PASS_TIMING");
    return k;
  }

  // Runs `k` on fresh random X with Y poisoned with NaN, and checks all of Y
  // against 3 X in fp64 (two fp32 roundings at most).
  static void check(const Kernel& k, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-4, 4);
    std::vector<float> x(kN * kLd), y(kN * kLd, std::numeric_limits<float>::quiet_NaN());
    for (float& v : x) v = u(rng);
    KernelArgs args;
    args.tensors["X"] = TensorArg::host(x.data(), {kN, kN}, {kLd, 1});
    args.tensors["Y"] = TensorArg::host(y.data(), {kN, kN}, {kLd, 1});
    k.launch(args);
    int64_t bad = 0;
    for (int64_t r = 0; r < kN; ++r)
      for (int64_t c = 0; c < kN; ++c) {
        double want = 3.0 * x[r * kLd + c], got = y[r * kLd + c];
        bad += !(std::abs(got - want) <= 3e-7 * std::abs(want));
      }
    EXPECT_EQ(bad, 0) << "of " << kN * kN;
  }

  std::vector<std::string> files(const std::string& extension) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().extension() == extension) out.push_back(e.path().string());
    return out;
  }

  static constexpr int64_t kN = 45, kLd = 47;
  std::string dir_, saved_;
  bool had_ = false;
  TileKernel kernel_;
  Plan plan_;
};

TEST_F(KernelRequest, HitLowersNothingRunsRightAndShowsTheSameGroupIR) {
  std::string log;
  Kernel first = compile_logged(plan_, &log);
  ASSERT_EQ(first.phases(), 2u);
  EXPECT_EQ(count(log, "tessel: lower"), 2u) << log;
  EXPECT_EQ(files(".req").size(), 2u) << "one request entry per phase";
  check(first, 1);
  std::string ir0 = print_group_program(first.program(0)), ir1 = print_group_program(first.program(1));

  forget();
  Kernel again = compile_logged(plan_, &log);
  EXPECT_EQ(count(log, "tessel: cpu-request"), 2u) << log;
  EXPECT_EQ(count(log, "tessel: lower"), 0u) << "a request hit lowered the kernel:\n" << log;
  EXPECT_EQ(count(log, "cpu-emit"), 0u) << log;
  check(again, 2);
  // Lowered when asked, and the same as the full compile's.
  EXPECT_EQ(print_group_program(again.program(1)), ir1);
  EXPECT_EQ(print_group_program(again.program(0)), ir0);
  EXPECT_NE(again.explain().find("// ---- plan-barriers ----"), std::string::npos);
}

TEST_F(KernelRequest, AnotherPlanIsAnotherRequest) {
  std::string log;
  check(compile_logged(plan_, &log), 3);
  Plan other = plan_;
  other.tiles["T"] = plan_.tiles.at("T") == 16 ? 8 : 16;
  forget();
  Kernel k = compile_logged(other, &log);
  EXPECT_EQ(count(log, "tessel: lower"), 2u) << "the first plan's request entry was followed:\n" << log;
  check(k, 4);
  EXPECT_EQ(files(".req").size(), 4u);
}

TEST_F(KernelRequest, DamagedEntryIsReportedAndCompiledAgain) {
  std::string log;
  compile_logged(plan_, &log);
  for (const std::string& path : files(".req")) {
    std::string s = slurp(path);
    s[s.size() / 4] ^= 0x21;
    spill(path, s);
  }
  forget();
  Kernel k = compile_logged(plan_, &log);
  EXPECT_EQ(count(log, "tessel: lower"), 2u) << log;
  EXPECT_EQ(count(log, "kernel request entry"), 2u) << log;
  EXPECT_EQ(count(log, "compiling the kernel again"), 2u) << log;
  check(k, 5);
  // The full compile wrote them again: the next process hits, silently.
  forget();
  compile_logged(plan_, &log);
  EXPECT_EQ(count(log, "tessel: lower"), 0u) << log;
  EXPECT_EQ(count(log, "kernel request entry"), 0u) << log;
}

TEST_F(KernelRequest, EntryNamingAFileElsewhereIsNotFollowed) {
  std::string log;
  compile_logged(plan_, &log);
  // Whole entries with the right stamp whose payload names a path, not a file here.
  for (const std::string& path : files(".req")) {
    std::string s = slurp(path), why;
    size_t footer = s.rfind("tessel-cache-entry\n");
    ASSERT_NE(footer, std::string::npos);
    std::string stamp;
    for (size_t at = footer + 19; at < s.size();) {
      size_t end = s.find('\n', at);
      std::string line = s.substr(at, end - at);
      at = end + 1;
      std::string key = line.substr(0, line.find(' '));
      if (key != "bytes" && key != "fnv1a64" && key != "tessel-footer") stamp += line + "\n";
    }
    ASSERT_TRUE(check_cache_entry(s, stamp, &why)) << why;
    spill(path, seal_cache_entry("0123456789abcdef ../elsewhere.so", stamp));
  }
  forget();
  Kernel k = compile_logged(plan_, &log);
  EXPECT_EQ(count(log, "names no kernel entry"), 2u) << log;
  EXPECT_EQ(count(log, "tessel: lower"), 2u) << log;
  check(k, 6);
}

TEST_F(KernelRequest, EntryWhoseKernelIsGoneFallsBackSilently) {
  std::string log;
  compile_logged(plan_, &log);
  for (const std::string& so : files(".so")) fs::remove(so);
  forget();
  Kernel k = compile_logged(plan_, &log);
  EXPECT_EQ(count(log, "tessel: lower"), 2u) << log;
  EXPECT_EQ(count(log, "cpu-c++"), 2u) << "the kernels were compiled again:\n" << log;
  EXPECT_EQ(log.find("warn"), std::string::npos) << log;
  EXPECT_EQ(log.find("entry"), std::string::npos) << log;
  check(k, 7);
}

}  // namespace
}  // namespace tessel::testing
