// Random shapes for calibration and held-out runs (`tessel tune --calibrate`,
// `--heldout`; docs/planner.md): each drawn size log-uniform in [lo, hi], ragged,
// with options that put draws where the plain distribution rarely goes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/tile_ir.h"

namespace tessel {

struct ShapeDistribution {
  int64_t lo = 16, hi = 512;
  // In align_share percent of the draws every size is rounded up to a multiple of
  // align (--align, --align-share).
  int64_t align = 1, align_share = 100;
  // The product of the sizes log-uniform instead of each size (--spread product).
  bool product = false;
  // In small_share percent of the draws one size, chosen at random, is log-uniform in
  // [small_lo, small_hi] instead (--small-share, --small-range): narrow extents,
  // where a tile wider than its extent can win, come up in any draw count.
  int64_t small_share = 0, small_lo = 8, small_hi = 16;
  uint64_t seed = 1;
};

// The sizes a shape draws: every size parameter except strides (symbols that only
// tensor strides name; default_strides makes those contiguous).
std::vector<std::string> drawn_sizes(const TileKernel& kernel);

// `n` shapes of `kernel` drawn from `d`. A distribution without small draws draws
// the shapes it drew before that option existed (same seed, same shapes).
std::vector<std::map<std::string, int64_t>> draw_shapes(const TileKernel& kernel, int n, const ShapeDistribution& d);

// `d` in words, with its seed (the JSON's "distribution").
std::string describe(const ShapeDistribution& d);

}  // namespace tessel
