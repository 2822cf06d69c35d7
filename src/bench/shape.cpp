#include "bench/shape.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <sstream>

#include "tessel/error.h"

namespace tessel::bench {
namespace {

[[noreturn]] void bad_shape(const std::string& text, const std::string& why) {
  user_error(ErrorKind::InvalidArgument, "shape '" + text + "': " + why);
}

}  // namespace

std::string Shape::name() const {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

Shape parse_shape(const std::string& text) {
  std::vector<int64_t> ext;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, 'x');) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || errno == ERANGE || !std::isdigit((unsigned char)part[0]))
      bad_shape(text, "expected MxNxK with positive integers");
    ext.push_back(v);
  }
  if (ext.size() != 3 || text.back() == 'x') bad_shape(text, "expected MxNxK with positive integers");
  constexpr int64_t kMaxExtent = 65536;
  for (int64_t e : ext)
    if (e < 1 || e > kMaxExtent)
      bad_shape(text, "every extent must be in [1, " + std::to_string(kMaxExtent) + "]");
  Shape s{ext[0], ext[1], ext[2]};
  // CBLAS takes 32-bit sizes and the oracle holds M x N doubles.
  if (s.m * s.k > INT_MAX || s.k * s.n > INT_MAX || s.m * s.n > INT_MAX)
    bad_shape(text, "a matrix has more than " + std::to_string(INT_MAX) + " elements");
  return s;
}

std::vector<Shape> seed_shapes() {
  return {{32, 32, 32},     {128, 128, 128},  {512, 512, 512}, {1024, 1024, 1024},
          {256, 1024, 128}, {1024, 128, 256}, {127, 193, 61},  {513, 257, 129}};
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);) out.push_back(item);
  return out;
}

std::vector<Shape> large_shapes() { return {{2048, 2048, 2048}, {4096, 4096, 4096}}; }

std::vector<Shape> parse_shape_list(const std::string& text) {
  std::vector<Shape> out;
  auto add = [&](const Shape& s) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item == "seed") for (const Shape& s : seed_shapes()) add(s);
    else if (item == "large") for (const Shape& s : large_shapes()) add(s);
    else add(parse_shape(item));
  }
  if (out.empty()) user_error(ErrorKind::InvalidArgument, "--shapes: no shapes in '" + text + "'");
  return out;
}

}  // namespace tessel::bench
