#include "ops/gemm_precision.h"

#include <cmath>
#include <cstring>

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

uint16_t float_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

float bf16_to_float(uint16_t x) {
  uint32_t u = uint32_t{x} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_f16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  uint32_t sign = (u >> 16) & 0x8000;
  int exp = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
  uint32_t man = u & 0x7fffff;
  if (std::isnan(x)) return static_cast<uint16_t>(sign | 0x7e00);
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);  // overflow and inf
  if (exp <= 0) {                                               // subnormal or zero
    if (exp < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000;
    int shift = 14 - exp;
    uint32_t half = 1u << (shift - 1), rest = man & ((1u << shift) - 1);
    uint32_t v = man >> shift;
    if (rest > half || (rest == half && (v & 1))) ++v;
    return static_cast<uint16_t>(sign | v);
  }
  uint32_t v = (static_cast<uint32_t>(exp) << 10) | (man >> 13);
  uint32_t rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (v & 1))) ++v;  // may carry into the exponent: still right
  return static_cast<uint16_t>(sign | v);
}

float f16_to_float(uint16_t x) {
  uint32_t sign = uint32_t{x & 0x8000u} << 16, exp = (x >> 10) & 0x1f, man = x & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(man), -24);
    return sign ? -f : f;
  }
  uint32_t u = sign | (exp == 31 ? 0x7f800000u | (man << 13) : ((exp - 15 + 127) << 23) | (man << 13));
  std::memcpy(&f, &u, 4);
  return f;
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
