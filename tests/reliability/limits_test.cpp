// Limits: sizes whose element counts or byte sizes overflow 64 bits, tiles larger
// than the target allows, and absurd options are user errors whose message carries
// the numbers, never a wrap-around, a crash or a huge allocation.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "../cpu/hand_gemm.h"
#include "ops/gemm.h"
#include "target/cpu/cpu_jit.h"
#include "tessel/error.h"

namespace tessel::testing {
namespace {

constexpr int64_t kBig = int64_t{1} << 40;  // 1099511627776

template <class F>
void expect_error(ErrorKind kind, const std::vector<std::string>& texts, F body) {
  try {
    body();
    ADD_FAILURE() << "expected a " << error_kind_name(kind) << " containing '" << texts[0] << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const std::string& t : texts)
      EXPECT_NE(std::string(e.what()).find(t), std::string::npos) << "'" << t << "' not in: " << e.what();
  }
}

// Never dereferenced: the checks come first.
std::vector<float> buf(16, 1.0f);
float* const p = buf.data();

TEST(Limits, ByteSizesThatOverflow64Bits) {
  // 2^40 rows of 2^40 floats: 2^82 bytes.
  expect_error(ErrorKind::InvalidArgument, {"A", "1099511627776 rows x ld 1099511627776", "overflows"},
               [] { gemm(kBig, 1, kBig, 1, p, kBig, p, 1, 0, p, 1); });
  // The element count fits (2^62) but the byte count does not.
  expect_error(ErrorKind::InvalidArgument, {"C", "2147483648 rows x ld 2147483648"},
               [] { gemm(int64_t{1} << 31, int64_t{1} << 31, 1, 1, p, 1, p, int64_t{1} << 31, 0, p, int64_t{1} << 31); });
  expect_error(ErrorKind::InvalidArgument, {"B: 1099511627776 rows x ld 1099511627776"},
               [] { gemm(0, kBig, kBig, 1, p, kBig, p, kBig, 0, p, kBig); });
  expect_error(ErrorKind::InvalidArgument, {"9223372036854775807"},
               [] { gemm(INT64_MAX, INT64_MAX, INT64_MAX, 1, p, INT64_MAX, p, INT64_MAX, 0, p, INT64_MAX); });
}

TEST(Limits, TilesLargerThanTheTargetAllows) {
  for (int64_t big : {int64_t{1} << 16, kBig, int64_t{1} << 62, INT64_MAX}) {
    GemmOptions o;
    Plan plan;
    plan.tiles = {{"BM", big}, {"BN", big}, {"BK", 8}};
    o.plan = plan;
    // Refused with the number and the limit (by the plan's range check, or, for a
    // tile each of whose sides is in range, by the lowering's buffer limit).
    expect_error(ErrorKind::Plan, {std::to_string(big), "4194304"},
                 [&] { gemm(4, 4, 4, 1, p, 4, p, 4, 0, p, 4, o); });
  }
}

TEST(Limits, AbsurdOptions) {
  GemmOptions o;
  o.threads = 1 << 20;
  expect_error(ErrorKind::InvalidArgument, {"threads = 1048576", "4096"},
               [&] { gemm(4, 4, 4, 1, p, 4, p, 4, 0, p, 4, o); });
  o.threads = -3;
  expect_error(ErrorKind::InvalidArgument, {"threads = -3"}, [&] { gemm(4, 4, 4, 1, p, 4, p, 4, 0, p, 4, o); });

  auto with_plan = [](auto edit) {
    GemmOptions o;
    Plan plan;
    plan.tiles = {{"BM", 24}, {"BN", 32}, {"BK", 8}};
    edit(plan);
    o.plan = plan;
    return o;
  };
  GemmOptions w = with_plan([](Plan& q) { q.workers = 1 << 20; });
  expect_error(ErrorKind::Plan, {"workers 1048576", "1024"}, [&] { gemm(4, 4, 4, 1, p, 4, p, 4, 0, p, 4, w); });
  GemmOptions win = with_plan([](Plan& q) { q.window = 1000; });
  expect_error(ErrorKind::Plan, {"window 1000", "8"}, [&] { gemm(4, 4, 4, 1, p, 4, p, 4, 0, p, 4, win); });
  GemmOptions cb = with_plan([](Plan& q) { q.copy_batch = 1 << 30; });
  expect_error(ErrorKind::Plan, {"copy batch 1073741824"}, [&] { gemm(4, 4, 4, 1, p, 4, p, 4, 0, p, 4, cb); });
  GemmOptions neg = with_plan([](Plan& q) { q.copy_batch = -1; });
  expect_error(ErrorKind::Plan, {"copy batch -1"}, [&] { gemm(4, 4, 4, 1, p, 4, p, 4, 0, p, 4, neg); });
}

// The cpu target checks its own launch arguments: a kernel is callable without the
// front door.
class CpuLaunchLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/tessel-test-limits-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    setenv("TESSEL_CACHE_DIR", dir, 1);
    HandGemm plan;
    plan.bm = 12, plan.bn = 32, plan.bk = 8;
    kernel_ = compile_cpu(hand_gemm_program(plan));
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  LaunchArgs args(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
    LaunchArgs a;
    a.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}};
    a.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
    a.tensors = {{"A", p}, {"B", p}, {"C", p}};
    return a;
  }

  std::string dir_;
  std::shared_ptr<const CpuKernel> kernel_;
};

TEST_F(CpuLaunchLimits, TensorBytesThatOverflow) {
  expect_error(ErrorKind::InvalidArgument, {"tensor 'A'", "overflows 64 bits", "extent 1099511627776, stride 1099511627776"},
               [&] { kernel_->run(args(kBig, 1, kBig, kBig, 1, 1), 1); });
  // The element offsets fit (2^62) but the byte offsets the kernel forms do not.
  const int64_t h = int64_t{1} << 31;
  expect_error(ErrorKind::InvalidArgument,
               {"tensor 'C': 4611686018427387904 elements of f32 overflow 64-bit byte offsets"},
               [&] { kernel_->run(args(h, h, 1, 1, h, h), 1); });
}

TEST_F(CpuLaunchLimits, GridThatOverflows) {
  // A program whose grid is M x M x M groups: 2^66 for M = 2^22.
  GroupProgram g;
  g.name = "grid_only";
  g.size_params = {"M"};
  g.grid = {{"i", expr_sym("M")}, {"j", expr_sym("M")}, {"l", expr_sym("M")}};
  auto k = compile_cpu(g);
  LaunchArgs a;
  a.sizes = {{"M", int64_t{1} << 22}};
  expect_error(ErrorKind::InvalidArgument, {"grid 4194304 x 4194304 x 4194304", "overflows"},
               [&] { k->run(a, 1); });
  a.sizes = {{"M", 3}};
  k->run(a, 1);  // 27 empty groups
}

TEST(CpuTargetLimits, ScratchLargerThanTheTargetAllows) {
  // A GroupIR program (as parsed text could give) whose staging buffer is far
  // beyond what one thread's scratch holds: refused before anything is emitted.
  // 2^30 floats of As plus 1792 of the other buffers: 4294974464 bytes.
  HandGemm plan;
  plan.bm = 12, plan.bn = 32, plan.bk = 8;
  GroupProgram g = hand_gemm_program(plan);
  for (Buffer& b : g.buffers)
    if (b.name == "As") b.rows = int64_t{1} << 20, b.cols = int64_t{1} << 10;
  expect_error(ErrorKind::Plan, {"needs 4294974464 bytes of scratch", "at most 1073741824"},
               [&] { compile_cpu(g); });
  for (Buffer& b : g.buffers)
    if (b.name == "As") b.rows = int64_t{1} << 40, b.cols = int64_t{1} << 40;
  expect_error(ErrorKind::Plan, {"more than 2^63"}, [&] { compile_cpu(g); });
}

}  // namespace
}  // namespace tessel::testing
