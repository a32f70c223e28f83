// One bind_<concern>() per concern, each in its own bind_<concern>.cpp;
// bindings.cpp calls them all. Binding files only bind: no logic.
#pragma once

#include <pybind11/pybind11.h>

namespace benchctl {
void bind_clock(pybind11::module_& m);
void bind_omp(pybind11::module_& m);
void bind_affinity(pybind11::module_& m);
void bind_cuda(pybind11::module_& m);
void bind_counters(pybind11::module_& m);
void bind_fpenv(pybind11::module_& m);
}  // namespace benchctl
