// Names that Python passes as strings: dtypes ("float32" or "f32"), accesses ("in",
// "out", "inout"), targets ("cpu", "sim", "cuda"), comparisons ("<", "lt", ...). An
// unknown name is a tessel::Error (InvalidArgument) that lists the known ones.
#pragma once
#include <string>

#include "ir/tile_ir.h"
#include "plan/plan.h"
#include "tessel/error.h"

namespace tessel_py {

inline tessel::DType parse_dtype(const std::string& s) {
  if (s == "float32" || s == "f32") return tessel::DType::F32;
  if (s == "float64" || s == "f64") return tessel::DType::F64;
  if (s == "float16" || s == "f16") return tessel::DType::F16;
  if (s == "bfloat16" || s == "bf16") return tessel::DType::BF16;
  tessel::user_error(tessel::ErrorKind::InvalidArgument,
                     "unknown dtype '" + s + "' (float32, float64, float16, bfloat16)");
}

inline const char* dtype_python_name(tessel::DType t) {
  switch (t) {
    case tessel::DType::F32: return "float32";
    case tessel::DType::F64: return "float64";
    case tessel::DType::F16: return "float16";
    case tessel::DType::BF16: return "bfloat16";
  }
  return "?";
}

inline tessel::Access parse_access(const std::string& s) {
  if (s == "in") return tessel::Access::In;
  if (s == "out") return tessel::Access::Out;
  if (s == "inout") return tessel::Access::InOut;
  tessel::user_error(tessel::ErrorKind::InvalidArgument, "unknown access '" + s + "' (in, out, inout)");
}

inline tessel::CmpOp parse_cmp(const std::string& s) {
  using tessel::CmpOp;
  if (s == "==" || s == "eq") return CmpOp::EQ;
  if (s == "!=" || s == "ne") return CmpOp::NE;
  if (s == "<" || s == "lt") return CmpOp::LT;
  if (s == "<=" || s == "le") return CmpOp::LE;
  if (s == ">" || s == "gt") return CmpOp::GT;
  if (s == ">=" || s == "ge") return CmpOp::GE;
  tessel::user_error(tessel::ErrorKind::InvalidArgument,
                     "unknown comparison '" + s + "' (==, !=, <, <=, >, >=)");
}

inline tessel::AtomKind parse_atom(const std::string& s) {
  if (s == "fma") return tessel::AtomKind::Fma;
  if (s == "mma.sync") return tessel::AtomKind::MmaSync;
  if (s == "wgmma") return tessel::AtomKind::Wgmma;
  tessel::user_error(tessel::ErrorKind::InvalidArgument, "unknown atom '" + s + "' (fma, mma.sync, wgmma)");
}

}  // namespace tessel_py
