// The DSL from Python, with C++'s capture model: each builder call records a TileIR
// op; nest bodies are Python callables run once, at capture, with the loop
// variables as Syms. Each op carries the Python file:line that recorded it, so
// the verifier's errors point at the user's code. Sym supports + - * // % with ints. A Python exception raised
// inside a body leaves that builder unusable (its open nest is gone), so every later
// call on it is refused; so is finish() inside an open nest.
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <deque>
#include <fstream>
#include <map>
#include <sstream>

#include "bindings.h"
#include "dsl/dsl.h"
#include "ir/tile_text.h"
#include "ir/tile_verify.h"
#include "names.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tessel_py {
namespace {

using tessel::Sym;
using tessel::Tile;

void fail(const std::string& message) {
  tessel::user_error(tessel::ErrorKind::InvalidArgument, message);
}

// The Python line that called into the builder (a C++ call adds no Python frame).
tessel::SourceLoc python_loc() {
  // Never destroyed: a static's destructor would run after the interpreter is gone.
  static nb::object* getframe = new nb::object(nb::module_::import_("sys").attr("_getframe"));
  nb::object frame = (*getframe)(0);
  tessel::SourceLoc loc;
  loc.file = nb::cast<std::string>(frame.attr("f_code").attr("co_filename"));
  loc.line = nb::cast<uint32_t>(frame.attr("f_lineno"));
  return loc;
}

// Gives every op the Python line of the call that recorded it: the ops of one kind,
// in the kernel's pre-order, are the calls recording that kind, in call order (a
// nest joins its region when its body is done, but is called before its body's
// ops); a yield takes its nest's line.
void set_python_locs(tessel::Region& region, std::map<tessel::TileOpKind, std::deque<tessel::SourceLoc>>& queues,
                     const tessel::SourceLoc& parent) {
  for (tessel::TileOp& op : region.ops) {
    auto& q = queues[op.kind];
    if (op.kind == tessel::TileOpKind::Yield) {
      op.loc = parent;
    } else if (!q.empty()) {
      op.loc = q.front();
      q.pop_front();
    }
    for (tessel::Region& r : op.regions) set_python_locs(r, queues, op.loc);
  }
}

// A KernelBuilder and whether it can still record (see the top of the file).
struct Builder {
  explicit Builder(std::string name) : kb(std::move(name)) {}
  tessel::KernelBuilder kb;
  int depth = 0;        // open nests
  bool broken = false;  // a body raised
  bool finished = false;
  // Each op-recording call in order, with the Python line that made it (see finish).
  std::vector<std::pair<tessel::TileOpKind, tessel::SourceLoc>> calls;

  tessel::KernelBuilder& use() {
    if (broken) fail("this KernelBuilder is unusable: an exception escaped a nest body earlier");
    if (finished) fail("this KernelBuilder already finished its kernel");
    return kb;
  }
  // use(), for a call that records one op of `kind` (and the yields of its nests).
  tessel::KernelBuilder& op(tessel::TileOpKind kind) {
    tessel::KernelBuilder& k = use();
    calls.emplace_back(kind, python_loc());
    return k;
  }
  // Runs a nest body; an escaping exception breaks the builder.
  template <class F>
  auto body(F&& f) {
    struct Depth {
      Builder& b;
      bool done = false;
      ~Depth() {
        --b.depth;
        if (!done) b.broken = true;
      }
    } guard{*this};
    ++depth;
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      guard.done = true;
    } else {
      auto r = f();
      guard.done = true;
      return r;
    }
  }
};

// A body's result: one Tile or a list of them.
std::vector<Tile> tiles_of(nb::handle h) {
  if (nb::isinstance<Tile>(h)) return {nb::cast<Tile>(h)};
  return nb::cast<std::vector<Tile>>(h);
}

tessel::TileDims dims_of(const nb::object& dims) {
  auto v = nb::cast<std::vector<int>>(dims);
  if (v.size() != 2) fail("dims must hold two tensor dimensions (rows, cols), got " + std::to_string(v.size()));
  return {v[0], v[1]};
}

nb::dict tensor_info(const tessel::TensorParam& t) {
  nb::dict d;
  d["name"] = t.name;
  d["rank"] = t.rank();
  d["dtype"] = dtype_python_name(t.dtype);
  d["access"] = tessel::access_name(t.access);
  nb::list shape, strides;
  for (const auto& e : t.shape) shape.append(tessel::expr_to_string(e));
  for (const auto& e : t.strides) strides.append(tessel::expr_to_string(e));
  d["shape"] = shape;
  d["strides"] = strides;
  return d;
}

}  // namespace

void bind_dsl(nb::module_& m) {
  nb::class_<Sym>(m, "Sym", "An index expression: sizes, tile parameters, loop variables, constants.")
      .def(nb::init<int64_t>())
      .def("__add__", [](const Sym& a, const Sym& b) { return a + b; })
      .def("__radd__", [](const Sym& a, const Sym& b) { return b + a; })
      .def("__sub__", [](const Sym& a, const Sym& b) { return a - b; })
      .def("__rsub__", [](const Sym& a, const Sym& b) { return b - a; })
      .def("__mul__", [](const Sym& a, const Sym& b) { return a * b; })
      .def("__rmul__", [](const Sym& a, const Sym& b) { return b * a; })
      .def("__floordiv__", [](const Sym& a, const Sym& b) { return a / b; })
      .def("__rfloordiv__", [](const Sym& a, const Sym& b) { return b / a; })
      .def("__mod__", [](const Sym& a, const Sym& b) { return a % b; })
      .def("__rmod__", [](const Sym& a, const Sym& b) { return b % a; })
      .def("__repr__", [](const Sym& s) { return tessel::expr_to_string(s.e); });
  nb::implicitly_convertible<int64_t, Sym>();
  m.def("ceil_div", [](const Sym& a, const Sym& b) { return tessel::ceil_div(a, b); });
  m.def("sym_min", [](const Sym& a, const Sym& b) { return tessel::min(a, b); });
  m.def("sym_max", [](const Sym& a, const Sym& b) { return tessel::max(a, b); });

  nb::class_<tessel::Tensor>(m, "Tensor")
      .def_ro("name", &tessel::Tensor::name)
      .def_ro("rank", &tessel::Tensor::rank)
      .def("__repr__", [](const tessel::Tensor& t) { return "Tensor(" + t.name + ")"; });
  nb::class_<Tile>(m, "Tile")
      .def_ro("id", &Tile::id)
      .def("__repr__", [](const Tile& t) { return "Tile(%" + std::to_string(t.id) + ")"; });

  nb::class_<tessel::TileKernel>(m, "TileKernel", "A captured (or parsed) kernel: TileIR.")
      .def_ro("name", &tessel::TileKernel::name)
      .def_ro("size_params", &tessel::TileKernel::size_params)
      .def_ro("tile_params", &tessel::TileKernel::tile_params)
      .def_prop_ro("tensors",
                   [](const tessel::TileKernel& k) {
                     nb::list l;
                     for (const auto& t : k.tensors) l.append(tensor_info(t));
                     return l;
                   })
      .def_prop_ro("scalars",
                   [](const tessel::TileKernel& k) {
                     nb::list l;
                     for (const auto& s : k.scalars) l.append(nb::str(s.name.c_str()));
                     return l;
                   })
      .def("text", &tessel::print_tile_kernel, "The TileIR text (kernels/*.tir form).")
      .def("__repr__", [](const tessel::TileKernel& k) { return "TileKernel(" + k.name + ")"; });
  m.def("parse_tile_kernel", &tessel::parse_tile_kernel, "text"_a);
  m.def("load_tile_kernel", [](const std::string& path) {
    std::ifstream in(path);
    if (!in) fail("cannot read TileIR file " + path);
    std::stringstream text;
    text << in.rdbuf();
    return tessel::parse_tile_kernel(text.str());
  }, "path"_a);

  using B = Builder;
  using K = tessel::TileOpKind;
  auto binary = [](tessel::Tile (tessel::KernelBuilder::*op)(Tile, Tile, tessel::KernelBuilder::Loc), K kind) {
    return [op, kind](B& b, Tile x, Tile y) { return (b.op(kind).*op)(x, y, tessel::KernelBuilder::Loc::current()); };
  };
  auto unary = [](tessel::Tile (tessel::KernelBuilder::*op)(Tile, tessel::KernelBuilder::Loc), K kind) {
    return [op, kind](B& b, Tile x) { return (b.op(kind).*op)(x, tessel::KernelBuilder::Loc::current()); };
  };
  nb::class_<B> kb(m, "KernelBuilder", "Records a kernel (TileIR); see docs/python.md.");
  kb.def(nb::init<std::string>(), "name"_a)
      .def("size", [](B& b, const std::string& n) { return b.use().size(n); })
      .def("tile", [](B& b, const std::string& n) { return b.use().tile(n); })
      .def("tensor",
           [](B& b, const std::string& name, std::vector<Sym> shape, nb::object strides,
              const std::string& access, const std::string& dtype) {
             if (strides.is_none())
               return b.use().tensor(name, std::move(shape), parse_access(access), parse_dtype(dtype));
             return b.use().tensor(name, std::move(shape), nb::cast<std::vector<Sym>>(strides),
                                   parse_access(access), parse_dtype(dtype));
           },
           "name"_a, "shape"_a, "strides"_a = nb::none(), "access"_a = "in", "dtype"_a = "float32")
      .def("allow_overlap", [](B& b, const tessel::Tensor& x, const tessel::Tensor& y) { b.use().allow_overlap(x, y); })
      .def("scalar", [](B& b, const std::string& n, const std::string& dtype) { return b.use().scalar(n, parse_dtype(dtype)); },
           "name"_a, "dtype"_a = "float32")
      .def("scalar_value", [](B& b, const std::string& n) { return b.op(K::ScalarParam).scalar_value(n); })
      .def("parallel",
           [](B& b, nb::args args) {
             if (args.size() < 2 || args.size() > 4)
               fail("parallel(extent0[, extent1[, extent2]], body): 1 to 3 extents and a body");
             nb::callable body = nb::cast<nb::callable>(args[args.size() - 1]);
             std::vector<Sym> e;
             for (size_t i = 0; i + 1 < args.size(); ++i) e.push_back(nb::cast<Sym>(args[i]));
             tessel::KernelBuilder& k = b.op(K::Parallel);
             auto run = [&](auto... iv) { b.body([&] { body(iv...); }); };
             if (e.size() == 1) k.parallel(e[0], [&](Sym i) { run(i); });
             if (e.size() == 2) k.parallel(e[0], e[1], [&](Sym i, Sym j) { run(i, j); });
             if (e.size() == 3) k.parallel(e[0], e[1], e[2], [&](Sym i, Sym j, Sym l) { run(i, j, l); });
           })
      .def("serial",
           [](B& b, Sym extent, nb::object init, nb::callable body) -> nb::object {
             bool one = nb::isinstance<Tile>(init);
             auto r = b.op(K::Serial).serial(extent, tiles_of(init), [&](Sym k, std::vector<Tile> carried) {
               return b.body([&] {
                 return tiles_of(one ? body(k, carried[0]) : body(k, nb::cast(carried)));
               });
             });
             return one ? nb::cast(r.at(0)) : nb::cast(r);
           },
           "extent"_a, "init"_a, "body"_a)
      .def("pipeline",
           [](B& b, Sym extent, nb::object init, nb::callable body) -> nb::object {
             bool one = nb::isinstance<Tile>(init);
             auto r = b.op(K::Pipeline).pipeline(extent, tiles_of(init), [&](Sym k, std::vector<Tile> carried) {
               return b.body([&] {
                 return tiles_of(one ? body(k, carried[0]) : body(k, nb::cast(carried)));
               });
             });
             return one ? nb::cast(r.at(0)) : nb::cast(r);
           },
           "extent"_a, "init"_a, "body"_a)
      .def("if_",
           [](B& b, Sym lhs, const std::string& op, Sym rhs, nb::callable then_body, nb::object else_body) {
             std::function<void()> other;
             if (!else_body.is_none()) other = [&] { b.body([&] { else_body(); }); };
             b.op(K::If).if_(lhs, parse_cmp(op), rhs, [&] { b.body([&] { then_body(); }); }, other);
           },
           "lhs"_a, "op"_a, "rhs"_a, "then"_a, "otherwise"_a = nb::none())
      .def("if_else",
           [](B& b, Sym lhs, const std::string& op, Sym rhs, nb::callable then_body,
              nb::callable else_body) -> nb::object {
             bool one = false;  // the branches return one Tile (else a list of them)
             auto branch = [&](nb::callable& f) {
               return [&] {
                 return b.body([&] {
                   nb::object r = f();
                   one = nb::isinstance<Tile>(r);
                   return tiles_of(r);
                 });
               };
             };
             auto r = b.op(K::If).if_else(lhs, parse_cmp(op), rhs, branch(then_body), branch(else_body));
             return one ? nb::cast(r.at(0)) : nb::cast(r);
           },
           "lhs"_a, "op"_a, "rhs"_a, "then"_a, "otherwise"_a)
      .def("if_scalar",
           [](B& b, const std::string& scalar, const std::string& op, double value, nb::callable then_body,
              nb::object else_body) {
             std::function<void()> other = [] {};
             if (!else_body.is_none()) other = [&] { b.body([&] { else_body(); }); };
             b.op(K::If).if_(tessel::ScalarCond{scalar, parse_cmp(op), value}, [&] { b.body([&] { then_body(); }); },
                         other);
           },
           "scalar"_a, "op"_a, "value"_a, "then"_a, "otherwise"_a = nb::none())
      .def("load",
           [](B& b, const tessel::Tensor& t, std::vector<Sym> coords, Sym rows, Sym cols, double pad,
              nb::object dims) {
             tessel::KernelBuilder& k = b.op(K::Load);
             if (dims.is_none()) return k.load(t, coords, rows, cols, pad);
             return k.load(t, coords, dims_of(dims), rows, cols, pad);
           },
           "tensor"_a, "coords"_a, "rows"_a, "cols"_a, "pad"_a = 0.0, "dims"_a = nb::none())
      .def("store",
           [](B& b, const tessel::Tensor& t, std::vector<Sym> coords, Tile value, nb::object dims) {
             tessel::KernelBuilder& k = b.op(K::Store);
             if (dims.is_none()) return k.store(t, coords, value);
             k.store(t, coords, dims_of(dims), value);
           },
           "tensor"_a, "coords"_a, "value"_a, "dims"_a = nb::none())
      .def("constant",
           [](B& b, double v, nb::object rows, nb::object cols) {
             if (rows.is_none() != cols.is_none()) fail("constant: give both rows and cols, or neither");
             tessel::KernelBuilder& k = b.op(K::Const);
             if (rows.is_none()) return k.constant(v);
             return k.constant(v, nb::cast<Sym>(rows), nb::cast<Sym>(cols));
           },
           "value"_a, "rows"_a = nb::none(), "cols"_a = nb::none())
      .def("index_value",
           [](B& b, Sym v, nb::object rows, nb::object cols) {
             if (rows.is_none() != cols.is_none()) fail("index_value: give both rows and cols, or neither");
             tessel::KernelBuilder& k = b.op(K::Const);
             if (rows.is_none()) return k.index_value(v);
             return k.index_value(v, nb::cast<Sym>(rows), nb::cast<Sym>(cols));
           },
           "value"_a, "rows"_a = nb::none(), "cols"_a = nb::none())
      .def("mma", [](B& b, Tile x, Tile y, Tile acc) { return b.op(K::Mma).mma(x, y, acc); })
      .def("add", binary(&tessel::KernelBuilder::add, K::Add))
      .def("sub", binary(&tessel::KernelBuilder::sub, K::Sub))
      .def("mul", binary(&tessel::KernelBuilder::mul, K::Mul))
      .def("div", binary(&tessel::KernelBuilder::div, K::Div))
      .def("max", binary(&tessel::KernelBuilder::max, K::Max))
      .def("min", binary(&tessel::KernelBuilder::min, K::Min))
      .def("exp", unary(&tessel::KernelBuilder::exp, K::Exp))
      .def("exp2", unary(&tessel::KernelBuilder::exp2, K::Exp2))
      .def("log", unary(&tessel::KernelBuilder::log, K::Log))
      .def("neg", unary(&tessel::KernelBuilder::neg, K::Neg))
      .def("abs", unary(&tessel::KernelBuilder::abs, K::Abs))
      .def("sqrt", unary(&tessel::KernelBuilder::sqrt, K::Sqrt))
      .def("rsqrt", unary(&tessel::KernelBuilder::rsqrt, K::Rsqrt))
      .def("recip", unary(&tessel::KernelBuilder::recip, K::Recip))
      .def("tanh", unary(&tessel::KernelBuilder::tanh, K::Tanh))
      .def("transpose", unary(&tessel::KernelBuilder::transpose, K::Transpose))
      .def("cmp", [](B& b, const std::string& op, Tile x, Tile y) { return b.op(K::Cmp).cmp(parse_cmp(op), x, y); })
      .def("select", [](B& b, Tile c, Tile x, Tile y) { return b.op(K::Select).select(c, x, y); })
      .def("cast", [](B& b, Tile x, const std::string& dtype) { return b.op(K::Cast).cast(x, parse_dtype(dtype)); })
      .def("broadcast", [](B& b, Tile x, Sym rows, Sym cols) { return b.op(K::Broadcast).broadcast(x, rows, cols); })
      .def("index", [](B& b, int axis, Sym rows, Sym cols) { return b.op(K::Index).index(axis, rows, cols); })
      .def("reduce_sum", [](B& b, Tile x, int axis) { return b.op(K::Reduce).reduce_sum(x, axis); }, "a"_a, "axis"_a)
      .def("reduce_max", [](B& b, Tile x, int axis) { return b.op(K::Reduce).reduce_max(x, axis); }, "a"_a, "axis"_a)
      .def("reduce_min", [](B& b, Tile x, int axis) { return b.op(K::Reduce).reduce_min(x, axis); }, "a"_a, "axis"_a)
      .def("barrier", [](B& b) { b.op(K::Barrier).barrier(); })
      .def("finish", [](B& b) {
        tessel::KernelBuilder& k = b.use();
        if (b.depth > 0) fail("finish() inside an open nest body");
        b.finished = true;
        tessel::TileKernel out = k.finish_unverified();
        std::map<tessel::TileOpKind, std::deque<tessel::SourceLoc>> queues;
        for (auto& [kind, loc] : b.calls) queues[kind].push_back(loc);
        set_python_locs(out.body, queues, {});
        tessel::verify_tile_kernel(out);
        return out;
      });
}

}  // namespace tessel_py
