// Textual TileIR: print_tile_kernel and parse_tile_kernel round-trip exactly
// (print(parse(print(k))) == print(k)). Malformed text is a user error
// (ErrorKind::Parse) naming the line and column.
#pragma once
#include <string>

#include "ir/tile_ir.h"

namespace tessel {
std::string print_tile_kernel(const TileKernel& kernel);
TileKernel parse_tile_kernel(const std::string& text);
}  // namespace tessel
