// Launch-time checks of tensor arguments, shared by every target (sim, cpu, cuda,
// the evaluator): a tensor's shape and strides are expressions over size
// parameters; here they become numbers for one launch, and a layout that the
// kernel cannot use safely is refused before anything runs.
//
// Refused, as ErrorKind::InvalidArgument naming the tensor, the dim and the numbers:
//   - a size parameter the shape or strides use that the launch does not bind;
//   - a negative extent or stride;
//   - a tensor the kernel writes (Access Out or InOut) with two index tuples at one
//     address. The test is sufficient, not exact: the dims of extent > 1, sorted by
//     stride, must each have a stride of at least the previous stride times the
//     previous extent, and none of them stride 0. (Broadcast views, stride 0, are
//     for read-only tensors.)
//   - a layout whose last element's offset does not fit in 64 bits.
//
// check_tensor_overlap, on all of a launch's tensors together: two tensors whose
// byte ranges ([base, base + elements * element size)) overlap where either is
// written (Out or InOut) are refused (InvalidArgument, naming both, with their
// ranges). The ranges are the tensors' hulls, so two written views that interleave
// without sharing an element (the even and odd columns of one buffer) are refused
// too; read-only tensors may overlap freely. Tensors without elements take no
// memory. A pair the kernel declares (TensorParam::may_overlap, either side;
// `overlaps(X)` in the text forms, KernelBuilder::allow_overlap) is let through:
// then the kernel's own accesses must be race-free on the shared buffer.
//
// check_fixed_sizes: a kernel specialized for some sizes (Plan::sizes,
// GroupProgram::fixed_sizes) has their values folded into its code; a launch that
// gives another value (or none) is refused, naming the size and both values.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/tile_ir.h"

namespace tessel {

struct TensorLayout {
  std::vector<int64_t> shape, strides;
  // Elements the base pointer must hold: 1 + sum of (extent - 1) * stride, or 0
  // when some extent is 0 (the tensor has no element).
  int64_t elements = 0;
};

// Evaluates and checks `tensor` with the launch's size parameters.
TensorLayout check_tensor(const TensorParam& tensor, const std::map<std::string, int64_t>& sizes);

// One tensor argument's memory: parameter, base address (host or device: only the
// numbers are compared) and layout (check_tensor's). `element_bytes` 0 means
// dtype_bytes(param->dtype); the sim, which stores every tensor as float, says 4.
struct TensorSpan {
  const TensorParam* param = nullptr;
  uintptr_t base = 0;
  TensorLayout layout;
  int element_bytes = 0;
};

// Refuses written tensors that overlap another tensor (the header's rule).
void check_tensor_overlap(const std::vector<TensorSpan>& tensors);

// Refuses a launch whose sizes differ from those `kernel` was compiled for.
void check_fixed_sizes(const std::string& kernel, const std::vector<std::pair<std::string, int64_t>>& fixed,
                       const std::map<std::string, int64_t>& sizes);

}  // namespace tessel
