// The cpu JIT: the memory and disk caches, compile errors that carry what a user
// needs to reproduce them, and launch argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "gemm_oracle.h"
#include "hand_gemm.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "target/cpu/cpu_emit.h"
#include "target/cpu/cpu_isa.h"
#include "target/cpu/cpu_jit.h"
#include "tessel/error.h"

namespace tessel::testing {
namespace {

// Each test gets an empty cache directory and the default compiler.
class CpuJit : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/tessel-test-jit-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    setenv("TESSEL_CACHE_DIR", dir, 1);
    const char* cxx = std::getenv("CXX");
    saved_cxx_ = cxx ? cxx : "";
    had_cxx_ = cxx != nullptr;
    clear_cpu_memory_cache();
  }
  void TearDown() override {
    if (had_cxx_) setenv("CXX", saved_cxx_.c_str(), 1);
    else unsetenv("CXX");
    std::filesystem::remove_all(dir_);
  }

  // A program nobody else compiles, so the caches start cold for it.
  static GroupProgram small_gemm(int64_t bm) {
    HandGemm plan;
    plan.bm = bm, plan.bn = 32, plan.bk = 8;
    return hand_gemm_program(plan);
  }

  Error compile_error(const GroupProgram& p) {
    try {
      compile_cpu(p);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "compile_cpu did not fail";
    return Error(ErrorKind::Runtime, "");
  }

  std::string dir_, saved_cxx_;
  bool had_cxx_ = false;
};

TEST_F(CpuJit, SecondCompileComesFromMemory) {
  GroupProgram p = small_gemm(12);
  auto first = compile_cpu(p);
  EXPECT_FALSE(first->info().from_memory);
  EXPECT_FALSE(first->info().from_disk);
  EXPECT_GT(first->info().compile_ms, 0);
  auto second = compile_cpu(p);
  EXPECT_TRUE(second->info().from_memory);
  EXPECT_EQ(second->info().compile_ms, 0);
  EXPECT_EQ(second->info().cache_path, first->info().cache_path);
  check_gemm(*second, {13, 29, 7, 1.0, 0.5}, 1);
}

TEST_F(CpuJit, FreshProcessLoadsFromDisk) {
  GroupProgram p = small_gemm(24);
  auto first = compile_cpu(p);
  ASSERT_TRUE(std::filesystem::exists(first->info().cache_path));
  EXPECT_EQ(first->info().cache_path.rfind(dir_, 0), 0u) << "the .so lives in TESSEL_CACHE_DIR";
  clear_cpu_memory_cache();  // what a new process sees: only the disk
  auto second = compile_cpu(p);
  EXPECT_TRUE(second->info().from_disk);
  EXPECT_FALSE(second->info().from_memory);
  EXPECT_EQ(second->info().compile_ms, 0);
  check_gemm(*second, {30, 40, 20, 0.5, 0.0}, 2);
}

TEST_F(CpuJit, DifferentProgramsDifferentFiles) {
  auto a = compile_cpu(small_gemm(12));
  auto b = compile_cpu(small_gemm(36));
  EXPECT_NE(a->info().cache_path, b->info().cache_path);
}

TEST_F(CpuJit, MissingCompilerIsACompileErrorWithTheCommand) {
  setenv("CXX", "/nonexistent/c++", 1);
  Error e = compile_error(small_gemm(48));
  EXPECT_EQ(e.kind(), ErrorKind::Compile);
  std::string msg = e.what();
  EXPECT_NE(msg.find("command: /nonexistent/c++ -march="), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot be started"), std::string::npos) << msg;
  EXPECT_NE(msg.find("source: " + dir_), std::string::npos) << msg;
}

TEST_F(CpuJit, SourceThatFailsCarriesCompilerDiagnostics) {
  GroupProgram p = small_gemm(60);
  // A copy whose row names a symbol that nothing defines: emitted as-is, the
  // compiler rejects it.
  p.body[1].bodies[0][0].src.row = expr_sym("undefined_row");
  Error e = compile_error(p);
  EXPECT_EQ(e.kind(), ErrorKind::Compile);
  std::string msg = e.what();
  EXPECT_NE(msg.find("v_undefined_row"), std::string::npos) << msg;  // compiler stderr
  EXPECT_NE(msg.find("command: "), std::string::npos) << msg;
  size_t at = msg.find("source: ");
  ASSERT_NE(at, std::string::npos);
  std::string path = msg.substr(at + 8, msg.find('\n', at) - at - 8);
  EXPECT_TRUE(std::filesystem::exists(path)) << path;
}

// A program with tiny kernels is emitted as two units (cpu_emit.h, kCpuSecondUnit):
// the JIT compiles them at once and links one object, whose leaves in the first unit
// jump to the general body in the second. Every other program is one unit.
TEST_F(CpuJit, TwoUnitsCompileAtOnceIntoOneObject) {
  EXPECT_EQ(split_cpu_units(emit_cpu(small_gemm(12))).size(), 1u);
  if (cpu_isa() != CpuIsa::Avx512) GTEST_SKIP() << "tiny kernels (two units) need AVX-512";
  const GroupProgram p =
      compile_to_group(gemm_kernel(DType::F32), default_gemm_plan(TargetKind::Cpu, 13, 29, 7), CompileOptions{})
          .program;
  const std::vector<std::string> units = split_cpu_units(emit_cpu(p));
  ASSERT_EQ(units.size(), 2u);
  const std::string general =  // its definition
      "void tsl_group_general(const int64_t* sizes, const double* scalars,\n"
      "    float* const* tensors, const int64_t* group, float* scratch) {";
  EXPECT_NE(units[0].find("return tsl_general_regs("), std::string::npos) << units[0];
  EXPECT_NE(units[1].find("void tsl_general_regs("), std::string::npos) << units[1];
  EXPECT_EQ(units[0].find(general), std::string::npos) << units[0];  // declared there, not defined
  EXPECT_NE(units[1].find(general), std::string::npos) << units[1];
  EXPECT_NE(units[0].find("  tsl_bind_general(table);"), std::string::npos) << units[0];
  auto kernel = compile_cpu(p);
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  const std::string stem = kernel->info().cache_path.substr(0, kernel->info().cache_path.size() - 3);
  EXPECT_EQ(files, (std::vector<std::string>{stem + "-unit2.cpp", stem + ".cpp", stem + ".so"}));
  // The leaves (alpha 1, beta 0 or 1, A's and B's rows dense or not), and the general
  // body in the second unit (other alpha and beta).
  uint32_t seed = 700;
  for (const GemmCase& g : {GemmCase{13, 29, 7, 1.0, 0.0, 1, true}, GemmCase{13, 29, 7, 1.0, 1.0},
                            GemmCase{13, 29, 7, 0.5, 0.25, 1, true}, GemmCase{13, 29, 7, -2.0, 0.0}})
    check_gemm(*kernel, g, seed++);
  // A failure in the second unit's compile names that unit, and leaves no file behind.
  clear_cpu_memory_cache();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directory(dir_);
  const std::string cxx = dir_ + "/cxx.sh";
  {
    std::ofstream script(cxx);
    script << "#!/bin/sh\nfor a; do case \"$a\" in *-unit2.cpp) echo 'second unit refused' >&2; exit 3;; esac; done\n"
           << "exec c++ \"$@\"\n";
  }
  std::filesystem::permissions(cxx, std::filesystem::perms::owner_all);
  setenv("CXX", cxx.c_str(), 1);
  Error e = compile_error(p);
  EXPECT_EQ(e.kind(), ErrorKind::Compile);
  const std::string msg = e.what();
  EXPECT_NE(msg.find("exit status 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("second unit refused"), std::string::npos) << msg;
  const size_t source = msg.find("\n  source: ");
  ASSERT_NE(source, std::string::npos) << msg;
  EXPECT_EQ(msg.substr(msg.find('\n', source + 1) - 10, 10), "-unit2.cpp") << msg;
  files.clear();
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    if (entry.path().extension() != ".cpp" && entry.path() != cxx) files.push_back(entry.path().string());
  EXPECT_TRUE(files.empty()) << files.front();
}

TEST_F(CpuJit, OpaqueCallIsUnsupported) {
  GroupProgram p = small_gemm(12);
  GroupOp call;
  call.kind = GroupOpKind::Call;
  call.id = p.new_op_id();
  call.callee = "mystery";
  p.body.push_back(call);
  try {
    emit_cpu(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("mystery"), std::string::npos);
  }
}

TEST_F(CpuJit, LaunchArgumentsAreChecked) {
  auto kernel = compile_cpu(small_gemm(12));
  std::vector<float> A(64, 1), B(64, 1), C(64, 1);
  auto good = [&] {
    LaunchArgs a;
    a.sizes = {{"M", 4}, {"N", 4}, {"K", 4}, {"lda", 4}, {"ldb", 4}, {"ldc", 4}};
    a.scalars = {{"alpha", 1}, {"beta", 0}};
    a.tensors = {{"A", A.data()}, {"B", B.data()}, {"C", C.data()}};
    return a;
  };
  auto expect_invalid = [&](LaunchArgs a, const std::string& needle) {
    try {
      kernel->run(a, 1);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  kernel->run(good(), 1);
  EXPECT_EQ(C[0], 4.0f);
  LaunchArgs a = good();
  a.sizes.erase("K");
  expect_invalid(a, "'K'");
  a = good();
  a.sizes["N"] = -3;
  expect_invalid(a, "'N'");
  a = good();
  a.tensors["B"] = nullptr;
  expect_invalid(a, "'B'");
  a = good();
  a.tensors.erase("C");
  expect_invalid(a, "'C'");
  a = good();
  a.scalars.erase("beta");
  expect_invalid(a, "'beta'");
  // A written tensor whose rows overlap (ldc 2 < 4 columns) is refused; a read-only
  // one may overlap (a broadcast or sliding view).
  a = good();
  a.sizes["ldc"] = 2;
  expect_invalid(a, "tensor 'C': it is written (inout) but its elements overlap: stride of dim 0 (ldc) is 2");
  a = good();
  a.sizes["lda"] = 2;
  kernel->run(a, 1);
}

TEST_F(CpuJit, EmptyGridRunsNothing) {
  auto kernel = compile_cpu(small_gemm(12));
  float C = 7;
  LaunchArgs a;
  a.sizes = {{"M", 0}, {"N", 0}, {"K", 0}, {"lda", 0}, {"ldb", 0}, {"ldc", 0}};
  a.scalars = {{"alpha", 1}, {"beta", 0}};
  a.tensors = {{"A", &C}, {"B", &C}, {"C", &C}};
  kernel->run(a, 2);
  EXPECT_EQ(C, 7);
}

}  // namespace
}  // namespace tessel::testing
