#include "ir/half_float.h"

#include <cmath>
#include <cstring>

namespace tessel {

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

}  // namespace tessel
