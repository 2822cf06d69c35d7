#include "target/cpu/cpu_microkernel.h"

#include "tessel/error.h"

namespace tessel {
namespace {
constexpr int64_t kLanes = 16;     // floats per zmm register
constexpr int64_t kRegisters = 32; // zmm registers
}  // namespace

bool cpu_microkernel_fits(int64_t mr, int64_t nr) {
  return mr >= 1 && nr >= kLanes && nr % kLanes == 0 &&
         mr * (nr / kLanes) + nr / kLanes <= kRegisters;
}

std::string cpu_microkernel_name(int64_t mr, int64_t nr, int64_t lda) {
  return "tsl_ukr_" + std::to_string(mr) + "x" + std::to_string(nr) + "_" + std::to_string(lda);
}

std::string emit_cpu_microkernel(int64_t mr, int64_t nr, int64_t lda) {
  TESSEL_ASSERT(cpu_microkernel_fits(mr, nr), "micro-kernel does not fit the registers");
  const int64_t nv = nr / kLanes;
  auto acc = [](int64_t r, int64_t v) { return "c" + std::to_string(r) + "_" + std::to_string(v); };
  std::string s;
  // noinline: inlined into the group function, GCC spills an accumulator.
  s += "__attribute__((noinline)) static void " + cpu_microkernel_name(mr, nr, lda) +
       "(int64_t kc, const float* __restrict a, const float* __restrict b,\n"
       "    float* __restrict c, int64_t ldc) {\n";
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t v = 0; v < nv; ++v)
      s += "  v16 " + acc(r, v) + " = *(const v16u*)(c + " + std::to_string(r) + " * ldc + " +
           std::to_string(v * kLanes) + ");\n";
  s += "  for (int64_t k = 0; k < kc; ++k, ++a, b += " + std::to_string(nr) + ") {\n";
  for (int64_t v = 0; v < nv; ++v)
    s += "    const v16 b" + std::to_string(v) + " = *(const v16u*)(b + " +
         std::to_string(v * kLanes) + ");\n";
  for (int64_t r = 0; r < mr; ++r) {
    // Scalar times vector broadcasts; GCC folds it into the FMA's memory operand.
    std::string ar = "a[" + std::to_string(r * lda) + "]";
    for (int64_t v = 0; v < nv; ++v)
      s += "    " + acc(r, v) + " += " + ar + " * b" + std::to_string(v) + ";\n";
  }
  s += "  }\n";
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t v = 0; v < nv; ++v)
      s += "  *(v16u*)(c + " + std::to_string(r) + " * ldc + " + std::to_string(v * kLanes) +
           ") = " + acc(r, v) + ";\n";
  s += "}\n";
  return s;
}

}  // namespace tessel
