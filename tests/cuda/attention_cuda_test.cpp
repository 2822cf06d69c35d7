// Attention with bf16 and f16 inputs on the cuda target without a GPU: the default
// plan takes the mma.sync atom with warps along the rows, and the emitted kernel
// (row vectors in the accumulator's layout, quad-shuffle row reductions, broadcasts,
// the probabilities cast to 16 bits for the second mma) compiles through NVRTC for
// sm_90 without spills; what stays unsupported is a typed error. tests/kernels runs
// the same GroupIR on the sim against the FP64 evaluator; tests/gpu runs it on the
// device.
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA
#include <cstdio>
#include <string>

#include "attention_cases.h"
#include "compiler/compile.h"
#include "ir/group_text.h"
#include "target/cuda/cuda_emit.h"
#include "target/cuda/cuda_kernel.h"
#include "tessel/error.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

// One case per distinct default plan: dtype x mask x head_dim, and a single query
// row (one warp).
TEST(AttentionCuda, DefaultPlansCompileForSm90WithoutSpills) {
  for (DType t : {DType::BF16, DType::F16})
    for (AttentionMask m : {AttentionMask::None, AttentionMask::Causal})
      for (const test::AttentionShape& s : test::attention_shapes()) {
        if (std::string(s.name) != "gqa2_d64" && std::string(s.name) != "mha_d128" &&
            std::string(s.name) != "gqa2_d128_one_query")
          continue;
        TileKernel k = attention_kernel(m, t);
        SCOPED_TRACE(k.name + " " + s.name);
        Plan plan = default_plan(k, TargetKind::Cuda, test::attention_sizes(s));
        EXPECT_EQ(plan.atom, AtomKind::MmaSync) << plan.to_string();
        EXPECT_EQ(plan.worker_cols, 1) << plan.to_string();
        Kernel compiled = compile(k, plan);
        auto cuda = compile_cuda(compiled.program(), "sm_90");
        const NvrtcOutput& o = cuda->info().nvrtc;
        std::printf("[ptxas] %-24s %-22s %s: %3d regs, spills %d/%d B, %6lld B smem\n", k.name.c_str(), s.name,
                    plan.to_string().c_str(), o.registers, o.spill_stores, o.spill_loads,
                    (long long)cuda->info().source.shared_bytes);
        EXPECT_GT(o.registers, 0) << o.log;
        EXPECT_EQ(o.spill_stores, 0) << o.log;
        EXPECT_EQ(o.spill_loads, 0) << o.log;
      }
}

// Where the query rows cover two row tiles (long sequences), the default takes 128
// rows over 4 warps, two 16-row mma tiles a warp. At head_dim 64 that compiles
// without spills; at 128 ptxas spills 144 bytes (O alone is 128 registers a lane),
// which the H200 ran 18% faster than 16 rows a warp without spills
// (docs/results/gpu-h200-2026-12-01d): the bound here keeps it near that, far from
// the 700 bytes of the tree before the shared addresses became 32-bit.
TEST(AttentionCuda, LongSequencesTakeTwoRowTilesAWarp) {
  for (int64_t d : {64, 128}) {
    TileKernel k = attention_kernel(AttentionMask::None, DType::BF16);
    std::map<std::string, int64_t> sizes = {{"B", 4}, {"Hq", 16}, {"Hkv", 16}, {"Sq", 4096}, {"Skv", 4096}, {"D", d}};
    Plan plan = default_plan(k, TargetKind::Cuda, sizes);
    EXPECT_EQ(plan.tiles.at("BM"), 128) << plan.to_string();
    EXPECT_EQ(plan.worker_rows, 4) << plan.to_string();
    EXPECT_EQ(plan.worker_cols, 1) << plan.to_string();
    auto cuda = compile_cuda(compile(k, plan).program(), "sm_90");
    const NvrtcOutput& o = cuda->info().nvrtc;
    std::printf("[ptxas] D=%lld %s: %d regs, spills %d/%d B\n", (long long)d, plan.to_string().c_str(), o.registers,
                o.spill_stores, o.spill_loads);
    EXPECT_LE(o.spill_stores, d == 64 ? 0 : 256) << o.log;
  }
}

// What the emitted kernel is made of: row statistics reduced over a lane quad, no
// shared-memory partials for them, Q through ldmatrix, the probabilities handed to
// the second mma in registers (and the fence before their store gone), K^T copied
// asynchronously in 16-byte vectors into row panels that ldmatrix reads untransposed.
TEST(AttentionCuda, RowStatisticsStayInTheWarp) {
  TileKernel k = attention_kernel(AttentionMask::None, DType::BF16);
  Plan plan = default_plan(k, TargetKind::Cuda, test::attention_sizes(test::attention_shapes()[0]));
  CompiledGroup g = compile_to_group(k, plan, CompileOptions{});
  std::string code = emit_cuda(g.program).code;
  EXPECT_NE(code.find("__shfl_xor_sync(0xffffffffu, a, 1)"), std::string::npos);
  EXPECT_NE(code.find("__shfl_xor_sync(0xffffffffu, a, 2)"), std::string::npos);
  EXPECT_EQ(code.find("partial"), std::string::npos) << "a row reduction went through shared memory";
  EXPECT_NE(code.find("tsl_mma_bf16"), std::string::npos);
  EXPECT_NE(code.find("tsl_ldmatrix_x4("), std::string::npos);
  // P, the second mma's a operand, comes from its fragment's registers packed to bf16
  // pairs, not through shared memory.
  EXPECT_NE(code.find("][m][j] = tsl_pack_bf16x2(f"), std::string::npos);
  // The cast of P to bf16 is read only by that pack, which rounds the same way: the
  // cast does not round first.
  EXPECT_EQ(code.find("tsl_bf16_to_f32(tsl_f32_to_bf16("), std::string::npos);
  // In GroupIR: the second mma's a operand is P's fragment, so there is no shared
  // buffer, store or fence for it, and (precise planning, the cuda default) the
  // loop keeps two fences: the one after the copies land and its last.
  const std::string ir = print_group_program(g.program);
  EXPECT_EQ(ir.find("buffer As"), std::string::npos);
  EXPECT_EQ(g.barriers.static_after, 2) << ir;
  // K^T (a view whose rows are the unit stride) moves in 16-byte vectors down its
  // columns, by cp.async, into row panels of 8 (its 8 rows of a column contiguous).
  EXPECT_NE(ir.find("buffer Ks: shared bf16[64, 64] rowpanels panel 8"), std::string::npos);
  // The emitted name of Ks: "unsigned short* const bN = (unsigned short*)(smem + ...);  // Ks".
  size_t decl = code.find("  // Ks\n");
  ASSERT_NE(decl, std::string::npos);
  size_t start = code.rfind("(smem + ", decl) + 8;
  const std::string ks = code.substr(start, code.find(')', start) - start);  // Ks's byte offset
  // Shared addresses are 32-bit window offsets from smem_s. A window wholly inside
  // the bounds goes unguarded from stepped addresses; the edge windows chunk by chunk.
  EXPECT_NE(code.find("const unsigned d = smem_s + (unsigned)(" + ks + " + "), std::string::npos) << ks;
  EXPECT_NE(code.find("tsl_cp_async16(smem_s + (unsigned)(" + ks + " + "), std::string::npos) << ks;
  EXPECT_EQ(code.find("const uint4 w = *(const uint4*)&t1["), std::string::npos) << "K^T went through registers";
  // The first mma's b operand: one base address of Ks, then ldmatrix without .trans.
  size_t kbase = code.find("const unsigned b_s = smem_s + (unsigned)(" + ks + " + ");
  ASSERT_NE(kbase, std::string::npos) << ks;
  size_t kread = code.find("(t, b_s + ", kbase);
  ASSERT_NE(kread, std::string::npos);
  EXPECT_EQ(code.substr(kread - 15, 15), "tsl_ldmatrix_x4") << "K^T read transposed";
}

// Index values the same for the whole kernel (sizes and group coordinates only) that
// need a division are computed once, after the coordinates: the K/V head h / (Hq /
// Hkv) is no longer divided out in every copy of every step.
TEST(AttentionCuda, KernelWideIndexValuesAreComputedOnce) {
  TileKernel k = attention_kernel(AttentionMask::Causal, DType::BF16);
  Plan plan = default_plan(k, TargetKind::Cuda, test::attention_sizes(test::attention_shapes()[0]));
  const std::string code = emit_cuda(compile_to_group(k, plan, CompileOptions{}).program).code;
  int hoisted = 0, divisions_in_body = 0;
  size_t body = code.find("tessel_kernel(");
  ASSERT_NE(body, std::string::npos);
  for (size_t at = body, end; at < code.size(); at = end + 1) {
    end = code.find('\n', at);
    if (end == std::string::npos) end = code.size();
    const std::string line = code.substr(at, end - at);
    bool declaration = line.rfind("  const int64_t tsl_u", 0) == 0;
    hoisted += declaration;
    if (!declaration && (line.find("tsl_floordiv(") != std::string::npos || line.find("tsl_ceildiv(") != std::string::npos))
      ++divisions_in_body;
  }
  EXPECT_GT(hoisted, 0);
  EXPECT_EQ(divisions_in_body, 0) << code;
}

// Warps side by side along the columns would split a row's reduction across warps:
// the mma.sync atom refuses that with a typed error naming the op (the default plan
// never asks for it).
TEST(AttentionCuda, ReductionsAcrossWarpsAreATypedError) {
  TileKernel k = attention_kernel(AttentionMask::None, DType::BF16);
  Plan plan = default_plan(k, TargetKind::Cuda, test::attention_sizes(test::attention_shapes()[0]));
  plan.workers = 4;
  plan.worker_rows = 2;
  plan.worker_cols = 2;
  CompiledGroup g = compile_to_group(k, plan, CompileOptions{});
  try {
    emit_cuda(g.program);
    ADD_FAILURE() << "emitted a reduction across warps";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("across workers"), std::string::npos) << e.what();
  }
}

// A warp's rows must be whole 16-row mma tiles, its row statistics included: 32
// query rows over 4 warps is a Plan error, not a wrong kernel.
TEST(AttentionCuda, PartsSmallerThanTheAtomAreAPlanError) {
  TileKernel k = attention_kernel(AttentionMask::Causal, DType::F16);
  Plan plan = default_plan(k, TargetKind::Cuda, test::attention_sizes(test::attention_shapes()[0]));
  plan.tiles["BM"] = 32;
  plan.workers = plan.worker_rows = 4;
  plan.worker_cols = 1;
  try {
    emit_cuda(compile_to_group(k, plan, CompileOptions{}).program);
    ADD_FAILURE() << "emitted 8-row warp parts";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Plan) << e.what();
  }
}

}  // namespace
}  // namespace tessel

#else
TEST(AttentionCuda, NeedsTheCudaToolkit) { GTEST_SKIP() << "built without the CUDA toolkit"; }
#endif
