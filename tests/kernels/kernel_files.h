// The kernel library's text files (kernels/NAME.tir), parsed, for the tests here.
#pragma once
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "ir/tile_text.h"

namespace tessel {

inline TileKernel load_kernel_file(const std::string& name) {
  std::ifstream in(std::string(TESSEL_SOURCE_DIR) + "/kernels/" + name + ".tir");
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return parse_tile_kernel(s.str());
}

}  // namespace tessel
