// The kernel library through the whole pipeline to the cuda target without a GPU:
// every kernels/*.tir with its default cuda plan, at ragged shapes and at the
// softmax/layernorm benchmark shapes, compiles through NVRTC for sm_90 without
// spills. tests/gpu runs the ragged ones against the FP64 evaluator.
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA
#include <cstdio>

#include "cuda_library_cases.h"
#include "target/cuda/cuda_kernel.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

TEST(CudaLibrary, EveryKernelCompilesForSm90WithoutSpills) {
  for (const test::LibraryCase& c : test::library_cases()) {
    SCOPED_TRACE(test::case_name(c));
    TileKernel k = test::library_kernel(c.kernel);
    Plan plan = default_plan(k, TargetKind::Cuda, c.sizes);
    Kernel compiled = compile(k, plan);
    auto cuda = compile_cuda(compiled.program(), "sm_90");
    const NvrtcOutput& o = cuda->info().nvrtc;
    std::printf("[ptxas] %-60s %s: %3d regs, spills %d B\n", test::case_name(c).c_str(), plan.to_string().c_str(),
                o.registers, o.spill_stores);
    EXPECT_GT(o.registers, 0) << o.log;
    EXPECT_EQ(o.spill_stores, 0) << plan.to_string() << "\n" << o.log;
  }
}

}  // namespace
}  // namespace tessel

#else
TEST(CudaLibrary, NeedsTheCudaToolkit) { GTEST_SKIP() << "built without the CUDA toolkit"; }
#endif
