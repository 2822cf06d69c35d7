// specialize_sizes: the program for fixed values of some of its size parameters
// (Plan::sizes). Every expression that names one names its value instead, so that
// bounds, guards, trip counts and addresses fold to constants (expr.h) and the
// target's compiler folds what depends on them. A grid dimension whose extent
// becomes the constant 1 has coordinate 0 in every expression of the body. Then
// an `if` on two constant expressions becomes the branch it takes.
// The size parameters stay in the program's signature: a launch still passes them,
// and the runtime refuses one whose values differ (runtime/kernel.cpp), so the
// program itself checks nothing. Runs right after lowering, before the pipeline
// passes, which then see the constant trip counts.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/group_ir.h"

namespace tessel {

struct SpecializeStats {
  int sizes = 0;        // size parameters replaced by their values
  int coordinates = 0;  // grid coordinates replaced by 0
  int folded = 0;       // ifs replaced by the branch they take
};

// `values` may name sizes the program does not have (a phase of a split kernel
// uses some of the kernel's); those are ignored.
SpecializeStats specialize_sizes(GroupProgram& program, const std::vector<std::pair<std::string, int64_t>>& values);

}  // namespace tessel
