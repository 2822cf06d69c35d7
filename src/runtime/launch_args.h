// Arguments of one kernel launch, by parameter name: integer sizes, float scalars
// and tensor base pointers. Each tensor's shape and strides are expressions over
// the sizes (TensorParam); runtime/tensor_check.h evaluates and checks them.
// bf16 and f16 tensors are passed through the same float* and reinterpreted.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace tessel {

struct LaunchArgs {
  std::map<std::string, int64_t> sizes;
  std::map<std::string, double> scalars;
  std::map<std::string, float*> tensors;
};

}  // namespace tessel
