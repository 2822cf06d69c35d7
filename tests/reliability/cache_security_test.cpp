// The kernel cache loads only what this user alone could have written: the
// directory is created 0700; a directory or entry that group or others can write,
// or that someone else owns, is not loaded (one warning, then memory only); a
// symlinked entry is not followed; temporary files are created exclusively, mode
// 0600, under unpredictable names. The planted entries are valid sealed ones (the
// right footer, checksum and stamp): the footer stops accidents, not a deliberate
// plant, so each test also shows the same bytes load from a safe place.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "../cpu/gemm_oracle.h"
#include "../cpu/hand_gemm.h"
#include "../file_test_util.h"
#include "runtime/kernel_cache.h"
#include "target/cpu/cpu_jit.h"
#include "tessel/error.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

using test::count;
using test::slurp;

unsigned mode_of(const std::string& path) {
  struct stat st;
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class CacheSecurity : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/tessel-test-cache-sec-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    const char* s = std::getenv("TESSEL_CACHE_DIR");
    saved_ = s ? s : "";
    had_ = s != nullptr;
    clear_cpu_memory_cache();
  }
  void TearDown() override {
    if (had_) setenv("TESSEL_CACHE_DIR", saved_.c_str(), 1);
    else unsetenv("TESSEL_CACHE_DIR");
    clear_cpu_memory_cache();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static GroupProgram program(int64_t bm = 12) {
    HandGemm plan;
    plan.bm = bm, plan.bn = 32, plan.bk = 8;
    return hand_gemm_program(plan);
  }

  // A valid sealed entry for program(bm), built in a safe cache directory of its
  // own: its path (the file name is the kernel's key).
  std::string valid_entry(int64_t bm = 12) {
    clear_cpu_memory_cache();
    std::string safe = dir_ + "/safe-" + std::to_string(bm);
    setenv("TESSEL_CACHE_DIR", safe.c_str(), 1);
    auto k = compile_cpu(program(bm));
    clear_cpu_memory_cache();
    EXPECT_FALSE(k->info().cache_path.empty());
    return k->info().cache_path;
  }

  // Compiles program(bm) with the cache at `cache`, capturing stderr.
  std::shared_ptr<const CpuKernel> compile_at(const std::string& cache, std::string* err, int64_t bm = 12) {
    setenv("TESSEL_CACHE_DIR", cache.c_str(), 1);
    ::testing::internal::CaptureStderr();
    auto k = compile_cpu(program(bm));
    *err = ::testing::internal::GetCapturedStderr();
    return k;
  }

  // The same entry bytes, copied into `cache` under the same name, do load when
  // the directory and the file are safe: so what refused them was the check.
  void expect_loads_when_safe(const std::string& entry) {
    std::string cache = dir_ + "/control";
    fs::create_directory(cache);
    fs::permissions(cache, fs::perms::owner_all);
    fs::copy_file(entry, cache + "/" + fs::path(entry).filename().string());
    fs::permissions(cache + "/" + fs::path(entry).filename().string(),
                    fs::perms::owner_read | fs::perms::owner_write);
    clear_cpu_memory_cache();
    std::string err;
    auto k = compile_at(cache, &err);
    EXPECT_TRUE(k->info().from_disk) << "the control entry did not load: " << err;
    EXPECT_EQ(err, "");
  }

  std::string dir_, saved_;
  bool had_ = false;
};

TEST_F(CacheSecurity, DirectoryIsCreatedPrivate) {
  std::string cache = dir_ + "/a/b/cache";
  setenv("TESSEL_CACHE_DIR", cache.c_str(), 1);
  EXPECT_EQ(kernel_cache_dir(), cache);
  EXPECT_EQ(mode_of(cache), 0700u);
  auto k = compile_cpu(program());
  EXPECT_EQ(mode_of(k->info().cache_path), 0600u) << k->info().cache_path;
  // No temporaries were left there, and every file is private.
  for (const auto& e : fs::directory_iterator(cache)) {
    std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << name;
    EXPECT_EQ(mode_of(e.path().string()) & 077, 0u) << name;
  }
}

// The test: a valid-footer .so planted in a group-writable directory.
TEST_F(CacheSecurity, PlantedEntryInAGroupWritableDirectoryIsNotLoaded) {
  std::string entry = valid_entry();
  std::string planted_dir = dir_ + "/shared";
  fs::create_directory(planted_dir);
  fs::permissions(planted_dir, fs::perms::owner_all | fs::perms::group_all | fs::perms::others_read |
                                   fs::perms::others_exec);  // 0775
  std::string planted = planted_dir + "/" + fs::path(entry).filename().string();
  fs::copy_file(entry, planted);
  const std::string bytes = slurp(planted);
  clear_cpu_memory_cache();
  setenv("TESSEL_CACHE_DIR", planted_dir.c_str(), 1);
  ::testing::internal::CaptureStderr();
  auto a = compile_cpu(program(12));
  auto b = compile_cpu(program(36));  // a second kernel: no second warning
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(a->info().from_disk) << "the planted entry was loaded";
  EXPECT_GT(a->info().compile_ms, 0);
  EXPECT_TRUE(a->info().cache_path.empty()) << "kept in memory only: " << a->info().cache_path;
  EXPECT_EQ(count(err, "tessel: "), 1u) << err;
  EXPECT_NE(err.find("kernel cache directory " + planted_dir +
                     " is writable by group or others (mode 0775)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("memory only"), std::string::npos) << err;
  check_gemm(*a, {20, 31, 5, 1.0, 0.0}, 4);
  check_gemm(*b, {40, 70, 9, 2.0, 1.0}, 5);
  EXPECT_EQ(slurp(planted), bytes) << "the planted file was touched";
  expect_loads_when_safe(planted);
}

// The warning itself, once, for a directory seen for the first time.
TEST_F(CacheSecurity, UnsafeDirectoryWarnsOnceThenMemoryOnly) {
  std::string entry = valid_entry();
  std::string open_dir = dir_ + "/world";
  fs::create_directory(open_dir);
  fs::permissions(open_dir, fs::perms::all);  // 0777
  fs::copy_file(entry, open_dir + "/" + fs::path(entry).filename().string());
  clear_cpu_memory_cache();
  setenv("TESSEL_CACHE_DIR", open_dir.c_str(), 1);
  ::testing::internal::CaptureStderr();
  auto a = compile_cpu(program(12));
  auto b = compile_cpu(program(36));
  auto c = compile_cpu(program(44));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "tessel: "), 1u) << err;
  EXPECT_EQ(count(err, open_dir), 1u) << err;
  EXPECT_NE(err.find("writable by group or others (mode 0777)"), std::string::npos) << err;
  EXPECT_NE(err.find("memory only"), std::string::npos) << err;
  for (auto* k : {&a, &b, &c}) {
    EXPECT_FALSE((*k)->info().from_disk);
    EXPECT_TRUE((*k)->info().cache_path.empty());
  }
  // Nothing new was written into the unsafe directory.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(open_dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
  check_gemm(*c, {13, 40, 9, 1.0, 0.0}, 2);
}

// A safe directory with one entry that group or others can write: that entry is
// not loaded (and left alone), the kernel kept in memory only.
TEST_F(CacheSecurity, GroupWritableEntryIsNotLoaded) {
  std::string entry = valid_entry();
  fs::permissions(entry, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_write);
  std::string cache = fs::path(entry).parent_path().string();
  clear_cpu_memory_cache();
  std::string err;
  auto k = compile_at(cache, &err);
  EXPECT_FALSE(k->info().from_disk);
  EXPECT_EQ(count(err, "tessel: "), 1u) << err;
  EXPECT_NE(err.find(entry), std::string::npos) << err;
  EXPECT_NE(err.find("writable by group or others (mode 0620)"), std::string::npos) << err;
  EXPECT_NE(err.find("memory only"), std::string::npos) << err;
  EXPECT_TRUE(k->info().cache_path.empty());
  EXPECT_EQ(mode_of(entry), 0620u) << "the entry was replaced";
  check_gemm(*k, {29, 37, 11, 1.0, 0.5}, 1);
  expect_loads_when_safe(entry);
}

TEST_F(CacheSecurity, SymlinkedEntryIsNotFollowed) {
  std::string entry = valid_entry();
  std::string cache = dir_ + "/linked";
  fs::create_directory(cache);
  fs::permissions(cache, fs::perms::owner_all);
  std::string link = cache + "/" + fs::path(entry).filename().string();
  fs::create_symlink(entry, link);
  clear_cpu_memory_cache();
  std::string err;
  auto k = compile_at(cache, &err);
  EXPECT_FALSE(k->info().from_disk);
  EXPECT_NE(err.find("is a symbolic link"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_symlink(link));
  check_gemm(*k, {13, 40, 9, 1.0, 0.0}, 2);
}

// Owned by someone else: needs root to arrange (chown).
TEST_F(CacheSecurity, EntryOrDirectoryOwnedBySomeoneElseIsNotLoaded) {
  if (geteuid() != 0) GTEST_SKIP() << "chown to another user needs root";
  const uid_t nobody = 65534;
  std::string entry = valid_entry();
  ASSERT_EQ(chown(entry.c_str(), nobody, static_cast<gid_t>(-1)), 0);
  clear_cpu_memory_cache();
  std::string err;
  auto k = compile_at(fs::path(entry).parent_path().string(), &err);
  EXPECT_FALSE(k->info().from_disk);
  EXPECT_NE(err.find("is owned by uid 65534, not by this user (uid 0)"), std::string::npos) << err;
  EXPECT_NE(err.find(entry), std::string::npos) << err;

  // A directory someone else owns, holding a valid entry of a second kernel.
  std::string other = valid_entry(36);
  std::string theirs = dir_ + "/theirs";
  fs::create_directory(theirs);
  fs::permissions(theirs, fs::perms::owner_all);
  fs::copy_file(other, theirs + "/" + fs::path(other).filename().string());
  ASSERT_EQ(chown(theirs.c_str(), nobody, static_cast<gid_t>(-1)), 0);
  clear_cpu_memory_cache();
  k = compile_at(theirs, &err, 36);
  EXPECT_FALSE(k->info().from_disk);
  EXPECT_NE(err.find("kernel cache directory " + theirs + " is owned by uid 65534"), std::string::npos)
      << err;
  EXPECT_NE(err.find("memory only"), std::string::npos) << err;
}

TEST_F(CacheSecurity, TemporaryFilesAreExclusiveAndUnpredictable) {
  std::string base = dir_ + "/x.so";
  std::string a = temp_path_for(base), b = temp_path_for(base);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find(std::to_string(getpid())), std::string::npos) << a << ": names the pid";
  EXPECT_EQ(a.size(), base.size() + 5 + 16) << a;  // ".tmp." and 64 random bits in hex
  std::string made = create_temp_file(base);
  EXPECT_TRUE(fs::is_regular_file(made));
  EXPECT_EQ(mode_of(made), 0600u);
  // write_file_atomic replaces a symlink at the destination; it never writes
  // through it.
  std::string victim = dir_ + "/victim";
  test::spill(victim, "precious");
  fs::create_symlink(victim, base);
  write_file_atomic(base, "new");
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(base));
  EXPECT_EQ(slurp(base), "new");
  EXPECT_EQ(mode_of(base), 0600u);
}

}  // namespace
}  // namespace tessel::testing
