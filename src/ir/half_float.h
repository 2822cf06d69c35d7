// The 16-bit float storage formats (DType::BF16, DType::F16) to and from fp32, on the
// host: the API rounds inputs with them, the oracles and checks widen them back.
#pragma once
#include <cstdint>

namespace tessel {

// Round to nearest even; NaN stays NaN, overflow becomes infinity.
uint16_t float_to_bf16(float x);
uint16_t float_to_f16(float x);
float bf16_to_float(uint16_t x);
float f16_to_float(uint16_t x);

}  // namespace tessel
