// The staged C++ DSL. Running a kernel-building function does not compute anything:
// each call records a TileIR op in the KernelBuilder (capture). Tile sizes are
// symbols (`tile("BM")`) that a Plan binds later, so one kernel serves every plan:
// the algorithm apart from its schedule.
//
// The example below is a complete kernel: X *= s, tile by tile. tests/dsl/ builds
// this exact text (it compares it with its own copy) and verifies it.
//
// BEGIN EXAMPLE
//   KernelBuilder kb("scale");
//   Sym M = kb.size("M"), N = kb.size("N"), ld = kb.size("ld");
//   Sym BM = kb.tile("BM"), BN = kb.tile("BN");
//   Tensor X = kb.tensor("X", {M, N}, {ld, 1}, Access::InOut);
//   std::string s = kb.scalar("s");
//   kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
//     Tile x = kb.load(X, {i * BM, j * BN}, BM, BN);
//     kb.store(X, {i * BM, j * BN}, kb.mul(x, kb.scalar_value(s)));
//   });
//   TileKernel k = kb.finish();  // verified
// END EXAMPLE
//
// Tensors have rank 1 to 4 and a stride per dimension (a transposed view is a
// permutation of strides). A load names one coordinate per tensor dimension; the tile
// spans the last two dimensions unless `dims` says otherwise (a rank-1 tensor loads as
// a row [1, C], or with dims {0, -1} as a column [R, 1]). Elementwise operands
// broadcast: a scalar everywhere, an extent-1 tile dimension along the other's extent.
//
// Every recording call takes a std::source_location defaulted at the caller, so
// verifier errors point at the user's line.
#pragma once
#include <array>
#include <functional>
#include <initializer_list>
#include <source_location>
#include <string>
#include <vector>

#include "ir/tile_ir.h"

namespace tessel {

// An index expression in the DSL: sizes, tile parameters, loop variables, constants.
struct Sym {
  Expr e;
  Sym(Expr expr) : e(std::move(expr)) {}  // NOLINT: implicit on purpose
  Sym(int64_t v) : e(expr_const(v)) {}    // NOLINT
  Sym(int v) : e(expr_const(v)) {}        // NOLINT
};
inline Sym operator+(Sym a, Sym b) { return a.e + b.e; }
inline Sym operator-(Sym a, Sym b) { return a.e - b.e; }
inline Sym operator*(Sym a, Sym b) { return a.e * b.e; }
inline Sym operator/(Sym a, Sym b) { return floor_div(a.e, b.e); }  // floor division
inline Sym operator%(Sym a, Sym b) { return expr_mod(a.e, b.e); }   // floor modulo
inline Sym ceil_div(Sym a, Sym b) { return ceil_div(a.e, b.e); }
inline Sym min(Sym a, Sym b) { return expr_min(a.e, b.e); }
inline Sym max(Sym a, Sym b) { return expr_max(a.e, b.e); }

struct Tensor {
  std::string name;
  int rank = 2;
};

// A captured value: a tile or a scalar, named by its id in the kernel.
struct Tile {
  int id = -1;
};

// A condition on a scalar parameter: `kb.scalar_equals("beta", 0.0)`.
struct ScalarCond {
  std::string scalar;
  CmpOp op = CmpOp::EQ;
  double value = 0;
};

// The tensor dimensions a tile's rows and columns run along (-1: a unit axis of a
// rank-1 tensor).
using TileDims = std::array<int, 2>;

class KernelBuilder {
 public:
  using Loc = std::source_location;
  explicit KernelBuilder(std::string name);

  Sym size(const std::string& name);
  Sym tile(const std::string& name);
  // A tensor of rank shape.size() with the given strides (in elements).
  Tensor tensor(const std::string& name, std::vector<Sym> shape, std::vector<Sym> strides,
                Access access, DType dtype = DType::F32);
  // Row-major and contiguous: strides {d1 * d2 * ..., ..., d_last, 1}.
  Tensor tensor(const std::string& name, std::vector<Sym> shape, Access access,
                DType dtype = DType::F32);
  // The rank-2 form: element (r, c) at r * ld + c.
  Tensor tensor(const std::string& name, Sym rows, Sym cols, Sym ld, Access access);
  // Declares that a and b may share memory (an in-place update): the launch's
  // overlap check lets this pair through. The kernel must then be race-free with
  // them on one buffer; the sim judges tensors on one storage as one, so it shows
  // a race between them.
  void allow_overlap(const Tensor& a, const Tensor& b);
  // Declares a scalar parameter; scalar_value reads it inside the kernel.
  std::string scalar(const std::string& name, DType dtype = DType::F32);
  Tile scalar_value(const std::string& name, Loc loc = Loc::current());

  // A grid of independent instances (1 to 3 dimensions); the body receives the
  // coordinates. A kernel may hold several grids, run one after the other.
  void parallel(Sym extent0, const std::function<void(Sym)>& body, Loc loc = Loc::current());
  void parallel(Sym extent0, Sym extent1, const std::function<void(Sym, Sym)>& body,
                Loc loc = Loc::current());
  void parallel(Sym extent0, Sym extent1, Sym extent2,
                const std::function<void(Sym, Sym, Sym)>& body, Loc loc = Loc::current());
  // Ordered loops carrying one value: body(k, carried) returns the next value.
  Tile serial(Sym extent, Tile init, const std::function<Tile(Sym, Tile)>& body,
              Loc loc = Loc::current());
  Tile pipeline(Sym extent, Tile init, const std::function<Tile(Sym, Tile)>& body,
                Loc loc = Loc::current());
  // A pipeline whose extent varies with an enclosing loop's iteration: stage_base is
  // how many iterations of this loop the group ran before this execution
  // (TileOp::stage_base; the sim judges it: a wrong count breaks the stages' phases).
  Tile pipeline(Sym extent, Sym stage_base, Tile init, const std::function<Tile(Sym, Tile)>& body,
                Loc loc = Loc::current());
  // ... carrying any number of values (none included): body returns as many as it got.
  using CarriedBody = std::function<std::vector<Tile>(Sym, std::vector<Tile>)>;
  std::vector<Tile> serial(Sym extent, std::vector<Tile> init, const CarriedBody& body,
                           Loc loc = Loc::current());
  std::vector<Tile> pipeline(Sym extent, std::vector<Tile> init, const CarriedBody& body,
                             Loc loc = Loc::current());
  // Branches on a scalar parameter, or on index expressions (`lhs op rhs`).
  void if_(ScalarCond cond, const std::function<void()>& then_body,
           const std::function<void()>& else_body, Loc loc = Loc::current());
  void if_(Sym lhs, CmpOp op, Sym rhs, const std::function<void()>& then_body,
           const std::function<void()>& else_body = nullptr, Loc loc = Loc::current());

  // The same branch on index expressions, with values: each body returns as many
  // tiles, of the same types; the if's results are those of the branch that ran.
  using BranchBody = std::function<std::vector<Tile>()>;
  std::vector<Tile> if_else(Sym lhs, CmpOp op, Sym rhs, const BranchBody& then_body,
                            const BranchBody& else_body, Loc loc = Loc::current());

  // A rows x cols tile whose top-left element is at `coords` (one per tensor
  // dimension). Elements outside the tensor read as `pad`.
  Tile load(const Tensor& t, std::initializer_list<Sym> coords, Sym rows, Sym cols,
            double pad = 0, Loc loc = Loc::current());
  Tile load(const Tensor& t, const std::vector<Sym>& coords, Sym rows, Sym cols,
            double pad = 0, Loc loc = Loc::current());
  Tile load(const Tensor& t, const std::vector<Sym>& coords, TileDims dims, Sym rows, Sym cols,
            double pad = 0, Loc loc = Loc::current());
  // The rank-2 form.
  Tile load(const Tensor& t, Sym row, Sym col, Sym rows, Sym cols, Loc loc = Loc::current());
  void store(const Tensor& t, std::initializer_list<Sym> coords, Tile value,
             Loc loc = Loc::current());
  void store(const Tensor& t, const std::vector<Sym>& coords, Tile value,
             Loc loc = Loc::current());
  void store(const Tensor& t, const std::vector<Sym>& coords, TileDims dims, Tile value,
             Loc loc = Loc::current());
  void store(const Tensor& t, Sym row, Sym col, Tile value, Loc loc = Loc::current());

  Tile constant(double value, Sym rows, Sym cols, Loc loc = Loc::current());
  Tile constant(double value, Loc loc = Loc::current());  // a scalar
  // The value of an index expression (a size, a loop variable, k * BC ...) as a
  // number: a scalar, or a rows x cols tile filled with it.
  Tile index_value(Sym value, Loc loc = Loc::current());
  Tile index_value(Sym value, Sym rows, Sym cols, Loc loc = Loc::current());
  Tile mma(Tile a, Tile b, Tile acc, Loc loc = Loc::current());
  Tile add(Tile a, Tile b, Loc loc = Loc::current());
  Tile sub(Tile a, Tile b, Loc loc = Loc::current());
  Tile mul(Tile a, Tile b, Loc loc = Loc::current());
  Tile div(Tile a, Tile b, Loc loc = Loc::current());
  Tile max(Tile a, Tile b, Loc loc = Loc::current());
  Tile min(Tile a, Tile b, Loc loc = Loc::current());
  Tile exp(Tile a, Loc loc = Loc::current());
  Tile exp2(Tile a, Loc loc = Loc::current());
  Tile log(Tile a, Loc loc = Loc::current());
  Tile neg(Tile a, Loc loc = Loc::current());
  Tile abs(Tile a, Loc loc = Loc::current());
  Tile sqrt(Tile a, Loc loc = Loc::current());
  Tile rsqrt(Tile a, Loc loc = Loc::current());
  Tile recip(Tile a, Loc loc = Loc::current());
  Tile tanh(Tile a, Loc loc = Loc::current());
  // 1 where `a op b` holds, else 0.
  Tile cmp(CmpOp op, Tile a, Tile b, Loc loc = Loc::current());
  // cond != 0 ? a : b
  Tile select(Tile cond, Tile a, Tile b, Loc loc = Loc::current());
  Tile cast(Tile a, DType dtype, Loc loc = Loc::current());
  Tile broadcast(Tile a, Sym rows, Sym cols, Loc loc = Loc::current());
  // A rows x cols tile holding each element's row (axis 0) or column (axis 1) index.
  Tile index(int axis, Sym rows, Sym cols, Loc loc = Loc::current());
  // Reductions along `axis`; that extent becomes 1 ([R, C] along 1 gives [R, 1]).
  Tile reduce_sum(Tile a, int axis, Loc loc = Loc::current());
  Tile reduce_max(Tile a, int axis, Loc loc = Loc::current());
  Tile reduce_min(Tile a, int axis, Loc loc = Loc::current());
  Tile transpose(Tile a, Loc loc = Loc::current());
  void barrier(Loc loc = Loc::current());
  // The group takes the next ticket of counter[index] (a rank-1 u32 tensor), whose
  // tickets run 0 .. count - 1 and then start again (TileOpKind::Ticket): the
  // ticket, for the ops after this one. The group that draws count - 1 sees what
  // the groups before it in the round stored. Only in a parallel nest's body.
  Sym ticket(const Tensor& counter, Sym index, Sym count, Loc loc = Loc::current());

  // Returns the captured kernel after running the verifier (user errors point at
  // the line that recorded the faulty op).
  TileKernel finish();
  // The captured kernel without verification, for tests of the verifier itself.
  TileKernel finish_unverified();

 private:
  Tile new_value(TileType type);
  const TileType& type_of(Tile t) const;  // an empty scalar type for a bad id
  TileOp& emit(TileOp op);
  Tile emit_op(TileOpKind kind, std::vector<Tile> operands, TileType result, Loc loc);
  Tile emit_elementwise(TileOpKind kind, std::vector<Tile> operands, Loc loc);
  Tile emit_reduce(ReduceOp reduce, Tile a, int axis, Loc loc);
  Tile load_at(const Tensor& t, std::vector<Sym> coords, TileDims dims, Sym rows, Sym cols,
               double pad, Loc loc);
  void store_at(const Tensor& t, std::vector<Sym> coords, TileDims dims, Tile value, Loc loc);
  void parallel_nest(std::vector<Sym> extents, const std::function<void(std::vector<Sym>)>& body,
                     Loc loc);
  std::vector<Tile> carried_loop(TileOpKind kind, Sym extent, std::vector<Tile> init,
                                 const CarriedBody& body, Loc loc, Expr stage_base = nullptr);
  void branch(TileOp op, const std::function<void()>& then_body,
              const std::function<void()>& else_body);
  // Ends the open region with a yield of `values`.
  void emit_yield(const std::vector<Tile>& values, const SourceLoc& loc);
  std::string fresh_iv(const char* base);

  TileKernel kernel_;
  std::vector<Region*> regions_;  // innermost open region last
  int next_iv_ = 0;
};

}  // namespace tessel
