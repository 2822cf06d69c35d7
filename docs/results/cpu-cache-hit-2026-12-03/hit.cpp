#include <chrono>
#include <cstdio>
#include "ops/gemm.h"
#include "ops/gemm_kernel.h"
#include "plan/default_plan.h"
#include "tessel/tessel.h"
using namespace tessel;
using C = std::chrono::steady_clock;
int main() {
  TileKernel k = gemm_kernel(DType::F32, false);
  Plan p = default_gemm_plan(TargetKind::Cpu, 256, 256, 256, GemmPrecision::F32, "", 1);
  auto t = C::now();
  Kernel kk = compile(k, p, CompileSettings{});
  std::printf("%.0f\n", std::chrono::duration<double, std::micro>(C::now() - t).count());
}
