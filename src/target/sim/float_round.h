// Rounding an fp32 value to a narrower storage type, round-to-nearest-even, as the
// sim's Cast does (the value stays a float, holding one of the narrow type's
// values). bf16 keeps fp32's exponent range and 8 significant bits; f16 has 11
// significant bits, subnormals from 2^-24 and overflows to infinity past 65504.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

#include "ir/tile_ir.h"

namespace tessel {

inline float round_to_bf16(float x) {
  if (std::isnan(x)) return x;
  uint32_t bits = std::bit_cast<uint32_t>(x);
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // ties to the even upper half
  return std::bit_cast<float>(bits & 0xFFFF0000u);
}

inline float round_to_f16(float x) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  int e = 0;
  std::frexp(static_cast<double>(x), &e);  // |x| in [2^(e-1), 2^e)
  // One unit in the last place: 2^(e-11) for normals, 2^-24 for subnormals.
  double ulp = std::ldexp(1.0, e - 11 < -24 ? -24 : e - 11);
  double r = std::nearbyint(static_cast<double>(x) / ulp) * ulp;  // ties to even
  if (std::fabs(r) > 65504.0) r = std::copysign(INFINITY, r);
  return static_cast<float>(r);
}

inline float round_to(DType t, float x) {
  switch (t) {
    case DType::BF16: return round_to_bf16(x);
    case DType::F16: return round_to_f16(x);
    default: return x;  // f32; f64 widens, which changes no fp32 value
  }
}

}  // namespace tessel
