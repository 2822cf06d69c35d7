// Issue 14 on the cuda target: a hand-written GroupIR GEMM whose stages are filled
// by tma copies completing on mbarriers (tests/cuda/data/tma_wgmma_gemm.gir: bf16,
// 128x128 tiles over two wgmma warpgroups, three stages) emits mbarrier.init /
// arrive / expect_tx / try_wait.parity and cp.async.bulk.tensor through CUtensorMap
// parameters, and compiles through NVRTC for sm_90a without a GPU (label cuda).
// The same program runs race-free on the sim. TmaGpu.* run it on a GPU against an
// FP64 oracle, and skip, visibly, without one.
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "ops/gemm_precision.h"
#include "target/cuda/cuda_driver.h"
#include "target/cuda/cuda_emit.h"
#include "target/cuda/cuda_kernel.h"
#include "target/cuda/cuda_memory.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/" + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

GroupProgram program(const std::string& file) {
  GroupProgram p = parse_group_program(read_text("tests/cuda/data/" + file));
  verify_group_program(p);
  return p;
}
// Every warpgroup both waits and (thread 0) issues the copies.
GroupProgram tma_gemm() { return program("tma_wgmma_gemm.gir"); }
// Warp-specialized (ws_wgmma_gemm*.gir): a producer warpgroup (40 registers) and
// two consumer warpgroups (232 registers); tests/sim/warp_specialized_sim_test.cpp
// checks them on the sim.

std::string edit(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(TmaCompile, TmaWgmmaGemmCompilesForSm90aWithoutSpills) {
  auto kernel = compile_cuda(tma_gemm(), "sm_90");
  const CudaCompileInfo& info = kernel->info();
  const std::string& src = info.source.code;
  const std::string& ptx = info.nvrtc.ptx;
  std::printf("[ptxas] tma wgmma gemm: %d regs, spills %d/%d B, %lld B smem, %d threads, %.0f ms\n",
              info.nvrtc.registers, info.nvrtc.spill_stores, info.nvrtc.spill_loads,
              (long long)info.source.shared_bytes, info.source.threads, info.nvrtc.compile_ms);
  EXPECT_EQ(info.nvrtc.arch, "sm_90a");
  EXPECT_EQ(info.nvrtc.spill_stores, 0) << info.nvrtc.log;
  EXPECT_EQ(info.nvrtc.spill_loads, 0) << info.nvrtc.log;
  // Two tensor maps (A's and B's boxes), passed by value after the tensors.
  ASSERT_EQ(info.source.tensor_maps.size(), 2u);
  EXPECT_EQ(info.source.tensor_maps[0].tensor, 0);
  EXPECT_EQ(info.source.tensor_maps[0].box_rows, 128);
  EXPECT_EQ(info.source.tensor_maps[1].tensor, 1);
  EXPECT_EQ(info.source.tensor_maps[1].box_rows, 64);
  EXPECT_EQ(info.source.tensor_maps[1].box_cols, 64);
  EXPECT_TRUE(has(src, "const __grid_constant__ tsl_tensor_map tm0, const __grid_constant__ tsl_tensor_map tm1)"))
      << src;
  // Three stages of 16 KiB for each operand, 6 mbarriers, each warpgroup's scratch
  // for staged stores (64 rows of 16 columns, 8 floats of padding a row: the widest
  // that keeps two blocks a multiprocessor), 1 KiB alignment room.
  EXPECT_EQ(info.source.shared_bytes, 3 * 16384 * 2 + 48 + 2 * 64 * 24 * 4 + 1024);
  // C goes out through the scratch, in whole 16-byte row pieces.
  EXPECT_TRUE(has(src, "float* const stg = (float*)(smem + 98352) + worker * 1536;")) << src;
  // Edge tiles and unaligned rows too, in rolled loops (cuda_emit.cpp, rolled runs):
  // 16-byte pieces where rows start on 16 bytes, else elements.
  EXPECT_TRUE(has(src, "#pragma unroll 1\n        for (int e = lane * 4; e < 1024; e += 512) {")) << src;
  EXPECT_TRUE(has(src, "#pragma unroll 1\n        for (int e = lane; e < 1024; e += 128) {")) << src;
  EXPECT_TRUE(has(ptx, "st.global.v4.u32")) << "16-byte stores of C";
  for (const char* instruction :
       {"mbarrier.init.shared::cta.b64", "mbarrier.arrive.shared::cta.b64", "mbarrier.expect_tx.relaxed.cta.shared::cta.b64",
        "mbarrier.try_wait.parity.shared::cta.b64", "fence.mbarrier_init.release.cluster",
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "bar.sync"})
    EXPECT_TRUE(has(ptx, instruction)) << instruction;
  // The copies and mbarriers replace cp.async and most block-wide barriers.
  EXPECT_FALSE(has(ptx, "cp.async.cg")) << "no cp.async";
}

TEST(TmaCompile, WarpSpecializedGemmCompilesWithRegisterReallocation) {
  for (const char* file : {"ws_wgmma_gemm.gir", "ws_wgmma_gemm_overlap.gir"}) {
    SCOPED_TRACE(file);
    auto kernel = compile_cuda(program(file), "sm_90");
    const CudaCompileInfo& info = kernel->info();
    const std::string& src = info.source.code;
    const std::string& ptx = info.nvrtc.ptx;
    std::printf("[ptxas] warp-specialized gemm: %d regs, spills %d/%d B, %lld B smem, %d threads, %.0f ms\n",
                info.nvrtc.registers, info.nvrtc.spill_stores, info.nvrtc.spill_loads,
                (long long)info.source.shared_bytes, info.source.threads, info.nvrtc.compile_ms);
    EXPECT_EQ(info.nvrtc.arch, "sm_90a");
    EXPECT_EQ(info.source.threads, 384);
    EXPECT_EQ(info.nvrtc.spill_stores, 0) << info.nvrtc.log;
    EXPECT_EQ(info.nvrtc.spill_loads, 0) << info.nvrtc.log;
    // setmaxnreg is honoured only under a cap of one block (no C7508 warning).
    EXPECT_TRUE(has(src, "__launch_bounds__(384, 1)")) << src;
    EXPECT_FALSE(has(info.nvrtc.log, "C7508")) << info.nvrtc.log;
    EXPECT_TRUE(has(src, "if (worker >= 2 && worker < 3) {")) << src;
    EXPECT_TRUE(has(src, "} else if (worker >= 0 && worker < 2) {")) << src;
    EXPECT_TRUE(has(src, "if (tid == 256) tsl_mbar_expect_tx")) << src;  // the producer's first thread
    for (const char* instruction : {"setmaxnreg.dec.sync.aligned.u32 40", "setmaxnreg.inc.sync.aligned.u32 232",
                                    "cp.async.bulk.tensor.2d", "mbarrier.try_wait.parity", "wgmma.mma_async"})
      EXPECT_TRUE(has(ptx, instruction)) << instruction;
  }
}

TEST(TmaCompile, TheSameProgramRunsRaceFreeOnSim) {
  GroupProgram p = tma_gemm();
  EXPECT_EQ(print_group_program(p), read_text("tests/cuda/data/tma_wgmma_gemm.gir"));  // round-trips
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{128, 128, 64}, {200, 136, 328}, {70, 130, 256}}) {
    std::mt19937_64 rng(m * 7 + k);
    std::uniform_int_distribution<int> small(-3, 3);
    std::vector<float> a(m * k), b(k * n), c(m * n, NAN);
    for (float& x : a) x = static_cast<float>(small(rng));
    for (float& x : b) x = static_cast<float>(small(rng));
    LaunchArgs args;
    args.sizes = {{"M", m}, {"N", n}, {"K", k}};
    args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
    SimResult r = run_sim(p, args);
    EXPECT_EQ(r.race_count, 0) << m << "x" << n << "x" << k << (r.races.empty() ? "" : "\n" + r.races[0].message);
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t kk = 0; kk < k; ++kk) s += double(a[i * k + kk]) * b[kk * n + j];
        worst = std::max(worst, std::isnan(c[i * n + j]) ? INFINITY : std::fabs(c[i * n + j] - s));
      }
    EXPECT_EQ(worst, 0.0) << m << "x" << n << "x" << k;
  }
}

TEST(TmaCompile, FormsTheCopyEngineCannotTakeAreTypedErrors) {
  const std::string text = print_group_program(tma_gemm());
  auto unsupported = [](const std::string& t, const std::string& says) {
    try {
      GroupProgram p = parse_group_program(t);
      verify_group_program(p);
      emit_cuda(p);
      ADD_FAILURE() << "emitted; wanted: " << says;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
      EXPECT_TRUE(has(e.what(), says)) << e.what();
      EXPECT_TRUE(has(e.what(), "tma #6")) << e.what();
    }
  };
  unsupported(edit(text, " guard src(M, K)", ""), "the source needs guards");
  unsupported(edit(text, "strides(K, 1) -> As@s", "strides(K, 2) -> As@s"), "column stride 1");
  unsupported(edit(text, "-> As@s[0, 0] 128x64", "-> As@s[4, 0] 124x64"), "constant row multiple of 8");
  // An f32 operand: the 128-byte swizzle of 16-bit rows is the only layout here.
  unsupported(edit(edit(text, "A: bf16[M, K]", "A: f32[M, K]"), "buffer A: global bf16", "buffer A: global f32"),
              "copies f32 into bf16; tma copies bf16, f16 or f32 elements without conversion");
}

// ---- on a GPU ----

#define REQUIRE_GPU()                                                  \
  do {                                                                 \
    std::string why;                                                   \
    if (!cuda_gpu_available(&why)) GTEST_SKIP() << "no GPU: " << why; \
  } while (0)

// C = A * B with bf16 inputs (small integers, so fp32 sums are exact) against FP64.
void run_on_gpu(int64_t m, int64_t n, int64_t k, const GroupProgram& program = tma_gemm()) {
  SCOPED_TRACE(program.name);
  auto kernel = compile_cuda(program);
  std::mt19937_64 rng(m * 131 + n * 7 + k);
  std::uniform_int_distribution<int> small(-4, 4);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  std::vector<uint16_t> a16(m * k), b16(k * n);
  for (size_t i = 0; i < a.size(); ++i) a16[i] = float_to_bf16(a[i] = static_cast<float>(small(rng)));
  for (size_t i = 0; i < b.size(); ++i) b16[i] = float_to_bf16(b[i] = static_cast<float>(small(rng)));
  DeviceBuffer da(a16.size() * 2 + 16), db(b16.size() * 2 + 16), dc(c.size() * 4 + 16);
  da.upload(a16.data(), a16.size() * 2);
  db.upload(b16.data(), b16.size() * 2);
  dc.fill32(0x7fc00000u);  // NaN: an element never written shows
  LaunchArgs args;
  args.sizes = {{"M", m}, {"N", n}, {"K", k}};
  args.tensors = {{"A", static_cast<float*>(da.get())}, {"B", static_cast<float*>(db.get())},
                  {"C", static_cast<float*>(dc.get())}};
  kernel->launch(args);
  cuda_synchronize();
  dc.download(c.data(), c.size() * 4);
  int64_t bad = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t kk = 0; kk < k; ++kk) s += double(a[i * k + kk]) * b[kk * n + j];
      if (!(c[i * n + j] == s) && bad++ < 5)
        ADD_FAILURE() << m << "x" << n << "x" << k << ": C[" << i << ", " << j << "] = " << c[i * n + j]
                      << ", want " << s;
    }
  EXPECT_EQ(bad, 0) << m << "x" << n << "x" << k;
}

TEST(TmaGpu, WholeTilesMatchTheOracle) {
  REQUIRE_GPU();
  run_on_gpu(128, 128, 64);
  run_on_gpu(256, 384, 512);
}

TEST(TmaGpu, RaggedEdgesAreZeroFilledByTheCopyEngine) {
  REQUIRE_GPU();
  run_on_gpu(200, 136, 328);
  run_on_gpu(70, 8, 1000);
}

TEST(TmaGpu, WarpSpecializedGemmMatchesTheOracle) {
  REQUIRE_GPU();
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{128, 128, 64}, {256, 384, 512}, {200, 136, 328},
                         {70, 8, 1000}})
    for (const char* file : {"ws_wgmma_gemm.gir", "ws_wgmma_gemm_overlap.gir"}) run_on_gpu(m, n, k, program(file));
}

TEST(TmaGpu, RowStrideOffSixteenBytesIsAnInvalidArgument) {
  REQUIRE_GPU();
  auto kernel = compile_cuda(tma_gemm());
  DeviceBuffer da(64 * 67 * 2), db(67 * 64 * 2), dc(64 * 64 * 4);
  LaunchArgs args;
  args.sizes = {{"M", 64}, {"N", 64}, {"K", 67}};  // rows of A: 134 bytes
  args.tensors = {{"A", static_cast<float*>(da.get())}, {"B", static_cast<float*>(db.get())},
                  {"C", static_cast<float*>(dc.get())}};
  try {
    kernel->launch(args);
    ADD_FAILURE() << "launched";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    EXPECT_TRUE(has(e.what(), "multiple of 16 bytes")) << e.what();
  }
}

}  // namespace
}  // namespace tessel

#else
TEST(TmaCompile, Skipped) { GTEST_SKIP() << "tessel was built without the CUDA toolkit"; }
#endif
