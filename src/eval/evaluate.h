// The FP64 reference evaluator of TileIR: the one oracle every kernel is checked
// against, independent of the lowering. It runs a TileKernel directly, op by op, in
// double precision on host arrays of doubles: every grid point of a parallel nest in
// turn, serial and pipeline loops in order with their carried values, `if` by its
// condition. It models no fp32 rounding (it is the fp64 oracle; tests compare with a
// tolerance); Cast is the one op that rounds, to the result's dtype.
//
// Tensors are arrays of doubles laid out as the kernel says (element (i0, i1, ...) at
// data[i0 * strides[0] + ...]). A bf16/f16/f32 input holds the values the target
// reads: the caller rounds them when filling both. Stores write exact doubles.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "ir/tile_ir.h"

namespace tessel {

// Arguments by parameter name, as LaunchArgs, with tile bindings (the plan's tiles).
// Every name must be a parameter of the kernel, and every parameter must be given.
struct EvalArgs {
  std::map<std::string, int64_t> sizes;
  std::map<std::string, int64_t> tiles;
  std::map<std::string, double> scalars;
  std::map<std::string, std::span<double>> tensors;  // each must cover its shape and strides
  // Not the oracle: a model of fp32 hardware for calibrating tolerances. Every result
  // of a non-f64 value, and every step of an mma or a sum, is rounded to fp32.
  bool fp32_model = false;
};

// Runs `kernel` on `args`, writing its stores into the output tensors. Bad arguments
// (a missing or unknown name, a tile binding < 1, a tensor that fails the launch check
// of src/runtime/tensor_check.h, an array too small for its tensor) are
// ErrorKind::InvalidArgument naming them. The kernel should be verified; a structural
// inconsistency found while evaluating (an operand shape that does not broadcast) is
// ErrorKind::Verify.
void evaluate(const TileKernel& kernel, const EvalArgs& args);

// Rounds x to the nearest value of `dtype` (ties to even; overflow to inf; subnormals
// kept): Cast's semantics. F64 is the identity.
double round_to_dtype(double x, DType dtype);

// ||got - want||_F / max(||want||_F, floor * sqrt(n)) over arrays of equal size n
// (0 / 0 counts as 0). `floor` is the magnitude below which errors count as absolute:
// an output much smaller than the values it was computed from (after cancellation,
// or log(1 + x) of a small x) carries their absolute rounding error, which relative
// to itself can be large; 0 keeps the error purely relative. A NaN or inf where `want`
// is finite, or a mismatch of non-finite values, gives +inf: always a failure. Elements
// that are NaN in both (unwritten poison) match.
double relative_error(std::span<const float> got, std::span<const double> want, double floor = 0);
double relative_error(std::span<const double> got, std::span<const double> want, double floor = 0);

// A tolerance for relative_error, deliberately simple: fp arithmetic in `compute`
// (F32 for fp32/bf16/f16 kernels on every target) over accumulations of length up to
// `depth` (the K of an mma chain, the extent of a reduction; 1 for elementwise work)
// gives about u * sqrt(depth) with random signs; 32 * u * sqrt(depth) leaves room for
// transcendentals (a few ulp each) and short chains of ops. An output stored as a
// narrower `storage` type may land one of its ulps away: + 2 * u_storage.
// u = 2^-24 (F32), 2^-8 (BF16), 2^-11 (F16), 2^-53 (F64).
double error_bound(DType compute, DType storage, int64_t depth);
double unit_roundoff(DType t);

}  // namespace tessel
