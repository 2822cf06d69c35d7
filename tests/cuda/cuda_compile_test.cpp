// The cuda target without a GPU: every GEMM kernel the default plans generate (each
// precision, each tile class, single and multi-stage) goes through the emitter and
// NVRTC for sm_90, and ptxas's report must show no spills and a block that fits.
// User errors (bad arch, plans the device cannot hold, running without a GPU)
// are typed errors. CI has the CUDA toolkit and no GPU: this is its cuda check.
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/compile.h"
#include "ir/group_text.h"
#include "ops/gemm_reference.h"
#include "target/sim/sim.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_precision.h"
#include "plan/default_plan.h"
#include "target/cuda/cuda_driver.h"
#include "target/cuda/cuda_emit.h"
#include "target/cuda/nvrtc_compile.h"
#include "target/cuda/cuda_kernel.h"
#include "tessel/error.h"

namespace tessel {
namespace {

struct Shape {
  int64_t m, n, k;
};
const Shape kTileClasses[] = {{32, 32, 32}, {127, 193, 61}, {512, 512, 512}, {4096, 4096, 4096}};
const GemmPrecision kPrecisions[] = {GemmPrecision::F32, GemmPrecision::TF32, GemmPrecision::BF16,
                                     GemmPrecision::F16};

// The kernel gemm() runs under the plan: tf32 on wgmma reads B transposed.
// aligned: the variant compile_cuda gives first (emit_cuda's assume_aligned), else the
// general one.
std::shared_ptr<const CudaKernel> compile_plan(const Plan& plan, GemmPrecision p, bool aligned = true) {
  const bool b_transposed = plan.atom == AtomKind::Wgmma && p == GemmPrecision::TF32;
  CompiledGroup g = compile_to_group(gemm_kernel(storage_dtype(p), b_transposed), plan, CompileOptions{});
  return compile_cuda(g.program, "sm_90", false, aligned);
}

void expect_fits(const CudaCompileInfo& info, const std::string& what) {
  const NvrtcOutput& o = info.nvrtc;
  std::printf("[ptxas] %-40s %3d regs, spills %d/%d B, stack %d B, %5lld B smem, %4d threads\n",
              what.c_str(), o.registers, o.spill_stores, o.spill_loads, o.stack_bytes,
              (long long)info.source.shared_bytes, info.source.threads);
  EXPECT_FALSE(o.cubin.empty()) << what;
  EXPECT_NE(o.ptx.find(".entry tessel_kernel"), std::string::npos) << what;
  ASSERT_GT(o.registers, 0) << what << ": no register count in the ptxas report:\n" << o.log;
  // One exception, measured: the fma atom's 64-accumulator kernels run two blocks a
  // multiprocessor (128 registers), where ptxas spills about 128 bytes of the loop's
  // copy state, and still run 6% faster than one block without spills (H200, fp32
  // 4096^3 and 2048^3; docs/cuda.md). They may spill up to 256 bytes; none other may.
  const bool two_block_fma = info.source.code.find("__launch_bounds__(256, 2)") != std::string::npos &&
                             info.source.code.find("fmaf(") != std::string::npos &&
                             o.ptx.find("mma") == std::string::npos;
  const int allowed = two_block_fma ? 256 : 0;
  EXPECT_LE(o.spill_stores, allowed) << what << "\n" << o.log;
  EXPECT_LE(o.spill_loads, allowed) << what << "\n" << o.log;
  EXPECT_LE(int64_t{o.registers} * info.source.threads, 65536) << what;
  EXPECT_LE(info.source.shared_bytes, 227 * 1024) << what;
}

TEST(CudaCompile, EveryDefaultGemmKernelCompilesForSm90WithoutSpills) {
  for (GemmPrecision p : kPrecisions)
    for (const Shape& s : kTileClasses) {
      Plan plan = default_gemm_plan(TargetKind::Cuda, s.m, s.n, s.k, p);
      auto kernel = compile_plan(plan, p);
      const std::string& ptx = kernel->info().nvrtc.ptx;
      std::string what = std::string(precision_name(p)) + " " + plan.to_string();
      expect_fits(kernel->info(), what);
      if (p == GemmPrecision::F32) {
        EXPECT_EQ(ptx.find("mma.sync"), std::string::npos) << what;
        EXPECT_NE(ptx.find("fma.rn.f32"), std::string::npos) << what;
      } else if (plan.atom == AtomKind::Wgmma) {
        EXPECT_NE(ptx.find("wgmma.mma_async.sync.aligned.m64n"), std::string::npos) << what;
        if (p == GemmPrecision::TF32) EXPECT_NE(ptx.find("k8.f32.tf32.tf32"), std::string::npos) << what;
        EXPECT_EQ(kernel->info().nvrtc.arch, "sm_90a") << what;
      } else {
        EXPECT_NE(ptx.find(p == GemmPrecision::TF32 ? "mma.sync.aligned.m16n8k8.row.col.f32.tf32"
                                                    : "mma.sync.aligned.m16n8k16.row.col.f32"),
                  std::string::npos)
            << what;
      }
      if (plan.async_copy) EXPECT_NE(ptx.find("cp.async.wait_group"), std::string::npos) << what;
      if ((p == GemmPrecision::BF16 || p == GemmPrecision::F16) && plan.atom == AtomKind::MmaSync)
        EXPECT_NE(ptx.find("ldmatrix"), std::string::npos) << what;
    }
  // The largest class of 16-bit GEMM is the wgmma one on sm_90.
  EXPECT_EQ(default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16).atom, AtomKind::Wgmma);
  EXPECT_EQ(default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16, "sm_80").atom,
            AtomKind::MmaSync);
}

// Launches on sm_90+ may overlap the previous kernel in the stream (programmatic
// dependent launch, cuda_kernel.cpp), so every kernel's first memory instruction in
// the PTX comes after griddepcontrol.wait. Older archs have neither.
TEST(CudaCompile, KernelsWaitForThePreviousGridBeforeTouchingMemory) {
  auto expect_waits_first = [](const CudaCompileInfo& info, const std::string& what) {
    const std::string& ptx = info.nvrtc.ptx;
    const size_t wait = ptx.find("griddepcontrol.wait");
    ASSERT_NE(wait, std::string::npos) << what;
    size_t first = std::string::npos;
    for (const char* op : {"ld.global", "st.global", "cp.async", "red.global", "atom.global"})
      first = std::min(first, ptx.find(op));
    ASSERT_NE(first, std::string::npos) << what << ": no global memory instruction found";
    EXPECT_LT(wait, first) << what;
    EXPECT_EQ(ptx.find("griddepcontrol.launch_dependents"), std::string::npos) << what;  // measured slower
  };
  for (GemmPrecision p : kPrecisions)
    for (const Shape& s : {kTileClasses[0], kTileClasses[3]}) {
      Plan plan = default_gemm_plan(TargetKind::Cuda, s.m, s.n, s.k, p);
      expect_waits_first(compile_plan(plan, p)->info(), std::string(precision_name(p)) + " " + plan.to_string());
    }
  const TileKernel sum = split_k_sum_kernel();
  const std::map<std::string, int64_t> sizes = {{"M", 1024}, {"N", 1024}, {"ldc", 1024}, {"S", 2},
                                                {"sps", 1024 * 1024}, {"ldp", 1024}};
  CompiledGroup g = compile_to_group(sum, default_plan(sum, TargetKind::Cuda, sizes), CompileOptions{});
  expect_waits_first(compile_cuda(g.program, "sm_90")->info(), "split-K sum");

  Plan old = default_gemm_plan(TargetKind::Cuda, 512, 512, 512, GemmPrecision::F32, "sm_80");
  CompiledGroup g80 = compile_to_group(gemm_kernel(DType::F32), old, CompileOptions{});
  auto k80 = compile_cuda(g80.program, "sm_80");
  EXPECT_EQ(k80->info().nvrtc.ptx.find("griddepcontrol"), std::string::npos);
}

// The kernel's source without the prelude.
std::string kernel_body(const CudaKernel& kernel) {
  const std::string& code = kernel.info().source.code;
  return code.substr(code.find("extern \"C\" __global__"));
}

// In the general variant, rows off 16 bytes copy asynchronously in 8- or 4-byte
// pieces (whichever their alignment allows at run time). The 8-byte tier, and pieces
// unrolled beyond 4 a thread, only where the launch bound leaves every register
// (small kernels: fp32 127x193x61, 64 threads); the two-block fp32 kernels (256
// threads under 128 registers; 512^3's) keep 4-byte pieces only, where more code made
// ptxas spill.
TEST(CudaCompile, RowsOffSixteenBytesCopyInEightOrFourBytePieces) {
  auto source = [](int64_t m, int64_t n, int64_t k, GemmPrecision p) {
    Plan plan = default_gemm_plan(TargetKind::Cuda, m, n, k, p);
    return kernel_body(*compile_plan(plan, p, /*aligned=*/false));
  };
  for (GemmPrecision p : {GemmPrecision::F32, GemmPrecision::BF16}) {
    const std::string small = source(127, 193, 61, p);
    EXPECT_NE(small.find("tsl_cp_async8(d + j * "), std::string::npos) << precision_name(p);
    EXPECT_NE(small.find("tsl_cp_async4(d + j * "), std::string::npos) << precision_name(p);
    // The stepped (inside the bounds) pieces' loop is unrolled.
    const size_t piece = small.find("tsl_cp_async4(d + j * ");
    const size_t pragma = small.rfind("#pragma unroll", piece);
    ASSERT_NE(pragma, std::string::npos);
    EXPECT_EQ(small.substr(pragma, 15), "#pragma unroll\n") << precision_name(p);
  }
  const std::string two_blocks = source(512, 512, 512, GemmPrecision::F32);
  ASSERT_NE(two_blocks.find("__launch_bounds__(256, 2)"), std::string::npos);
  EXPECT_NE(two_blocks.find("tsl_cp_async4("), std::string::npos);
  EXPECT_EQ(two_blocks.find("tsl_cp_async8("), std::string::npos);
}

// The variant compiled first assumes what most launches meet: tensors on 16 bytes,
// row strides multiples of 16 bytes. It tests no tensor address at run time, says
// what it assumes (the launch checks that), and its paths for other alignments fold
// away: fewer registers, and about a third of the general variant's cold compile.
TEST(CudaCompile, TheAlignedVariantAssumesSixteenByteTensorsAndRows) {
  for (GemmPrecision p : {GemmPrecision::F32, GemmPrecision::BF16}) {
    SCOPED_TRACE(precision_name(p));
    const Plan plan = default_gemm_plan(TargetKind::Cuda, 127, 193, 61, p);
    auto aligned = compile_plan(plan, p), general = compile_plan(plan, p, false);
    const CudaSource &a = aligned->info().source, &g = general->info().source;
    EXPECT_TRUE(a.assume_aligned);
    EXPECT_FALSE(g.assume_aligned);
    EXPECT_EQ(a.aligned_tensors, (std::vector<int>{0, 1, 2}));
    const int64_t line = 16 / dtype_bytes(storage_dtype(p));
    EXPECT_EQ(a.aligned_sizes,
              (std::vector<std::pair<std::string, int64_t>>{{"lda", line}, {"ldb", line}, {"ldc", 4}}));
    EXPECT_TRUE(g.aligned_tensors.empty() && g.aligned_sizes.empty());
    EXPECT_EQ(kernel_body(*aligned).find("(unsigned long long)t"), std::string::npos);
    EXPECT_NE(kernel_body(*general).find("((unsigned long long)t0) % 16 == 0"), std::string::npos);
    EXPECT_NE(a.code.find("// The aligned variant: its launches' tensors t0 t1 t2 start on 16 bytes"),
              std::string::npos);
    EXPECT_LT(aligned->info().nvrtc.registers, general->info().nvrtc.registers);
  }
}

// wgmma plans: one to four warpgroups, parts of 64 or 128 rows by 64 or 128
// columns, single-buffered sync copies and async windows; f16 as well as bf16.
TEST(CudaCompile, WgmmaPlansCompileWithoutSpills) {
  // Not here: 4 warpgroups (128 registers a thread at 512 threads) spill with
  // single-buffered synchronous copies.
  struct Tile {
    int64_t bm, bn;
    int warpgroups, min_window, max_window;
  };
  for (Tile t : {Tile{64, 64, 1, 1, 4}, Tile{128, 128, 2, 1, 4}, Tile{256, 128, 4, 2, 4}, Tile{128, 64, 1, 1, 4},
                 Tile{128, 256, 2, 2, 4}})
    for (int window : {1, 2, 3, 4})
      for (GemmPrecision p : {GemmPrecision::BF16, GemmPrecision::F16}) {
        if (window < t.min_window || window > t.max_window) continue;
        Plan plan = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, p);
        plan.tiles["BM"] = t.bm, plan.tiles["BN"] = t.bn, plan.workers = t.warpgroups;
        plan.worker_rows = t.warpgroups, plan.worker_cols = 1;
        plan.window = window;
        plan.async_copy = window > 1;
        CompiledGroup g = compile_to_group(gemm_kernel(storage_dtype(p)), plan, CompileOptions{});
        auto kernel = compile_cuda(g.program, "sm_90");
        std::string what = std::string(precision_name(p)) + " " + plan.to_string();
        expect_fits(kernel->info(), what);
        EXPECT_NE(kernel->info().nvrtc.ptx.find(p == GemmPrecision::F16 ? ".f32.f16.f16" : ".f32.bf16.bf16"),
                  std::string::npos) << what;
      }
}

// Single-buffered, synchronous copies, and each window up to 4 stages async.
TEST(CudaCompile, PipelineVariantsCompile) {
  for (GemmPrecision p : {GemmPrecision::F32, GemmPrecision::BF16})
    for (int window : {1, 2, 3, 4})
      for (bool async : {false, true}) {
        Plan plan = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, p);
        plan.window = window;
        plan.async_copy = async;
        plan.tma = false;  // thread copies here (tensor maps: tests/cuda/tma_*)
        plan.producers = 0;
        // The default wgmma tile (64x256 parts, 128 accumulator registers) spills
        // with synchronous copies (their staging registers) and single-buffered; a
        // 128x128 tile takes those variants.
        if (plan.atom == AtomKind::Wgmma && (window == 1 || !async)) plan.tiles["BN"] = 128;
        // So did fp32's 256x128x32 and 128x128x32 tiles with synchronous copies (their
        // staging registers beside 128 accumulators, or 64 under the two-block bound);
        // 128-row tiles 8 deep take them.
        if (plan.atom == AtomKind::Fma && !async) plan.tiles["BM"] = 128, plan.tiles["BK"] = 8;
        auto kernel = compile_plan(plan, p);
        std::string what = std::string(precision_name(p)) + " " + plan.to_string() + (async ? " async" : " sync");
        expect_fits(kernel->info(), what);
        EXPECT_EQ(kernel->info().nvrtc.ptx.find("cp.async.cg") != std::string::npos, async) << what;
      }
}

// When NVRTC's log lacks ptxas's report, the register count and the stack frame
// come from the cubin itself; spills count as zero only with no stack frame.
TEST(CudaCompile, ResourcesFromTheCubinWhenTheLogLacksTheReport) {
  // 64x256 per warpgroup with synchronous copies: their staging registers beside 128
  // accumulators spill (ptxas reported 172 bytes).
  Plan spilling = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16);
  spilling.tiles["BM"] = 128, spilling.tiles["BN"] = 256, spilling.workers = 2, spilling.worker_rows = 2, spilling.worker_cols = 1;
  spilling.window = 2;
  spilling.async_copy = false;
  spilling.tma = false;
  spilling.producers = 0;
  for (bool spills : {false, true}) {
    const Plan plan = spills ? spilling : default_gemm_plan(TargetKind::Cuda, 512, 512, 512, GemmPrecision::BF16);
    CompiledGroup g = compile_to_group(gemm_kernel(DType::BF16), plan, CompileOptions{});
    CudaSource src = emit_cuda(g.program);
    NvrtcOutput o = nvrtc_compile(src.code, cuda_compile_arch(src, "sm_90"));
    // The reference is ptxas's own report; where NVRTC left it out this test has
    // nothing to compare with (the GPU machine, at times): say so.
    if (o.log.find(" registers") == std::string::npos) GTEST_SKIP() << "NVRTC's log has no ptxas report here";
    ASSERT_GT(o.registers, 0) << o.log;
    NvrtcOutput bare = o;
    bare.log = "(no ptxas report)";
    read_ptxas_report(&bare);
    EXPECT_EQ(bare.registers, o.registers) << plan.to_string();
    EXPECT_EQ(bare.stack_bytes, o.stack_bytes) << plan.to_string();
    if (!spills) {
      EXPECT_EQ(o.stack_bytes, 0) << plan.to_string();
      EXPECT_EQ(bare.spill_stores, 0) << plan.to_string();
    } else {
      EXPECT_GT(o.spill_stores, 0) << plan.to_string();  // the spilling plan does spill
      EXPECT_EQ(bare.spill_stores, -1) << plan.to_string();
    }
  }
}

// NVRTC's phase times (front end, NVVM optimizer, ptxas) come with every compile
// and add up to no more than the whole (issue 14: cold compiles reported by part).
// The front end always takes time; the later phases can report 0: on the GPU
// machine (CUDA 13.0, driver 580) this compile took 30 ms, optimizer 1 and ptxas 0,
// where this machine's NVRTC spent seconds in them.
TEST(CudaCompile, PhaseTimesAreReported) {
  const Plan plan = default_gemm_plan(TargetKind::Cuda, 1024, 1024, 1024, GemmPrecision::BF16, "sm_90");
  CudaSource src = emit_cuda(compile_to_group(gemm_kernel(DType::BF16), plan, CompileOptions{}).program);
  NvrtcOutput o = nvrtc_compile(src.code, cuda_compile_arch(src, "sm_90"));
  std::printf("[nvrtc] %s: %.0f ms = front end %.0f + nvvm optimizer %.0f + ptxas %.0f (+ the rest)\n",
              plan.to_string().c_str(), o.compile_ms, o.frontend_ms, o.optimizer_ms, o.ptxas_ms);
  EXPECT_GT(o.frontend_ms, 0);
  EXPECT_GE(o.optimizer_ms, 0);
  EXPECT_GE(o.ptxas_ms, 0);
  EXPECT_LE(o.frontend_ms + o.optimizer_ms + o.ptxas_ms, o.compile_ms + 5);
}

// Register-level double buffering of the operand fragments (Plan::frag_buffers 2):
// the fma and mma.sync kernels load step kk + 1's fragments before step kk's math,
// compile without spills, print and parse the choice in GroupIR, and (the program
// being the same) run race free on the sim within the FP64 bound.
TEST(CudaCompile, DoubleBufferedFragmentsCompileAndRunOnSim) {
  struct Case {
    GemmPrecision p;
    int64_t size;  // picks the default plan's tile class
  };
  for (Case c : {Case{GemmPrecision::F32, 4096}, Case{GemmPrecision::F32, 512}, Case{GemmPrecision::TF32, 500},
                 Case{GemmPrecision::BF16, 300}}) {  // 300: rows off 16 bytes, mma.sync
    Plan plan = default_gemm_plan(TargetKind::Cuda, c.size, c.size, c.size, c.p);
    ASSERT_NE(plan.atom, AtomKind::Wgmma);
    plan.frag_buffers = 2;
    CompiledGroup g = compile_to_group(gemm_kernel(storage_dtype(c.p)), plan, CompileOptions{});
    std::string what = std::string(precision_name(c.p)) + " " + plan.to_string();
    std::string text = print_group_program(g.program);
    EXPECT_NE(text.find("  frag_buffers 2\n"), std::string::npos) << what;
    EXPECT_EQ(print_group_program(parse_group_program(text)), text) << what;
    auto kernel = compile_cuda(g.program, "sm_90");
    expect_fits(kernel->info(), what);
    EXPECT_NE(kernel->info().source.code.find("[cur ^ 1]"), std::string::npos) << what;

    const int64_t m = 70, n = 50, k = 40;
    std::mt19937_64 rng(21);
    std::vector<float> a(m * k), b(k * n), out(m * n, NAN);
    fill_random(a, rng);
    fill_random(b, rng);
    LaunchArgs args;
    args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
    args.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
    args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", out.data()}};
    EXPECT_EQ(run_sim(g.program, args).race_count, 0) << what;
    std::vector<double> oracle = gemm_oracle(m, n, k, 1.0, a.data(), k, b.data(), n, 0.0, out.data(), n);
    EXPECT_LE(gemm_relative_error(m, n, out.data(), n, oracle), gemm_error_bound(k)) << what;
  }
}

TEST(CudaCompile, ExplainShowsSourceAndPtxWithoutGpu) {
  GemmOptions o;
  o.target = TargetKind::Cuda;
  o.precision = GemmPrecision::BF16;
  std::string text = explain_gemm(256, 256, 256, o);
  EXPECT_NE(text.find("extern \"C\" __global__"), std::string::npos);
  EXPECT_NE(text.find("---- ptx ----"), std::string::npos);
  EXPECT_NE(text.find("mma.sync"), std::string::npos);
  EXPECT_NE(text.find("Used "), std::string::npos);  // ptxas report
}

// The fp32 fma atom under the two-block bound (128x128 tiles, 128 registers) reads its
// operands through 32-bit window addresses and compiles without a spill, both kernel
// forms and both alignment variants; with generic pointers it spilled 48 bytes. The
// default 128x64 tiles read through them too (A 4 k at a time); the 256x128 tiles,
// 128 accumulators a thread, and the small shapes' 32x32 tiles, 16, keep generic reads
// (cuda_emit.cpp, emit_fma_mma's `read`).
TEST(CudaCompile, Fp32TwoBlockTilesCompileWithoutSpills) {
  const Plan mid = default_gemm_plan(TargetKind::Cuda, 3000, 2000, 1500, GemmPrecision::F32, "sm_90");
  ASSERT_EQ(mid.tile("BN"), 64);
  const Plan small = default_gemm_plan(TargetKind::Cuda, 250, 130, 250, GemmPrecision::F32, "sm_90");
  ASSERT_EQ(small.tile("BM") * small.tile("BN") / small.workers, 16) << small.to_string();
  Plan wide = mid, square = mid;  // no default takes these tiles through tensor maps now
  set_gemm_tile(wide, 256, 128, 32);
  set_gemm_tile(square, 128, 128, 32);
  wide.atom_m = wide.atom_n = square.atom_m = square.atom_n = 8;
  wide.window = 2;
  square.window = 3;
  for (auto [plan, window_reads, aligned] :
       {std::tuple{square, true, true}, {square, true, false}, {mid, true, true}, {wide, false, true},
        {small, false, true}})
    for (GemmBeta form : {GemmBeta::Zero, GemmBeta::Any}) {
      SCOPED_TRACE(plan.to_string() + (aligned ? ", aligned" : ", general"));
      CompiledGroup g = compile_to_group(gemm_kernel(DType::F32, false, form), plan, CompileOptions{});
      auto kernel = compile_cuda(g.program, "sm_90", false, aligned);
      const NvrtcOutput& o = kernel->info().nvrtc;
      EXPECT_GT(o.registers, 0) << o.log;
      if (window_reads) EXPECT_LE(o.registers, 128) << o.log;
      // The frame holds the rolled edge store's copy of a thread's accumulators (4
      // bytes each) and any spill. The GPU machine's NVRTC may leave ptxas's report out
      // of the log (read_ptxas_report: spills -1, the frame from the cubin); the frame
      // tells there.
      EXPECT_LE(o.stack_bytes, 4 * plan.tile("BM") * plan.tile("BN") / plan.workers) << o.log;
      if (o.spill_stores != -1 || o.spill_loads != -1) {
        EXPECT_EQ(o.spill_stores, 0) << o.log;
        EXPECT_EQ(o.spill_loads, 0) << o.log;
      }
      const std::string& code = kernel->info().source.code;
      const std::string a_read = plan.tile("BN") == 128 ? "tsl_lds2(smem_s" : "tsl_lds4(smem_s";  // 2 or 4 k
      EXPECT_EQ(code.find(a_read) != std::string::npos, window_reads);
      EXPECT_EQ(code.find("*(const float4*)&(b") != std::string::npos, !window_reads);  // generic, of a stage
    }
}

// A plan of 128 threads on 128x64 tiles: the worker grid of squarest parts (16x8, 8x8
// outputs a thread, not 8x16's 16x4), and with all 255 registers at hand A is read 4 k
// at a time (an H100, 4096^3: 0.62 -> 0.77x cuBLAS against 2 k at a time; still under
// the default's 256 threads, docs/cuda.md).
TEST(CudaCompile, OneBlockOfRegistersReadsAFourKAtATime) {
  GemmOptions o;
  o.target = TargetKind::Cuda;
  o.precision = GemmPrecision::F32;
  o.arch = "sm_90";
  Plan p = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::F32, "sm_90");
  ASSERT_EQ(p.tile("BM"), 128);
  ASSERT_EQ(p.tile("BN"), 64);
  p.workers = 128;
  p.worker_rows = p.worker_cols = 0;  // the front door chooses the grid
  o.plan = p;
  const std::string text = explain_gemm(4096, 4096, 4096, o);
  EXPECT_NE(text.find("workers=128(16x8)"), std::string::npos) << text.substr(0, 4000);
  EXPECT_NE(text.find("float ra[1][8][4]"), std::string::npos);
  EXPECT_EQ(text.find("tsl_lds2(smem_s"), std::string::npos);
}

// The front door compiles the kernel for its call's beta (gemm_kernel.h, GemmBeta):
// beta 0 without C's loads, any other beta the kernel with both paths. Each form's
// GroupIR under the default wgmma and fma plans runs race-free on the sim within
// the FP64 bound (C NaN-poisoned for beta 0).
TEST(CudaCompile, TheFrontDoorCompilesTheEpilogueOfItsCallsBeta) {
  GemmOptions o;
  o.target = TargetKind::Cuda;
  o.precision = GemmPrecision::BF16;
  o.arch = "sm_90a";
  const std::string zero = explain_gemm(4096, 4096, 4096, o, 0.0f), scaled = explain_gemm(4096, 4096, 4096, o, 0.5f);
  EXPECT_EQ(zero.find("param beta"), std::string::npos);
  EXPECT_EQ(zero.find("ld.global.v4.f32"), std::string::npos);  // C is never read
  EXPECT_NE(scaled.find("ld.global.v4.f32"), std::string::npos);
  EXPECT_NE(scaled.find("param beta =="), std::string::npos);  // any other beta: both paths
  // fp32 (fma atom): both paths on the default 128-row tiles (plan_beta_form; the
  // 128x128 kernel ran slower without them), beta 0 without C's loads on 256-row ones.
  o.precision = GemmPrecision::F32;
  EXPECT_NE(explain_gemm(4096, 4096, 4096, o, 0.0f).find("param beta =="), std::string::npos);
  EXPECT_NE(explain_gemm(3000, 2000, 1500, o, 0.0f).find("param beta =="), std::string::npos);
  Plan wide = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::F32, "sm_90a");
  set_gemm_tile(wide, 256, 128, 32);
  wide.atom_m = wide.atom_n = 8;
  wide.window = 2;
  o.plan = wide;
  EXPECT_EQ(explain_gemm(4096, 4096, 4096, o, 0.0f).find("param beta"), std::string::npos);
  o.plan.reset();
  for (GemmPrecision p : {GemmPrecision::BF16, GemmPrecision::F32}) {
    const Plan plan = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, p, "sm_90");
    for (auto [form, beta] : {std::pair{GemmBeta::Zero, 0.0f}, {GemmBeta::Any, 0.0f}, {GemmBeta::Any, 0.5f}}) {
      CompiledGroup g = compile_to_group(gemm_kernel(storage_dtype(p), false, form), plan, CompileOptions{});
      const std::string what = std::string(precision_name(p)) + " " + plan.to_string() + " beta " +
                               std::to_string(beta);
      const int64_t m = 136, n = 264, k = 72;
      std::mt19937_64 rng(m + int(beta * 8));
      std::vector<float> a(m * k), b(k * n), c(m * n);
      fill_random(a, rng);
      fill_random(b, rng);
      fill_random(c, rng);
      for (float& x : a) x = round_to_storage(p, x);
      for (float& x : b) x = round_to_storage(p, x);
      if (beta == 0) std::fill(c.begin(), c.end(), NAN);
      std::vector<double> oracle = gemm_oracle(m, n, k, 1.5, a.data(), k, b.data(), n, beta, c.data(), n);
      LaunchArgs args;
      args.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
      args.scalars = {{"alpha", 1.5}, {"beta", beta}};
      args.tensors = {{"A", a.data()}, {"B", b.data()}, {"C", c.data()}};
      EXPECT_EQ(run_sim(g.program, args).race_count, 0) << what;
      EXPECT_LE(gemm_relative_error(m, n, c.data(), n, oracle), gemm_error_bound(k)) << what;
    }
  }
}

// Clusters (Plan::cluster): the default 16-bit plan takes them where they pay
// (K past 1536, no wave added by the rows rounded up to pairs: wgmma_cluster_pays),
// and their kernels compile for sm_90a with the cluster's dimensions, multicast
// copies, remote arrivals and cluster barriers.
TEST(CudaCompile, ClusterPlansCompileAndTheDefaultTakesThemWhereTheyPay) {
  GemmOptions o;
  o.target = TargetKind::Cuda;
  o.precision = GemmPrecision::BF16;
  o.arch = "sm_90a";
  struct Want {
    int64_t m, n, k;
    bool cluster;
  };
  // 1376x2944x2352: 11 x 12 tiles of 128x256 fill one wave; 12 x 12 would not.
  for (Want w : {Want{1184, 3304, 2504, true}, {2048, 2048, 1600, true}, {2048, 2048, 1536, false},
                 {1376, 2944, 2352, false}}) {
    std::string text = explain_gemm(w.m, w.n, w.k, o);
    const std::string what = std::to_string(w.m) + "x" + std::to_string(w.n) + "x" + std::to_string(w.k);
    EXPECT_EQ(text.find("cluster=2") != std::string::npos, w.cluster) << what;
    EXPECT_EQ(text.find("multicast::cluster") != std::string::npos, w.cluster) << what;
    EXPECT_EQ(text.find("barrier.cluster") != std::string::npos, w.cluster) << what;
  }
  // Along the tile rows (B shared; a 192-wide B box split by rows), and along the
  // columns (192 x 128: A's box is the larger).
  for (auto [bm, bn, dims] : {std::tuple<int64_t, int64_t, const char*>{128, 192, "1, 2, 1"}, {192, 128, "2, 1, 1"}}) {
    Plan plan = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16);
    plan.tiles["BM"] = bm, plan.tiles["BN"] = bn;
    plan.workers = plan.worker_rows = static_cast<int>(bm / 64), plan.worker_cols = 1;
    plan.cluster = 2;
    CompiledGroup g = compile_to_group(gemm_kernel(DType::BF16), plan, CompileOptions{});
    auto kernel = compile_cuda(g.program, "sm_90a");
    expect_fits(kernel->info(), plan.to_string());
    EXPECT_NE(kernel->info().nvrtc.ptx.find(std::string(".reqnctapercluster ") + dims), std::string::npos)
        << plan.to_string();
    EXPECT_NE(kernel->info().nvrtc.ptx.find("multicast::cluster"), std::string::npos) << plan.to_string();
  }
}

TEST(CudaCompile, CliExplainWorksWithoutGpu) {
  std::string cmd = std::string(TESSEL_CLI) + " explain 64 64 64 --target cuda --dtype tf32 --arch sm_90 > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST(CudaCompileErrors, BadArchIsAUserError) {
  Plan plan = default_gemm_plan(TargetKind::Cuda, 64, 64, 64);
  CompiledGroup g = compile_to_group(gemm_kernel(), plan, CompileOptions{});
  for (const char* arch : {"gfx90a", "sm_", "sm_a", "sm_90b", "sm_9x", "sm_90aa", " sm_90", "sm_90 "}) {
    try {
      compile_cuda(g.program, arch);
      ADD_FAILURE() << arch << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << arch;
      EXPECT_NE(std::string(e.what()).find("'" + std::string(arch) + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(compile_cuda(g.program, "sm_90a")->info().nvrtc.cubin.empty());
}

TEST(CudaCompileErrors, NvrtcFailureCarriesTheLogAndTheSource) {
  try {
    nvrtc_compile("extern \"C\" __global__ void tessel_kernel() { undeclared_thing(); }", "sm_90");
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::Compile);
    EXPECT_NE(m.find("undeclared_thing"), std::string::npos) << m;
    EXPECT_NE(m.find(".cu"), std::string::npos) << m;  // the source written out
    EXPECT_NE(m.find("nvcc -arch=sm_90"), std::string::npos) << m;
  }
}

// Plans the wgmma atom cannot run are Plan errors that say why.
TEST(CudaCompileErrors, WgmmaMisusesArePlanErrors) {
  auto expect_plan_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Plan) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  Plan wg = default_gemm_plan(TargetKind::Cuda, 4096, 4096, 4096, GemmPrecision::BF16);
  wg.tma = false;  // the cp.async stages (tma's own misuses: tests/cuda/tma_*)
  wg.producers = 0;
  wg.async_copy = true;
  ASSERT_EQ(wg.atom, AtomKind::Wgmma);
  auto compile = [](const Plan& plan, DType t, const std::string& arch) {
    CompiledGroup g = compile_to_group(gemm_kernel(t), plan, CompileOptions{});
    compile_cuda(g.program, arch);
  };
  expect_plan_error([&] { compile(wg, DType::BF16, "sm_80"); }, "sm_90");
  // One stage, so that the shared-memory bound (checked first) leaves the atom's own
  // checks to speak.
  Plan one_stage = wg;
  one_stage.window = 1;
  one_stage.tiles["BK"] = 32;  // rows of 128 bytes, as fp32 (tf32) operands need
  expect_plan_error([&] { compile(one_stage, DType::F32, "sm_90"); }, "tf32 wgmma needs B K-major");
  Plan narrow_k = wg;
  narrow_k.tiles["BK"] = 32;
  expect_plan_error([&] { compile(narrow_k, DType::BF16, "sm_90"); }, "bk = 64");
  Plan wide = wg;
  wide.tiles["BM"] = 64, wide.tiles["BN"] = 512, wide.workers = 1, wide.worker_rows = 1, wide.worker_cols = 1;
  wide.window = 1;
  expect_plan_error([&] { compile(wide, DType::BF16, "sm_90"); }, "at most 256");
  // Warpgroups side by side take whole panels of MN-major B each: 96 columns would
  // start the second one inside a panel, where its descriptor reads the wrong bytes.
  Plan halves = wg;
  halves.tiles["BM"] = 192, halves.tiles["BN"] = 192, halves.workers = 2, halves.worker_rows = 1;
  halves.worker_cols = 2, halves.window = 1;
  expect_plan_error([&] { compile(halves, DType::BF16, "sm_90"); }, "inside a 64-column panel");
  Plan cpu = wg;
  cpu.target = TargetKind::Cpu;
  expect_plan_error([&] { validate_plan(cpu); }, "cuda target only");
  Plan atom = wg;
  atom.atom_n = 32;
  expect_plan_error([&] { validate_plan(atom); }, "64x64");
  // Double-buffered fragments: 1 or 2 sets, for the cuda fma and mma.sync atoms.
  Plan sets = default_gemm_plan(TargetKind::Cuda, 512, 512, 512);
  sets.frag_buffers = 3;
  expect_plan_error([&] { validate_plan(sets); }, "frag_buffers 3");
  Plan on_wgmma = wg;
  on_wgmma.frag_buffers = 2;
  expect_plan_error([&] { validate_plan(on_wgmma); }, "frag_buffers 2");
  Plan on_cpu = default_gemm_plan(TargetKind::Cpu, 512, 512, 512);
  on_cpu.frag_buffers = 2;
  expect_plan_error([&] { validate_plan(on_cpu); }, "frag_buffers 2");
}

TEST(CudaCompileErrors, TooManyThreadsIsAPlanError) {
  Plan plan = default_gemm_plan(TargetKind::Cuda, 300, 300, 300, GemmPrecision::BF16);  // mma.sync warps
  plan.workers = 64;  // 64 warps = 2048 threads
  plan.worker_rows = 8;
  plan.worker_cols = 8;
  plan.tiles["BM"] = plan.tiles["BN"] = 256;
  try {
    compile_plan(plan, GemmPrecision::BF16);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Plan);
    EXPECT_NE(std::string(e.what()).find("2048 threads"), std::string::npos) << e.what();
  }
}

TEST(CudaCompileErrors, RunningWithoutGpuIsARuntimeError) {
  std::string why;
  if (cuda_gpu_available(&why)) GTEST_SKIP() << "a GPU is present; this checks the no-GPU path";
  std::vector<float> a(16, 1), b(16, 1), c(16, 0);
  GemmOptions o;
  o.target = TargetKind::Cuda;
  try {
    gemm(4, 4, 4, 1, a.data(), 4, b.data(), 4, 0, c.data(), 4, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
  }
  std::string cmd = std::string(TESSEL_CLI) + " gemm 8 8 8 --target cuda 2> /dev/null";
  int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
}

}  // namespace
}  // namespace tessel

#else
TEST(CudaCompile, Skipped) { GTEST_SKIP() << "tessel was built without the CUDA toolkit"; }
#endif
