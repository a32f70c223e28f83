#include <pybind11/stl.h>

#include "bindings.hpp"
#include "call_timer.hpp"
#include "clock.hpp"

namespace py = pybind11;

namespace benchctl {

namespace {
// cycles() is bound as a plain METH_NOARGS function: pybind11's dispatcher
// would cost more than the read it wraps.
PyObject* cycles_noargs(PyObject*, PyObject*) { return PyLong_FromUnsignedLongLong(ticks_raw()); }
PyObject* cycles_begin_noargs(PyObject*, PyObject*) {
  return PyLong_FromUnsignedLongLong(ticks_begin());
}
PyObject* cycles_end_noargs(PyObject*, PyObject*) {
  return PyLong_FromUnsignedLongLong(ticks_end());
}
PyMethodDef fast_reads[] = {
    {"cycles", cycles_noargs, METH_NOARGS, "Raw tick count of the selected source."},
    {"cycles_begin", cycles_begin_noargs, METH_NOARGS, "Serialized read for an interval's start."},
    {"cycles_end", cycles_end_noargs, METH_NOARGS, "Serialized read for an interval's end."},
    {nullptr, nullptr, 0, nullptr}};
}  // namespace

void bind_clock(py::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), fast_reads) != 0) throw py::error_already_set();

  m.def("counter_name", &counter_name);
  m.def("use_counter_ticks", &use_counter_ticks, py::arg("on"));
  m.def("counter_ticks_in_use", &counter_ticks_in_use);
  m.def("cpuid_invariant_tsc", &cpuid_invariant_tsc);
  m.def("counter_nominal_frequencies", []() {
    py::list out;
    for (const auto& f : counter_nominal_frequencies())
      out.append(py::make_tuple(f.source, f.hz, f.uncertainty_ppm));
    return out;
  });
  m.def(
      "calibrate_counter",
      [](uint64_t duration_ns) {
        Calibration c;
        {
          py::gil_scoped_release nogil;
          c = calibrate_counter(duration_ns);
        }
        return py::make_tuple(c.hz, c.uncertainty_ppm, c.duration_ns);
      },
      py::arg("duration_ns"));
  m.def("measure_read_overhead", &measure_read_overhead, py::arg("samples"));
  m.def("measure_chained_read_overhead", &measure_chained_read_overhead, py::arg("samples"));
  m.def("busy_wait_ticks", &busy_wait_ticks, py::arg("ticks"),
        py::call_guard<py::gil_scoped_release>());
  m.def("time_python_calls", &time_python_calls, py::arg("fn"), py::arg("n"), py::arg("warmup"),
        py::arg("overhead"));
}

}  // namespace benchctl
