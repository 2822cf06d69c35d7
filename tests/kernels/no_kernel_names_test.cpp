// The compiler knows ops by kind and values by their consumers, never a kernel by
// its name: no file under src/lower, src/passes, src/plan or src/target mentions a
// kernel of the library (code or comment).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace {

TEST(NoKernelNames, CompilerDirectoriesNameNoKernel) {
  const char* dirs[] = {"src/lower", "src/passes", "src/plan", "src/target"};
  const char* names[] = {"gemm", "softmax", "layernorm", "attention", "batched", "relu", "gelu"};
  int files = 0;
  for (const char* dir : dirs) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(std::string(TESSEL_SOURCE_DIR) + "/" + dir)) {
      if (!entry.is_regular_file()) continue;
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        std::transform(line.begin(), line.end(), line.begin(), ::tolower);
        for (const char* name : names) {
          // A whole word: "gemm" and "gemm_x" count, "prelude" does not name relu.
          std::regex word(std::string("(^|[^a-z])") + name + "([^a-z]|$)");
          EXPECT_FALSE(std::regex_search(line, word))
              << entry.path().string() << ":" << n << " mentions " << name << ": " << line;
        }
      }
    }
  }
  EXPECT_GT(files, 10);  // the directories were found
}

}  // namespace
