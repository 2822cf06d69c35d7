// Arrays in, launches out. Any object nanobind's ndarray takes (DLPack: NumPy
// arrays, PyTorch tensors, ...) is passed to tessel by its pointer, shape and
// strides: nothing is copied. A dtype tessel has no name for is a TypeError; an
// array on a device tessel does not launch on (not the host, not CUDA device 0), or
// arrays on two devices, a ValueError; both name the tensor and the numbers.
//
// Kernel (a compiled kernel called with arrays) keeps the last few bound launches
// (tessel::BoundLaunch) by the arguments' layouts, so a repeated call on arrays of
// one layout only swaps pointers and scalars before it runs. The GIL is released
// while a kernel runs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <mutex>

#include "bindings.h"
#include "ir/group_text.h"
#include "names.h"
#include "ops/gemm.h"
#include "tessel/tessel.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tessel_py {
namespace {

using Array = nb::ndarray<nb::ro>;  // read-only access accepts writable arrays too

enum class Where { Host, Cuda };

struct ArrayView {
  void* data = nullptr;
  tessel::DType dtype = tessel::DType::F32;
  std::vector<int64_t> shape, strides;
  Where where = Where::Host;
};

std::string dims_text(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

tessel::DType dtype_of(const nb::dlpack::dtype& t, const std::string& what) {
  auto code = static_cast<nb::dlpack::dtype_code>(t.code);
  if (t.lanes == 1 && code == nb::dlpack::dtype_code::Float) {
    if (t.bits == 32) return tessel::DType::F32;
    if (t.bits == 64) return tessel::DType::F64;
    if (t.bits == 16) return tessel::DType::F16;
  }
  if (t.lanes == 1 && code == nb::dlpack::dtype_code::Bfloat && t.bits == 16) return tessel::DType::BF16;
  static const char* const codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  std::string name = t.code < 7 ? codes[t.code] : "code" + std::to_string(t.code);
  throw nb::type_error((what + " has dtype " + name + std::to_string(t.bits) +
                        (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "") +
                        "; tessel takes float32, float64, float16 and bfloat16").c_str());
}

// Why an object that has __dlpack__ was still not taken.
std::string refused_hint(nb::handle h) {
  if (!nb::hasattr(h, "__dlpack__")) return "";
  return " that refused to export through DLPack (a read-only array where tessel writes, or a "
         "PyTorch tensor that requires grad: pass .detach())";
}

// Whether h is a NumPy array (numpy.ndarray itself), once NumPy is imported.
bool is_numpy_array(nb::handle h) {
  // Kept for the process's life (a type, not a nanobind object: no leak report).
  static nb::handle modules = nb::object(nb::module_::import_("sys").attr("modules")).release();
  static nb::handle ndarray;
  if (!ndarray.is_valid()) {
    if (!nb::borrow<nb::dict>(modules).contains("numpy")) return false;
    ndarray = nb::object(nb::module_::import_("numpy").attr("ndarray")).release();
  }
  return h.type().is(ndarray);
}

// A NumPy array that the kernel writes, through NumPy's unversioned DLPack export,
// which NumPy refuses for a read-only array. nanobind asks for a writable array's
// versioned capsule first (__dlpack__(max_version=...)), which NumPy before 2.1 does
// not take: a TypeError raised and caught on every call, about half the binding's
// cost on such a NumPy. False when NumPy refused (the general path then says why).
bool take_numpy_writable(nb::handle h, nb::ndarray<>& w) {
  static nb::handle name = nb::str("__dlpack__").release();
  try {
    nb::object capsule = h.attr(name)();
    return nb::try_cast(capsule, w, false);
  } catch (nb::python_error&) {
    return false;
  }
}

// `h` as an array view; `writable` for tensors the kernel writes.
ArrayView view_of(nb::handle h, bool writable, const std::string& what) {
  ArrayView v;
  const void* ptr = nullptr;
  size_t ndim = 0;
  int device_type = 0, device_id = 0;
  nb::dlpack::dtype dt;
  const int64_t* shape = nullptr;
  const int64_t* strides = nullptr;
  auto take = [&](const auto& a) {
    ptr = a.data();
    ndim = a.ndim();
    device_type = a.device_type();
    device_id = a.device_id();
    dt = a.dtype();
    shape = a.shape_ptr();
    strides = a.stride_ptr();
  };
  nb::ndarray<> w;
  Array r;
  if (writable) {
    if (!(is_numpy_array(h) && take_numpy_writable(h, w)) && !nb::try_cast(h, w, false))
      throw nb::type_error((what + " is written by the kernel: it must be a writable array (NumPy, "
                                   "PyTorch or any DLPack tensor), got " +
                            std::string(nb::type_name(h.type()).c_str()) + refused_hint(h))
                               .c_str());
    take(w);
  } else {
    if (!nb::try_cast(h, r, false))
      throw nb::type_error((what + " must be an array (NumPy, PyTorch or any DLPack tensor), got " +
                            std::string(nb::type_name(h.type()).c_str()) + refused_hint(h))
                               .c_str());
    take(r);
  }
  v.data = const_cast<void*>(ptr);
  v.dtype = dtype_of(dt, what);
  v.shape.assign(shape, shape + ndim);
  v.strides.assign(strides, strides + ndim);
  // A stride along an extent of 1, or of an empty array, addresses nothing, and
  // exporters fill it freely (NumPy gives 0 for an empty array's, PyTorch anything
  // for an extent of 1): it takes its contiguous value, so that it neither binds a
  // size nor contradicts a kernel's constant stride.
  bool empty = false;
  for (size_t d = 0; d < ndim; ++d) empty |= v.shape[d] == 0;
  for (size_t d = ndim; d-- > 0;) {
    int64_t contiguous = d + 1 < ndim ? v.strides[d + 1] * std::max<int64_t>(v.shape[d + 1], 1) : 1;
    if (empty || v.shape[d] == 1) v.strides[d] = contiguous;
  }
  if (device_type == nb::device::cpu::value) {
    v.where = Where::Host;
  } else if (device_type == nb::device::cuda::value && device_id == 0) {
    v.where = Where::Cuda;
  } else {
    throw nb::value_error((what + " is on DLPack device " + std::to_string(device_type) + ":" +
                           std::to_string(device_id) + "; tessel launches on the host (1) and on CUDA device 0 (2:0)")
                              .c_str());
  }
  return v;
}

tessel::TensorArg arg_of(const ArrayView& v) {
  tessel::TensorArg a;
  a.data = v.data;
  a.dtype = v.dtype;
  a.shape = v.shape;
  a.strides = v.strides;
  a.on_device = v.where == Where::Cuda;
  return a;
}

// The target when none is given: the arrays' device; all on one device either way.
// views[i] is named names[i], i < n.
tessel::TargetKind resolve_target(const std::string& target, size_t n, const ArrayView* const* views,
                                  const std::string* names) {
  for (size_t i = 1; i < n; ++i)
    if (views[i]->where != views[0]->where)
      throw nb::value_error((names[0] + " is on " + (views[0]->where == Where::Cuda ? "cuda" : "the host") +
                             " but " + names[i] + " is on " + (views[i]->where == Where::Cuda ? "cuda" : "the host") +
                             ": every array of a launch lives on one device")
                                .c_str());
  bool on_cuda = n > 0 && views[0]->where == Where::Cuda;
  if (target.empty()) return on_cuda ? tessel::TargetKind::Cuda : tessel::TargetKind::Cpu;
  tessel::TargetKind t = tessel::parse_target(target);
  if (on_cuda && t != tessel::TargetKind::Cuda)
    throw nb::value_error(("target " + target + " runs on the host, but " + names[0] + " is on cuda").c_str());
  return t;
}

tessel::TargetKind resolve_target(const std::string& target, const std::vector<ArrayView>& views,
                                  const std::vector<std::string>& names) {
  std::vector<const ArrayView*> p;
  for (const ArrayView& v : views) p.push_back(&v);
  return resolve_target(target, p.size(), p.data(), names.data());
}

struct LaunchResult {
  double run_us = 0;
  int64_t races = 0;
  std::vector<std::string> race_messages;
};

// A compiled kernel that takes arrays (see the top of the file).
struct Kernel {
  tessel::Kernel kernel;
  struct Bound {
    std::vector<int64_t> key;
    tessel::BoundLaunch launch;
  };
  std::vector<Bound> bound;  // most recently used first
  std::mutex mutex;          // one launch at a time per Kernel (BoundLaunch is single-threaded)

  explicit Kernel(tessel::Kernel k) : kernel(std::move(k)) {}

  LaunchResult call(nb::args args, nb::kwargs kwargs) {
    const tessel::TileKernel& tk = kernel.tile_kernel();
    const size_t nt = tk.tensors.size(), ns = tk.scalars.size();
    std::vector<nb::handle> tensors(nt);
    std::vector<double> scalars(ns);
    std::vector<bool> have_scalar(ns, false);
    std::map<std::string, int64_t> sizes;
    int threads = 0;
    if (args.size() > nt)
      throw nb::type_error(("kernel " + tk.name + " takes " + std::to_string(nt) + " tensors, got " +
                            std::to_string(args.size()) + " positional arguments")
                               .c_str());
    for (size_t i = 0; i < args.size(); ++i) tensors[i] = args[i];
    for (auto [key, value] : kwargs) {
      std::string name = nb::cast<std::string>(key);
      bool found = false;
      for (size_t i = 0; i < nt && !found; ++i)
        if (tk.tensors[i].name == name) {
          if (tensors[i].is_valid())
            throw nb::type_error(("tensor " + name + " given twice").c_str());
          tensors[i] = value, found = true;
        }
      for (size_t i = 0; i < ns && !found; ++i)
        if (tk.scalars[i].name == name) scalars[i] = nb::cast<double>(value), have_scalar[i] = found = true;
      for (size_t i = 0; i < tk.size_params.size() && !found; ++i)
        if (tk.size_params[i] == name) sizes[name] = nb::cast<int64_t>(value), found = true;
      if (!found && name == "threads") threads = nb::cast<int>(value), found = true;
      if (!found)
        throw nb::type_error(("kernel " + tk.name + " has no tensor, scalar or size named " + name).c_str());
    }
    for (size_t i = 0; i < nt; ++i)
      if (!tensors[i].is_valid()) throw nb::type_error(("kernel " + tk.name + ": missing tensor " + tk.tensors[i].name).c_str());
    for (size_t i = 0; i < ns; ++i)
      if (!have_scalar[i]) throw nb::type_error(("kernel " + tk.name + ": missing scalar " + tk.scalars[i].name).c_str());

    std::vector<ArrayView> views(nt);
    std::vector<std::string> names(nt);
    std::vector<int64_t> key;
    for (size_t i = 0; i < nt; ++i) {
      const tessel::TensorParam& t = tk.tensors[i];
      names[i] = "tensor " + t.name;
      views[i] = view_of(tensors[i], t.access != tessel::Access::In, names[i]);
      if (views[i].dtype != t.dtype)
        throw nb::type_error((names[i] + " is " + dtype_python_name(t.dtype) + " in kernel " + tk.name +
                              ", the array is " + dtype_python_name(views[i].dtype))
                                 .c_str());
      key.push_back(static_cast<int64_t>(views[i].where));
      key.push_back(static_cast<int64_t>(views[i].shape.size()));
      key.insert(key.end(), views[i].shape.begin(), views[i].shape.end());
      key.insert(key.end(), views[i].strides.begin(), views[i].strides.end());
    }
    tessel::TargetKind target = kernel.plan().target;
    bool on_cuda = nt > 0 && views[0].where == Where::Cuda;
    resolve_target("", views, names);  // one device
    if (on_cuda && target != tessel::TargetKind::Cuda)
      throw nb::value_error(("kernel " + tk.name + " was compiled for " + tessel::target_name(target) + ", but " +
                             names[0] + " is on cuda")
                                .c_str());
    for (const auto& [name, v] : sizes) key.push_back(v);

    tessel::LaunchOptions options;
    options.threads = threads;
    tessel::LaunchReport report;
    {
      // The lock is taken without the GIL: a thread waiting for it while holding
      // the GIL would stop the running one from getting the GIL back. Nothing
      // below touches Python objects (the arrays live in the caller's frame).
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      size_t hit = 0;
      while (hit < bound.size() && bound[hit].key != key) ++hit;
      if (hit == bound.size()) {
        tessel::KernelArgs ka;
        for (size_t i = 0; i < nt; ++i) ka.tensors[tk.tensors[i].name] = arg_of(views[i]);
        for (size_t i = 0; i < ns; ++i) ka.scalars[tk.scalars[i].name] = scalars[i];
        ka.sizes = sizes;
        bound.insert(bound.begin(), Bound{key, kernel.bind(ka)});
        if (bound.size() > 8) bound.pop_back();
      } else if (hit != 0) {
        std::rotate(bound.begin(), bound.begin() + hit, bound.begin() + hit + 1);
      }
      tessel::BoundLaunch& launch = bound[0].launch;
      for (size_t i = 0; i < nt; ++i) launch.set_tensor(i, views[i].data);
      for (size_t i = 0; i < ns; ++i) launch.set_scalar(i, scalars[i]);
      report = launch.run(options);
    }
    return LaunchResult{report.run_us, report.races, std::move(report.race_messages)};
  }
};

bool overlaps(const ArrayView& a, const ArrayView& b) {
  auto span = [](const ArrayView& v, uintptr_t* lo, uintptr_t* hi) {
    int64_t first = 0, last = 0;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (v.shape[d] == 0) return false;
      int64_t reach = (v.shape[d] - 1) * v.strides[d];
      (reach < 0 ? first : last) += reach;
    }
    int bytes = tessel::dtype_bytes(v.dtype);
    *lo = reinterpret_cast<uintptr_t>(v.data) + first * bytes;
    *hi = reinterpret_cast<uintptr_t>(v.data) + (last + 1) * bytes;
    return true;
  };
  uintptr_t alo, ahi, blo, bhi;
  if (!span(a, &alo, &ahi) || !span(b, &blo, &bhi)) return false;
  return alo < bhi && blo < ahi;
}

// rows x cols with unit column stride: its leading dimension, or false.
bool row_major(const ArrayView& v, int64_t* ld) {
  int64_t rows = v.shape[0], cols = v.shape[1];
  if (cols > 1 && v.strides[1] != 1) return false;
  if (rows <= 1) return *ld = std::max<int64_t>(cols, 1), true;
  *ld = v.strides[0];
  return *ld >= std::max<int64_t>(cols, 1);
}

struct GemmCall {
  ArrayView a, b, c;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  tessel::GemmOptions options;
  bool row_major = false;  // every operand row-major with a leading dimension
};

// Checks gemm's arrays (the numbers in every message) and fills the call.
GemmCall gemm_call(nb::handle a, nb::handle b, nb::handle out, const std::string& target,
                   const std::optional<tessel::Plan>& plan) {
  GemmCall g;
  g.a = view_of(a, false, "gemm: a");
  g.b = view_of(b, false, "gemm: b");
  g.c = view_of(out, true, "gemm: out");
  for (auto [v, name] : {std::pair{&g.a, "a"}, {&g.b, "b"}, {&g.c, "out"}}) {
    if (v->shape.size() != 2)
      throw nb::value_error(("gemm: " + std::string(name) + " must be 2-D, its shape is " + dims_text(v->shape)).c_str());
    if (v->dtype != tessel::DType::F32)
      throw nb::type_error(("gemm: " + std::string(name) + " is " + dtype_python_name(v->dtype) +
                            "; gemm takes float32 arrays")
                               .c_str());
  }
  g.m = g.a.shape[0], g.k = g.a.shape[1], g.n = g.b.shape[1];
  if (g.b.shape[0] != g.k)
    throw nb::value_error(("gemm: a is " + dims_text(g.a.shape) + " and b is " + dims_text(g.b.shape) +
                           ": a's columns (" + std::to_string(g.k) + ") must equal b's rows (" +
                           std::to_string(g.b.shape[0]) + ")")
                              .c_str());
  if (g.c.shape[0] != g.m || g.c.shape[1] != g.n)
    throw nb::value_error(("gemm: out is " + dims_text(g.c.shape) + ", the product of a " + dims_text(g.a.shape) +
                           " and b " + dims_text(g.b.shape) + " is " + dims_text({g.m, g.n}))
                              .c_str());
  static const std::string names[] = {"gemm: a", "gemm: b", "gemm: out"};
  const ArrayView* views[] = {&g.a, &g.b, &g.c};
  g.options.target = resolve_target(target, 3, views, names);
  if (overlaps(g.c, g.a) || overlaps(g.c, g.b))  // one device by now: one address space
    throw nb::value_error("gemm: out shares memory with a or b");
  g.options.device_pointers = g.a.where == Where::Cuda;
  g.options.plan = plan;
  g.row_major = row_major(g.a, &g.lda) && row_major(g.b, &g.ldb) && row_major(g.c, &g.ldc);
  return g;
}

}  // namespace

void bind_launch(nb::module_& m) {
  nb::class_<LaunchResult>(m, "LaunchReport")
      .def_ro("run_us", &LaunchResult::run_us)
      .def_ro("races", &LaunchResult::races)
      .def_ro("race_messages", &LaunchResult::race_messages)
      .def("__repr__", [](const LaunchResult& r) {
        return "LaunchReport(run_us=" + std::to_string(r.run_us) + ", races=" + std::to_string(r.races) + ")";
      });

  nb::class_<Kernel>(m, "Kernel", "A compiled kernel; call it with arrays by tensor name (or in order).")
      .def("__call__", &Kernel::call)
      .def_prop_ro("plan", [](const Kernel& k) { return k.kernel.plan(); })
      .def_prop_ro("tile_kernel", [](const Kernel& k) { return k.kernel.tile_kernel(); })
      .def_prop_ro("phases", [](const Kernel& k) { return k.kernel.phases(); })
      .def_prop_ro("compile_ms", [](const Kernel& k) { return k.kernel.compile_ms(); })
      .def("program", [](const Kernel& k, size_t phase) {
        if (phase >= k.kernel.phases())
          throw nb::index_error(("phase " + std::to_string(phase) + " of " + std::to_string(k.kernel.phases())).c_str());
        return tessel::print_group_program(k.kernel.program(phase));
      }, "phase"_a = 0, "The GroupIR of one phase after every pass.")
      .def("explain", [](const Kernel& k) { return k.kernel.explain(); });

  m.def("compile_plan",
        [](const tessel::TileKernel& k, const tessel::Plan& plan, bool coalesce_barriers) {
          tessel::CompileSettings s;
          s.coalesce_barriers = coalesce_barriers;
          tessel::Kernel compiled;
          {
            nb::gil_scoped_release release;
            compiled = tessel::compile(k, plan, s);
          }
          return new Kernel(std::move(compiled));
        },
        "kernel"_a, "plan"_a, "coalesce_barriers"_a = true);

  // For run(): the target (the arrays' device, or `target` checked against it) and
  // the sizes the kernel's tensors name by a bare symbol, read off the arrays (by
  // tensor name): what the default plan needs.
  m.def("launch_sizes", [](const tessel::TileKernel& k, nb::dict arrays, const std::string& target) {
    std::map<std::string, int64_t> sizes;
    std::vector<ArrayView> views;
    std::vector<std::string> names;
    for (const tessel::TensorParam& t : k.tensors) {
      if (!arrays.contains(t.name.c_str())) continue;
      names.push_back("tensor " + t.name);
      views.push_back(view_of(arrays[t.name.c_str()], false, names.back()));
      const ArrayView& v = views.back();
      if (v.shape.size() != static_cast<size_t>(t.rank()))
        throw nb::value_error(("tensor " + t.name + " has rank " + std::to_string(t.rank()) + " in kernel " + k.name +
                               ", the array's shape is " + dims_text(v.shape))
                                  .c_str());
      for (int d = 0; d < t.rank(); ++d) {
        if (t.shape[d]->kind == tessel::ExprKind::Sym) sizes.emplace(t.shape[d]->name, v.shape[d]);
        if (t.strides[d]->kind == tessel::ExprKind::Sym) sizes.emplace(t.strides[d]->name, v.strides[d]);
      }
    }
    return std::make_pair(std::string(tessel::target_name(resolve_target(target, views, names))), sizes);
  });

  // C = alpha * a @ b + beta * C on row-major operands with leading dimensions
  // (tessel::gemm); returns False, having run nothing, when an operand is not so laid out.
  m.def("gemm_rowmajor",
        [](nb::handle a, nb::handle b, nb::handle out, float alpha, float beta, const std::string& target,
           std::optional<tessel::Plan> plan, int threads) {
          GemmCall g = gemm_call(a, b, out, target, plan);
          if (!g.row_major) return false;
          g.options.threads = threads;
          g.options.report = false;  // the report is not returned: a repeated call skips making it
          nb::gil_scoped_release release;
          tessel::gemm(g.m, g.n, g.k, alpha, static_cast<const float*>(g.a.data), g.lda,
                       static_cast<const float*>(g.b.data), g.ldb, beta, static_cast<float*>(g.c.data), g.ldc,
                       g.options);
          return true;
        },
        "a"_a, "b"_a, "out"_a, "alpha"_a, "beta"_a, "target"_a, "plan"_a.none(), "threads"_a = 0);
  m.def("explain_gemm",
        [](int64_t mm, int64_t n, int64_t k, const std::string& target, std::optional<tessel::Plan> plan) {
          tessel::GemmOptions o;
          o.target = tessel::parse_target(target);
          o.plan = plan;
          return tessel::explain_gemm(mm, n, k, o);
        },
        "m"_a, "n"_a, "k"_a, "target"_a = "cpu", "plan"_a.none() = nb::none());
  // The benchmark's baseline: `iters` calls of tessel::gemm from C++ on these arrays
  // (after the same checks as gemm_rowmajor, once); the mean wall time per call in us.
  m.def("_bench_cpp_gemm",
        [](nb::handle a, nb::handle b, nb::handle out, int iters) {
          GemmCall g = gemm_call(a, b, out, "", std::nullopt);
          if (!g.row_major) throw nb::value_error("_bench_cpp_gemm: row-major operands only");
          g.options.report = false;  // as gemm_rowmajor calls it
          nb::gil_scoped_release release;
          auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < iters; ++i)
            tessel::gemm(g.m, g.n, g.k, 1.0f, static_cast<const float*>(g.a.data), g.lda,
                         static_cast<const float*>(g.b.data), g.ldb, 0.0f, static_cast<float*>(g.c.data), g.ldc,
                         g.options);
          return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / iters;
        });
}

}  // namespace tessel_py
