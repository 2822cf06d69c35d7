// The cpu target on each vector ISA path (TESSEL_CPU_ISA=avx512|avx2|sse, cpu_isa.h):
// the micro-kernel against its scalar reference for every register blocking and
// edge width, GEMM programs on ragged shapes with several atoms, and library kernels
// (src/ops/library.h) against the FP64 evaluator, outputs poisoned with NaN first.
// A path this CPU cannot run is skipped, visibly.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "check/checked_run.h"
#include "microkernel_check.h"
#include "compiler/compile.h"
#include "compiler/phases.h"
#include "eval/evaluate.h"
#include "ir/group_text.h"
#include "ir/group_verify.h"
#include "gemm_oracle.h"
#include "hand_gemm.h"
#ifdef TESSEL_WITH_CUDA
#include "target/cuda/cuda_emit.h"
#endif
#include "../sim/transpose_program.h"
#include "ops/gemm.h"
#include "plan/machine.h"
#include "ops/gemm_kernel.h"
#include "ops/library.h"
#include "plan/default_plan.h"
#include "target/cpu/cpu_emit.h"
#include "target/cpu/cpu_isa.h"
#include "target/cpu/cpu_jit.h"
#include "target/cpu/cpu_support.h"
#include "target/cpu/cpu_tiny_kernel.h"
#include "target/cpu/cpu_microkernel.h"
#include "target/sim/sim.h"
#include "tessel/error.h"

namespace tessel::testing {
namespace {

// The plan with no size fixed (Plan::sizes): its kernel also serves other shapes,
// which the tests below run it on.
Plan any_size(Plan p) {
  p.sizes.clear();
  return p;
}

class CpuIsaPath : public ::testing::TestWithParam<CpuIsa> {
 protected:
  static void SetUpTestSuite() {
    static char dir[] = "/tmp/tessel-test-cpu-isa-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    setenv("TESSEL_CACHE_DIR", dir, 1);
  }
  void SetUp() override {
    const CpuIsaInfo& isa = cpu_isa_info(GetParam());
    if (static_cast<int>(GetParam()) > static_cast<int>(detected_cpu_isa()))
      GTEST_SKIP() << "this CPU does not run " << isa.name << " (it runs at most "
                   << cpu_isa_info(detected_cpu_isa()).name << ")";
    setenv("TESSEL_CPU_ISA", isa.name, 1);
    set_cpu_scratch_poison(true);  // reading staging or fragments never written shows
  }
  void TearDown() override {
    unsetenv("TESSEL_CPU_ISA");
    set_cpu_scratch_poison(false);
  }
};

// One micro-kernel in a unit of its own, compiled with the ISA's flags.
using UkrFn = void (*)(int64_t, const float*, const float*, float*, int64_t, int);
UkrFn compile_microkernel(int64_t mr, int64_t nr, int64_t lda, int64_t ldb, const CpuIsaInfo& isa,
                          const std::string& dir) {
  std::string name = cpu_microkernel_name(mr, nr, lda, ldb);
  std::string src = dir + "/" + name + "_" + isa.name + ".cpp", so = dir + "/" + name + "_" + isa.name + ".so";
  std::ofstream(src) << cpu_vector_types(isa) << emit_cpu_microkernel(mr, nr, lda, ldb, isa)
                     << "extern \"C\" void entry(int64_t kc, const float* a, const float* b, float* c, "
                        "int64_t ldc, int overwrite) { "
                     << name << "(kc, a, b, c, ldc, overwrite); }\n";
  std::string command = std::string("c++ ") + isa.flags + " -O2 -ffp-contract=fast -fPIC -shared -o " + so +
                        " " + src;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);  // left loaded: the test process ends soon
  EXPECT_NE(h, nullptr) << dlerror();
  return h ? reinterpret_cast<UkrFn>(dlsym(h, "entry")) : nullptr;
}

// Every shape the emitter asks for: the main blockings (fitting the registers in
// one pass or in several), and edge kernels (fewer rows; columns that end inside a
// vector). C's columns past NR and its rows' padding must come back untouched.
TEST_P(CpuIsaPath, MicroKernelMatchesItsReference) {
  const CpuIsaInfo& isa = cpu_isa_info(GetParam());
  const std::string dir = std::getenv("TESSEL_CACHE_DIR");
  struct Shape {
    int64_t mr, nr, ldb;
  };
  const Shape shapes[] = {{12, 32, 32}, {14, 32, 32}, {8, 48, 48}, {6, 64, 64}, {16, 64, 64},
                          {5, 32, 32},  {12, 7, 32},  {3, 21, 32}, {1, 1, 16},  {7, 40, 48}};
  std::mt19937 rng(GetParam() == CpuIsa::Avx512 ? 1 : 2);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Shape& s : shapes) {
    const int64_t lda = 37, kc = 29, ldc = s.ldb + 3;
    UkrFn f = compile_microkernel(s.mr, s.nr, lda, s.ldb, isa, dir);
    ASSERT_NE(f, nullptr);
    std::vector<float> a(s.mr * lda), b(kc * s.ldb), c(s.mr * ldc);
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
    for (float& x : c) x = u(rng);
    // B's columns past NR are read and thrown away: NaN there must not leak.
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t j = s.nr; j < s.ldb; ++j) b[k * s.ldb + j] = NAN;
    // Accumulating into C; then overwriting a C whose block is NaN (never read).
    for (int overwrite : {0, 1}) {
      if (overwrite)
        for (int64_t r = 0; r < s.mr; ++r)
          for (int64_t j = 0; j < s.nr; ++j) c[r * ldc + j] = NAN;
      std::vector<float> want = c;
      cpu_microkernel_reference(s.mr, s.nr, kc, a.data(), lda, b.data(), s.ldb, want.data(), ldc, overwrite);
      f(kc, a.data(), b.data(), c.data(), ldc, overwrite);
      int bad = 0;
      for (int64_t r = 0; r < s.mr; ++r)
        for (int64_t j = 0; j < ldc; ++j) {
          float got = c[r * ldc + j], w = want[r * ldc + j];
          bool ok = j < s.nr ? std::abs(got - w) <= 1e-5f * (1 + std::abs(w)) : got == w;
          if (!ok && bad++ < 5)
            ADD_FAILURE() << isa.name << " " << s.mr << "x" << s.nr << " (ldb " << s.ldb << ", overwrite "
                          << overwrite << "): C[" << r << ", " << j << "] = " << got << ", want " << w;
        }
    }
    // kc = 0 leaves C as it was, or (overwrite) makes its block zero.
    std::vector<float> before = c;
    f(0, a.data(), b.data(), c.data(), ldc, 0);
    EXPECT_EQ(c, before) << s.mr << "x" << s.nr;
    f(0, a.data(), b.data(), c.data(), ldc, 1);
    for (int64_t r = 0; r < s.mr; ++r)
      for (int64_t j = 0; j < ldc; ++j) EXPECT_EQ(c[r * ldc + j], j < s.nr ? 0.0f : before[r * ldc + j]);
  }
}

// The variant that reads A and B in place (run-time lda and ldb; B row-major, its
// partial last vector read only up to NR: the columns after it, NaN here, may lie
// past the tensor, and B's allocation ends right after row kc - 1's NR columns).
using test::UkrInPlaceFn;
TEST_P(CpuIsaPath, InPlaceMicroKernelMatchesItsReference) {
  const CpuIsaInfo& isa = cpu_isa_info(GetParam());
  const std::string dir = std::getenv("TESSEL_CACHE_DIR");
  const int64_t shapes[][2] = {{12, 32}, {11, 13}, {3, 21}, {1, 1}, {7, 40}, {10, 64}, {4, 5}};
  std::mt19937 rng(GetParam() == CpuIsa::Avx512 ? 3 : 4);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const auto& [mr, nr] : shapes) {
    const int64_t lda = 37, ldb = nr + 3, kc = 29, ldc = nr + 2;
    const std::string name = cpu_microkernel_name(mr, nr, kCpuRuntimeLd, kCpuRuntimeLd);
    const std::string src = dir + "/" + name + "_" + isa.name + ".cpp", so = dir + "/" + name + "_" + isa.name + ".so";
    std::ofstream(src) << cpu_vector_types(isa) << emit_cpu_microkernel(mr, nr, kCpuRuntimeLd, kCpuRuntimeLd, isa)
                       << "extern \"C\" void entry(int64_t kc, const float* a, const float* b, float* c, "
                          "int64_t ldc, int64_t lda, int64_t ldb, int overwrite) { "
                       << name << "(kc, a, b, c, ldc, lda, ldb, overwrite); }\n";
    const std::string command = std::string("c++ ") + isa.flags + " -O2 -ffp-contract=fast -fPIC -shared -o " + so +
                                " " + src;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    auto f = reinterpret_cast<UkrInPlaceFn>(dlsym(h, "entry"));
    std::vector<float> a(mr * lda), b((kc - 1) * ldb + nr), c(mr * ldc);
    for (float& x : a) x = u(rng);
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t j = 0; j < ldb && k * ldb + j < int64_t(b.size()); ++j) b[k * ldb + j] = j < nr ? u(rng) : NAN;
    for (float& x : c) x = u(rng);
    test::expect_microkernel_matches(f, mr, nr, kc, a, lda, b, ldb, c, ldc, std::string(isa.name) + " " + name);
  }
}

const GemmCase kRagged[] = {
    {1, 1, 1, 1.0, 0.0},       {13, 29, 7, -0.75, 0.0}, {13, 29, 7, 1.25, -0.5}, {127, 193, 61, 0.5, 0.0},
    {127, 193, 61, 2.0, 1.5},  {100, 70, 300, 1.0, 1.0}, {33, 97, 17, 1.0, 0.0},
};

TEST_P(CpuIsaPath, GemmOnRaggedShapesWithSeveralAtoms) {
  struct Tile {
    int64_t bm, bn, bk, mr, nr;
  };
  // 12x32 and 14x32, 8x48, 6x64 (the AVX-512 candidates); tiles that are not a
  // multiple of the atom (edge kernels); an atom narrower than a vector on some ISAs.
  const Tile tiles[] = {{96, 128, 64, 12, 32}, {28, 96, 40, 14, 32}, {32, 96, 32, 8, 48},
                        {24, 128, 16, 6, 64},  {30, 40, 8, 12, 32},  {20, 72, 24, 8, 48},
                        {12, 24, 8, 3, 12}};
  uint32_t seed = 10 * static_cast<uint32_t>(GetParam());
  for (const Tile& t : tiles) {
    HandGemm plan;
    plan.bm = t.bm, plan.bn = t.bn, plan.bk = t.bk, plan.atom_m = t.mr, plan.atom_n = t.nr;
    SCOPED_TRACE(std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" + std::to_string(t.bk) + " atom " +
                 std::to_string(t.mr) + "x" + std::to_string(t.nr));
    auto kernel = compile_cpu(hand_gemm_program(plan));
    for (const GemmCase& g : kRagged) check_gemm(*kernel, g, seed++);
  }
  HandGemm workers;  // four workers on a 2x2 grid: parts start off panel boundaries
  workers.bm = 48, workers.bn = 96, workers.bk = 32, workers.workers = 4, workers.worker_rows = 2;
  workers.worker_cols = 2, workers.batch = 8;
  auto kernel = compile_cpu(hand_gemm_program(workers));
  for (const GemmCase& g : kRagged) check_gemm(*kernel, g, seed++);
}

// Plan::direct (A and B read in place, no packing; tsl_ukr_*_s_s with masked or
// copied partial B vectors): the GEMM plans of small shapes, each on its own exact
// shape, and one plan on shapes that leave its tiles ragged (blocks across the edge
// take the scalar loop). Compiled for the ISA through the compiler's steps.
TEST_P(CpuIsaPath, GemmReadInPlaceOnRaggedShapes) {
  const GemmCase exact[] = {{1, 1, 1, 1.0, 0.0},     {32, 32, 32, 1.0, 0.0},  {13, 29, 7, -0.75, 0.0},
                            {13, 29, 7, 1.25, -0.5}, {96, 33, 17, 0.5, 0.0},  {77, 77, 77, 1.0, 1.0},
                            {120, 7, 90, 2.0, 1.5},  {17, 100, 50, 1.0, 0.0}, {5, 128, 3, 1.0, 0.0},
                            // the narrow atoms, 8 x 48 and 6 x 64, on short and long k loops
                            {77, 45, 29, 1.0, 0.0},  {40, 64, 70, -1.0, 0.5}, {50, 60, 100, 1.0, 0.0},
                            {33, 48, 64, 1.0, 0.0}};
  uint32_t seed = 100 + 10 * static_cast<uint32_t>(GetParam());
  auto compile_plan = [](const Plan& p) {
    EXPECT_TRUE(p.direct) << p.to_string();
    return compile_cpu(compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program);
  };
  for (const GemmCase& g : exact) {
    SCOPED_TRACE(std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k));
    check_gemm(*compile_plan(default_gemm_plan(TargetKind::Cpu, g.m, g.n, g.k)), g, seed++);
  }
  auto ragged = compile_plan(any_size(default_gemm_plan(TargetKind::Cpu, 24, 40, 16)));
  for (const GemmCase& g : kRagged) check_gemm(*ragged, g, seed++);
}

// Cache-blocked GEMM plans (the default past the exact sizes: a tall tile whose
// worker parts, whole micro-tile rows each, are run by one loop in the unit):
// explicit blockings on shapes that leave every tile ragged, parts split in
// columns on B panel boundaries (the loop) and off them (parts written out), and
// the default plans of ragged shapes past the exact sizes.
struct Blocking {
  int64_t bm, bn, bk;
  int rows, cols;
  bool loop;  // the unit runs the mma's parts in one loop
};
const Blocking kBlockings[] = {{72, 70, 50, 3, 1, true}, {48, 128, 32, 2, 2, true}, {48, 80, 24, 2, 2, false}};
GroupProgram blocked_program(const Blocking& b) {
  // Four threads: a packed plan on any machine (up to two read this product in place).
  Plan p = default_gemm_plan(TargetKind::Cpu, 300, 300, 300, GemmPrecision::F32, "", 4);
  set_gemm_tile(p, b.bm, b.bn, b.bk);
  p.workers = b.rows * b.cols, p.worker_rows = b.rows, p.worker_cols = b.cols;
  return compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
}

TEST_P(CpuIsaPath, GemmInCacheBlocksOnRaggedShapes) {
  const GemmCase shapes[] = {{150, 130, 123, 1.0, 0.0}, {61, 200, 77, -0.5, 1.25}, {200, 75, 260, 1.0, 0.0},
                             {13, 29, 7, 1.25, -0.5}};
  uint32_t seed = 300 + 10 * static_cast<uint32_t>(GetParam());
  for (const Blocking& b : kBlockings) {
    SCOPED_TRACE(std::to_string(b.bm) + "x" + std::to_string(b.bn) + "x" + std::to_string(b.bk) + " parts " +
                 std::to_string(b.rows) + "x" + std::to_string(b.cols));
    GroupProgram program = blocked_program(b);
    const std::string unit = emit_cpu(program);
    EXPECT_EQ(unit.find("tsl_r0") != std::string::npos, b.loop);
    // A's block is copied part by part, before each part's mma, where the parts are
    // whole rows (cpu_emit.cpp, find_part_copies).
    EXPECT_EQ(unit.find("this part's rows") != std::string::npos, b.cols == 1);
    auto kernel = compile_cpu(program);
    for (const GemmCase& g : shapes) check_gemm(*kernel, g, seed++);
  }
  const GemmCase defaults[] = {{257, 300, 513, 1.0, 0.0}, {301, 40, 300, 0.5, 1.5}, {260, 40, 20, 1.0, 0.0}};
  for (const GemmCase& g : defaults) {
    Plan p = default_gemm_plan(TargetKind::Cpu, g.m, g.n, g.k, GemmPrecision::F32, "", 4);
    SCOPED_TRACE(p.to_string());
    EXPECT_FALSE(p.direct);
    check_gemm(*compile_cpu(compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program), g, seed++);
  }
  // Four threads, one k block too large for half of L2 in one group: four row groups
  // of 350 rows, parts of 24 (up to two threads read this tall, narrow product in place).
  const GemmCase one_block{1400, 100, 200, 1.0, 0.0};
  Plan p = default_gemm_plan(TargetKind::Cpu, one_block.m, one_block.n, one_block.k, GemmPrecision::F32, "", 4);
  EXPECT_FALSE(p.direct) << p.to_string();
  EXPECT_EQ(p.tile("BM"), 360) << p.to_string();
  check_gemm(*compile_cpu(compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program), one_block, seed++);
  // A group's B block within 1 MiB takes all of K in one k block (the fragment, in
  // C, is written once); past it, k blocks of at most 256. (Four threads: up to two
  // read this product in place.)
  const GemmCase tall{1400, 300, 300, 1.0, 0.0};
  Plan one_k = default_gemm_plan(TargetKind::Cpu, tall.m, tall.n, tall.k, GemmPrecision::F32, "", 4);
  EXPECT_FALSE(one_k.direct) << one_k.to_string();
  EXPECT_EQ(one_k.tile("BK"), 300) << one_k.to_string();
  EXPECT_EQ(default_gemm_plan(TargetKind::Cpu, 2048, 2048, 2048, GemmPrecision::F32, "", 1).tile("BK"),
            cpu_blocking().max_bk);
  check_gemm(*compile_cpu(compile_to_group(gemm_kernel(DType::F32), one_k, CompileOptions{}).program), tall, seed++);
  // Past it, the machine's B block (plan/machine.h): as deep as it allows, in near-equal
  // k blocks (the last one ragged here on every machine), and as wide as its bytes allow.
  const GemmCase wide{100, 1536, 1025, 1.0, 0.0};
  Plan blocks = default_gemm_plan(TargetKind::Cpu, wide.m, wide.n, wide.k, GemmPrecision::F32, "", 1);
  SCOPED_TRACE(blocks.to_string());
  const CpuBlocking machine = cpu_blocking();
  EXPECT_FALSE(blocks.direct);
  auto k_blocks = [](int64_t bk) { return (1025 + bk - 1) / bk; };
  EXPECT_LE(blocks.tile("BK"), machine.max_bk);
  EXPECT_EQ(k_blocks(blocks.tile("BK")), k_blocks(machine.max_bk));
  EXPECT_LE(4 * blocks.tile("BK") * blocks.tile("BN"), machine.b_block_bytes);
  check_gemm(*compile_cpu(compile_to_group(gemm_kernel(DType::F32), blocks, CompileOptions{}).program), wide, seed++);
}

// One or two threads read A and B in place beyond the exact sizes while B and the
// fragment stay inside their cache bounds (gemm.cpp, kCpuDirectBBytes): tall and
// skinny, mid-size and wide ragged shapes, two threads in groups of whole rows; four
// threads keep the packed plan.
TEST_P(CpuIsaPath, OneOrTwoThreadsReadMidShapesInPlace) {
  uint32_t seed = 500 + 10 * static_cast<uint32_t>(GetParam());
  for (const GemmCase& g : {GemmCase{1030, 70, 50, 1.0, 0.0}, GemmCase{203, 131, 257, -0.5, 1.25},
                            GemmCase{77, 601, 40, 1.0, 0.0}}) {
    Plan one = default_gemm_plan(TargetKind::Cpu, g.m, g.n, g.k, GemmPrecision::F32, "", 1);
    Plan two = default_gemm_plan(TargetKind::Cpu, g.m, g.n, g.k, GemmPrecision::F32, "", 2);
    Plan four = default_gemm_plan(TargetKind::Cpu, g.m, g.n, g.k, GemmPrecision::F32, "", 4);
    SCOPED_TRACE(one.to_string());
    EXPECT_TRUE(one.direct);
    EXPECT_TRUE(two.direct) << two.to_string();
    if (cpu_vector_lanes() == 16) {  // unequal row groups only with AVX-512 (gemm.cpp)
      EXPECT_LT(two.tile("BM"), g.m) << two.to_string();
    }
    EXPECT_FALSE(four.direct) << four.to_string();
    check_gemm(*compile_cpu(compile_to_group(gemm_kernel(DType::F32), one, CompileOptions{}).program), g, seed++);
    check_gemm(*compile_cpu(compile_to_group(gemm_kernel(DType::F32), two, CompileOptions{}).program), g, seed++);
  }
  // A past 1 MiB, or B of 512 KiB or more: read in place with A's block rows outside
  // and B's panels inside (cpu_emit.cpp, rows_outer). Tall and narrow (N within the
  // exact sizes) over a long k loop (built-in kernels but on SSE) and a short one
  // (emitted kernels), wide (A 1.2 MiB, B within the bound), and B of 937 KiB.
  for (const GemmCase& g : {GemmCase{1500, 40, 200, 1.0, 0.0}, GemmCase{3000, 40, 100, 1.0, 0.0},
                            GemmCase{640, 320, 480, 1.0, 0.0}, GemmCase{200, 600, 400, 1.0, 0.0}}) {
    Plan p = any_size(default_gemm_plan(TargetKind::Cpu, g.m, g.n, g.k, GemmPrecision::F32, "", 1));
    SCOPED_TRACE(p.to_string());
    ASSERT_TRUE(p.direct) << p.to_string();
    GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
    const std::string unit = emit_cpu(program, GetParam());
    const size_t ir = unit.find("for (int64_t ir = "), jr = unit.find("for (int64_t jr = ");
    ASSERT_NE(ir, std::string::npos) << unit;
    EXPECT_TRUE(jr == std::string::npos || ir < jr) << unit;
    auto kernel = compile_cpu(program);
    check_gemm(*kernel, g, seed++);
    check_gemm(*kernel, GemmCase{g.m - 7, g.n - 3, g.k - 5, -0.5, 1.25}, seed++);
    for (const GemmCase& r : kRagged) check_gemm(*kernel, r, seed++);
  }
  // A wide fragment past half the tile limit (2.1M outputs) is packed.
  EXPECT_FALSE(default_gemm_plan(TargetKind::Cpu, 2100, 1000, 100, GemmPrecision::F32, "", 1).direct);
  // B past the bound (1 MiB): packed even on one thread.
  EXPECT_FALSE(default_gemm_plan(TargetKind::Cpu, 256, 1100, 256, GemmPrecision::F32, "", 1).direct);
  // B of 469 KiB (more than kCpuPackBBytes, less than kCpuRowsOuterBBytes) over a
  // long k loop: B's panels are copied before the built-in kernels meet them (tsl_bp,
  // cpu_mma_blocks). Its own shape, and ragged shapes (blocks across the edge read
  // the copy in cpu_mma_edge). The default plan fixes the sizes (Plan::sizes);
  // without them, it runs the rest.
  const Plan wide_b = default_gemm_plan(TargetKind::Cpu, 200, 300, 400, GemmPrecision::F32, "", 1);
  for (const Plan& p : {wide_b, any_size(wide_b)}) {
    ASSERT_TRUE(p.direct) << p.to_string();
    GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
    if (GetParam() != CpuIsa::Sse) {  // SSE units emit their kernels
      const std::string unit = emit_cpu(program, GetParam());
      EXPECT_NE(unit.find("tsl_bp, 0, "), std::string::npos) << unit;
    }
    auto kernel = compile_cpu(program);
    check_gemm(*kernel, GemmCase{200, 300, 400, 1.0, 0.0}, seed++);
    if (!p.sizes.empty()) continue;
    check_gemm(*kernel, GemmCase{190, 290, 390, -0.5, 1.25}, seed++);
    for (const GemmCase& g : kRagged) check_gemm(*kernel, g, seed++);
  }
  // 150 rows are 13 block rows: where the unit emits its kernels (SSE) B is copied
  // panel by panel before the block rows meet it (cpu_emit.cpp, pack_b), A read in
  // place; built-in kernels read this small B in place. Its own shape with alpha and
  // beta, and shapes that leave the tile ragged (blocks across the edge read the copy
  // in tsl_mma_edge; a partial last panel).
  const Plan tall = default_gemm_plan(TargetKind::Cpu, 150, 40, 60, GemmPrecision::F32, "", 1);
  for (const Plan& p : {tall, any_size(tall)}) {
    ASSERT_TRUE(p.direct) << p.to_string();
    GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
    const bool emitted = GetParam() == CpuIsa::Sse || cpu_prebuilt_count == 0;
    EXPECT_EQ(emit_cpu(program, GetParam()).find("tsl_bp") != std::string::npos, emitted);
    auto kernel = compile_cpu(program);
    check_gemm(*kernel, GemmCase{150, 40, 60, 1.0, 0.0}, seed++);
    check_gemm(*kernel, GemmCase{150, 40, 60, -0.5, 1.25}, seed++);
    if (p.sizes.empty())
      for (const GemmCase& g : kRagged) check_gemm(*kernel, g, seed++);
  }
  // Such a plan's GroupIR on the simulator (M past the exact sizes): no races.
  const GemmCase small{150, 40, 60, 1.0, 0.0};
  Plan p = default_gemm_plan(TargetKind::Cpu, small.m, small.n, small.k, GemmPrecision::F32, "", 1);
  ASSERT_TRUE(p.direct) << p.to_string();
  GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
  int64_t races = -1;
  check_gemm_run([&](const LaunchArgs& args) { races = run_sim(program, args).race_count; }, small, seed++);
  EXPECT_EQ(races, 0);
}

// A product of at most one block row (12) reads A and B in place whatever B's size
// (packing would copy all of B for that one row of blocks), with AVX-512 on blocks of
// the widest narrow atom as tall as M (6x64 up to 6 rows, 8x48 up to 8); two threads
// take groups of whole vectors of columns, the last one short.
TEST_P(CpuIsaPath, ShortProductsReadInPlaceOnWideBlocks) {
  uint32_t seed = 900 + 10 * static_cast<uint32_t>(GetParam());
  const bool avx512 = cpu_vector_lanes() == 16;
  struct Short {
    GemmCase g;
    int64_t atom_m, atom_n;  // with AVX-512
  };
  for (const Short& s : {Short{{3, 327, 142, 1.0, 0.0}, 6, 64}, Short{{1, 300, 70, -0.5, 1.25}, 6, 64},
                         Short{{7, 200, 50, 1.0, 0.0}, 8, 48}, Short{{12, 1100, 300, 1.0, 0.0}, 12, 32}}) {
    const GemmCase& g = s.g;
    Plan p = default_gemm_plan(TargetKind::Cpu, g.m, g.n, g.k, GemmPrecision::F32, "", 1);
    SCOPED_TRACE(p.to_string());
    EXPECT_TRUE(p.direct);
    EXPECT_EQ(p.atom_m, avx512 ? s.atom_m : 12);
    EXPECT_EQ(p.atom_n, avx512 ? s.atom_n : 32);
    auto kernel = compile_cpu(compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program);
    check_gemm(*kernel, g, seed++);
  }
  const GemmCase odd{2, 1001, 600, 1.0, 0.0, 2};
  Plan two = default_gemm_plan(TargetKind::Cpu, odd.m, odd.n, odd.k, GemmPrecision::F32, "", 2);
  SCOPED_TRACE(two.to_string());
  EXPECT_TRUE(two.direct);
  if (avx512) {
    EXPECT_EQ(two.tile("BN"), 512);
  }
  GroupProgram program = compile_to_group(gemm_kernel(DType::F32), two, CompileOptions{}).program;
  check_gemm(*compile_cpu(program), odd, seed++);
  // The same plan for any size on the simulator, over a short last group: no races.
  GroupProgram any = compile_to_group(gemm_kernel(DType::F32), any_size(two), CompileOptions{}).program;
  int64_t races = -1;
  check_gemm_run([&](const LaunchArgs& args) { races = run_sim(any, args).race_count; }, GemmCase{3, 700, 20, 1, 0},
                 seed++);
  EXPECT_EQ(races, 0);
  // K past the tile limit would make the one k block an invalid plan: packed instead.
  const Plan deep = default_gemm_plan(TargetKind::Cpu, 2, 3, 5'000'000, GemmPrecision::F32, "", 1);
  EXPECT_FALSE(deep.direct) << deep.to_string();
  EXPECT_NO_THROW(validate_plan(deep)) << deep.to_string();
}

// One or two threads past L2 with K of 500 or more read A and B in place in k blocks
// of 500 (gemm.cpp, kCpuDirectBK), where both row strides spread over the cache sets;
// two threads in two equal groups of rows, else of columns, and past 4M outputs in
// more groups. The fragment lives in C across the k blocks. Rows of 1024 or 1536
// floats and three threads keep the packed plans, as does everything past L2 but
// narrow products on a machine that packs it (plan/machine.h: cpu_blocking).
TEST_P(CpuIsaPath, OneThreadReadsLargeShapesInPlaceInKBlocks) {
  auto plan = [](int64_t m, int64_t n, int64_t k, int threads) {
    return default_gemm_plan(TargetKind::Cpu, m, n, k, GemmPrecision::F32, "", threads);
  };
  // Only where the machine reads past L2 in place (plan/machine.h); a Zen 4 packs,
  // but for narrow products.
  const bool in_place = cpu_blocking().in_place_past_l2;
  const bool narrow = cpu_blocking().narrow_in_place_past_l2;
  const Plan big = plan(2000, 2000, 2000, 1);
  EXPECT_EQ(big.direct, in_place) << big.to_string();
  if (in_place) {
    EXPECT_EQ(big.tile("BK"), 500) << big.to_string();
    EXPECT_EQ(big.tile("BM"), 2000) << big.to_string();
    EXPECT_EQ(big.tile("BN"), 2000) << big.to_string();
    const Plan two = plan(2000, 2000, 2000, 2);
    EXPECT_TRUE(two.direct) << two.to_string();
    EXPECT_EQ(two.tile("BM"), 1000) << two.to_string();
    EXPECT_EQ(two.tile("BK"), 500) << two.to_string();
    EXPECT_EQ(plan(1999, 1800, 1200, 2).tile("BN"), 900);
    // Past 4M outputs, the fewest equal groups within it (run in turn on one thread).
    const Plan groups = plan(3000, 2000, 1000, 1);
    EXPECT_TRUE(groups.direct) << groups.to_string();
    EXPECT_EQ(groups.tile("BM"), 1500) << groups.to_string();
    EXPECT_EQ(plan(2600, 2600, 1300, 2).tile("BM"), 1300);
  }
  EXPECT_FALSE(plan(2000, 2000, 2000, 3).direct);
  EXPECT_FALSE(plan(1024, 1024, 1024, 1).direct);
  EXPECT_FALSE(plan(1536, 1536, 1536, 1).direct);
  EXPECT_FALSE(plan(1000, 1024, 1000, 1).direct);  // B's rows 4 KiB apart
  EXPECT_FALSE(plan(1000, 1000, 1024, 1).direct);  // A's
  EXPECT_FALSE(plan(2000, 2000, 300, 1).direct);   // K under one block

  // K of three blocks (500, 500 and 100), M and N ragged against the micro-kernel.
  // Where the machine packs these or reads them with K whole (narrow), the plans an
  // in-place machine takes, made by hand.
  auto in_place_plan = [&](int64_t m, int64_t n, int64_t k, int threads, int64_t bm, int64_t bn) {
    Plan p = plan(m, n, k, threads);
    EXPECT_EQ(p.direct, in_place || narrow) << p.to_string();
    if (!in_place) {
      p.direct = true;
      p.tiles = {{"BM", bm}, {"BN", bn}, {"BK", 500}};
      p.workers = p.worker_rows = p.worker_cols = 1;
      p.sizes.clear();
    }
    return p;
  };
  const GemmCase g{37, 300, 1100, 1.0, 0.0};
  const Plan p = in_place_plan(g.m, g.n, g.k, 1, 37, 300);
  ASSERT_TRUE(p.direct) << p.to_string();
  ASSERT_EQ(p.tile("BK"), 500) << p.to_string();
  GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
  auto kernel = compile_cpu(program);
  uint32_t seed = 700 + 10 * static_cast<uint32_t>(GetParam());
  check_gemm(*kernel, g, seed++);
  check_gemm(*kernel, GemmCase{37, 300, 1100, -0.5, 1.25}, seed++);
  check_gemm(*kernel, GemmCase{30, 290, 1001, 1.0, 0.0}, seed++);
  for (const GemmCase& r : kRagged) check_gemm(*kernel, r, seed++);
  // The same GroupIR on the simulator, over two k blocks and a part: no races.
  int64_t races = -1;
  check_gemm_run([&](const LaunchArgs& args) { races = run_sim(program, args).race_count; },
                 GemmCase{13, 40, 1050, 1.0, 0.5}, seed++);
  EXPECT_EQ(races, 0);

  // Two threads: two groups of 19 rows, and (M odd) two of 150 columns; each plan on
  // two threads against the oracle, and on the simulator.
  for (const GemmCase& t : {GemmCase{38, 300, 1100, 1.0, 0.0, 2}, GemmCase{37, 300, 1100, -0.5, 1.25, 2}}) {
    const Plan p2 = in_place_plan(t.m, t.n, t.k, 2, t.m % 2 ? t.m : t.m / 2, t.m % 2 ? t.n / 2 : t.n);
    SCOPED_TRACE(p2.to_string());
    ASSERT_TRUE(p2.direct);
    EXPECT_EQ(p2.tile("BM") * p2.tile("BN") * 2, t.m * t.n);
    GroupProgram program2 = compile_to_group(gemm_kernel(DType::F32), p2, CompileOptions{}).program;
    auto kernel2 = compile_cpu(program2);
    check_gemm(*kernel2, t, seed++);
    check_gemm(*kernel2, GemmCase{t.m, t.n, t.k, t.alpha, t.beta, 1}, seed++);  // the groups in turn
    races = -1;
    check_gemm_run([&](const LaunchArgs& args) { races = run_sim(program2, args).race_count; },
                   GemmCase{t.m, 40, 1010, 1.0, 0.5}, seed++);
    EXPECT_EQ(races, 0);
  }

  // Narrow products (N up to 512, kCpuNarrowInPlaceN) past L2: in place on a machine
  // that reads them so (a Zen 4) whatever B's row stride, where A's rows spread over 8
  // sets, else by the rules above; K whole where B is within 8 MiB, else in blocks of
  // 500. B's rows of 64, 256 and 512 floats are whole lines apart in too few sets to
  // spread; A's rows of 40000 floats spread over 16 sets, of 8192 over one.
  for (const auto& [m, n, k, bk] : std::vector<std::array<int64_t, 4>>{
           {4000, 64, 5000, 5000}, {3000, 256, 2000, 2000}, {2000, 512, 2000, 2000}, {1000, 64, 40000, 500},
           {600, 512, 8000, 500}}) {
    const Plan np = plan(m, n, k, 1);
    EXPECT_EQ(np.direct, narrow) << np.to_string();
    if (narrow) {
      EXPECT_EQ(np.tile("BK"), bk) << np.to_string();
    }
  }
  EXPECT_EQ(plan(2000, 200, 2000, 1).direct, narrow || in_place);
  EXPECT_EQ(plan(2000, 600, 2000, 1).direct, in_place);  // past the narrow columns
  EXPECT_FALSE(plan(4000, 64, 8192, 1).direct);          // A's rows 32 KiB apart
  // The narrow kernel with K whole, of its exact sizes (by hand where the machine
  // packs), and in k blocks of 500 for any size.
  Plan whole = plan(13, 64, 5000, 1);
  EXPECT_EQ(whole.direct, narrow) << whole.to_string();
  if (!narrow) {
    whole.direct = true;
    whole.tiles = {{"BM", 13}, {"BN", 64}, {"BK", 5000}};
    whole.workers = whole.worker_rows = whole.worker_cols = 1;
    whole.sizes = {{"M", 13}, {"N", 64}, {"K", 5000}};
  }
  ASSERT_EQ(whole.tile("BK"), 5000) << whole.to_string();
  auto whole_kernel = compile_cpu(compile_to_group(gemm_kernel(DType::F32), whole, CompileOptions{}).program);
  check_gemm(*whole_kernel, GemmCase{13, 64, 5000, 1.0, 0.0}, seed++);
  check_gemm(*whole_kernel, GemmCase{13, 64, 5000, -0.5, 1.25}, seed++);
  Plan np = any_size(whole);
  np.tiles["BK"] = 500;
  GroupProgram narrow_program = compile_to_group(gemm_kernel(DType::F32), np, CompileOptions{}).program;
  auto narrow_kernel = compile_cpu(narrow_program);
  check_gemm(*narrow_kernel, GemmCase{13, 64, 5000, 1.0, 0.0}, seed++);
  check_gemm(*narrow_kernel, GemmCase{13, 64, 4777, -0.5, 1.25}, seed++);
  check_gemm(*narrow_kernel, GemmCase{11, 37, 1234, 1.0, 1.0}, seed++);
  // Both programs, for any size, on the simulator: no races.
  GroupProgram whole_program = compile_to_group(gemm_kernel(DType::F32), any_size(whole), {}).program;
  for (const GroupProgram* sim_program : {&whole_program, &narrow_program}) {
    races = -1;
    check_gemm_run([&](const LaunchArgs& args) { races = run_sim(*sim_program, args).race_count; },
                   GemmCase{13, 40, 1050, 1.0, 0.5}, seed++);
    EXPECT_EQ(races, 0);
  }
}

// A unit whose work is all calls of tessel's built-in functions (built-in kernels
// over whole vectors of columns, on AVX-512 cpu_mma_edge for columns that end in
// part of a vector, the built-in copy and elementwise loop) compiles at -Og, or at
// -O1 where its sizes are fixed (Plan::sizes: a grid of constant extents); one that
// emits a micro-kernel (such an edge on AVX2) or loops over elements itself (a
// softmax) at -O2. Each checked against the oracle on its own shape, the kernel
// with no size fixed on a ragged one too.
TEST_P(CpuIsaPath, UnitsOfCallsOnlyCompileAtOg) {
  const std::string og = "#pragma GCC optimize (\"Og\")", o1 = "#pragma GCC optimize (\"O1\")";
  uint32_t seed = 900 + 10 * static_cast<uint32_t>(GetParam());
  struct Case {
    GemmCase g;
    bool calls_only;
  };
  // SSE units emit every micro-kernel (cpu_microkernel.h).
  const bool built_in = GetParam() != CpuIsa::Sse && cpu_prebuilt_count > 0;
  // Rows of at most four vectors, and wider ones at k up to kCpuTinyBlocksMaxK, take tiny
  // kernels on AVX-512 (cpu_tiny_kernel.h); these do not.
  for (const Case& c : {Case{GemmCase{96, 96, 64, 1.0, 0.0}, built_in},
                        Case{GemmCase{128, 128, 64, 1.0, 0.0}, built_in},
                        Case{GemmCase{32, 84, 64, 1.0, 0.0}, built_in && GetParam() == CpuIsa::Avx512}}) {
    const Plan fixed = default_gemm_plan(TargetKind::Cpu, c.g.m, c.g.n, c.g.k, GemmPrecision::F32, "", 1);
    SCOPED_TRACE(fixed.to_string());
    ASSERT_EQ(fixed.sizes.size(), 3u);
    for (const Plan& p : {fixed, any_size(fixed)}) {
      GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
      const std::string unit = emit_cpu(program, GetParam());
      EXPECT_EQ(unit.find(p.sizes.empty() ? og : o1) != std::string::npos, c.calls_only) << unit;
      EXPECT_EQ(unit.find(p.sizes.empty() ? o1 : og), std::string::npos) << unit;
      auto kernel = compile_cpu(program);
      check_gemm(*kernel, c.g, seed++);
      check_gemm(*kernel, GemmCase{c.g.m, c.g.n, c.g.k, -0.5, 1.25}, seed++);
      if (p.sizes.empty()) check_gemm(*kernel, GemmCase{c.g.m - 5, c.g.n - 3, c.g.k - 7, -0.5, 1.25}, seed++);
    }
  }
  // Larger plans, emitted only (their numbers: the GEMM tests on each ISA): B's panels
  // copied from the tensor (512^3 in place) and packed blocks with a 20-column edge
  // (2000x2000x2048, packed for its K, in 500-column blocks on a 1 MiB L2; 2000x1012x300
  // has one on any).
  for (auto [m, n, k] : {std::array<int64_t, 3>{512, 512, 512}, {2000, 2000, 2048}, {2000, 1012, 300}}) {
    Plan p = default_gemm_plan(TargetKind::Cpu, m, n, k, GemmPrecision::F32, "", 1);
    SCOPED_TRACE(p.to_string());
    EXPECT_EQ(p.direct, m == 512);
    const GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
    const std::string unit = emit_cpu(program, GetParam());
    // 512^3 is one block (its sizes fixed: -O1).
    EXPECT_EQ(unit.find(m == 512 ? o1 : og) != std::string::npos,
              built_in && (GetParam() == CpuIsa::Avx512 || m == 512))
        << unit.substr(0, 4000);
  }
  const TileKernel k = softmax_kernel();
  const Plan plan = default_plan(k, TargetKind::Cpu, {{"M", 64}, {"N", 256}, {"ldx", 256}, {"ldy", 256}});
  EXPECT_EQ(emit_cpu(compile_to_group(k, plan, CompileOptions{}).program, GetParam()).find(og), std::string::npos);
}

// Within the exact sizes, several threads split a product large enough into equal
// groups of whole rows, else of whole columns, one a thread; never unequal ones (a
// ragged group's last row block would take the scalar edge loop). Each split plan
// against the oracle on its own shape (two threads, alpha and beta) and on the sim.
TEST(CpuSmallShapes, SplitAmongThreadsInEqualRowsOrColumns) {
  struct Case {
    int64_t m, n, k, bm, bn;
  };
  // 91^3 has no equal split: with AVX-512 rows in groups of 46 and 45 (the short
  // group's edge block in masked vectors), else one group.
  const int64_t odd_rows = cpu_vector_lanes() == 16 ? 46 : 91;
  for (const Case& c : {Case{96, 96, 96, 48, 96}, Case{91, 96, 90, 91, 48}, Case{91, 91, 91, odd_rows, 91},
                        Case{64, 64, 64, 64, 64}}) {
    Plan p = default_gemm_plan(TargetKind::Cpu, c.m, c.n, c.k, GemmPrecision::F32, "", 2);
    SCOPED_TRACE(p.to_string());
    ASSERT_TRUE(p.direct);
    EXPECT_EQ(p.tile("BM"), c.bm);
    EXPECT_EQ(p.tile("BN"), c.bn);
    EXPECT_EQ(default_gemm_plan(TargetKind::Cpu, c.m, c.n, c.k, GemmPrecision::F32, "", 1).tile("BM"), c.m);
    if (c.bm == c.m && c.bn == c.n) continue;
    GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
    auto kernel = compile_cpu(program);
    uint32_t seed = static_cast<uint32_t>(c.m + c.n);
    check_gemm(*kernel, GemmCase{c.m, c.n, c.k, 1.0, 0.0, 2}, seed++);
    check_gemm(*kernel, GemmCase{c.m, c.n, c.k, -0.5, 1.25, 2}, seed++);
    int64_t races = -1;
    check_gemm_run([&](const LaunchArgs& args) { races = run_sim(program, args).race_count; },
                   GemmCase{c.m, c.n, c.k, 1.0, 0.0}, seed++);
    EXPECT_EQ(races, 0);
  }
}

// A small product 1 to 4 columns wider than 32: with AVX-512, where the edge takes
// those columns as dot products (cpu_edge_dot_columns), the 32-wide atom and that
// rest; elsewhere, or where k is too short, one wider atom (8x48). Each plan against
// the oracle (alpha and beta too) and on the sim.
TEST(CpuSmallShapes, ColumnsJustPast32TakeTheWideAtomOrADotProductRest) {
  const bool dot = cpu_vector_lanes() == 16;
  // {m, n, k, whether dot products pay}
  for (auto [m, n, k, pays] : {std::array<int64_t, 4>{33, 33, 33, 1}, {40, 34, 70, 1}, {20, 34, 12, 0},
                               {60, 35, 200, 1}, {8, 36, 40, 0}}) {
    Plan p = default_gemm_plan(TargetKind::Cpu, m, n, k, GemmPrecision::F32, "", 1);
    SCOPED_TRACE(p.to_string());
    ASSERT_TRUE(p.direct);
    const bool rest = dot && cpu_edge_dot_columns(m, n, k);
    EXPECT_EQ(rest, dot && pays);
    EXPECT_EQ(p.atom_n, rest ? 32 : 48);
    GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
    auto kernel = compile_cpu(program);
    uint32_t seed = static_cast<uint32_t>(m * n + k);
    check_gemm(*kernel, GemmCase{m, n, k, 1.0, 0.0}, seed++);
    check_gemm(*kernel, GemmCase{m, n, k, -0.5, 1.25}, seed++);
    int64_t races = -1;
    check_gemm_run([&](const LaunchArgs& args) { races = run_sim(program, args).race_count; },
                   GemmCase{m, n, k, 1.0, 0.0}, seed++);
    EXPECT_EQ(races, 0);
  }
}

// A small product whose columns end inside a vector: with AVX-512 the unit calls
// cpu_mma_edge's blocks itself (cpu_edge_block) while its blocks are whole and k is
// the tile's, and goes through cpu_mma_blocks otherwise. Each plan against the oracle
// on its own shape (alpha and beta too), on rows or columns short of the tile, and
// on a k past it (a second, short k block), and on the sim.
TEST(CpuSmallShapes, WholeEdgeBlocksAreCalledFromTheUnit) {
  const bool avx512 = detected_cpu_isa() == CpuIsa::Avx512 && cpu_prebuilt_count > 0;
  for (auto [m, n, k] : {std::array<int64_t, 3>{8, 8, 8}, {5, 7, 9}, {13, 40, 7}, {20, 20, 20}, {3, 50, 5},
                         {30, 12, 17}, {13, 26, 16}, {21, 10, 110}, {64, 20, 32}}) {
    const Plan fixed = default_gemm_plan(TargetKind::Cpu, m, n, k, GemmPrecision::F32, "", 1);
    SCOPED_TRACE(fixed.to_string());
    ASSERT_TRUE(fixed.direct);
    ASSERT_EQ(fixed.sizes.size(), 3u);
    uint32_t seed = static_cast<uint32_t>(m * n + k);
    // The default plan fixes the sizes; the same plan without runs other shapes too.
    for (const Plan& p : {fixed, any_size(fixed)}) {
      GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
      const std::string unit = emit_cpu(program, detected_cpu_isa());
      EXPECT_EQ(unit.find("((tsl_edge_lookup_t)table[3])") != std::string::npos, avx512) << unit;
      auto kernel = compile_cpu(program);
      check_gemm(*kernel, GemmCase{m, n, k, 1.0, 0.0}, seed++);
      check_gemm(*kernel, GemmCase{m, n, k, -0.5, 1.25}, seed++);
      if (p.sizes.empty()) {
        check_gemm(*kernel, GemmCase{m - 1, n, k, 1.0, 0.0}, seed++);
        check_gemm(*kernel, GemmCase{m, n - 1, k, 1.0, 0.0}, seed++);
        check_gemm(*kernel, GemmCase{m, n, k + 3, 0.75, 0.5}, seed++);
      }
      int64_t races = -1;
      check_gemm_run([&](const LaunchArgs& args) { races = run_sim(program, args).race_count; },
                     GemmCase{m, n, k, 1.0, 0.0}, seed++);
      EXPECT_EQ(races, 0);
    }
  }
}

// Where every column of a part ends in a masked vector, its rows are cut into blocks
// as tall as cpu_edge_block holds (cpu_edge_block_rows), not the atom's MR: 13x26 is
// one block of 13 rows (two vectors: up to 14), 21x10 one of 21 (one vector: up to
// 24), and 64x20 five of 12 and 13. Where the rows run as strips instead (52x28x11),
// one call of cpu_mma_blocks takes them all. (The numbers:
// WholeEdgeBlocksAreCalledFromTheUnit and NarrowMidKProductsRunInStripsOfRows.)
TEST(CpuSmallShapes, MaskedPartsTakeEdgeBlocksOfTheirFullHeight) {
  if (detected_cpu_isa() != CpuIsa::Avx512 || cpu_prebuilt_count == 0)
    GTEST_SKIP() << "the unit calls cpu_edge_block only where the CPU has AVX-512";
  struct Case {
    int64_t m, n, k;
    std::vector<std::string> blocks;
  };
  for (const Case& c : {Case{13, 26, 16, {"(13, 26)"}}, Case{21, 10, 110, {"(21, 10)"}},
                        Case{64, 20, 32, {"(13, 20)", "(12, 20)"}}, Case{52, 28, 11, {}}}) {
    const Plan p = default_gemm_plan(TargetKind::Cpu, c.m, c.n, c.k, GemmPrecision::F32, "", 1);
    SCOPED_TRACE(p.to_string());
    const std::string unit =
        emit_cpu(compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program, CpuIsa::Avx512);
    auto count = [&](const std::string& text) {
      int n = 0;
      for (size_t at = 0; (at = unit.find(text, at)) != std::string::npos; ++at) ++n;
      return n;
    };
    // Each unit (cpu_emit.h: kCpuSecondUnit) binds its own copy.
    const int units = static_cast<int>(split_cpu_units(unit).size());
    EXPECT_EQ(count("((tsl_edge_lookup_t)table[3])("), units * static_cast<int>(c.blocks.size())) << unit;
    for (const std::string& block : c.blocks)
      EXPECT_NE(unit.find("((tsl_edge_lookup_t)table[3])" + block), std::string::npos) << block;
    if (c.blocks.empty()) {
      EXPECT_EQ(count("tsl_mma_blocks((const void*)0, kv"), 1) << unit;
    }
  }
}

// A product's default plan whose mma runs in cpu_mma_edge's strips of rows, against the
// oracle on its own shape (dense and padded rows, alpha and beta), and without its
// fixed sizes on rows and columns short of it and on a k past the tile (a second k
// block that accumulates), and on the sim. no_edge_blocks: every edge region of the
// unit three chunks of rows or more, which the unit leaves to the strips.
struct StripCase {
  int64_t m, n, k;
  bool no_edge_blocks;
};
void check_strip_plans(std::initializer_list<StripCase> cases) {
  const bool avx512 = detected_cpu_isa() == CpuIsa::Avx512 && cpu_prebuilt_count > 0;
  for (auto [m, n, k, no_edge_blocks] : cases) {
    const Plan fixed = default_gemm_plan(TargetKind::Cpu, m, n, k, GemmPrecision::F32, "", 1);
    SCOPED_TRACE(fixed.to_string());
    ASSERT_TRUE(fixed.direct);
    uint32_t seed = static_cast<uint32_t>(m * n + k);
    for (const Plan& p : {fixed, any_size(fixed)}) {
      GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
      const std::string unit = emit_cpu(program, CpuIsa::Avx512);
      if (avx512 && no_edge_blocks) {
        EXPECT_EQ(unit.find("((tsl_edge_lookup_t)table[3])"), std::string::npos);
      }
      // At short k the unit calls the strips itself (cpu_edge_strip).
      if (avx512) {
        EXPECT_EQ(unit.find("((tsl_strip_lookup_t)table[4])") != std::string::npos, k <= kCpuStripMaxK);
      }
      auto kernel = compile_cpu(program);
      for (bool dense : {false, true}) check_gemm(*kernel, GemmCase{m, n, k, 1.0, 0.0, 1, dense}, seed++);
      for (bool dense : {false, true}) check_gemm(*kernel, GemmCase{m, n, k, -0.5, 1.25, 1, dense}, seed++);
      check_gemm(*kernel, GemmCase{m, n, k, 1.0, 1.0}, seed++);
      if (p.sizes.empty()) {
        check_gemm(*kernel, GemmCase{m - 3, n - 1, k, 1.0, 0.0}, seed++);
        check_gemm(*kernel, GemmCase{m, n, k + 3, 0.75, 0.5}, seed++);
      }
      if (m * n <= 10000) {
        int64_t races = -1;
        check_gemm_run([&](const LaunchArgs& args) { races = run_sim(program, args).race_count; },
                       GemmCase{m, n, k, 1.0, 0.0}, seed++);
        EXPECT_EQ(races, 0);
      }
    }
  }
}

// Up to kCpuStripMaxK k, a product read in place runs by strips of rows on AVX-512:
// over a whole part at the tile's k the unit calls them itself (cpu_edge_strip).
// Otherwise (a short k block, ragged columns) cpu_mma_blocks hands the whole part to
// cpu_mma_edge, and the unit leaves edge blocks of three chunks of rows or more to it
// too (316x385x2's 88 rows of one column and 158x27x2's 48 rows were four edge blocks
// each; 20x20x3 keeps its two).
TEST(CpuSmallShapes, ShortKProductsRunInStripsOfRows) {
  check_strip_plans({{316, 385, 2, true}, {158, 27, 2, true}, {100, 20, 1, false}, {60, 40, 3, false},
                     {333, 97, 4, false}, {77, 150, 5, false}, {61, 8, 2, false}, {20, 20, 3, false}});
}

// Past kCpuStripMaxK, products of one narrow strip of columns (cpu_edge_narrow_strip)
// run as strips too, the unit's edge regions of three chunks or more among them
// (170x12x11, 200x28x11, 52x15x23 in one call; 40x12x11 keeps its two blocks, and
// 132x13x6 and 89x20x9 their last regions' two), and a wide product's narrow last
// columns (866x47x6, 300x44x20). Where alpha and beta keep the product in the unit's fragment (rows of
// 12, 28, 20 floats: shorter than the strip's vectors), a k past the tile accumulates
// there with the row loop that loads the next row ahead.
TEST(CpuSmallShapes, NarrowMidKProductsRunInStripsOfRows) {
  check_strip_plans({{170, 12, 11, true}, {200, 28, 11, true}, {132, 13, 6, false}, {300, 12, 24, true},
                     {89, 20, 9, false}, {40, 12, 11, false}, {866, 47, 6, false}, {300, 44, 20, false},
                     {52, 15, 23, true}});
}

// The tiny kernels (cpu_tiny_kernel.h), all in one unit, against the reference:
// B's columns past N are NaN (where its rows are padded: not for a dense kernel) and
// its allocation ends right after row K - 1's N columns; C's columns past N must come
// back untouched.
TEST(CpuTinyKernel, MatchesItsReference) {
  if (detected_cpu_isa() != CpuIsa::Avx512) GTEST_SKIP() << "the tiny kernels need AVX-512; this CPU has none";
  const CpuIsaInfo& isa = cpu_isa_info(CpuIsa::Avx512);
  struct Shape {
    int64_t r, n, k;
  };
  const std::vector<Shape> shapes = {{1, 1, 1},  {1, 7, 1},   {4, 4, 4},  {3, 3, 3},  {2, 16, 8},  {2, 15, 11},
                                     {5, 8, 9},  {1, 9, 64},  {16, 16, 16}, {14, 13, 7}, {2, 64, 32}, {3, 33, 5},
                                     {4, 48, 3}, {8, 17, 2}, {6, 31, 13}, {1, 64, 4}, {1, 16, 70}, {2, 20, 37},
                                     {17, 1, 10}, {20, 4, 4}, {29, 9, 8}, {30, 16, 8}, {2, 2, 3}, {3, 50, 2},
                                     {24, 2, 3}, {17, 16, 16}, {30, 12, 200}, {21, 10, 110}, {13, 14, 25},
                                     {16, 12, 100}, {3, 16, 200}, {1, 5, 300}, {8, 44, 13}, {9, 40, 9},
                                     {6, 64, 20},  {14, 24, 20}, {5, 36, 100}, {7, 34, 30}, {6, 49, 7},
                                     {1, 40, 200}, {9, 48, 30}, {13, 26, 16}, {9, 15, 9}, {10, 16, 4}};
  // Run-time strides, k written out ({4, 4, 4} to {2, 20, 37}; in copies: {1, 16, 70}
  // 4, {2, 20, 37} 2), fewer k steps than copies ({1, 7, 1}); dense kernels looped past
  // kCpuTinyUnrolledFmas ({30, 12, 200}, {3, 16, 200} in copies with a rest), rows of
  // one vector past 16 accumulators ({17, 1,
  // 10} to {30, 16, 8}: kCpuTinyOneVectorRows), C's rests of one and two columns
  // read and written unmasked ({1, 1, 1}, {8, 17, 2}, {2, 2, 3}, {3, 50, 2}, {24, 2, 3}),
  // rows of one vector up to kCpuTinyTallFmas ({17, 16, 16}, {30, 12, 200},
  // {21, 10, 110}, and dense at 16 rows or fewer: {13, 14, 25} to {1, 5, 300}); dense
  // rows of 2 to 4 vectors, their rest masked in 16, 8 or 4 lanes or whole ({8, 44, 13}
  // to {13, 26, 16}), one or two columns ({7, 34, 30}, {6, 49, 7}), in copies ({1, 40,
  // 200}) and a loop with a rest ({9, 48, 30}); both forms of a product from
  // kCpuTinyDenseRows rows or kCpuTinyDenseFmas FMAs ({4, 4, 4}, {16, 16, 16}, {14, 13, 7},
  // {9, 15, 9}, {10, 16, 4}, {3, 50, 2}, ...). Each product's form, and the kernel of any
  // strides too where it has both.
  auto forms = [](const Shape& s) {
    std::vector<bool> f{false};
    if (cpu_tiny_kernel_dense(s.r, s.n, s.k) && cpu_tiny_kernel_strided(s.r, s.n, s.k)) f.push_back(true);
    return f;
  };
  char dir[] = "/tmp/tessel-test-tiny-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string src = std::string(dir) + "/tiny_kernels.cpp", so = std::string(dir) + "/tiny_kernels.so";
  {
    std::ofstream out(src);
    out << "typedef long int64_t;\n";
    for (const Shape& s : shapes) {
      ASSERT_TRUE(cpu_tiny_kernel_fits(s.r, s.n, s.k, isa)) << s.r << "x" << s.n << "x" << s.k;
      for (bool strided : forms(s)) {
        const std::string name = cpu_tiny_kernel_name(s.r, s.n, s.k, 0, strided),
                          text = emit_cpu_tiny_kernel(s.r, s.n, s.k, 0, strided);
        // The asm clears the upper halves of the registers it used past 128 bits: left
        // dirty, the caller's SSE code waits on them.
        EXPECT_EQ(text.find("vzeroupper") != std::string::npos, s.n > 4) << text;
        out << text << "extern \"C\" void " << name
            << "_entry(int64_t, const float* a, const float* b, float* c, int64_t ldc, int64_t lda, int64_t ldb, "
               "int overwrite) { "
            << name << (name.find("_dense") != std::string::npos ? "(a, b, c, ldc, overwrite); }\n"
                                                                   : "(a, b, c, ldc, lda, ldb, overwrite); }\n");
      }
    }
  }
  const std::string command =
      std::string("c++ ") + isa.flags + " -O2 -ffp-contract=fast -fPIC -shared -o " + so + " " + src;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const Shape& s : shapes)
    for (bool strided : forms(s)) {
      const std::string name = cpu_tiny_kernel_name(s.r, s.n, s.k, 0, strided);
      auto f = reinterpret_cast<UkrInPlaceFn>(dlsym(h, (name + "_entry").c_str()));
      ASSERT_NE(f, nullptr) << name;
      // A dense kernel holds A's and B's strides as constants: rows one after another
      // (the contract).
      const bool dense = !strided && cpu_tiny_kernel_dense(s.r, s.n, s.k);
      EXPECT_EQ(name.find("_dense") != std::string::npos, dense) << name;
      const int64_t lda = dense ? s.k : s.k + 3, ldb = dense ? s.n : s.n + 5, ldc = s.n + 2;
      std::vector<float> a(s.r * lda), b((s.k - 1) * ldb + s.n), c(s.r * ldc);
      for (float& x : a) x = u(rng);
      for (int64_t i = 0; i < int64_t(b.size()); ++i) b[i] = i % ldb < s.n ? u(rng) : NAN;
      for (float& x : c) x = u(rng);
      test::expect_microkernel_matches(f, s.r, s.n, s.k, a, lda, b, ldb, c, ldc, name);
    }
  EXPECT_FALSE(cpu_tiny_kernel_fits(9, 17, 1, isa));    // 18 accumulators, two a row
  EXPECT_FALSE(cpu_tiny_kernel_fits(31, 16, 1, isa));   // 31 rows
  EXPECT_TRUE(cpu_tiny_kernel_fits(8, 32, 17, isa));    // 272 FMAs on rows of two vectors: dense
  EXPECT_TRUE(cpu_tiny_kernel_dense(8, 32, 17));
  EXPECT_FALSE(cpu_tiny_kernel_fits(15, 32, 17, isa));  // past 14 rows of two vectors
  EXPECT_FALSE(cpu_tiny_kernel_fits(10, 48, 9, isa));   // past 9 rows of three
  EXPECT_FALSE(cpu_tiny_kernel_fits(6, 64, kCpuTinyTallFmas / 24 + 1, isa));  // past the dense kernels' FMAs
  EXPECT_FALSE(cpu_tiny_kernel_fits(2, 65, 40, isa));   // five vectors a row
  EXPECT_FALSE(cpu_tiny_kernel_fits(9, 17, 5, isa));    // 18 accumulators at the strips' k
  EXPECT_TRUE(cpu_tiny_kernel_fits(16, 16, 17, isa));   // 272 on rows of one: dense
  EXPECT_TRUE(cpu_tiny_kernel_dense(16, 16, 17));
  EXPECT_FALSE(cpu_tiny_kernel_strided(16, 16, 17));
  EXPECT_TRUE(cpu_tiny_kernel_dense(16, 16, 16));    // both forms from kCpuTinyDenseRows rows
  EXPECT_TRUE(cpu_tiny_kernel_strided(16, 16, 16));
  EXPECT_TRUE(cpu_tiny_kernel_dense(3, 16, 16));     // and from kCpuTinyDenseFmas FMAs
  EXPECT_TRUE(cpu_tiny_kernel_strided(3, 16, 16));
  EXPECT_TRUE(cpu_tiny_kernel_dense(2, 2, 4));
  EXPECT_FALSE(cpu_tiny_kernel_dense(2, 2, 3));      // 6 FMAs: any strides only
  EXPECT_TRUE(cpu_tiny_kernel_strided(2, 2, 3));
  EXPECT_FALSE(cpu_tiny_kernel_dense(1, 7, 1));
  EXPECT_TRUE(cpu_tiny_kernel_dense(4, 17, 100));    // 800 FMAs on rows of two vectors
  EXPECT_TRUE(cpu_tiny_kernel_dense(3, 17, 20));     // 120: both forms
  EXPECT_TRUE(cpu_tiny_kernel_strided(3, 17, 20));
  EXPECT_TRUE(cpu_tiny_kernel_fits(2, 64, 33, isa));    // 264 FMAs: dense
  EXPECT_FALSE(cpu_tiny_kernel_fits(6, 64, 5, isa));    // 24 accumulators at the strips' k
  EXPECT_FALSE(cpu_tiny_kernel_fits(17, 16, kCpuTinyTallFmas / 17 + 1, isa));  // past the tall rows' FMAs
  EXPECT_TRUE(cpu_tiny_kernel_fits(17, 16, kCpuTinyTallFmas / 17, isa));
  EXPECT_FALSE(cpu_tiny_kernel_fits(4, 4, 4, cpu_isa_info(CpuIsa::Avx2)));
  // Tall rows of one vector in the fewest near-equal chunks that hold them, where
  // those fit.
  EXPECT_EQ(cpu_tiny_row_chunks(30, 16, 8, isa), 1);
  EXPECT_EQ(cpu_tiny_row_chunks(39, 12, 11, isa), 2);   // 20 and 19
  EXPECT_EQ(cpu_tiny_row_chunks(137, 10, 30, isa), 5);  // 28 and 27
  EXPECT_EQ(cpu_tiny_row_chunks(70, 11, 280, isa), 3);
  EXPECT_EQ(cpu_tiny_row_chunks(70, 11, 350, isa), 0);  // three chunks of 24 x 350 FMAs do not fit
  EXPECT_EQ(cpu_tiny_row_chunks(30 * kCpuTinyRowChunks, 16, 8, isa), kCpuTinyRowChunks);
  EXPECT_EQ(cpu_tiny_row_chunks(30 * kCpuTinyRowChunks + 1, 16, 8, isa), 0);  // past kCpuTinyRowChunks
  EXPECT_EQ(cpu_tiny_row_chunks(33, 10, 10, isa), 2);   // 16 and 17 rows
  EXPECT_EQ(cpu_tiny_row_chunks(40, 17, 1, isa), 0);    // two vectors a row at the strips' k
  EXPECT_EQ(cpu_tiny_row_chunks(48, 44, 13, isa), 6);   // 8 rows of three vectors
  EXPECT_EQ(cpu_tiny_row_chunks(92, 30, 13, isa), 7);   // 13 and 14 rows of two
  EXPECT_EQ(cpu_tiny_row_chunks(200, 28, 11, isa), 0);  // a narrow strip (cpu_edge_narrow_strip)
  EXPECT_EQ(cpu_tiny_row_chunks(123, 3, 41, isa), 0);   // dot products (cpu_edge_dot_columns)
  EXPECT_EQ(cpu_tiny_row_chunks(40, 8, 8, cpu_isa_info(CpuIsa::Avx2)), 0);
}

// A small product of one tile read in place: its unit runs alpha 1 and beta 0 in a
// leaf with the tiny kernel (a dense one, cpu_tiny_kernel_dense, only where A's and
// B's rows lie one after another, else the kernel of any strides where the product
// has one, else the general function), anything else
// in the general function (tessel's kernels); all against the oracle (C NaN-poisoned
// where beta is 0), dense and padded rows, the plan without fixed sizes on other
// shapes too, and on the sim.
TEST(CpuSmallShapes, WholeSmallProductsRunInOneTinyKernel) {
  const bool avx512 = detected_cpu_isa() == CpuIsa::Avx512;
  for (auto [m, n, k] : {std::array<int64_t, 3>{1, 7, 1}, {4, 4, 4}, {2, 16, 8}, {14, 13, 7}, {2, 64, 32},
                         {16, 16, 16}, {5, 33, 3}, {24, 7, 3}, {18, 20, 8}, {29, 12, 8}, {20, 8, 12},
                         {28, 13, 60}, {13, 14, 25}, {16, 12, 100}}) {
    const Plan fixed = default_gemm_plan(TargetKind::Cpu, m, n, k, GemmPrecision::F32, "", 1);
    SCOPED_TRACE(fixed.to_string());
    ASSERT_TRUE(fixed.direct);
    const bool fits = cpu_tiny_kernel_fits(m, n, k, cpu_isa_info(CpuIsa::Avx512)), tiny = avx512 && fits;
    EXPECT_EQ(fits, m != 18);  // 18 rows of two vectors: 36 accumulators
    uint32_t seed = static_cast<uint32_t>(7 * m + n + k);
    for (const Plan& p : {fixed, any_size(fixed)}) {
      GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
      const std::string unit = emit_cpu(program, detected_cpu_isa());
      EXPECT_EQ(unit.find(cpu_tiny_kernel_name(m, n, k) + "(&") != std::string::npos, tiny) << unit;
      // From kCpuTinyDenseRows rows, the kernel of any strides too, for padded rows.
      if (cpu_tiny_kernel_dense(m, n, k) && cpu_tiny_kernel_strided(m, n, k)) {
        EXPECT_EQ(unit.find(cpu_tiny_kernel_name(m, n, k, 0, true) + "(&") != std::string::npos, tiny) << unit;
      }
      EXPECT_EQ(unit.find("tsl_group_general(sizes,") != std::string::npos, tiny) << unit;
      // Two homes' bodies, each in a leaf with the flag as a constant: storing (beta 0)
      // in the entry, adding (beta 1) in the function the entry jumps to, which jumps
      // to the general one (through tsl_general_regs, which makes the arrays). Each
      // jumps before it reads the tensors: reads above the jump held the leaf's values
      // in saved registers. The leaves take tensors and scalars in registers; the
      // entry of arrays only passes them on.
      const size_t general = unit.find("void tsl_general_regs("), homes = unit.find("void tsl_group_homes1(");
      const size_t entry = unit.find("void tessel_group_t3s2(const int64_t* sizes, const int64_t* group, float* "
                                     "scratch, float* tsl_t0, float* tsl_t1, float* tsl_t2, double tsl_s0, double "
                                     "tsl_s1) {");
      const size_t adds = unit.find("const bool tsl_addhome_0 = true;"), stores = unit.find("tsl_addhome_0 = false;");
      EXPECT_EQ(general < homes && homes < adds && adds < entry && entry != std::string::npos, tiny) << unit;
      EXPECT_EQ(stores != std::string::npos && entry < stores, tiny) << unit;
      for (auto [from, to] : {std::pair{homes, "tsl_general_regs("}, {entry, "tsl_group_homes1("}}) {
        const size_t jump = unit.find(std::string("    return ") + to + "sizes, group, scratch, tsl_t0,", from);
        EXPECT_EQ(jump != std::string::npos && unit.find("= tsl_t", from) > jump, tiny) << unit;
      }
      const std::string arrays = "    float* const* tensors, const int64_t* group, float* scratch) {\n  return "
                                 "tessel_group_t3s2(sizes, group, scratch, tensors[0], tensors[1], tensors[2], "
                                 "scalars[0], scalars[1]);\n}\n";
      EXPECT_EQ(unit.find(arrays) != std::string::npos, tiny) << unit;
      EXPECT_EQ(unit.find("\"optimize-sibling-calls\"") != std::string::npos, tiny) << unit;
      auto kernel = compile_cpu(program);
      for (auto [alpha, beta] : {std::array<double, 2>{1.0, 0.0}, {-0.5, 1.25}, {1.0, 1.0}, {2.0, 0.0}})
        for (bool dense : {false, true}) check_gemm(*kernel, GemmCase{m, n, k, alpha, beta, 1, dense}, seed++);
      if (p.sizes.empty()) {
        check_gemm(*kernel, GemmCase{m, n - 1, k, 1.0, 0.0}, seed++);
        check_gemm(*kernel, GemmCase{m + 2, n, k + 3, 1.0, 0.0}, seed++);
        // Two k steps: the leaves run only where the k loop runs once (C added to once).
        check_gemm(*kernel, GemmCase{m, n, k + 3, 1.0, 1.0}, seed++);
      }
      int64_t races = -1;
      check_gemm_run([&](const LaunchArgs& args) { races = run_sim(program, args).race_count; },
                     GemmCase{m, n, k, 1.0, 0.0}, seed++);
      EXPECT_EQ(races, 0);
    }
  }
}

// A tiny kernels' program against the oracle (C NaN-poisoned where beta is 0; three
// alpha and beta pairs; dense rows, which the kernels take, and padded ones, which the
// general body does) and on the sim, with 0 races.
void check_tiny_program(const GroupProgram& program, int64_t m, int64_t n, int64_t k, uint32_t seed) {
  auto kernel = compile_cpu(program);
  for (auto [alpha, beta] : {std::array<double, 2>{1.0, 0.0}, {1.0, 1.0}, {-0.5, 1.25}})
    for (bool dense : {false, true}) check_gemm(*kernel, GemmCase{m, n, k, alpha, beta, 1, dense}, seed++);
  int64_t races = -1;
  check_gemm_run([&](const LaunchArgs& args) { races = run_sim(program, args).race_count; },
                 GemmCase{m, n, k, 1.0, 0.0}, seed++);
  EXPECT_EQ(races, 0);
}

// Rows too tall for one tiny kernel run as chunks of rows, a tiny kernel each
// (cpu_tiny_row_chunks), in one leaf for both homes (beta 0 and 1: with several
// kernels, whether it adds is read at run time); a kernel a chunk size, dense ones
// functions of their own. Rows of one vector, and of two to four past the strips' k.
// Against the oracle (C NaN-poisoned where beta is 0), dense rows (the chunks) and
// padded ones (the general body), and on the sim.
TEST(CpuSmallShapes, TallRowsRunInChunksOfTinyKernels) {
  const bool avx512 = detected_cpu_isa() == CpuIsa::Avx512;
  const CpuIsaInfo& isa = cpu_isa_info(CpuIsa::Avx512);
  for (auto [m, n, k] : {std::array<int64_t, 3>{39, 12, 11}, {35, 9, 12}, {137, 10, 30}, {70, 11, 280},
                         {34, 16, 40}, {50, 5, 7}, {109, 4, 1}, {33, 10, 10}, {31, 12, 40}, {48, 44, 13},
                         {66, 42, 9}, {92, 30, 13}, {180, 50, 7}, {42, 37, 43}, {600, 16, 10}}) {
    const Plan p = default_gemm_plan(TargetKind::Cpu, m, n, k, GemmPrecision::F32, "", 1);
    SCOPED_TRACE(p.to_string());
    ASSERT_TRUE(p.direct);
    ASSERT_EQ(p.tile("BM"), m);
    const int64_t chunks = cpu_tiny_row_chunks(m, n, k, isa);
    ASSERT_GT(chunks, 1);
    GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
    const std::string unit = emit_cpu(program, CpuIsa::Avx512);
    auto count = [&](const std::string& text) {
      int found = 0;
      for (size_t at = 0; (at = unit.find(text, at)) != std::string::npos; ++at) ++found;
      return found;
    };
    // Near-equal chunks: m / chunks rows, one more in the last m % chunks.
    const int64_t shorter = m / chunks, longer = m % chunks;
    const std::string name = cpu_tiny_kernel_name(shorter, n, k), name_longer = cpu_tiny_kernel_name(shorter + 1, n, k);
    // A call a chunk, or a loop where a height has more than two, in the one leaf.
    auto calls = [](int64_t count) { return count > 2 ? 1 : count; };
    EXPECT_EQ(count("tsl_group_homes"), 0) << unit;
    EXPECT_EQ(count("const bool tsl_addhome_0 = true;") + count("const bool tsl_addhome_0 = false;"), 0) << unit;
    EXPECT_EQ(count(name + "(&"), calls(chunks - longer)) << unit;
    EXPECT_EQ(count(name_longer + "(&"), calls(longer)) << unit;
    const int dense_sizes = cpu_tiny_kernel_dense(shorter, n, k) + (longer && cpu_tiny_kernel_dense(shorter + 1, n, k));
    EXPECT_EQ(count(", @function\\ntsl_tiny_"), dense_sizes) << unit;  // each defined once, at the top level
    if (!avx512) continue;
    check_tiny_program(program, m, n, k, static_cast<uint32_t>(m + 3 * n + 7 * k));
  }
}

// Rows wider than four vectors, at short and mid k, run in blocks of 64 columns, each
// in chunks of rows, a dense tiny kernel a block that reads B's rows N apart
// (cpu_tiny_tiling); chunks of a height past two are a loop. Against the oracle (C
// NaN-poisoned where beta is 0), dense rows (the blocks) and padded ones (the general
// body), and on the sim.
TEST(CpuSmallShapes, WideRowsRunInColumnBlocksOfTinyKernels) {
  const bool avx512 = detected_cpu_isa() == CpuIsa::Avx512;
  const CpuIsaInfo& isa = cpu_isa_info(CpuIsa::Avx512);
  for (auto [m, n, k] : {std::array<int64_t, 3>{41, 142, 22}, {28, 137, 13}, {36, 88, 9}, {11, 200, 30},
                         {60, 125, 32}, {10, 80, 48}}) {
    const Plan p = default_gemm_plan(TargetKind::Cpu, m, n, k, GemmPrecision::F32, "", 1);
    SCOPED_TRACE(p.to_string());
    ASSERT_TRUE(p.direct);
    ASSERT_EQ(p.tile("BM"), m);
    const CpuTinyTiling tiling = cpu_tiny_tiling(m, n, k, isa);
    ASSERT_EQ(tiling.col_blocks, (n + 63) / 64);
    ASSERT_GT(tiling.row_chunks, 0);
    GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
    const std::string unit = emit_cpu(program, CpuIsa::Avx512);
    // Each height's whole 64-column blocks, in the one leaf for both homes: a call a
    // chunk, or a loop.
    const int64_t shorter = m / tiling.row_chunks, longer = m % tiling.row_chunks;
    for (auto [rows, count] : {std::array<int64_t, 2>{shorter, tiling.row_chunks - longer}, {shorter + 1, longer}}) {
      if (count == 0) continue;
      const std::string name = cpu_tiny_kernel_name(rows, 64, k, n);
      EXPECT_NE(name.find("_dense_ldb" + std::to_string(n)), std::string::npos) << name;
      int found = 0;
      for (size_t at = 0; (at = unit.find(name + "(&", at)) != std::string::npos; ++at) ++found;
      EXPECT_EQ(found, (count > 2 ? 1 : count) * (n / 64)) << name << "\n" << unit;
    }
    EXPECT_EQ(unit.find("for (int64_t tsl_i = ") != std::string::npos, tiling.row_chunks - longer > 2 || longer > 2);
    EXPECT_EQ(unit.find("tsl_group_homes"), std::string::npos) << unit;
    if (!avx512) continue;
    check_tiny_program(program, m, n, k, static_cast<uint32_t>(m + 5 * n + 11 * k));
  }
  EXPECT_EQ(cpu_tiny_tiling(28, 137, 5, isa).row_chunks, 0);                       // the strips' k
  EXPECT_EQ(cpu_tiny_tiling(28, 137, kCpuTinyBlocksMaxK + 1, isa).row_chunks, 0);  // past the blocks' k
  EXPECT_EQ(cpu_tiny_tiling(400, 137, 13, isa).row_chunks, 0);                     // past kCpuTinyBlockCalls
  EXPECT_EQ(cpu_tiny_tiling(48, 44, 13, isa).col_blocks, 1);
}

// A leaf whose tiny kernels' test fails before it has written anything jumps to the
// general body instead of a copy of it. Two groups of rows: there the k loop's trips
// are a run-time size, and the leaf's entry test adds that the loop runs once (a
// launch gives the plan's sizes, so it does). Against the oracle, dense rows (the
// leaves) and padded ones (their jumps), and on the sim.
TEST(CpuSmallShapes, LeavesJumpToTheGeneralBodyBeforeWritingAnything) {
  const Plan p = default_gemm_plan(TargetKind::Cpu, 256, 174, 20, GemmPrecision::F32, "", 2);
  SCOPED_TRACE(p.to_string());
  ASSERT_TRUE(p.direct);
  ASSERT_EQ(p.tile("BK"), 20);
  ASSERT_EQ(p.tile("BM"), 128);
  GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
  const std::string unit = emit_cpu(program, CpuIsa::Avx512);
  int jumps = 0;
  for (size_t at = 0; (at = unit.find("return tsl_general_regs(", at)) != std::string::npos; ++at) ++jumps;
  EXPECT_EQ(jumps, 2) << unit;  // the one leaf's (both homes') entry test, and its tiny kernels' test
  int once = 0;
  for (size_t at = 0; (at = unit.find(" && (tsl_ceildiv(v_K, INT64_C(20))) - (INT64_C(0)) <= 1))", at)) !=
                      std::string::npos;
       ++at)
    ++once;
  EXPECT_EQ(once, 1) << unit;  // the leaf's entry test
  if (detected_cpu_isa() != CpuIsa::Avx512) GTEST_SKIP() << "the tiny kernels need AVX-512";
  check_tiny_program(program, 256, 174, 20, 690);
}

// The same programs on the simulator: the same answers, and no races between the
// parts (or between the groups' stores).
TEST(CpuBlockedGemm, ProgramsRunOnTheSimWithoutRaces) {
  uint32_t seed = 400;
  std::vector<GroupProgram> programs;
  for (const Blocking& b : kBlockings) programs.push_back(blocked_program(b));
  Plan p = default_gemm_plan(TargetKind::Cpu, 2100, 40, 20, GemmPrecision::F32, "", 4);
  EXPECT_GT(p.workers, 1) << p.to_string();  // 2100 rows: parts of 24 rows, packed on four threads
  programs.push_back(compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program);
  for (const GroupProgram& program : programs)
    for (const GemmCase& g : {GemmCase{100, 90, 60, 1.0, 0.0}, GemmCase{260, 40, 20, 0.5, 1.5},
                              GemmCase{2100, 40, 20, 1.0, 0.0}}) {
      int64_t races = -1;
      check_gemm_run([&](const LaunchArgs& args) { races = run_sim(program, args).race_count; }, g, seed++);
      EXPECT_EQ(races, 0) << g.m << "x" << g.n << "x" << g.k;
    }
}

// Packed plans: a group's B block (BK x BN floats) within the machine's bounds
// (plan/machine.h: half of L2 on most cores), and every thread as many groups.
// 1200x1100x300 on two threads against the oracle and on the sim (its B block cut
// in columns where the bound is half of a 1 MiB L2: three groups, made four).
TEST(CpuBlockedGemm, BBlockWithinTheMachinesBoundsAndAsManyGroupsPerThread) {
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  for (int64_t threads : {1, 2})
    for (auto [m, n, k] : {std::array<int64_t, 3>{1536, 1536, 1536}, {2000, 2000, 2000}, {1200, 3000, 900},
                           {4096, 1024, 2048}, {1200, 1100, 300}}) {
      const Plan p = default_gemm_plan(TargetKind::Cpu, m, n, k, GemmPrecision::F32, "", threads);
      SCOPED_TRACE(p.to_string());
      if (p.direct) continue;  // read in place: no B block
      const CpuBlocking machine = cpu_blocking();
      EXPECT_LE(4 * p.tile("BK") * p.tile("BN"), std::max<int64_t>(machine.b_block_bytes, 4 * p.tile("BK") * 128));
      EXPECT_LE(p.tile("BK"), std::max<int64_t>(machine.max_bk, 300));  // 300: one k block (K <= 300)
      EXPECT_EQ(ceil_div(m, p.tile("BM")) * ceil_div(n, p.tile("BN")) % threads, 0);
    }
  const Plan p = default_gemm_plan(TargetKind::Cpu, 1200, 1100, 300, GemmPrecision::F32, "", 2);
  SCOPED_TRACE(p.to_string());
  ASSERT_FALSE(p.direct);
  GroupProgram program = compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program;
  auto kernel = compile_cpu(program);
  check_gemm(*kernel, GemmCase{1200, 1100, 300, 1.0, 0.0, 2}, 510);
  check_gemm(*kernel, GemmCase{1200, 1100, 300, -0.5, 1.25, 2}, 511);
  int64_t races = -1;
  check_gemm_run([&](const LaunchArgs& args) { races = run_sim(program, args).race_count; },
                 GemmCase{300, 1100, 70, 1.0, 0.0}, 512);
  EXPECT_EQ(races, 0);
}

// An mma that reads a tensor in place must carry the valid part that keeps it inside.
TEST(CpuInPlace, GlobalOperandWithoutItsValidPartIsAVerifyError) {
  GroupProgram p = compile_to_group(gemm_kernel(DType::F32), default_gemm_plan(TargetKind::Cpu, 20, 30, 10),
                                    CompileOptions{})
                       .program;
  std::function<GroupOp*(std::vector<GroupOp>&)> find_mma = [&](std::vector<GroupOp>& ops) -> GroupOp* {
    for (GroupOp& op : ops) {
      if (op.kind == GroupOpKind::Mma) return &op;
      for (std::vector<GroupOp>& body : op.bodies)
        if (GroupOp* m = find_mma(body)) return m;
    }
    return nullptr;
  };
  GroupOp* mma = find_mma(p.body);
  ASSERT_NE(mma, nullptr);
  EXPECT_EQ(p.buffer(mma->a.buffer).space, Space::Global);
  verify_group_program(p);  // as lowered: valid
  auto expect_error = [&](const std::string& operand) {
    try {
      verify_group_program(p);
      ADD_FAILURE() << "no error for " << operand;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Verify);
      EXPECT_NE(std::string(e.what()).find("operand " + operand + " is global"), std::string::npos) << e.what();
    }
  };
  const Expr m_valid = mma->m_valid, n_valid = mma->n_valid;
  mma->m_valid = nullptr;  // a's rows unbounded
  expect_error("a A");
  mma->m_valid = m_valid;
  mma->n_valid = nullptr;  // b's columns unbounded
  expect_error("b B");
  mma->n_valid = n_valid;
}

// An accumulator whose fill is skipped and whose one way out is a store to a tensor
// window of its shape lives in that window when the run allows it (cpu_emit.cpp,
// find_homes): the micro-kernels write C and the store's copy is skipped. The
// numbers are checked by the GEMM tests on each ISA (C poisoned, ldc past N, guard
// rows past M, alpha and beta that keep it in the fragment, ragged tiles, the packed
// plans' worker parts); here, which programs home it.
TEST(CpuInPlace, AccumulatorLivesInItsStoreWindowOnlyWhenNothingElseUsesIt) {
  auto program_of = [](const Plan& p) { return compile_to_group(gemm_kernel(DType::F32), p, CompileOptions{}).program; };
  auto home_line = [](const std::string& source) {  // the general body's, in the last unit
    const std::string unit = split_cpu_units(source).back();
    const size_t at = unit.find("const bool tsl_home_0 = ");
    return at == std::string::npos ? std::string() : unit.substr(at, unit.find('\n', at) - at);
  };
  GroupProgram direct = program_of(default_gemm_plan(TargetKind::Cpu, 32, 32, 32));
  const std::string unit = emit_cpu(direct);
  EXPECT_NE(home_line(unit).find("s_alpha == 1 && sd_beta == 0"), std::string::npos) << unit;
  EXPECT_NE(unit.find("if (!tsl_home_0)"), std::string::npos) << unit;
  // Several workers hold row parts of the fragment (the packed plans): homed, each
  // part a block of the window; blocks across a ragged tile's edge go through a
  // local tile, emitted (tsl_bounce) or in tessel (cpu_mma_blocks' mode 2). On
  // AVX-512 the 8 edge columns run in cpu_mma_edge (no kernel: cpu_mma_blocks).
  Plan packed = default_gemm_plan(TargetKind::Cpu, 2100, 40, 20, GemmPrecision::F32, "", 4);
  ASSERT_GT(packed.workers, 1) << packed.to_string();
  const std::string parts = emit_cpu(program_of(packed), CpuIsa::Avx2);
  EXPECT_NE(home_line(parts).find("s_alpha == 1"), std::string::npos) << parts;
  EXPECT_NE(parts.find("tsl_bounce(tsl_ukr_"), std::string::npos) << parts;
  if (cpu_prebuilt_count > 0) {
    const std::string masked = emit_cpu(program_of(packed), CpuIsa::Avx512);
    EXPECT_EQ(masked.find("tsl_bounce("), std::string::npos) << masked;
    EXPECT_NE(masked.find("tsl_mma_blocks((const void*)0, "), std::string::npos) << masked;
  }
  Plan long_k = default_gemm_plan(TargetKind::Cpu, 1400, 100, 200, GemmPrecision::F32, "", 4);
  ASSERT_GT(long_k.workers, 1) << long_k.to_string();
  const std::string built_in = emit_cpu(program_of(long_k));
  EXPECT_NE(built_in.find("(tsl_home_0 ? 2 : 0), overwrite);"), std::string::npos) << built_in;
  // The fragment read again after its store: not homed.
  GroupProgram again = direct;
  GroupOp copy;
  for (const GroupOp& op : again.body)
    if (op.kind == GroupOpKind::If)
      for (const GroupOp& inner : op.bodies.at(0))
        if (inner.kind == GroupOpKind::FragStore) copy = inner;
  ASSERT_EQ(copy.kind, GroupOpKind::FragStore);
  copy.id = 1000;
  again.body.push_back(copy);
  EXPECT_EQ(emit_cpu(again).find("tsl_home_"), std::string::npos);
  // A store bounded short of the mma's valid part (20 of 32 rows): homed only while
  // the mma's valid rows are exactly the rows the store writes.
  GroupProgram short_store = direct;
  for (GroupOp& op : short_store.body)
    if (op.kind == GroupOpKind::If)
      for (GroupOp& inner : op.bodies.at(0))
        if (inner.kind == GroupOpKind::FragStore) inner.dst_row_bound = expr_const(20);
  const std::string bounded = emit_cpu(short_store);
  EXPECT_NE(home_line(bounded).find("== tsl_min(32, INT64_C(20) - ("), std::string::npos) << bounded;
  // The tensor read before the store (a load of C in the k loop would see partial
  // sums): not homed.
  GroupProgram early = direct;
  GroupOp load;
  for (const GroupOp& op : early.body)
    if (op.kind == GroupOpKind::If)
      for (const GroupOp& inner : op.bodies.at(1))
        if (inner.kind == GroupOpKind::FragLoad) load = inner;
  ASSERT_EQ(load.kind, GroupOpKind::FragLoad);
  load.id = 1001;
  for (GroupOp& op : early.body)
    if (op.kind == GroupOpKind::For) op.bodies.at(0).push_back(load);
  EXPECT_EQ(emit_cpu(early).find("tsl_home_"), std::string::npos);
}

// The same home for C += A B (alpha and beta 1; cpu_emit.cpp, adds_in_place): the
// k loop's mmas add to C's old values from the first k step, and the if's other
// branch (load C, scale by beta, add, store) does not run. The numbers are the GEMM
// and BLAS tests' (alpha 1 and beta 1 on every ISA, ragged tiles, k past the tile,
// worker parts, netlib's xblat3s); here, which programs add in place.
TEST(CpuInPlace, AccumulatorAddsToItsWindowOnlyWhereTheOtherBranchIsCPlusIt) {
  const GroupProgram direct =
      compile_to_group(gemm_kernel(DType::F32), default_gemm_plan(TargetKind::Cpu, 32, 32, 32), CompileOptions{})
          .program;
  auto add_line = [](const std::string& source) {  // the general body's, in the last unit
    const std::string unit = split_cpu_units(source).back();
    const size_t at = unit.find("const bool tsl_addhome_0 = ");
    return at == std::string::npos ? std::string() : unit.substr(at, unit.find('\n', at) - at);
  };
  const std::string unit = emit_cpu(direct);
  EXPECT_NE(add_line(unit).find("s_alpha == 1 && !(sd_beta == 0) && s_beta == 1"), std::string::npos) << unit;
  EXPECT_NE(unit.find("if (!tsl_addhome_0)"), std::string::npos) << unit;
  EXPECT_NE(unit.find("overwrite = (tsl_whole_0 && !tsl_addhome_0 && "), std::string::npos) << unit;
  // Each change to the other branch keeps the home for beta 0 and drops the add.
  auto other_branch = [](GroupProgram& p) -> std::vector<GroupOp>& {
    for (GroupOp& op : p.body)
      if (op.kind == GroupOpKind::If) return op.bodies.at(1);
    throw std::logic_error("no if");
  };
  auto expect_no_add = [&](const std::function<void(std::vector<GroupOp>&)>& change, const char* what) {
    GroupProgram p = direct;
    change(other_branch(p));
    const std::string changed = emit_cpu(p);
    EXPECT_EQ(changed.find("tsl_addhome_"), std::string::npos) << what << "\n" << changed;
    EXPECT_NE(changed.find("const bool tsl_home_0 = "), std::string::npos) << what;
  };
  auto find = [](std::vector<GroupOp>& ops, GroupOpKind kind) -> GroupOp& {
    for (GroupOp& op : ops)
      if (op.kind == kind) return op;
    throw std::logic_error("no such op");
  };
  expect_no_add([&](auto& ops) { find(ops, GroupOpKind::FragLoad).src.row = expr_const(1); }, "C read a row down");
  expect_no_add([&](auto& ops) { find(ops, GroupOpKind::FragStore).dst_col_bound = expr_const(20); },
                "stored short");
  expect_no_add([&](auto& ops) { find(ops, GroupOpKind::FragLoad).transpose = true; }, "C read transposed");
  expect_no_add(
      [&](auto& ops) {
        for (GroupOp& op : ops)
          if (op.kind == GroupOpKind::Elementwise && op.ew == EwOp::Add) op.ew = EwOp::Sub;
      },
      "C subtracted");
  expect_no_add(
      [&](auto& ops) {
        for (GroupOp& op : ops)
          if (op.kind == GroupOpKind::Elementwise && op.ew == EwOp::Mul) op.ew = EwOp::Add;
      },
      "beta added to C");
}

// An mma whose a operand is a fragment (registers, group_ir.h) is valid GroupIR that
// the sim runs; the cpu target refuses it with a typed error naming the fragment.
TEST(CpuInPlace, MmaFromAFragmentIsUnsupported) {
  GroupProgram p = parse_group_program(R"(group g(sizes M; tensors A: f32[M, M] strides(M, 1) inout; scalars) {
  grid i = 1
  workers 1 grid 1x1 lanes 1
  atom fma 1x1
  buffer A: global f32 tensor A
  buffer S: shared f32[8, 8] row panel 1 versions 1
  buffer f: private f32[8, 8] row panel 1 versions 1
  buffer h: private f32[8, 8] row panel 1 versions 1
  frag.fill #0 h = 1
  frag.fill #1 f = 0
  mma #2 f += h[0, 0] * S[0, 0] 8x8x8
}
)");
  verify_group_program(p);
  try {
    emit_cpu(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("an a operand in registers (h)"), std::string::npos) << e.what();
  }
#ifdef TESSEL_WITH_CUDA
  try {  // the cuda target takes it on the mma.sync atom only
    emit_cuda(p);
    ADD_FAILURE() << "no cuda error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("needs the mma.sync atom"), std::string::npos) << e.what();
  }
#endif
}

// A library kernel compiled for the ISA through the compiler's steps (the public
// compile() caches by TileIR and plan, not by ISA), launched phase by phase on
// random inputs with every output poisoned with NaN, and compared whole with the
// FP64 evaluator.
void check_library_kernel(const std::string& name, const TileKernel& k, std::map<std::string, int64_t> sizes,
                          std::map<std::string, double> given, uint64_t seed) {
  SCOPED_TRACE(name);
  Plan plan = default_plan(k, TargetKind::Cpu, sizes);
  default_strides(k.tensors, sizes);
  auto tensors = random_tensors(k.tensors, sizes, seed);
  LaunchArgs args;
  args.sizes = sizes;
  args.scalars = random_scalars(k.scalars, given, seed);
  for (auto& [n, h] : tensors) args.tensors[n] = h.data.data();
  for (const TileKernel& phase : split_phases(k)) {
    CompiledGroup g = compile_to_group(phase, plan, CompileOptions{});
    compile_cpu(g.program)->run(args, 2);
  }
  EvalArgs ea;
  ea.sizes = sizes;
  ea.tiles = plan.tiles;
  ea.scalars = args.scalars;
  for (auto& [n, h] : tensors) ea.tensors[n] = std::span<double>(h.oracle);
  evaluate(k, ea);
  for (const TensorParam& t : k.tensors) {
    if (t.access == Access::In) continue;
    const HostTensor& h = tensors[t.name];
    double e = relative_error(std::span<const float>(h.data), std::span<const double>(h.oracle));
    EXPECT_LE(e, check_bound(k, t.dtype, sizes)) << name << ": tensor " << t.name << " (" << plan.to_string() << ")";
  }
}

TEST_P(CpuIsaPath, LibraryKernelsOnRaggedShapes) {
  uint64_t seed = 100 + static_cast<uint64_t>(GetParam());
  check_library_kernel("softmax", softmax_kernel(), {{"M", 37}, {"N", 75}, {"ldx", 80}, {"ldy", 77}}, {}, seed++);
  check_library_kernel("layernorm", layernorm_kernel(), {{"M", 29}, {"N", 53}, {"ldx", 53}, {"ldy", 60}},
                       {{"eps", 1e-5}}, seed++);
  check_library_kernel("col_sum", col_sum_kernel(), {{"M", 41}, {"N", 35}, {"ldx", 39}}, {}, seed++);
  check_library_kernel("add_broadcast", add_broadcast_kernel(), {{"M", 23}, {"N", 45}, {"lda", 45}, {"ldc", 50}},
                       {}, seed++);
  check_library_kernel("batched_gemm", batched_gemm_kernel(),
                       {{"batch", 3}, {"M", 19}, {"N", 23}, {"K", 17}, {"lda", 17}, {"sa", 19 * 17}, {"ldb", 23},
                        {"sb", 17 * 23}, {"ldc", 25}, {"sc", 19 * 25}},
                       {}, seed++);
  check_library_kernel("gemm_bias_gelu", gemm_epilogue_kernel(BiasAlong::Rows, Activation::Gelu),
                       {{"M", 21}, {"N", 35}, {"K", 13}, {"lda", 13}, {"ldb", 35}, {"ldc", 35}}, {}, seed++);
  // Whole 64-key blocks and a ragged last one: K^T's copy takes the transposing
  // block copy (tsl_transpose_f32, the ISA's lanes square) and the guarded one.
  const std::map<std::string, int64_t> attention_sizes = {{"B", 1}, {"Hq", 2}, {"Hkv", 1},
                                                          {"Sq", 70}, {"Skv", 150}, {"D", 64}};
  for (AttentionMask mask : {AttentionMask::None, AttentionMask::Causal})
    check_library_kernel("attention", attention_kernel(mask), attention_sizes, {}, seed++);
  const TileKernel k = attention_kernel();
  const Plan plan = default_plan(k, TargetKind::Cpu, attention_sizes);
  EXPECT_NE(emit_cpu(compile_to_group(k, plan, CompileOptions{}).program, GetParam()).find("tsl_transpose_f32(&"),
            std::string::npos);
}

// Z (C x R) = X^T through a transposed view of X (strides(1, C)) and through a
// frag.load transpose of a plain window: 32 x 32 tiles, so whole tiles take the
// register-transposed block copy (tsl_transpose_f32) on every ISA and the ragged
// ones the guarded copy. Exact: a copy computes nothing.
TEST_P(CpuIsaPath, TransposingLoadsInBlocksAndAtTheEdges) {
  for (const char* load :
       {"frag.load #0 z <- X[(i * 32), (j * 32)] strides(1, C) guard src(C, R)",
        "frag.load #0 z <- X[(j * 32), (i * 32)] strides(C, 1) transpose guard src(R, C)"}) {
    SCOPED_TRACE(load);
    GroupProgram p = parse_group_program(test::transpose_program(32, 1, 1, load));
    verify_group_program(p);
    EXPECT_NE(emit_cpu(p, GetParam()).find("tsl_transpose_f32(&"), std::string::npos);
    const int64_t rows = 75, cols = 70;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> x(rows * cols), z(rows * cols, std::nanf(""));
    for (float& v : x) v = dist(rng);
    LaunchArgs args;
    args.sizes = {{"R", rows}, {"C", cols}};
    args.tensors = {{"X", x.data()}, {"Z", z.data()}};
    EXPECT_EQ(run_sim(p, args).race_count, 0);
    std::fill(z.begin(), z.end(), std::nanf(""));
    compile_cpu(p)->run(args, 2);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(z[c * rows + r], x[r * cols + c]) << r << ", " << c;
  }
}

// The ISA is part of the emitted source and of the compiler's flags, so each path
// has a cache entry of its own.
TEST_P(CpuIsaPath, EmittedForTheIsaAndCachedApart) {
  const CpuIsaInfo& isa = cpu_isa_info(GetParam());
  std::string src = emit_cpu(hand_gemm_program(HandGemm{}));
  EXPECT_NE(src.find("vector_size(" + std::to_string(isa.lanes * 4) + ")"), std::string::npos) << isa.name;
  EXPECT_NE(src.find(std::string("cpu target, ") + isa.name), std::string::npos);
  EXPECT_EQ(src.find("#include"), std::string::npos);
  HandGemm small;
  small.bm = 24, small.bn = 32, small.bk = 8;
  std::string here = compile_cpu(hand_gemm_program(small))->info().cache_path;
  setenv("TESSEL_CPU_ISA", "sse", 1);
  std::string sse = compile_cpu(hand_gemm_program(small))->info().cache_path;
  EXPECT_EQ(here == sse, GetParam() == CpuIsa::Sse) << here << " vs " << sse;
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuIsaPath, ::testing::Values(CpuIsa::Avx512, CpuIsa::Avx2, CpuIsa::Sse),
                         [](const ::testing::TestParamInfo<CpuIsa>& i) {
                           return std::string(cpu_isa_info(i.param).name);
                         });

// docs/cpu_microkernel.md's table: the register blocks of the large shapes' atom on
// each ISA.
TEST(CpuIsa, RegisterBlocksOfTheLargeShapeAtomAsDocumented) {
  const Plan plan = default_gemm_plan(TargetKind::Cpu, 2000, 2000, 2000);
  ASSERT_EQ(plan.atom_m, 12);
  ASSERT_EQ(plan.atom_n, 32);
  const std::pair<CpuIsa, std::array<int64_t, 2>> documented[] = {
      {CpuIsa::Avx512, {12, 2}}, {CpuIsa::Avx2, {6, 2}}, {CpuIsa::Sse, {4, 3}}};
  for (const auto& [isa, block] : documented) {
    const CpuRegisterBlock b = cpu_microkernel_blocking(plan.atom_m, plan.atom_n, cpu_isa_info(isa));
    EXPECT_EQ(b.rows, block[0]) << cpu_isa_info(isa).name;
    EXPECT_EQ(b.vecs, block[1]) << cpu_isa_info(isa).name;
  }
}

// How an AVX-512 kernel broadcasts A's element (cpu_microkernel.cpp): once into a
// register where the row has several B vectors (12 x 32: 12 broadcasts for 24
// FMAs a k step, not 24 {1to16} loads), as the FMA's {1to16} operand where it has
// one (16 x 16), and by GCC's own scalar times vector in a pass of one row (1 x 64).
TEST(CpuIsa, AvxFiveTwelveKernelsBroadcastEachElementOfAOnce) {
  const CpuIsaInfo& isa = cpu_isa_info(CpuIsa::Avx512);
  auto count = [](const std::string& text, const std::string& what) {
    int64_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  for (bool built_in : {false, true}) {
    SCOPED_TRACE(built_in ? "built in" : "emitted");
    const int64_t ld = built_in ? kCpuRuntimeLd : 64;
    const std::string wide = emit_cpu_microkernel(12, 32, ld, ld, isa, false, built_in);
    EXPECT_EQ(count(wide, "{1to16"), 0) << wide;
    EXPECT_GT(count(wide, "vbroadcastss"), 0) << wide;
    EXPECT_EQ(count(wide, " += av"), 2 * count(wide, "vbroadcastss")) << wide;
    const std::string narrow = emit_cpu_microkernel(16, 16, ld, ld, isa, false, built_in);
    EXPECT_EQ(count(narrow, "vbroadcastss"), 0) << narrow;
    EXPECT_GT(count(narrow, "{1to16"), 0) << narrow;
    const std::string row = emit_cpu_microkernel(1, 64, ld, ld, isa, false, built_in);
    EXPECT_EQ(count(row, "vbroadcastss") + count(row, "{1to16"), 0) << row;
  }
}

// Built-in kernels of one accumulator copy have GCC unroll their k loop by 4
// (cpu_microkernel.cpp, kBuiltInUnrollK); kernels emitted into units do not (compile
// time), nor do loops over several accumulator copies (k is split over them already).
TEST(CpuIsa, BuiltInKernelsUnrollTheirKLoop) {
  for (CpuIsa path : {CpuIsa::Avx2, CpuIsa::Avx512}) {
    const CpuIsaInfo& isa = cpu_isa_info(path);
    const std::string built_in = emit_cpu_microkernel(12, 32, kCpuRuntimeLd, kCpuRuntimeLd, isa, false, true);
    const size_t pragma = built_in.find("#pragma GCC unroll 4\n    for (; k < kc; ++k");
    EXPECT_NE(pragma, std::string::npos) << built_in;
    EXPECT_EQ(emit_cpu_microkernel(12, 32, 64, 64, isa).find("#pragma GCC unroll"), std::string::npos);
    const std::string one_row = emit_cpu_microkernel(1, 16, kCpuRuntimeLd, kCpuRuntimeLd, isa, false, true);
    EXPECT_EQ(one_row.find("#pragma GCC unroll"), std::string::npos) << one_row;
  }
}

TEST(CpuIsa, UnknownOrUnsupportedNameIsAnInvalidArgument) {
  setenv("TESSEL_CPU_ISA", "avx1024", 1);
  try {
    cpu_isa();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("avx1024"), std::string::npos) << e.what();
  }
  unsetenv("TESSEL_CPU_ISA");
  EXPECT_EQ(cpu_isa(), detected_cpu_isa());
}

}  // namespace
}  // namespace tessel::testing
