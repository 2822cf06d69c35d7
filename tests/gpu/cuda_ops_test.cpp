// The cuda target's fma-atom ops on the GPU: every program of
// tests/cuda/cuda_programs.h (softmax, layernorm, column statistics, transposes,
// padded copies, local reductions, a folded grid) on random inputs, outputs
// NaN-poisoned (padding included), every output element against the FP64 oracle,
// and poison where nothing is written. tests/cuda runs the same programs on the
// sim (race free, same oracle). Without a GPU every test here is skipped, visibly.
#include <gtest/gtest.h>

#ifdef TESSEL_WITH_CUDA
#include <map>
#include <string>
#include <vector>

#include "../cuda/cuda_programs.h"
#include "../expect_error.h"
#include "passes/specialize_sizes.h"
#include "target/cuda/cuda_driver.h"
#include "target/cuda/cuda_kernel.h"
#include "target/cuda/cuda_memory.h"

namespace tessel {
namespace {

#define REQUIRE_GPU()                                                  \
  do {                                                                 \
    std::string why;                                                   \
    if (!cuda_gpu_available(&why)) GTEST_SKIP() << "no GPU: " << why; \
  } while (0)

// Runs `c` on the device with inputs from `seed`; "" when every output matches.
// `specialized`: the program is compiled for c's sizes (specialize_sizes), and a
// launch with one of them one larger must be refused before it touches a byte.
std::string run_on_gpu(const test::OpsCase& c, uint64_t seed, bool specialized = false) {
  GroupProgram p = parse_group_program(c.gir);
  test::HostTensors in = test::fill_inputs(p, c.sizes, seed);
  test::HostTensors want = test::expected_outputs(c, in);
  if (specialized) specialize_sizes(p, {c.sizes.begin(), c.sizes.end()});
  auto kernel = compile_cuda(p);
  std::map<std::string, DeviceBuffer> dev;
  LaunchArgs args;
  args.sizes = c.sizes;
  args.scalars = c.scalars;
  std::map<std::string, std::vector<unsigned char>> sent;
  for (const auto& [name, h] : in) {
    std::vector<unsigned char>& bytes = sent[name] = test::packed(h);  // outputs: NaN patterns
    DeviceBuffer& b = dev[name] = DeviceBuffer(bytes.size());
    b.upload(bytes.data(), bytes.size());
    args.tensors[name] = static_cast<float*>(b.get());
  }
  if (specialized) {
    for (const auto& [size, value] : c.sizes) {
      LaunchArgs other = args;
      other.sizes[size] = value + 1;
      test::expect_error(ErrorKind::InvalidArgument, "was compiled for " + size, [&] { kernel->launch(other); });
    }
    cuda_synchronize();
    for (auto& [name, b] : dev) {
      std::vector<unsigned char> bytes(b.bytes());
      b.download(bytes.data(), bytes.size());
      if (bytes != sent[name]) return name + " changed by a refused launch";
    }
  }
  kernel->launch(args);
  cuda_synchronize();
  std::map<std::string, std::vector<double>> got;
  for (const auto& [name, h] : in) {
    std::vector<unsigned char> bytes(dev[name].bytes());
    dev[name].download(bytes.data(), bytes.size());
    got[name] = test::unpacked(bytes, h.param.dtype);
  }
  return test::compare_outputs(c, want, got);
}

TEST(CudaOps, EveryProgramMatchesTheFp64Oracle) {
  REQUIRE_GPU();
  uint64_t seed = 11;
  for (const test::OpsCase& c : test::all_ops_cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(run_on_gpu(c, seed++), "");
  }
}

// A program specialized to its sizes refuses a launch with other values (the
// cuda bind's check_fixed_sizes), and runs right with its own.
TEST(CudaOps, SpecializedProgramsRefuseOtherSizes) {
  REQUIRE_GPU();
  const std::vector<test::OpsCase> cases = test::all_ops_cases();
  ASSERT_FALSE(cases.empty());
  SCOPED_TRACE(cases.front().name);
  EXPECT_EQ(run_on_gpu(cases.front(), 21, true), "");
}

// gridDim.y passes 65535: the launch folds the grid into x, the kernel decodes it.
TEST(CudaOps, GridBeyond65535BlocksInYIsFolded) {
  REQUIRE_GPU();
  EXPECT_EQ(run_on_gpu(test::fold_case(70001, 3), 5), "");
}

// Large rows through the online softmax: many column tiles, misaligned rows.
TEST(CudaOps, LongRowsOnlineSoftmax) {
  REQUIRE_GPU();
  EXPECT_EQ(run_on_gpu(test::softmax_online_case(33, 5003, 5003, 5005), 3), "");
  EXPECT_EQ(run_on_gpu(test::softmax_online_case(16, 4096, 4096, 4096), 4), "");
}

}  // namespace
}  // namespace tessel

#else
TEST(CudaOps, NeedsTheCudaToolkit) { GTEST_SKIP() << "built without the CUDA toolkit"; }
#endif
