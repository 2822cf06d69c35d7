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
#include <array>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace tessel {

// BF16 and F16 are storage types: a kernel computes on them in fp32 (fragments
// and accumulators are always fp32); an mma atom reads them as its operands.
// F64 (sim and cpu only) computes in fp64.
// U32 holds only the counters of `ticket` ops (tile_verify.h refuses any other use).
enum class DType { F32, BF16, F16, F64, U32 };
const char* dtype_name(DType t);
int dtype_bytes(DType t);

enum class Access { In, Out, InOut };
const char* access_name(Access a);

// A tensor parameter of rank 1 to 4: element (i0, i1, ...) lives at
// data[i0 * strides[0] + i1 * strides[1] + ...]. Extents and strides are index
// expressions over the kernel's size parameters (usually one symbol each, or the
// constant 1), bound at launch. A transposed view is a permutation of strides; a
// broadcast view has stride 0 along a dimension (read-only tensors only: the
// launch checks that a tensor the kernel writes has no two elements at one address).
struct TensorParam {
  std::string name;
  DType dtype = DType::F32;
  std::vector<Expr> shape;    // extents, outermost first
  std::vector<Expr> strides;  // in elements, one per extent
  Access access = Access::In;
  // Tensors this one may share memory with, declared by the kernel (an in-place
  // update reading X and writing Y on one buffer): the launch's overlap check
  // (runtime/tensor_check.h) lets these pairs through. Written `overlaps(X)`.
  std::vector<std::string> may_overlap;
  int rank() const { return static_cast<int>(shape.size()); }
  bool may_overlap_with(const std::string& other) const;
};
constexpr int kMaxTensorRank = 4;
constexpr int kMaxGridRank = 3;

struct ScalarParam {
  std::string name;
  DType dtype = DType::F32;
};

// The tile dimensions a load or store of a rank-`rank` tensor spans by default:
// the last two ({rank-2, rank-1}), or {-1, 0} (a row vector) for rank 1.
std::array<int, 2> default_tile_dims(int rank);

// Where a user wrote something, for verifier messages.
struct SourceLoc {
  std::string file;
  uint32_t line = 0;
  static SourceLoc from(const std::source_location& loc);
  std::string to_string() const;  // "file:line", or "" if unknown
};

// A value's type: a scalar (shape empty) or a 2-D tile with symbolic extents.
// Tiles are always 2-D: a row vector is [1, C], a column vector [R, 1].
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

// Elementwise operands broadcast by identity: a scalar stretches over the whole
// tile, and a tile dimension of extent 1 stretches over the other operand's extent
// ([R, 1] with [R, C] is a row-wise operand, [1, C] with [R, C] a column-wise one).
// The result has the broadcast shape.
enum class TileOpKind {
  ScalarParam,  // result = the kernel's scalar parameter `param`
  Const,        // result = tile (or scalar) filled with `constant`, or with the
                // value of `index_value` (an index expression: sizes, loop variables)
  // result = the tile of the tensor whose top-left element is at `coords` (one per
  // tensor dimension); the tile's rows run along tensor dimension dims[0] and its
  // columns along dims[1] (-1: a unit axis, extent 1, for rank-1 tensors). Elements
  // outside the tensor read as `constant` (the padding, 0 unless given).
  Load,
  Store,        // tensor[coords .. along dims] = operand 0, elements outside dropped
  Mma,          // result = operand0 (MxK) * operand1 (KxN) + operand2 (MxN)
  Add, Sub, Mul, Div, Max, Min,           // elementwise binary
  Exp, Exp2, Log, Neg, Abs, Sqrt, Rsqrt, Recip, Tanh,  // elementwise unary
  Cmp,          // 1 where `operand0 cmp operand1` holds, else 0 (`cmp` says which)
  Select,       // operand0 != 0 ? operand1 : operand2, elementwise
  Cast,         // operand 0 rounded to the result's dtype
  Broadcast,    // operand 0 stretched (by identity) to the result's shape
  Index,        // result[r, c] = r (axis 0) or c (axis 1), as a number; no operands
  Reduce,       // operand 0 reduced along `axis` with `reduce`; that extent becomes 1
  Transpose,    // result[c, r] = operand0[r, c]
  Parallel,     // independent instances over `loops`: the grid
  Serial,       // ordered loop over loops[0], with carried values
  Pipeline,     // like Serial, with permission to overlap iterations
  If,           // regions[0] when `cond` holds, else regions[1]; results via yield
  Yield,        // ends a region, passing its operands out
  Barrier,      // a native group barrier written by the user
  // The group takes the next ticket of element coords[0] of the u32 counter tensor
  // `param`: tickets run 0, 1, .., E - 1 (E = loops[0].extent) and then start at 0
  // again, the element holding the next one to hand out. Binds the ticket to the
  // symbol loops[0].iv for the ops after it in its region. Every worker of the group
  // has finished the ops before it, and a group that draws a later ticket of the
  // same round sees what they stored (a release, then an acquire): the last of E
  // groups (ticket E - 1) can read what the other E - 1 wrote. A counter starts a
  // launch at 0 and ends it there when a multiple of E groups take its tickets.
  Ticket,
};
const char* tile_op_name(TileOpKind k);

struct LoopDim {
  std::string iv;  // induction variable symbol
  Expr extent;     // iterates 0 .. extent-1
};

enum class CmpOp { EQ, NE, LT, LE, GT, GE };
const char* cmp_op_name(CmpOp op);
// a op b (NaN compares as IEEE says: only != holds).
bool cmp_holds(CmpOp op, double a, double b);

enum class ReduceOp { Sum, Max, Min };
const char* reduce_op_name(ReduceOp op);  // "sum", "max", "min"
// The identity of the reduction: 0, -inf, +inf.
double reduce_identity(ReduceOp op);

// True for the elementwise kinds (Add .. Transpose excluded: Add..Broadcast, Index).
bool is_elementwise(TileOpKind k);

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
  double constant = 0;        // Const: the value; Load: the padding
  Expr index_value;           // Const: when set, the value is this index expression
  std::vector<Expr> coords;   // Load/Store: top-left element, one per tensor dimension; Ticket: the counter
  std::array<int, 2> dims{0, 1};  // Load/Store: tensor dimensions of rows and cols (-1: unit)
  int axis = 0;               // Reduce, Index
  ReduceOp reduce = ReduceOp::Sum;  // Reduce
  CmpOp cmp = CmpOp::EQ;      // Cmp
  std::vector<LoopDim> loops; // Parallel (1 to 3 dims), Serial/Pipeline (1 dim), Ticket (its symbol)
  // Pipeline (optional): how many iterations of this loop the group ran before this
  // execution's first, where that count is not (executions before) x (extent): a loop
  // whose extent varies with an enclosing loop's iteration. Stages count on from it.
  Expr stage_base;
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
