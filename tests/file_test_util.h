// Small file helpers for the tests that damage cache entries on disk
// (tests/reliability/kernel_cache_test.cpp, tests/cuda/cubin_cache_test.cpp).
#pragma once
#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <string>

#include "runtime/kernel_cache.h"

namespace tessel::test {

// The whole file (a failed read is a test failure).
inline std::string slurp(const std::string& path) {
  std::string s;
  EXPECT_TRUE(read_file(path, &s)) << path;
  return s;
}

// Overwrites the file with `contents`.
inline void spill(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
}

// Occurrences of `needle` in `haystack`, overlapping ones included.
inline size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace tessel::test
