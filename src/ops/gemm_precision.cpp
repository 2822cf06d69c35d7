#include "ops/gemm_precision.h"

#include "ops/gemm_reference.h"
#include "tessel/error.h"

namespace tessel {

const char* precision_name(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::F32: return "fp32";
    case GemmPrecision::TF32: return "tf32";
    case GemmPrecision::BF16: return "bf16";
    case GemmPrecision::F16: return "fp16";
  }
  return "?";
}

GemmPrecision parse_precision(const std::string& name) {
  if (name == "fp32" || name == "f32") return GemmPrecision::F32;
  if (name == "tf32") return GemmPrecision::TF32;
  if (name == "bf16") return GemmPrecision::BF16;
  if (name == "fp16" || name == "f16") return GemmPrecision::F16;
  user_error(ErrorKind::InvalidArgument, "unknown dtype '" + name + "' (expected fp32, tf32, bf16 or fp16)");
}

DType storage_dtype(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::BF16: return DType::BF16;
    case GemmPrecision::F16: return DType::F16;
    default: return DType::F32;
  }
}

float round_to_storage(GemmPrecision p, float x) {
  switch (p) {
    case GemmPrecision::BF16: return bf16_to_float(float_to_bf16(x));
    case GemmPrecision::F16: return f16_to_float(float_to_f16(x));
    default: return x;
  }
}

double precision_error_bound(GemmPrecision p, int64_t k) {
  // tf32 rounds each operand to 11 significant bits (relative 2^-11 each); the
  // Frobenius norm of the resulting error stays near that for random data.
  if (p == GemmPrecision::TF32) return 2e-3;
  return gemm_error_bound(k);
}

}  // namespace tessel
