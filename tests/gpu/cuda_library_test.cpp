// The kernel library on the GPU: every kernels/*.tir with its default cuda plan at
// ragged shapes and misaligned leading dimensions, on random inputs with outputs
// NaN-poisoned, every written tensor compared over its whole span with the FP64
// evaluator of its TileIR (src/check/checked_run.h). Skipped without a GPU.
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA
#include "../cuda/cuda_library_cases.h"
#include "check/checked_run.h"
#include "target/cuda/cuda_driver.h"
#include "tessel/tessel.h"

namespace tessel {
namespace {

TEST(CudaLibrary, EveryKernelMatchesTheEvaluator) {
  std::string why;
  if (!cuda_gpu_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  uint64_t seed = 5;
  for (const test::LibraryCase& c : test::library_cases()) {
    if (!c.ragged) continue;
    SCOPED_TRACE(test::case_name(c));
    TileKernel k = test::library_kernel(c.kernel);
    Kernel compiled = compile(k, TargetKind::Cuda, c.sizes);
    CheckedRun r = run_checked(compiled, c.sizes, {}, seed++);
    EXPECT_TRUE(r.ok) << "worst relative error " << r.worst << ", bound " << r.bound << ", plan "
                      << compiled.plan().to_string();
  }
}

}  // namespace
}  // namespace tessel

#else
TEST(CudaLibrary, NeedsTheCudaToolkit) { GTEST_SKIP() << "built without the CUDA toolkit"; }
#endif
