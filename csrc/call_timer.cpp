#include "call_timer.hpp"

#include "clock.hpp"

namespace py = pybind11;

namespace benchctl {

namespace {
inline void call_and_discard(PyObject* fn) {
  PyObject* r = PyObject_CallNoArgs(fn);
  if (r == nullptr) throw py::error_already_set();
  Py_DECREF(r);
}
}  // namespace

py::array_t<int64_t> time_python_calls(py::handle fn, int64_t n, int64_t warmup,
                                       uint64_t overhead) {
  PyObject* f = fn.ptr();
  for (int64_t i = 0; i < warmup; ++i) call_and_discard(f);
  py::array_t<int64_t> out(n);
  int64_t* samples = out.mutable_data();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t t0 = ticks_begin();
    PyObject* r = PyObject_CallNoArgs(f);
    uint64_t t1 = ticks_end();
    if (r == nullptr) throw py::error_already_set();
    Py_DECREF(r);
    uint64_t d = t1 - t0;
    samples[i] = d > overhead ? int64_t(d - overhead) : 0;
  }
  return out;
}

}  // namespace benchctl
