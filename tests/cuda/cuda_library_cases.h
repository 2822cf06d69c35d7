// The kernel library (kernels/*.tir) at the sizes the cuda tests use: ragged
// shapes, misaligned leading dimensions, and the softmax/layernorm benchmark
// shapes. tests/cuda compiles each with its default cuda plan through NVRTC;
// tests/gpu runs the ragged ones against the FP64 evaluator.
#pragma once
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ir/tile_text.h"

namespace tessel::test {

struct LibraryCase {
  std::string kernel;  // kernels/<kernel>.tir
  std::map<std::string, int64_t> sizes;
  bool ragged = true;  // small enough to check on the device against the evaluator
};

inline TileKernel library_kernel(const std::string& name) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/kernels/" + name + ".tir");
  std::stringstream s;
  s << in.rdbuf();
  return parse_tile_kernel(s.str());
}

inline std::vector<LibraryCase> library_cases() {
  std::vector<LibraryCase> c = {
      {"add_broadcast", {{"M", 77}, {"N", 130}, {"lda", 131}, {"ldc", 130}}},
      {"batched_gemm",
       {{"batch", 3}, {"M", 45}, {"N", 70}, {"K", 33}, {"sa", 1500}, {"lda", 33}, {"sb", 2400}, {"ldb", 71},
        {"sc", 3200}, {"ldc", 70}}},
      {"col_sum", {{"M", 300}, {"N", 77}, {"ldx", 80}}},
      {"gemm_bias_gelu", {{"M", 67}, {"N", 90}, {"K", 45}, {"lda", 45}, {"ldb", 90}, {"ldc", 91}}},
      {"gemm_bias_relu", {{"M", 67}, {"N", 90}, {"K", 45}, {"lda", 46}, {"ldb", 90}, {"ldc", 90}}},
      {"gemm_nt", {{"M", 67}, {"N", 90}, {"K", 45}, {"lda", 45}, {"ldb", 45}, {"ldc", 90}}},
      {"layernorm", {{"M", 70}, {"N", 333}, {"ldx", 333}, {"ldy", 335}}},
      {"row_sum", {{"M", 300}, {"N", 77}, {"ldx", 80}}},
      {"softmax", {{"M", 70}, {"N", 1000}, {"ldx", 1001}, {"ldy", 1000}}},
  };
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{8192, 8192}, {32768, 1024}, {4096, 50257}})
    for (const char* k : {"softmax", "layernorm"})
      c.push_back({k, {{"M", m}, {"N", n}, {"ldx", n}, {"ldy", n}}, false});
  return c;
}

inline std::string case_name(const LibraryCase& c) {
  std::string s = c.kernel;
  for (const auto& [k, v] : c.sizes) s += " " + k + "=" + std::to_string(v);
  return s;
}

}  // namespace tessel::test
