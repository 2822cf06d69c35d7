// The cuda target's fma-atom ops without a GPU: every program of cuda_programs.h
// goes through the emitter and NVRTC for sm_90 without spills, and runs on the sim
// race free and equal to its FP64 oracle (so the GPU test, tests/gpu, checks the
// emitted code against an oracle that is itself checked). What the mma atoms do
// not support, f64 and fragments that do not divide are typed errors naming the op.
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA
#include <string>

#include "cuda_programs.h"
#include "target/cuda/cuda_emit.h"
#include "target/cuda/cuda_kernel.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel {
namespace {

TEST(CudaOpsCompile, EveryProgramCompilesForSm90WithoutSpills) {
  for (const test::OpsCase& c : test::all_ops_cases()) {
    SCOPED_TRACE(c.name);
    auto kernel = compile_cuda(parse_group_program(c.gir), "sm_90");
    const NvrtcOutput& o = kernel->info().nvrtc;
    std::printf("[ptxas] %-40s %3d regs, spills %d/%d B, %5lld B smem, %4d threads\n", c.name.c_str(), o.registers,
                o.spill_stores, o.spill_loads, (long long)kernel->info().source.shared_bytes,
                kernel->info().source.threads);
    EXPECT_GT(o.registers, 0) << o.log;
    EXPECT_EQ(o.spill_stores, 0) << o.log;
    EXPECT_EQ(o.spill_loads, 0) << o.log;
  }
}

TEST(CudaOpsCompile, EveryProgramIsRaceFreeOnTheSimAndMatchesItsOracle) {
  uint64_t seed = 3;
  for (const test::OpsCase& c : test::all_ops_cases()) {
    SCOPED_TRACE(c.name);
    GroupProgram p = parse_group_program(c.gir);
    test::HostTensors in = test::fill_inputs(p, c.sizes, seed++);
    test::HostTensors want = test::expected_outputs(c, in);
    std::map<std::string, std::vector<float>> data;
    LaunchArgs args;
    args.sizes = c.sizes;
    args.scalars = c.scalars;
    for (const auto& [name, h] : in) data[name] = test::as_floats(h);
    for (auto& [name, d] : data) args.tensors[name] = d.data();
    SimResult r = run_sim(p, args);
    EXPECT_EQ(r.race_count, 0) << (r.races.empty() ? "" : r.races[0].message);
    std::map<std::string, std::vector<double>> got;
    for (const auto& [name, d] : data) got[name] = std::vector<double>(d.begin(), d.end());
    EXPECT_EQ(test::compare_outputs(c, want, got), "");
  }
}

// The emitted code of the ops: what each lowers to (a change here is deliberate).
TEST(CudaOpsCompile, OpsLowerToTheirInstructions) {
  std::string softmax = emit_cuda(parse_group_program(test::softmax_row_case(8, 8, 8, 8).gir)).code;
  EXPECT_NE(softmax.find("__shfl_xor_sync"), std::string::npos);  // combine across a warp's lanes
  EXPECT_NE(softmax.find("const float4 v = *(const float4*)&t0["), std::string::npos);  // vector frag.load
  EXPECT_NE(softmax.find("__int_as_float(0xff800000)"), std::string::npos);             // -inf padding
  std::string stats = emit_cuda(parse_group_program(test::colstats_case(8, 8, 8, 8).gir)).code;
  for (const char* f : {"tanhf(", "logf(", "tsl_exp2(", "sqrtf(", "__frcp_rn(", "fabsf(", "tsl_min(",
                        "tsl_bf16_to_f32(tsl_f32_to_bf16(", "tsl_f16_to_f32(tsl_f32_to_f16(", "if (own) "})
    EXPECT_NE(stats.find(f), std::string::npos) << f;
  std::string ln = emit_cuda(parse_group_program(test::layernorm_case(8, 8, 8, 8).gir)).code;
  EXPECT_NE(ln.find("rsqrtf("), std::string::npos);
  EXPECT_NE(ln.find("*(uint4*)&t3["), std::string::npos);  // 8 bf16 stored as one 16-byte vector
  // Grids: blockIdx.y and .x directly, or, in the variant for folded launches, a
  // decode of blockIdx.x.
  GroupProgram fold = parse_group_program(test::fold_case(2, 2).gir);
  std::string plain = emit_cuda(fold).code, folded = emit_cuda(fold, true).code;
  EXPECT_NE(plain.find("const int64_t v_b = blockIdx.y;"), std::string::npos);
  EXPECT_EQ(plain.find("unsigned g = blockIdx.x;"), std::string::npos);
  EXPECT_NE(folded.find("unsigned g = blockIdx.x;"), std::string::npos);
  EXPECT_TRUE(emit_cuda(fold, true).folded_grid);
}

TEST(CudaOpsCompile, GridsBeyond65535InYOrZAreFoldedIntoX) {
  GroupProgram p = parse_group_program(test::fold_case(2, 2).gir);
  auto lookup = [](int64_t b, int64_t i) {
    return [=](const std::string& name, int64_t* v) {
      *v = name == "B" ? b : i;
      return true;
    };
  };
  CudaGrid g = cuda_grid(p, lookup(65535, 7));
  EXPECT_EQ(g.x, 7);
  EXPECT_EQ(g.y, 65535);
  EXPECT_FALSE(g.folded);
  g = cuda_grid(p, lookup(65536, 7));
  EXPECT_EQ(g.x, 65536 * 7);
  EXPECT_EQ(g.y, 1);
  EXPECT_TRUE(g.folded);
  try {
    cuda_grid(p, lookup(int64_t{1} << 20, int64_t{1} << 12));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("1048576 x"), std::string::npos) << e.what();
  }
}

// `text` with its header's atom line swapped for mma.sync over one warp per worker.
std::string on_mma_sync(std::string text, int workers_rows, int workers_cols) {
  size_t w = text.find("  workers "), a = text.find("  atom fma 1x1\n");
  std::string head = "  workers " + std::to_string(workers_rows * workers_cols) + " grid " +
                     std::to_string(workers_rows) + "x" + std::to_string(workers_cols) + " lanes 32\n";
  text.replace(a, 15, "  atom mma.sync 16x8\n");
  text.replace(w, text.find('\n', w) + 1 - w, head);
  return text;
}

void expect_error(const std::string& gir, ErrorKind kind, std::initializer_list<const char*> words) {
  try {
    emit_cuda(parse_group_program(gir));
    FAIL() << "no error for\n" << gir;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const char* w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

// mma.sync takes a reduction inside a warp and a vector broadcast onto an
// accumulator (tests/cuda/attention_cuda_test.cpp), not a reduction whose partials
// cross warps; wgmma takes neither.
TEST(CudaOpsErrors, ReductionsAndBroadcastsOnMmaAtomsAreUnsupportedNamingTheOp) {
  expect_error(on_mma_sync(test::softmax_row_case(8, 8, 8, 8).gir, 1, 1), ErrorKind::Unsupported,
               {"reduce #1", "reduce.max", "across workers", "mma.sync"});
  std::string broadcast = R"(group b(sizes M; tensors Y: f32[M, M] strides(M, 1) out; scalars) {
  grid i = 1
  workers 1 grid 1x1 lanes 32
  atom mma.sync 16x8
  buffer Y: global f32 tensor Y
  buffer x: private f32[16, 8] row panel 1 versions 1
  buffer v: private f32[16, 1] row panel 1 versions 1
  frag.fill #0 v = 1
  ew #1 x = add x, v
  frag.store #2 Y[0, 0] strides(M, 1) <- x guard dst(M, M)
}
)";
  EXPECT_NE(emit_cuda(parse_group_program(broadcast)).code.find("f1[i + 0] + f2["), std::string::npos);
  auto swap = [&](const std::string& from, const std::string& to) {
    broadcast.replace(broadcast.find(from), from.size(), to);
  };
  swap("lanes 32", "lanes 128");
  swap("atom mma.sync 16x8", "atom wgmma 64x64");
  swap("f32[16, 8]", "f32[64, 64]");
  swap("f32[16, 1]", "f32[64, 1]");
  expect_error(broadcast, ErrorKind::Unsupported, {"ew #1", "broadcast", "wgmma"});
}

// Tensor layouts are checked at launch, before the device is touched (so this
// runs without a GPU): an output whose rows overlap is refused with the numbers.
TEST(CudaOpsErrors, LaunchRefusesAnOverlappingOutput) {
  test::OpsCase c = test::softmax_row_case(8, 16, 16, 8);
  auto kernel = compile_cuda(parse_group_program(c.gir), "sm_90");
  std::vector<float> x(8 * 16), y(8 * 16);
  LaunchArgs args;
  args.sizes = c.sizes;  // ldy 8 < N 16: rows of Y overlap
  args.tensors = {{"X", x.data()}, {"Y", y.data()}};
  try {
    kernel->launch(args);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("Y"), std::string::npos) << e.what();
  }
}

TEST(CudaOpsErrors, F64AndUndividedFragmentsAreRefused) {
  std::string f64 = test::softmax_row_case(8, 8, 8, 8).gir;
  f64.replace(f64.find("X: f32"), 6, "X: f64");
  f64.replace(f64.find("buffer X: global f32"), 20, "buffer X: global f64");
  expect_error(f64, ErrorKind::Unsupported, {"f64", "X"});
  std::string cast = test::colstats_case(8, 8, 8, 8).gir;
  cast.replace(cast.find("cast.bf16"), 9, "cast.f64");
  expect_error(cast, ErrorKind::Unsupported, {"ew #21", "f64"});
  std::string ragged = test::softmax_row_case(8, 8, 8, 8).gir;
  ragged.replace(ragged.find("private f32[4, 128]"), 19, "private f32[4, 120]");
  expect_error(ragged, ErrorKind::Plan, {"x (4x120)", "4x16 worker grid"});
}

}  // namespace
}  // namespace tessel

#else
TEST(CudaOpsCompile, NeedsTheCudaToolkit) { GTEST_SKIP() << "built without the CUDA toolkit"; }
#endif
