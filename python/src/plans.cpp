// Plans (src/plan/plan.h), the default planners, and the kernel library
// (src/ops/library.h) as TileKernels. A Plan is built from keywords:
// Plan(target="cpu", tiles={"BR": 8, "BC": 64}, workers=1); tiles is read and
// replaced whole (plan.tiles = {...}), never edited in place.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "names.h"
#include "ops/gemm.h"
#include "ops/library.h"
#include "plan/default_plan.h"
#include "plan/plan.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tessel_py {
namespace {

// Plan::sizes from a dict (in name order).
std::vector<std::pair<std::string, int64_t>> sizes_from(const std::map<std::string, int64_t>& d) {
  return {d.begin(), d.end()};
}

void set_plan_field(tessel::Plan& p, const std::string& key, nb::handle v) {
  if (key == "target") p.target = tessel::parse_target(nb::cast<std::string>(v));
  else if (key == "tiles") p.tiles = nb::cast<std::map<std::string, int64_t>>(v);
  else if (key == "workers") p.workers = nb::cast<int>(v);
  else if (key == "worker_rows") p.worker_rows = nb::cast<int>(v);
  else if (key == "worker_cols") p.worker_cols = nb::cast<int>(v);
  else if (key == "copy_batch") p.copy_batch = nb::cast<int>(v);
  else if (key == "window") p.window = nb::cast<int>(v);
  else if (key == "async_copy") p.async_copy = nb::cast<bool>(v);
  else if (key == "atom_m") p.atom_m = nb::cast<int64_t>(v);
  else if (key == "atom_n") p.atom_n = nb::cast<int64_t>(v);
  else if (key == "atom") p.atom = parse_atom(nb::cast<std::string>(v));
  else if (key == "frag_buffers") p.frag_buffers = nb::cast<int>(v);
  else if (key == "sizes") p.sizes = sizes_from(nb::cast<std::map<std::string, int64_t>>(v));
  else
    tessel::user_error(tessel::ErrorKind::InvalidArgument,
                       "Plan has no field '" + key + "' (target, tiles, workers, worker_rows, worker_cols, "
                       "copy_batch, window, async_copy, atom_m, atom_n, atom, frag_buffers, sizes)");
}

}  // namespace

void bind_plans(nb::module_& m) {
  using tessel::Plan;
  nb::class_<Plan>(m, "Plan", "How a kernel is realized on a target (src/plan/plan.h).")
      .def("__init__",
           [](Plan* p, nb::kwargs kw) {
             new (p) Plan();
             for (auto [k, v] : kw) set_plan_field(*p, nb::cast<std::string>(k), v);
           })
      .def_prop_rw("target", [](const Plan& p) { return std::string(tessel::target_name(p.target)); },
                   [](Plan& p, const std::string& t) { p.target = tessel::parse_target(t); })
      .def_prop_rw("tiles", [](const Plan& p) { return p.tiles; },
                   [](Plan& p, std::map<std::string, int64_t> t) { p.tiles = std::move(t); })
      .def_rw("workers", &Plan::workers)
      .def_rw("worker_rows", &Plan::worker_rows)
      .def_rw("worker_cols", &Plan::worker_cols)
      .def_rw("copy_batch", &Plan::copy_batch)
      .def_rw("window", &Plan::window)
      .def_rw("async_copy", &Plan::async_copy)
      .def_rw("atom_m", &Plan::atom_m)
      .def_rw("atom_n", &Plan::atom_n)
      .def_prop_rw("atom", [](const Plan& p) { return std::string(tessel::atom_name(p.atom)); },
                   [](Plan& p, const std::string& a) { p.atom = parse_atom(a); })
      .def_rw("frag_buffers", &Plan::frag_buffers)
      // The sizes the plan fixes (Plan::sizes), as a dict; {} to run other shapes.
      .def_prop_rw("sizes",
                   [](const Plan& p) { return std::map<std::string, int64_t>(p.sizes.begin(), p.sizes.end()); },
                   [](Plan& p, const std::map<std::string, int64_t>& d) { p.sizes = sizes_from(d); })
      .def("validate", &tessel::validate_plan)
      .def("__eq__", [](const Plan& a, const Plan& b) { return a == b; })
      .def("__str__", &Plan::to_string)
      .def("__repr__", [](const Plan& p) {
        return std::string("Plan(") + tessel::target_name(p.target) + ": " + p.to_string() + ")";
      });

  m.def("default_plan",
        [](const tessel::TileKernel& k, const std::string& target, const std::map<std::string, int64_t>& sizes) {
          return tessel::default_plan(k, tessel::parse_target(target), sizes);
        },
        "kernel"_a, "target"_a, "sizes"_a);
  m.def("default_gemm_plan",
        [](const std::string& target, int64_t mm, int64_t n, int64_t k) {
          return tessel::default_gemm_plan(tessel::parse_target(target), mm, n, k);
        },
        "target"_a, "m"_a, "n"_a, "k"_a);

  // The library (src/ops/library.h): each call captures the kernel afresh.
  m.def("softmax_kernel", [](const std::string& dt) { return tessel::softmax_kernel(parse_dtype(dt)); },
        "dtype"_a = "float32");
  m.def("layernorm_kernel", [](const std::string& dt) { return tessel::layernorm_kernel(parse_dtype(dt)); },
        "dtype"_a = "float32");
  m.def("row_sum_kernel", &tessel::row_sum_kernel);
  m.def("col_sum_kernel", &tessel::col_sum_kernel);
  m.def("add_broadcast_kernel", &tessel::add_broadcast_kernel);
  m.def("gemm_strided_kernel", &tessel::gemm_strided_kernel);
  m.def("batched_gemm_kernel", &tessel::batched_gemm_kernel);
  m.def("gemm_epilogue_kernel",
        [](const std::string& along, const std::string& act) {
          tessel::BiasAlong b = tessel::BiasAlong::Rows;
          if (along == "cols") b = tessel::BiasAlong::Cols;
          else if (along != "rows")
            tessel::user_error(tessel::ErrorKind::InvalidArgument, "bias_along is 'rows' or 'cols', not '" + along + "'");
          tessel::Activation a = tessel::Activation::None;
          if (act == "relu") a = tessel::Activation::Relu;
          else if (act == "gelu") a = tessel::Activation::Gelu;
          else if (act != "none")
            tessel::user_error(tessel::ErrorKind::InvalidArgument, "activation is 'none', 'relu' or 'gelu', not '" + act + "'");
          return tessel::gemm_epilogue_kernel(b, a);
        },
        "bias_along"_a, "activation"_a);
  m.def("attention_kernel", [](bool causal) {
    return tessel::attention_kernel(causal ? tessel::AttentionMask::Causal : tessel::AttentionMask::None);
  }, "causal"_a = false);
}

}  // namespace tessel_py
