// tessel::Error (a user error, with a kind) becomes one Python class, tessel.Error,
// whose .kind is the kind's name ("InvalidArgument", "Verify", ...). The class is
// defined in Python (tessel/__init__.py) and handed over once by _set_error_class.
#include <nanobind/nanobind.h>

#include "bindings.h"
#include "tessel/error.h"

namespace nb = nanobind;

namespace tessel_py {
namespace {

// The enumerator's name, as Python code compares it: e.kind == "Verify".
const char* kind_name(tessel::ErrorKind kind) {
  switch (kind) {
    case tessel::ErrorKind::InvalidArgument: return "InvalidArgument";
    case tessel::ErrorKind::Verify: return "Verify";
    case tessel::ErrorKind::Parse: return "Parse";
    case tessel::ErrorKind::Plan: return "Plan";
    case tessel::ErrorKind::Compile: return "Compile";
    case tessel::ErrorKind::Runtime: return "Runtime";
    case tessel::ErrorKind::Unsupported: return "Unsupported";
  }
  return "Unknown";
}

nb::object& error_class() {
  // Kept for the life of the process (never destroyed: no decref after finalize).
  static nb::object* cls = new nb::object();
  return *cls;
}

}  // namespace

void bind_errors(nb::module_& m) {
  m.def("_set_error_class", [](nb::object cls) { error_class() = cls.is_none() ? nb::object() : std::move(cls); },
        nb::arg("cls").none());
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tessel::Error& e) {
      nb::object& cls = error_class();
      if (!cls.is_valid()) throw;  // before __init__.py ran: a RuntimeError
      nb::object err = cls(nb::str(e.what()), nb::str(kind_name(e.kind())));
      PyErr_SetObject(cls.ptr(), err.ptr());
    }
  });
  m.def("error_kinds", [] {
    nb::list kinds;
    for (auto k : {tessel::ErrorKind::InvalidArgument, tessel::ErrorKind::Verify,
                   tessel::ErrorKind::Parse, tessel::ErrorKind::Plan, tessel::ErrorKind::Compile,
                   tessel::ErrorKind::Runtime, tessel::ErrorKind::Unsupported})
      kinds.append(nb::str(kind_name(k)));
    return kinds;
  });
}

}  // namespace tessel_py
