// The Python module tessel._tessel (nanobind): one function per part, each in its
// own file, called from module.cpp. Python's tessel/__init__.py wraps these with
// keyword arguments and the Error class.
#pragma once
#include <nanobind/nanobind.h>

namespace tessel_py {

void bind_errors(nanobind::module_& m);   // errors.cpp: tessel::Error -> tessel.Error
void bind_dsl(nanobind::module_& m);      // dsl.cpp: Sym, Tile, KernelBuilder, TileKernel
void bind_plans(nanobind::module_& m);    // plans.cpp: Plan, default plans, the library
void bind_launch(nanobind::module_& m);   // launch.cpp: compile, Kernel, arrays (DLPack), gemm

}  // namespace tessel_py
