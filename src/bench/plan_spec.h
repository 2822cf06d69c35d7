// A tessel plan written on the bench command line (`tessel bench --plan SPEC`):
// comma-separated KEY=VALUE choices over GEMM's default plan for the shape:
//   tile=BMxBNxBK  workers=N (a worker grid of N x 1)  grid=RxC (a worker grid of R x C)
//   frag=1|2 (fragment register sets)  batch=B (copy batch)  window=W
//   copy=sync|async|tma  producers=P  cluster=C  persistent=G  band=B  atom=fma|mma.sync|wgmma
// e.g. "tile=128x256x64,workers=2,window=4,copy=tma,producers=1".
#pragma once
#include <string>

#include "plan/plan.h"

namespace tessel::bench {

// Applies `spec` to `plan`; a malformed spec is a user error (InvalidArgument)
// naming the part. The plan's own limits are validate_plan's.
void apply_plan_spec(const std::string& spec, Plan& plan);

}  // namespace tessel::bench
