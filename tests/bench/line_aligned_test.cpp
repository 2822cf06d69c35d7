// The cpu benchmarks' operand buffers start on 64 bytes (src/bench/line_aligned.h).
#include <gtest/gtest.h>

#include <cstdint>

#include "bench/line_aligned.h"

namespace tessel::bench {
namespace {

TEST(LineAligned, EveryBufferStartsOnSixtyFourBytes) {
  std::vector<LineAlignedFloats> buffers;
  for (size_t n : {1, 3, 17, 100, 4097, 65537}) {
    std::vector<float> v(n, 1.5f);
    v.back() = 2.5f;
    buffers.push_back(line_aligned_copy(v));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffers.back().data()) % 64, 0u) << n << " floats";
    EXPECT_EQ(buffers.back().size(), n);
    EXPECT_EQ(buffers.back().back(), 2.5f);
    buffers.emplace_back(n);  // sized construction too
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffers.back().data()) % 64, 0u) << n << " floats";
  }
}

}  // namespace
}  // namespace tessel::bench
