// The layers of one 32^3 call, each timed alone in one process (best of 8 batches of
// 10 ms), with libxsmm's whole call beside them: PreparedGemm::run, BoundLaunch
// set_* then run, BoundLaunch::run alone, CpuKernel::execute, the unit's two
// cpu_mma_blocks calls, and the three built-in kernel calls alone. Arguments:
// "B,C" byte offsets of B and C from page-aligned bases (A at 0). Built in build/:
//   g++ -O2 -std=c++20 -I../include -I../src call_layers.cpp -o call_layers \
//     -Wl,-rpath,/usr/local/cuda/lib:$PWD libtessel.a -ldl /usr/local/cuda/lib/libnvrtc.so \
//     /usr/local/cuda/lib/stubs/libcuda.so && ./call_layers 0,0 0,1024 512,0 0,2048
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "ops/gemm.h"
#include "bench/xsmm_library.h"
#include "target/cpu/cpu_jit.h"
#include "target/cpu/cpu_microkernel.h"
#include "target/cpu/cpu_support.h"
#include "ops/gemm_kernel.h"
#include "tessel/tessel.h"
using namespace tessel;
using Clock = std::chrono::steady_clock;
int main(int argc, char** argv) {
  int64_t m = 32, n = 32, k = 32;
  char* base = (char*)aligned_alloc(4096, 1 << 20);
  std::mt19937 g(1); std::uniform_real_distribution<float> d(-1, 1);
  GemmOptions o; o.threads = 1;
  PreparedGemm p(m, n, k, k, n, n, o);
  tessel::bench::XsmmLibrary xl; auto xk = xl.row_major_kernel(m, n, k);
  for (int arg = 1; arg < argc; ++arg) {
    int ob, oc; sscanf(argv[arg], "%d,%d", &ob, &oc);
    float* a = (float*)base; float* b = (float*)(base + 8192 + ob); float* c = (float*)(base + 65536 + oc);
    for (int64_t i = 0; i < m * k; ++i) a[i] = d(g);
    for (int64_t i = 0; i < k * n; ++i) b[i] = d(g);
    double best = 1e9, bx = 1e9;
    for (int batch = 0; batch < 8; ++batch) {
      auto t0 = Clock::now(); long calls = 0;
      do { for (int i = 0; i < 16; ++i) p.run(1.0f, a, b, 0.0f, c); calls += 16; }
      while (std::chrono::duration<double, std::milli>(Clock::now() - t0).count() < 10);
      best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls);
      t0 = Clock::now(); calls = 0;
      do { for (int i = 0; i < 16; ++i) xk(b, a, c); calls += 16; }
      while (std::chrono::duration<double, std::milli>(Clock::now() - t0).count() < 10);
      bx = std::min(bx, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls);
    }
    Kernel kernel = compile(gemm_kernel(), p.plan());
    std::shared_ptr<const CpuKernel> cpu = compile_cpu(kernel.program());
    LaunchArgs flat;
    flat.sizes = {{"M", m}, {"N", n}, {"K", k}, {"lda", k}, {"ldb", n}, {"ldc", n}};
    flat.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
    flat.tensors = {{"A", a}, {"B", b}, {"C", c}};
    CpuLaunch launch = cpu->bind(flat);
    using Ukr = void (*)(int64_t, const float*, const float*, float*, int64_t, int64_t, int64_t, int);
    Ukr k11 = (Ukr)cpu_prebuilt_microkernels[cpu_prebuilt_microkernel(11, 32, CpuIsa::Avx512)];
    Ukr k10 = (Ukr)cpu_prebuilt_microkernels[cpu_prebuilt_microkernel(10, 32, CpuIsa::Avx512)];
    KernelArgs ka;
    ka.tensors["A"] = TensorArg::host(a, {m, k});
    ka.tensors["B"] = TensorArg::host(b, {k, n});
    ka.tensors["C"] = TensorArg::host(c, {m, n});
    ka.scalars = {{"alpha", 1.0}, {"beta", 0.0}};
    BoundLaunch bl = kernel.bind(ka);
    LaunchOptions lo; lo.threads = 1; lo.timed = false;
    double be = 1e9, bu = 1e9, bb = 1e9, br = 1e9, bs = 1e9;
    for (int batch = 0; batch < 8; ++batch) {
      auto t0 = Clock::now(); long calls = 0;
      do { for (int i = 0; i < 16; ++i) bl.run(lo); calls += 16; }
      while (std::chrono::duration<double, std::milli>(Clock::now() - t0).count() < 10);
      br = std::min(br, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls);
      t0 = Clock::now(); calls = 0;
      do { for (int i = 0; i < 16; ++i) { bl.set_tensor(0, a); bl.set_tensor(1, b); bl.set_tensor(2, c); bl.set_scalar(0, 1.0); bl.set_scalar(1, 0.0); bl.run(lo); } calls += 16; }
      while (std::chrono::duration<double, std::milli>(Clock::now() - t0).count() < 10);
      bs = std::min(bs, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls);
    }
    for (int batch = 0; batch < 8; ++batch) {
      auto t0 = Clock::now(); long calls = 0;
      do { for (int i = 0; i < 16; ++i) cpu->execute(launch, 1); calls += 16; }
      while (std::chrono::duration<double, std::milli>(Clock::now() - t0).count() < 10);
      be = std::min(be, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls);
      t0 = Clock::now(); calls = 0;
      do { for (int i = 0; i < 16; ++i) { cpu_mma_blocks((const void*)k11, 32, a, 11 * 32, b, 32, c, 32, 32, 32, 11, 32, 2, 1, 32, 32, 1, 1); cpu_mma_blocks((const void*)k10, 32, a + 22 * 32, 10 * 32, b, 32, c + 22 * 32, 32, 32, 32, 10, 32, 1, 1, 10, 32, 1, 1); } calls += 16; }
      while (std::chrono::duration<double, std::milli>(Clock::now() - t0).count() < 10);
      bb = std::min(bb, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls);
      t0 = Clock::now(); calls = 0;
      do { for (int i = 0; i < 16; ++i) { k11(32, a, b, c, 32, 32, 32, 1); k11(32, a + 352, b, c + 352, 32, 32, 32, 1); k10(32, a + 704, b, c + 704, 32, 32, 32, 1); } calls += 16; }
      while (std::chrono::duration<double, std::milli>(Clock::now() - t0).count() < 10);
      bu = std::min(bu, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls);
    }
    printf("b%d c%d: prepared %.0f set+run %.0f run %.0f execute %.0f mma_blocks %.0f ukr %.0f | xsmm %.0f\n", ob, oc, best, bs, br, be, bb, bu, bx);
  }
}
