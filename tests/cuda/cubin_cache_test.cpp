// The cuda kernel cache never trusts its disk blindly: each kernel is one sealed
// entry (cubin, PTX and ptxas log, with a stamp naming tessel's version, the arch
// and NVRTC's version), and a truncated, corrupted or foreign entry is reported
// once and rebuilt, never handed to the driver. Needs NVRTC, not a GPU. Each test
// has its own empty cache directory.
#include <gtest/gtest.h>

#include <cstring>

#ifdef TESSEL_WITH_CUDA
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "../file_test_util.h"
#include "compiler/compile.h"
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "runtime/kernel_cache.h"
#include "target/cuda/cuda_kernel.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

using test::count;
using test::slurp;
using test::spill;

class CubinCache : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* s = std::getenv("TESSEL_CACHE_DIR");
    had_dir_ = s != nullptr;
    if (s) saved_dir_ = s;
    char dir[] = "/tmp/tessel-test-cubin-cache-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    setenv("TESSEL_CACHE_DIR", dir, 1);
    clear_cuda_memory_cache();
  }
  void TearDown() override {
    if (had_dir_) setenv("TESSEL_CACHE_DIR", saved_dir_.c_str(), 1);
    else unsetenv("TESSEL_CACHE_DIR");
    clear_cuda_memory_cache();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A small f32 GEMM kernel: quick for NVRTC.
  static GroupProgram program() {
    Plan plan = default_gemm_plan(TargetKind::Cuda, 64, 64, 64, GemmPrecision::F32);
    return compile_to_group(gemm_kernel(), plan, CompileOptions{}).program;
  }

  // Compiles into the cache, then forgets the memory cache: what the next process sees.
  std::shared_ptr<const CudaKernel> cached(const GroupProgram& p) {
    auto k = compile_cuda(p, "sm_90");
    clear_cuda_memory_cache();
    return k;
  }

  // Damages the entry with `damage`, then checks that the next compile warns once
  // with `reason`, rebuilds the same kernel with NVRTC, and leaves a whole entry
  // behind that the next process loads without a word.
  void expect_rebuilt(const std::function<void(const std::string&)>& damage, const std::string& reason) {
    GroupProgram p = program();
    auto first = cached(p);
    const std::string path = first->info().cache_path;
    ASSERT_FALSE(first->info().from_disk);
    const std::string good = slurp(path);
    damage(path);
    ASSERT_NE(slurp(path), good) << "the damage changed nothing";

    ::testing::internal::CaptureStderr();
    auto rebuilt = compile_cuda(p, "sm_90");
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(rebuilt->info().from_disk) << "the damaged entry was loaded";
    EXPECT_GT(rebuilt->info().nvrtc.compile_ms, 0) << "the damaged entry was loaded";
    EXPECT_EQ(count(err, "rebuilding"), 1u) << err;
    EXPECT_NE(err.find(reason), std::string::npos) << err;
    EXPECT_NE(err.find(path), std::string::npos) << err;
    EXPECT_TRUE(rebuilt->info().nvrtc.cubin == first->info().nvrtc.cubin) << "cubin differs";

    clear_cuda_memory_cache();
    ::testing::internal::CaptureStderr();
    auto again = compile_cuda(p, "sm_90");
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    EXPECT_TRUE(again->info().from_disk);
    EXPECT_TRUE(again->info().nvrtc.cubin == first->info().nvrtc.cubin) << "cubin differs";
  }

  bool had_dir_ = false;
  std::string saved_dir_, dir_;
};

TEST_F(CubinCache, OneSealedEntryHoldsCubinPtxAndLogAndTheNextProcessLoadsIt) {
  GroupProgram p = program();
  auto first = cached(p);
  const CudaCompileInfo& a = first->info();
  EXPECT_FALSE(a.from_disk);
  EXPECT_EQ(a.cache_path.rfind(dir_ + "/cuda-", 0), 0u) << a.cache_path;
  EXPECT_NE(a.cache_path.find("-sm_90.entry"), std::string::npos) << a.cache_path;
  // One file per kernel: nothing else is left in the directory.
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir_)) files.push_back(e.path().string());
  EXPECT_EQ(files, std::vector<std::string>{a.cache_path});
  std::string entry = slurp(a.cache_path);
  EXPECT_NE(entry.find("arch sm_90\n"), std::string::npos);
  EXPECT_NE(entry.find("nvrtc " + nvrtc_version() + "\n"), std::string::npos);
  EXPECT_NE(entry.find(std::string("tessel ") + kTesselVersion + "\n"), std::string::npos);

  ::testing::internal::CaptureStderr();
  auto again = compile_cuda(p, "sm_90");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  const CudaCompileInfo& b = again->info();
  EXPECT_TRUE(b.from_disk);
  EXPECT_EQ(b.cache_path, a.cache_path);
  EXPECT_TRUE(b.nvrtc.cubin == a.nvrtc.cubin) << "cubin differs";
  EXPECT_EQ(b.nvrtc.ptx, a.nvrtc.ptx);
  EXPECT_EQ(b.nvrtc.log, a.nvrtc.log);
  EXPECT_EQ(b.nvrtc.registers, a.nvrtc.registers);  // the ptxas report is read back
  EXPECT_GT(b.nvrtc.registers, 0);
  EXPECT_EQ(slurp(a.cache_path), entry) << "loading rewrote the entry";
}

TEST_F(CubinCache, TruncatedEntryIsRebuilt) {
  expect_rebuilt([](const std::string& path) { fs::resize_file(path, fs::file_size(path) / 2); }, "truncated");
}

TEST_F(CubinCache, EntryMissingItsLastByteIsRebuilt) {
  expect_rebuilt([](const std::string& path) { fs::resize_file(path, fs::file_size(path) - 1); }, "truncated");
}

TEST_F(CubinCache, EmptyEntryIsRebuilt) {
  expect_rebuilt([](const std::string& path) { spill(path, ""); }, "truncated");
}

TEST_F(CubinCache, FlippedByteInTheCubinIsRebuilt) {
  expect_rebuilt(
      [](const std::string& path) {
        std::string s = slurp(path);
        size_t at = s.find("\x7f" "ELF");
        ASSERT_NE(at, std::string::npos);
        s[at + 64] ^= 0x20;
        spill(path, s);
      },
      "corrupted");
}

TEST_F(CubinCache, FlippedByteInTheLogIsRebuilt) {
  expect_rebuilt(
      [](const std::string& path) {
        // The log is the last part of the payload: header "... ptx P\nlog L\n", then
        // cubin, PTX and log back to back. (On the GPU machine the log may lack
        // ptxas's report, so the byte is found by position, not by content.)
        std::string s = slurp(path);
        size_t tag = s.find("\nlog ");
        ASSERT_NE(tag, std::string::npos);
        size_t header_end = s.find('\n', tag + 1) + 1;
        auto size_of = [&](const char* name) {
          size_t at = s.find(std::string("\n") + name + " ") + std::strlen(name) + 2;
          return static_cast<size_t>(std::stoull(s.substr(at, s.find('\n', at) - at)));
        };
        size_t log_at = header_end + size_of("cubin") + size_of("ptx");
        ASSERT_GT(size_of("log"), 0u);
        ASSERT_LT(log_at, s.size());
        s[log_at] ^= 0x01;
        spill(path, s);
      },
      "corrupted");
}

// The same length, so only the stamp differs: an entry built for another arch.
TEST_F(CubinCache, EntryStampedForAnotherArchIsRebuilt) {
  expect_rebuilt(
      [](const std::string& path) {
        std::string s = slurp(path);
        size_t at = s.rfind("arch sm_90\n");
        ASSERT_NE(at, std::string::npos);
        s.replace(at, 11, "arch sm_80\n");
        spill(path, s);
      },
      "was built for arch 'sm_80', not 'sm_90'");
}

TEST_F(CubinCache, EntryStampedForAnotherNvrtcIsRebuilt) {
  expect_rebuilt(
      [](const std::string& path) {
        std::string s = slurp(path);
        std::string mine = "nvrtc " + nvrtc_version() + "\n", theirs = mine;
        for (char& c : theirs)
          if (c >= '0' && c <= '9') c = c == '9' ? '8' : '9';  // same length: only the stamp differs
        size_t at = s.rfind(mine);
        ASSERT_NE(at, std::string::npos);
        s.replace(at, mine.size(), theirs);
        spill(path, s);
      },
      "was built for nvrtc '9");
}

// A bare cubin where the entry should be (an older tessel's layout, or anyone else's file).
TEST_F(CubinCache, ForeignFileIsRebuilt) {
  expect_rebuilt(
      [](const std::string& path) {
        std::string s = slurp(path);
        size_t at = s.find("\ncubin ") + 7;
        spill(path, s.substr(s.find("\x7f" "ELF"), std::stoul(s.substr(at, s.find('\n', at) - at))));
      },
      "not written by tessel");
}

// Sealed with the right stamp, but the payload is not a cubin, PTX and log.
TEST_F(CubinCache, RightlyStampedGarbageIsRebuilt) {
  expect_rebuilt(
      [](const std::string& path) {
        std::string s = slurp(path);
        size_t from = s.rfind("tessel-cache-entry\n") + 19, to = s.rfind("bytes ");
        std::string stamp = s.substr(from, to - from);
        spill(path, seal_cache_entry("tessel-cuda 1\ncubin 999999\nptx 0\nlog 0\nnot a cubin", stamp));
      },
      "corrupted (not a cubin, PTX and log)");
}

}  // namespace
}  // namespace tessel

#else
TEST(CubinCache, Skipped) { GTEST_SKIP() << "tessel was built without the CUDA toolkit"; }
#endif
