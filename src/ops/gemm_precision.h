// GEMM precisions: how A and B are stored and multiplied. C and accumulation are
// always fp32.
//   f32   fp32 storage, fp32 FMA (no tf32)
//   tf32  fp32 storage, tensor cores round operands to tf32 (10-bit mantissa)
//   bf16  bf16 storage (rounded to nearest even from fp32 by the host API)
//   f16   fp16 storage, likewise
#pragma once
#include <cstdint>
#include <string>

#include "ir/half_float.h"
#include "ir/tile_ir.h"

namespace tessel {

enum class GemmPrecision { F32, TF32, BF16, F16 };
const char* precision_name(GemmPrecision p);       // "fp32", "tf32", "bf16", "fp16"
GemmPrecision parse_precision(const std::string& name);  // user error on an unknown name
DType storage_dtype(GemmPrecision p);               // of A and B

// x as the precision stores it, back in fp32 (f32 and tf32: x itself).
float round_to_storage(GemmPrecision p, float x);

// Relative Frobenius error a correct GEMM of this precision meets against an FP64
// oracle computed from the stored (rounded) inputs: fp32 accumulation for f32,
// bf16 and f16; tf32 also rounds the operands inside the atom.
double precision_error_bound(GemmPrecision p, int64_t k);

}  // namespace tessel
