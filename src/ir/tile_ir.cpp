#include "ir/tile_ir.h"

#include <algorithm>
#include <limits>

namespace tessel {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    case DType::F64: return "f64";
    case DType::U32: return "u32";
  }
  return "?";
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::BF16:
    case DType::F16: return 2;
    case DType::F64: return 8;
    case DType::U32: return 4;
  }
  return 0;
}

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
    case TileOpKind::Div: return "div";
    case TileOpKind::Max: return "max";
    case TileOpKind::Min: return "min";
    case TileOpKind::Exp: return "exp";
    case TileOpKind::Exp2: return "exp2";
    case TileOpKind::Log: return "log";
    case TileOpKind::Neg: return "neg";
    case TileOpKind::Abs: return "abs";
    case TileOpKind::Sqrt: return "sqrt";
    case TileOpKind::Rsqrt: return "rsqrt";
    case TileOpKind::Recip: return "recip";
    case TileOpKind::Tanh: return "tanh";
    case TileOpKind::Cmp: return "cmp";
    case TileOpKind::Select: return "select";
    case TileOpKind::Cast: return "cast";
    case TileOpKind::Broadcast: return "broadcast";
    case TileOpKind::Index: return "index";
    case TileOpKind::Reduce: return "reduce";
    case TileOpKind::Transpose: return "transpose";
    case TileOpKind::Parallel: return "parallel";
    case TileOpKind::Serial: return "serial";
    case TileOpKind::Pipeline: return "pipeline";
    case TileOpKind::If: return "if";
    case TileOpKind::Yield: return "yield";
    case TileOpKind::Barrier: return "barrier";
    case TileOpKind::Ticket: return "ticket";
  }
  return "?";
}

bool cmp_holds(CmpOp op, double a, double b) {
  switch (op) {
    case CmpOp::EQ: return a == b;
    case CmpOp::NE: return a != b;
    case CmpOp::LT: return a < b;
    case CmpOp::LE: return a <= b;
    case CmpOp::GT: return a > b;
    case CmpOp::GE: return a >= b;
  }
  return false;
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

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

double reduce_identity(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return 0;
    case ReduceOp::Max: return -std::numeric_limits<double>::infinity();
    case ReduceOp::Min: return std::numeric_limits<double>::infinity();
  }
  return 0;
}

bool is_elementwise(TileOpKind k) {
  switch (k) {
    case TileOpKind::Add:
    case TileOpKind::Sub:
    case TileOpKind::Mul:
    case TileOpKind::Div:
    case TileOpKind::Max:
    case TileOpKind::Min:
    case TileOpKind::Exp:
    case TileOpKind::Exp2:
    case TileOpKind::Log:
    case TileOpKind::Neg:
    case TileOpKind::Abs:
    case TileOpKind::Sqrt:
    case TileOpKind::Rsqrt:
    case TileOpKind::Recip:
    case TileOpKind::Tanh:
    case TileOpKind::Cmp:
    case TileOpKind::Select:
    case TileOpKind::Cast:
    case TileOpKind::Broadcast:
    case TileOpKind::Index: return true;
    default: return false;
  }
}

bool TensorParam::may_overlap_with(const std::string& other) const {
  return std::find(may_overlap.begin(), may_overlap.end(), other) != may_overlap.end();
}

std::array<int, 2> default_tile_dims(int rank) {
  if (rank == 1) return {-1, 0};
  if (rank >= 2) return {rank - 2, rank - 1};
  return {-1, -1};  // no tensor dimension to span (rank 0 is refused by the verifier)
}

const TensorParam* TileKernel::find_tensor(const std::string& name) const {
  for (const TensorParam& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace tessel
