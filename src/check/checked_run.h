// One launch of a compiled kernel on fresh random inputs, checked against the FP64
// evaluator of its TileIR (src/eval/evaluate.h): the oracle for every kernel, shared
// by `tessel run --check` and the tests.
//   - inputs: uniform in [-1, 1]; scalars not given: uniform in [0.5, 1.5];
//   - tensors the kernel only writes (Access::Out) are poisoned with NaN, so an
//     element it fails to write fails the check;
//   - u32 tensors (tickets' counters) start at 0 and must end as the oracle's, exactly;
//   - a stride named by a symbol no size gives defaults to contiguous row-major;
//   - bf16 and f16 tensors (the cuda target's) travel as 16-bit storage; their
//     random values are rounded to it first, and the oracle reads the rounded ones;
//   - every tensor the kernel writes is compared over its whole span (relative
//     Frobenius error), against check_bound (below).
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/tile_ir.h"
#include "runtime/tensor_check.h"
#include "tessel/tessel.h"

namespace tessel {

struct CheckedRun {
  LaunchReport launch;
  std::map<std::string, double> rel_err;  // per written tensor
  double worst = 0, bound = 0;
  bool ok = false;  // every written tensor within its bound, and no race
};

// The relative error a correct run meets on a written tensor of dtype `output`:
// error_bound(F32, output, depth), depth the largest extent of any tensor (a bound
// on any accumulation's length; strides do not count), plus, where an input is
// stored at 16 bits, a quarter of that format's unit roundoff: the inputs reach the
// oracle already rounded, but values the kernel itself rounds to 16 bits (a cast
// before an mma, which the oracle rounds too) can land on the other side of a
// rounding boundary after a last-bit difference upstream.
double check_bound(const TileKernel& kernel, DType output, const std::map<std::string, int64_t>& sizes);

// Fills in defaulted strides (see above) in `sizes`.
void default_strides(const std::vector<TensorParam>& tensors, std::map<std::string, int64_t>& sizes);

// Random tensors for a launch: data (float) and the same values in double.
struct HostTensor {
  TensorLayout layout;
  std::vector<float> data;
  std::vector<double> oracle;
};
std::map<std::string, HostTensor> random_tensors(const std::vector<TensorParam>& tensors,
                                                 const std::map<std::string, int64_t>& sizes,
                                                 uint64_t seed);
// The given scalars plus random ones for the rest; an unknown name is an error.
std::map<std::string, double> random_scalars(const std::vector<ScalarParam>& scalars,
                                             std::map<std::string, double> given, uint64_t seed);

// `poison`: tensors the kernel reads and writes but must overwrite for these
// scalars (C of a GEMM when beta = 0): NaN like an output, so that an element left
// unwritten fails.
CheckedRun run_checked(const Kernel& kernel, std::map<std::string, int64_t> sizes,
                       const std::map<std::string, double>& scalars, uint64_t seed,
                       const LaunchOptions& options = {}, const std::set<std::string>& poison = {});

}  // namespace tessel
