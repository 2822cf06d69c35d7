// TileIR: what the user meant. Operations on whole tiles inside structured nests,
// in SSA form. Tile sizes are symbols (tile parameters such as BM) that a Plan binds;
// tensor sizes and leading dimensions are kernel parameters bound at launch.
//
// A kernel body is one Region. Values are numbered kernel-wide (Value::id indexes
// TileKernel::values). Nests (parallel, serial, pipeline) own one region; `if` owns
// two. Loop-carried values: a serial/pipeline op lists its initial values as
// operands, its region's `args` are the carried values inside the body, the body
// ends with a `yield` of the next values, and the op's results are the final ones.
#pragma once
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace tessel {

// BF16 and F16 are storage types: a kernel computes on them in fp32 (fragments
// and accumulators are always fp32); an mma atom reads them as its operands.
enum class DType { F32, BF16, F16 };
const char* dtype_name(DType t);
int dtype_bytes(DType t);

enum class Access { In, Out, InOut };
const char* access_name(Access a);

// A 2-D tensor parameter: element (r, c) lives at data[r * ld + c]. `rows`, `cols`
// and `ld` name integer kernel parameters.
struct TensorParam {
  std::string name;
  DType dtype = DType::F32;
  std::string rows, cols, ld;
  Access access = Access::In;
};

struct ScalarParam {
  std::string name;
  DType dtype = DType::F32;
};

// Where a user wrote something, for verifier messages.
struct SourceLoc {
  std::string file;
  uint32_t line = 0;
  static SourceLoc from(const std::source_location& loc);
  std::string to_string() const;  // "file:line", or "" if unknown
};

// A value's type: a scalar (shape empty) or a 2-D tile with symbolic extents.
struct TileType {
  DType dtype = DType::F32;
  std::vector<Expr> shape;  // {} scalar, {rows, cols} tile
  bool is_scalar() const { return shape.empty(); }
};

struct Value {
  int id = -1;
  TileType type;
  std::string name;  // printed as %name; unique in the kernel
};

enum class TileOpKind {
  ScalarParam,  // result = the kernel's scalar parameter `param`
  Const,        // result = tile (or scalar) filled with `constant`
  Load,         // result = tensor[coords .. coords + shape), zero outside the tensor
  Store,        // tensor[coords ..] = operand 0, elements outside the tensor dropped
  Mma,          // result = operand0 (MxK) * operand1 (KxN) + operand2 (MxN)
  Add, Sub, Mul, Max,  // elementwise binary; a scalar operand broadcasts
  Exp, Neg,            // elementwise unary
  Parallel,     // independent instances over `loops`: the grid
  Serial,       // ordered loop over loops[0], with carried values
  Pipeline,     // like Serial, with permission to overlap iterations
  If,           // regions[0] when `cond` holds, else regions[1]; results via yield
  Yield,        // ends a region, passing its operands out
  Barrier,      // a native group barrier written by the user
};
const char* tile_op_name(TileOpKind k);

struct LoopDim {
  std::string iv;  // induction variable symbol
  Expr extent;     // iterates 0 .. extent-1
};

enum class CmpOp { EQ, NE, LT, LE, GT, GE };
const char* cmp_op_name(CmpOp op);

// `if` condition: either a scalar parameter against a constant (beta == 0), or
// two index expressions (k + 1 < n).
struct Cond {
  bool on_scalar = false;
  std::string scalar;  // on_scalar: the ScalarParam name
  double value = 0;    // on_scalar: the constant
  Expr lhs, rhs;       // !on_scalar
  CmpOp op = CmpOp::EQ;
};

struct TileOp;
struct Region {
  std::vector<int> args;  // carried values (value ids) visible in the body
  std::vector<TileOp> ops;
};

struct TileOp {
  TileOpKind kind = TileOpKind::Const;
  std::vector<int> operands;  // value ids
  std::vector<int> results;   // value ids
  std::string param;          // ScalarParam: name; Load/Store: tensor name
  double constant = 0;        // Const
  std::vector<Expr> coords;   // Load/Store: top-left element (row, col)
  std::vector<LoopDim> loops; // Parallel (1 or 2 dims), Serial/Pipeline (1 dim)
  Cond cond;                  // If
  std::vector<Region> regions;
  SourceLoc loc;
};

struct TileKernel {
  std::string name;
  std::vector<std::string> size_params;  // integer kernel parameters (M, N, K, lda...)
  std::vector<std::string> tile_params;  // symbols a Plan binds (BM, BN, BK)
  std::vector<TensorParam> tensors;
  std::vector<ScalarParam> scalars;
  std::vector<Value> values;
  Region body;

  const TensorParam* find_tensor(const std::string& name) const;
};

}  // namespace tessel
