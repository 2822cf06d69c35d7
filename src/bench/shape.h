// GEMM problem shapes for the benchmark driver: "MxNxK" strings, and the named
// lists a user can ask for ("seed": the seed report's eight, "large": big squares).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tessel::bench {

struct Shape {
  int64_t m = 0, n = 0, k = 0;
  std::string name() const;  // "MxNxK"
  double flop() const { return 2.0 * double(m) * double(n) * double(k); }
  bool operator==(const Shape&) const = default;
};

// "127x193x61" -> {127, 193, 61}. Every extent must be in [1, 65536] and every
// matrix must fit a 32-bit CBLAS index; otherwise a user error (InvalidArgument)
// naming the string.
Shape parse_shape(const std::string& text);

// A comma-separated list of shapes and the names "seed" and "large", in order,
// without duplicates. An empty list is a user error.
std::vector<Shape> parse_shape_list(const std::string& text);

// `s` cut at every `sep`, empty pieces kept (the command line's lists).
std::vector<std::string> split(const std::string& s, char sep);

std::vector<Shape> seed_shapes();   // the eight shapes of the seed report
std::vector<Shape> large_shapes();  // 2048^3 and 4096^3

}  // namespace tessel::bench
