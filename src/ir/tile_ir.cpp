#include "ir/tile_ir.h"

namespace tessel {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
  }
  return "?";
}

int dtype_bytes(DType t) { return t == DType::F32 ? 4 : 2; }

const char* access_name(Access a) {
  switch (a) {
    case Access::In: return "in";
    case Access::Out: return "out";
    case Access::InOut: return "inout";
  }
  return "?";
}

SourceLoc SourceLoc::from(const std::source_location& loc) {
  return SourceLoc{loc.file_name(), static_cast<uint32_t>(loc.line())};
}

std::string SourceLoc::to_string() const {
  if (file.empty()) return "";
  return file + ":" + std::to_string(line);
}

const char* tile_op_name(TileOpKind k) {
  switch (k) {
    case TileOpKind::ScalarParam: return "param";
    case TileOpKind::Const: return "const";
    case TileOpKind::Load: return "load";
    case TileOpKind::Store: return "store";
    case TileOpKind::Mma: return "mma";
    case TileOpKind::Add: return "add";
    case TileOpKind::Sub: return "sub";
    case TileOpKind::Mul: return "mul";
    case TileOpKind::Max: return "max";
    case TileOpKind::Exp: return "exp";
    case TileOpKind::Neg: return "neg";
    case TileOpKind::Parallel: return "parallel";
    case TileOpKind::Serial: return "serial";
    case TileOpKind::Pipeline: return "pipeline";
    case TileOpKind::If: return "if";
    case TileOpKind::Yield: return "yield";
    case TileOpKind::Barrier: return "barrier";
  }
  return "?";
}

const char* cmp_op_name(CmpOp op) {
  switch (op) {
    case CmpOp::EQ: return "==";
    case CmpOp::NE: return "!=";
    case CmpOp::LT: return "<";
    case CmpOp::LE: return "<=";
    case CmpOp::GT: return ">";
    case CmpOp::GE: return ">=";
  }
  return "?";
}

const TensorParam* TileKernel::find_tensor(const std::string& name) const {
  for (const TensorParam& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace tessel
