#include "call_timer.hpp"

#include "clock.hpp"

namespace py = pybind11;

namespace benchctl {

py::array_t<int64_t> time_python_calls(py::handle fn, int64_t n, int64_t warmup,
                                       uint64_t overhead) {
  PyObject* f = fn.ptr();
  for (int64_t i = 0; i < warmup; ++i) {
    PyObject* r = PyObject_CallNoArgs(f);
    if (r == nullptr) throw py::error_already_set();
    Py_DECREF(r);
  }
  py::array_t<int64_t> out(n);
  int64_t* samples = out.mutable_data();
  uint64_t previous = ticks_fenced();
  for (int64_t i = 0; i < n; ++i) {
    PyObject* r = PyObject_CallNoArgs(f);
    uint64_t now = ticks_fenced();
    if (r == nullptr) throw py::error_already_set();
    Py_DECREF(r);
    uint64_t d = now - previous;
    samples[i] = d > overhead ? int64_t(d - overhead) : 0;
    previous = now;
  }
  return out;
}

}  // namespace benchctl
