// The cpu kernel cache never trusts its disk blindly: a truncated, corrupted,
// foreign or stale entry is reported once and rebuilt; processes compiling the same
// kernel at once leave one whole entry; an unwritable directory degrades to memory
// only with one warning. Each test has its own empty cache directory.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../file_test_util.h"
#include "../cpu/gemm_oracle.h"
#include "../cpu/hand_gemm.h"
#include "runtime/kernel_cache.h"
#include "target/cpu/cpu_jit.h"
#include "tessel/error.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

using test::count;
using test::slurp;
using test::spill;

class KernelCache : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/tessel-test-cache-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    for (const char* v : {"TESSEL_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
      const char* s = std::getenv(v);
      saved_.push_back({v, s ? s : "", s != nullptr});
    }
    setenv("TESSEL_CACHE_DIR", dir, 1);
    clear_cpu_memory_cache();
  }
  void TearDown() override {
    for (const Saved& s : saved_) {
      if (s.set) setenv(s.name, s.value.c_str(), 1);
      else unsetenv(s.name);
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A small GEMM program; bm picks one of several distinct kernels.
  static GroupProgram program(int64_t bm = 12) {
    HandGemm plan;
    plan.bm = bm, plan.bn = 32, plan.bk = 8;
    return hand_gemm_program(plan);
  }

  // Compiles into the cache, then forgets the memory cache: what the next process sees.
  std::string cached_entry(const GroupProgram& p) {
    auto k = compile_cpu(p);
    clear_cpu_memory_cache();
    return k->info().cache_path;
  }

  // Damages the entry with `damage`, then checks that the next compile warns once
  // with `reason`, rebuilds a correct kernel, and leaves a good entry behind.
  template <class Damage>
  void expect_rebuilt(Damage damage, const std::string& reason) {
    GroupProgram p = program();
    std::string path = cached_entry(p);
    damage(path);
    ::testing::internal::CaptureStderr();
    auto rebuilt = compile_cpu(p);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_FALSE(rebuilt->info().from_disk);
    EXPECT_GT(rebuilt->info().compile_ms, 0) << "the damaged entry was used";
    EXPECT_EQ(count(err, "rebuilding"), 1u) << err;
    EXPECT_NE(err.find(reason), std::string::npos) << err;
    EXPECT_NE(err.find(path), std::string::npos) << err;
    check_gemm(*rebuilt, {29, 37, 11, 1.0, 0.5}, 1);
    // The rebuilt entry is whole: the next process loads it without a word.
    clear_cpu_memory_cache();
    ::testing::internal::CaptureStderr();
    auto again = compile_cpu(p);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    EXPECT_TRUE(again->info().from_disk);
  }

  struct Saved {
    const char* name;
    std::string value;
    bool set;
  };
  std::vector<Saved> saved_;
  std::string dir_;
};

TEST_F(KernelCache, DirectoryPrecedence) {
  setenv("HOME", (dir_ + "/home").c_str(), 1);
  setenv("XDG_CACHE_HOME", (dir_ + "/xdg").c_str(), 1);
  setenv("TESSEL_CACHE_DIR", (dir_ + "/explicit").c_str(), 1);
  EXPECT_EQ(kernel_cache_dir(), dir_ + "/explicit");
  unsetenv("TESSEL_CACHE_DIR");
  EXPECT_EQ(kernel_cache_dir(), dir_ + "/xdg/tessel");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(kernel_cache_dir(), dir_ + "/home/.cache/tessel");
  EXPECT_TRUE(fs::is_directory(dir_ + "/home/.cache/tessel")) << "created on first use";
  // And the cpu JIT puts its kernels there.
  auto k = compile_cpu(program());
  EXPECT_EQ(k->info().cache_path.rfind(dir_ + "/home/.cache/tessel/", 0), 0u) << k->info().cache_path;
}

TEST_F(KernelCache, GoodEntryLoadsFromDisk) {
  GroupProgram p = program();
  cached_entry(p);
  ::testing::internal::CaptureStderr();
  auto k = compile_cpu(p);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(k->info().from_disk);
  check_gemm(*k, {13, 40, 9, 1.0, 0.0}, 2);
}

TEST_F(KernelCache, TruncatedEntryIsRebuilt) {
  expect_rebuilt([](const std::string& path) {
    std::string s = slurp(path);
    spill(path, s.substr(0, s.size() / 2));
  }, "truncated");
}

TEST_F(KernelCache, EmptyEntryIsRebuilt) {
  expect_rebuilt([](const std::string& path) { spill(path, ""); }, "truncated");
}

TEST_F(KernelCache, CorruptedEntryIsRebuilt) {
  // One flipped byte in the middle of the code: the checksum catches it.
  expect_rebuilt([](const std::string& path) {
    std::string s = slurp(path);
    s[s.size() / 3] ^= 0x5a;
    spill(path, s);
  }, "corrupted");
}

TEST_F(KernelCache, ForeignEntryIsRebuilt) {
  // A file tessel did not write (here: some other shared object, unsealed).
  expect_rebuilt([](const std::string& path) {
    std::string s = slurp(path);
    std::string why;
    ASSERT_TRUE(check_cache_entry(s, "", &why)) << why;
    spill(path, s.substr(0, s.find("tessel-cache-entry\n")));
  }, "not written by tessel");
}

// Reseals an entry's payload with one stamp line changed: a whole entry, written
// by a tessel that differs in `key`.
void restamp(const std::string& path, const std::string& key, const std::string& value) {
  std::string s = slurp(path);
  size_t footer = s.rfind("tessel-cache-entry\n");
  ASSERT_NE(footer, std::string::npos);
  std::string stamp;
  std::istringstream lines(s.substr(footer + 19));
  for (std::string line; std::getline(lines, line);) {
    std::string k = line.substr(0, line.find(' '));
    if (k == "bytes" || k == "fnv1a64" || k == "tessel-footer") continue;
    stamp += (k == key ? key + " " + value : line) + "\n";
  }
  spill(path, seal_cache_entry(std::string_view(s).substr(0, footer), stamp));
}

TEST_F(KernelCache, EntryFromAnotherCompilerIsRebuilt) {
  expect_rebuilt([](const std::string& path) { restamp(path, "compiler", "c++ (GCC) 4.8.5"); },
                 "built for compiler 'c++ (GCC) 4.8.5'");
}

TEST_F(KernelCache, EntryFromAnotherCpuIsRebuilt) {
  expect_rebuilt([](const std::string& path) { restamp(path, "cpu", "0123456789abcdef"); },
                 "built for cpu '0123456789abcdef'");
}

TEST_F(KernelCache, EntryFromAnotherTesselVersionIsRebuilt) {
  expect_rebuilt([](const std::string& path) { restamp(path, "tessel", "0.0.1"); },
                 "built for tessel '0.0.1', not '" + std::string(kTesselVersion) + "'");
}

TEST_F(KernelCache, SealedEntryChecks) {
  std::string entry = seal_cache_entry("payload bytes", "tessel 1\ncompiler x\n"), why;
  EXPECT_TRUE(check_cache_entry(entry, "tessel 1\ncompiler x\n", &why)) << why;
  EXPECT_FALSE(check_cache_entry(entry, "tessel 1\ncompiler y\n", &why));
  EXPECT_EQ(why, "was built for compiler 'x', not 'y'");
  EXPECT_FALSE(check_cache_entry(entry, "tessel 1\ncompiler x\nflags -O3\n", &why));
  EXPECT_EQ(why, "was built for flags '(none)', not '-O3'");
  // A cut anywhere, however small, is caught.
  for (size_t cut = 0; cut < entry.size(); ++cut)
    EXPECT_FALSE(check_cache_entry(entry.substr(0, cut), "tessel 1\ncompiler x\n", &why)) << cut;
  // So is any single flipped bit.
  for (size_t i = 0; i < entry.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = entry;
      bad[i] ^= static_cast<char>(1 << bit);
      EXPECT_FALSE(check_cache_entry(bad, "tessel 1\ncompiler x\n", &why)) << i << " bit " << bit;
    }
}

TEST_F(KernelCache, ConcurrentProcessesLeaveOneWholeEntry) {
  // Several processes compile the same kernel at the same moment (they all wait on
  // one pipe, then race); each must get a working kernel and the directory must end
  // with one whole entry and no temporary files.
  GroupProgram p = program(24);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(go[1]);
      char c;
      (void)!read(go[0], &c, 1);  // returns at EOF, when the parent closes its end
      int status = 1;
      try {
        auto k = compile_cpu(p);
        status = k->info().compile_ms > 0 || k->info().from_disk ? 0 : 2;
      } catch (const Error& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  close(go[0]);
  close(go[1]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  std::vector<std::string> sos, others;
  for (const auto& e : fs::directory_iterator(dir_)) {
    std::string name = e.path().filename();
    (e.path().extension() == ".so" ? sos : others).push_back(name);
  }
  ASSERT_EQ(sos.size(), 1u);
  for (const std::string& name : others) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
  ::testing::internal::CaptureStderr();
  auto k = compile_cpu(p);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(k->info().from_disk);
  check_gemm(*k, {50, 33, 17, -1.0, 1.0}, 3);
}

TEST_F(KernelCache, UnwritableDirectoryKeepsKernelsInMemory) {
  // A cache directory that cannot be created (its parent is a file): this fails for
  // root too, unlike mode bits.
  std::string file = dir_ + "/not-a-directory";
  spill(file, "x");
  setenv("TESSEL_CACHE_DIR", (file + "/cache").c_str(), 1);
  ::testing::internal::CaptureStderr();
  auto a = compile_cpu(program(12));
  auto b = compile_cpu(program(36));  // a second kernel: no second warning
  auto c = compile_cpu(program(12));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "memory only"), 1u) << err;
  EXPECT_NE(err.find(file + "/cache"), std::string::npos) << err;
  EXPECT_TRUE(c->info().from_memory);
  check_gemm(*a, {20, 31, 5, 1.0, 0.0}, 4);
  check_gemm(*b, {40, 70, 9, 2.0, 1.0}, 5);
  // Nothing was left in a temporary build directory.
  EXPECT_TRUE(a->info().cache_path.empty()) << a->info().cache_path;
}

TEST_F(KernelCache, ReadOnlyDirectoryKeepsKernelsInMemory) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes through mode bits";
  std::string ro = dir_ + "/ro";
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  setenv("TESSEL_CACHE_DIR", ro.c_str(), 1);
  ::testing::internal::CaptureStderr();
  auto a = compile_cpu(program(12));
  std::string err = ::testing::internal::GetCapturedStderr();
  fs::permissions(ro, fs::perms::owner_all);
  EXPECT_EQ(count(err, "not writable"), 1u) << err;
  check_gemm(*a, {20, 31, 5, 1.0, 0.0}, 4);
}

}  // namespace
}  // namespace tessel::testing
