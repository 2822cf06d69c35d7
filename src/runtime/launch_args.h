// Arguments of one kernel launch, by parameter name: integer sizes, float scalars
// and tensor base pointers (each tensor's rows, cols and ld name size parameters).
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
