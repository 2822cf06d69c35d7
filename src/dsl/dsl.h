// The staged C++ DSL. Running a kernel-building function does not compute anything:
// each call records a TileIR op in the KernelBuilder (capture). Tile sizes are
// symbols (`tile("BM")`) that a Plan binds later, so one kernel serves every plan:
// the algorithm apart from its schedule.
//
//   KernelBuilder kb("scale");
//   Sym M = kb.size("M"), N = kb.size("N"), ld = kb.size("ld");
//   Sym BM = kb.tile("BM"), BN = kb.tile("BN");
//   Tensor X = kb.tensor("X", M, N, ld, Access::InOut);
//   kb.parallel(ceil_div(M, BM), ceil_div(N, BN), [&](Sym i, Sym j) {
//     Tile x = kb.load(X, i * BM, j * BN, BM, BN);
//     kb.store(X, i * BM, j * BN, kb.mul(x, kb.scalar_value(kb.scalar("s"))));
//   });
//   TileKernel k = kb.finish();  // verified
//
// Every recording call takes a std::source_location defaulted at the caller, so
// verifier errors point at the user's line.
#pragma once
#include <functional>
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
inline Sym ceil_div(Sym a, Sym b) { return ceil_div(a.e, b.e); }

struct Tensor {
  std::string name;
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

class KernelBuilder {
 public:
  using Loc = std::source_location;
  explicit KernelBuilder(std::string name);

  Sym size(const std::string& name);
  Sym tile(const std::string& name);
  Tensor tensor(const std::string& name, Sym rows, Sym cols, Sym ld, Access access);
  // Declares a scalar parameter; scalar_value reads it inside the kernel.
  std::string scalar(const std::string& name);
  Tile scalar_value(const std::string& name, Loc loc = Loc::current());

  // A grid of independent instances; the body receives the coordinates.
  void parallel(Sym extent0, Sym extent1, const std::function<void(Sym, Sym)>& body,
                Loc loc = Loc::current());
  // Ordered loops carrying one value: body(k, carried) returns the next value.
  Tile serial(Sym extent, Tile init, const std::function<Tile(Sym, Tile)>& body,
              Loc loc = Loc::current());
  Tile pipeline(Sym extent, Tile init, const std::function<Tile(Sym, Tile)>& body,
                Loc loc = Loc::current());
  void if_(ScalarCond cond, const std::function<void()>& then_body,
           const std::function<void()>& else_body, Loc loc = Loc::current());

  Tile load(const Tensor& t, Sym row, Sym col, Sym rows, Sym cols, Loc loc = Loc::current());
  void store(const Tensor& t, Sym row, Sym col, Tile value, Loc loc = Loc::current());
  Tile constant(double value, Sym rows, Sym cols, Loc loc = Loc::current());
  Tile mma(Tile a, Tile b, Tile acc, Loc loc = Loc::current());
  Tile add(Tile a, Tile b, Loc loc = Loc::current());
  Tile sub(Tile a, Tile b, Loc loc = Loc::current());
  Tile mul(Tile a, Tile b, Loc loc = Loc::current());
  Tile max(Tile a, Tile b, Loc loc = Loc::current());
  Tile exp(Tile a, Loc loc = Loc::current());
  Tile neg(Tile a, Loc loc = Loc::current());
  void barrier(Loc loc = Loc::current());

  // Returns the captured kernel after running the verifier (user errors point at
  // the line that recorded the faulty op).
  TileKernel finish();
  // The captured kernel without verification, for tests of the verifier itself.
  TileKernel finish_unverified();

 private:
  Tile new_value(TileType type);
  TileOp& emit(TileOp op);
  Tile emit_elementwise(TileOpKind kind, std::vector<Tile> operands, Loc loc);
  Tile carried_loop(TileOpKind kind, Sym extent, Tile init,
                    const std::function<Tile(Sym, Tile)>& body, Loc loc);
  std::string fresh_iv(const char* base);

  TileKernel kernel_;
  std::vector<Region*> regions_;  // innermost open region last
  int next_iv_ = 0;
};

}  // namespace tessel
