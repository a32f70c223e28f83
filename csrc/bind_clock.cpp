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
// busy_wait_cycles(n) takes its argument straight from the interpreter (no
// pybind11 dispatcher, no Python wrapper): it is the known-length workload the
// timer is checked against, so its own call overhead must be small and the same
// every time. Python frames in front of the spin ran measurably slower after a
// long spin than after a short one (by 100-400 ticks on the shared development
// VM), which biased a 10,000-tick wait timed against a 0-tick one by up to -4%.
PyObject* busy_wait_cycles_o(PyObject*, PyObject* arg) {
  if (PyBool_Check(arg)) {
    PyErr_SetString(PyExc_TypeError, "n must be an integer, got bool");
    return nullptr;
  }
  PyObject* index = PyNumber_Index(arg);
  if (index == nullptr) {
    PyErr_Format(PyExc_TypeError, "n must be an integer, got %s", Py_TYPE(arg)->tp_name);
    return nullptr;
  }
  int overflow = 0;
  long long n = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (n == -1 && PyErr_Occurred()) return nullptr;
  if (overflow < 0 || n < 0) {
    PyErr_Format(PyExc_ValueError, "n must be >= 0, got %S", arg);
    return nullptr;
  }
  if (overflow > 0) {
    PyErr_SetString(PyExc_OverflowError, "n does not fit in 63 bits of ticks");
    return nullptr;
  }
  uint64_t elapsed;
  Py_BEGIN_ALLOW_THREADS
  elapsed = busy_wait_ticks(uint64_t(n));
  Py_END_ALLOW_THREADS
  return PyLong_FromUnsignedLongLong(elapsed);
}

PyMethodDef fast_reads[] = {
    {"cycles", cycles_noargs, METH_NOARGS, "Raw tick count of the selected source."},
    {"cycles_begin", cycles_begin_noargs, METH_NOARGS, "Serialized read for an interval's start."},
    {"cycles_end", cycles_end_noargs, METH_NOARGS, "Serialized read for an interval's end."},
    {"busy_wait_cycles", busy_wait_cycles_o, METH_O,
     "busy_wait_cycles(n) -> int\n\nSpin (GIL released) until the tick source has advanced by n; "
     "return the ticks elapsed."},
    {nullptr, nullptr, 0, nullptr}};
}  // namespace

void bind_clock(py::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), fast_reads) != 0) throw py::error_already_set();

  Record<NominalFrequency>(m, "NominalFrequency", "A frequency the hardware states for its counter.")
      .field("source", &NominalFrequency::source, "Where it is stated, e.g. 'cpuid_0x15', 'cntfrq_el0'.")
      .field("hz", &NominalFrequency::hz, "The frequency in Hz.")
      .field("uncertainty_ppm", &NominalFrequency::uncertainty_ppm, "Quantisation of the stated value, in ppm.");
  Record<Calibration>(m, "Calibration", "The counter's frequency measured against CLOCK_MONOTONIC_RAW.")
      .field("hz", &Calibration::hz, "The measured frequency in Hz.")
      .field("uncertainty_ppm", &Calibration::uncertainty_ppm, "Its uncertainty, in ppm.")
      .field("duration_ns", &Calibration::duration_ns, "How long the measurement ran, in ns.");

  m.def("counter_name", &counter_name, "The hardware counter compiled in ('rdtsc', 'cntvct'), or ''.");
  m.def("use_counter_ticks", &use_counter_ticks, py::arg("on"),
        "Tick with the hardware counter (True) or CLOCK_MONOTONIC_RAW ns (False).");
  m.def("counter_ticks_in_use", &counter_ticks_in_use, "Whether ticks come from the hardware counter.");
  m.def("cpuid_invariant_tsc", &cpuid_invariant_tsc,
        "CPUID 0x80000007 EDX bit 8 on x86-64; None where CPUID has no answer.");
  m.def("counter_nominal_frequencies", &counter_nominal_frequencies,
        "Frequencies the hardware states for its counter, in order of trust.");
  m.def("calibrate_counter", &calibrate_counter, py::arg("duration_ns"), py::call_guard<py::gil_scoped_release>(),
        "Measure the counter's frequency against CLOCK_MONOTONIC_RAW over duration_ns.");
  m.def("measure_read_overhead", &measure_read_overhead, py::arg("samples"),
        "Minimum of samples back-to-back serialized (begin, end) reads, in ticks.");
  m.def("measure_chained_read_overhead", &measure_chained_read_overhead, py::arg("samples"),
        "Minimum of samples back-to-back fenced reads, in ticks.");
  m.def("time_python_calls", &time_python_calls, py::arg("fn"), py::arg("n"), py::arg("warmup"),
        py::arg("overhead"), "Ticks of each of n chained calls of fn() after warmup untimed ones, minus overhead.");
}

}  // namespace benchctl
