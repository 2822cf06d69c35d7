// Random well-typed TileIR kernels for the property test: from a seed, a kernel with
// its sizes, tile bindings and scalars, small enough that the sim runs it fast.
//
// A kernel is a 1-3 dimensional grid over tiles of an M x N (x Bt batches) problem
// with ragged sizes (mostly not multiples of the tiles). Its body draws from:
// loads of rank 1-3 tensors through various views (row-major, column-major,
// stored transposed and read with dims(1, 0), a slice of a rank-3 tensor, a batch
// dimension first or in the middle, a stride-0 batch broadcast) with zero or
// nonzero padding; rows and columns of vectors; scalar parameters; every unary and
// binary op, kept in their domains (log/sqrt/rsqrt/recip of |x| + 1, division by
// |x| + 1, exp/exp2 of bounded values, values squashed by x / (|x| + 1) when their
// bound grows past 1e3); cmp/select on exactly known values only (so that fp32
// rounding cannot flip a comparison); casts of exact values through bf16/f16;
// constants whose value is an index expression (grid and loop indices, floor
// division, modulo);
// explicit and implicit broadcasts (row, column, scalar); reductions along either
// axis; transposes (square tiles); mma over a serial or pipeline K loop carrying the
// accumulator and 0-2 running reductions (and sometimes a second mma sharing the a
// tile), with bf16/f16 operands or computed ones (a and b);
// mma of pool values with no K loop (a computed a, b loaded or computed too);
// a stable softmax block (padding -inf); serial/pipeline loops carrying 1-3 values;
// `if` on grid indices and on a scalar; user barriers; outputs: 1-2 tiles (f32, bf16
// or f16, some in place: inout; an f32 one sometimes read back right after its
// store, as a tile, a row or a column), a column vector and a row vector (their
// stores guarded by an `if` so that one grid point writes each element). With a 1-D
// grid the columns are a serial loop inside, carrying row reductions across column
// blocks, sometimes with feedback through global memory (each trip reads the tile the
// previous trip stored in an inout tensor). Sometimes a second
// grid (a phase) follows, reading a tile output of the first, transposed or not.
//
// Everything is built as TileIR directly and passes verify_tile_kernel.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "eval/evaluate.h"
#include "ir/tile_ir.h"

namespace tessel {

struct RandomKernel {
  uint64_t seed = 0;
  TileKernel kernel;
  std::map<std::string, int64_t> sizes;  // every size parameter, strides included
  std::map<std::string, int64_t> tiles;  // every tile parameter (the plan's bindings)
  std::map<std::string, double> scalars;
  // Each output computed in fp32 should satisfy
  //   relative_error(got, want, error_floor) <= tolerance
  // against the evaluator's `want`, for inputs from random_kernel_tensors (in [-1, 1], hence
  // the floor of 1: outputs much smaller than the inputs are judged by absolute
  // error). tolerance is error_bound(F32, the narrowest output storage, the longest
  // accumulation); the evaluator's fp32 model stays under a quarter of it over 10000
  // seeds (tests/eval checks 1000).
  double tolerance = 0;
  double error_floor = 1;
};

// Features a target may not have yet, to leave out (a seed keeps its structure).
struct RandomKernelOptions {
  bool narrow_tensors = true;  // bf16/f16 tensors: inputs, mma operands, outputs
};

RandomKernel random_kernel(uint64_t seed, const RandomKernelOptions& options = {});

// Host arrays of every tensor, each as long as its shape and strides need: In and
// InOut tensors uniform in [-1, 1] (rounded to the tensor's dtype), Out tensors NaN.
std::map<std::string, std::vector<double>> random_kernel_tensors(const RandomKernel& rk, uint64_t seed);

// EvalArgs over `tensors` (which must outlive the returned spans).
EvalArgs eval_args(const RandomKernel& rk, std::map<std::string, std::vector<double>>& tensors);

}  // namespace tessel
