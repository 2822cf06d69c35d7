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
#pragma once
#include <cstdint>
#include <map>
#include <string>
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

}  // namespace tessel
