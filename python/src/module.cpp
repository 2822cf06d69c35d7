// tessel._tessel: the C++ library seen from Python (python/tessel/__init__.py is the
// public face). Built by scikit-build-core through the top-level CMakeLists.txt.
#include "bindings.h"
#include "tessel/version.h"

NB_MODULE(_tessel, m) {
  m.attr("__version__") = TESSEL_VERSION_STRING;
  tessel_py::bind_errors(m);
  tessel_py::bind_dsl(m);
  tessel_py::bind_plans(m);
  tessel_py::bind_launch(m);
}
