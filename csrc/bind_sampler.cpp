#include <pybind11/stl.h>

#include "bindings.hpp"
#include "lib_sampler.hpp"

namespace py = pybind11;

namespace benchctl {

void bind_sampler(py::module_& m) {
  Record<ObjectSamples>(m, "ObjectSamples", "The samples of one loaded object.")
      .field("path", &ObjectSamples::path, "The object's path (the main program by /proc/self/exe).")
      .field("samples", &ObjectSamples::samples, "Weighted samples at addresses in its executable segments.");
  Record<ThreadSamples>(m, "ThreadSamples", "The samples taken on one thread.")
      .field("tid", &ThreadSamples::tid, "The thread's id.")
      .field("name", &ThreadSamples::name, "Its comm when its timer was armed.")
      .field("samples", &ThreadSamples::samples, "Weighted samples taken on it (stored or dropped).");
  Record<LibSamples>(m, "LibSamples", "What one window of the library sampler saw.")
      .field("signal", &LibSamples::signal, "The real-time signal the window used.")
      .field("period_ns", &LibSamples::period_ns, "The timers' period, of each thread's CPU time.")
      .field("wall_ns", &LibSamples::wall_ns, "The window's length.")
      .field("user_ns", &LibSamples::user_ns, "User CPU time of the process over the window (getrusage).")
      .field("system_ns", &LibSamples::system_ns, "System (kernel) CPU time of the process over the window.")
      .field("samples", &LibSamples::samples, "Weighted samples stored, mapped or not.")
      .field("unmapped", &LibSamples::unmapped, "Of those, at addresses in no loaded object (JIT code).")
      .field("dropped", &LibSamples::dropped, "Weighted samples taken after the buffer was full.")
      .field("objects", &LibSamples::objects, "Samples by loaded object, most first.")
      .field("threads", &LibSamples::threads, "Every thread timed, by tid.")
      .field("not_timed", &LibSamples::not_timed, "Threads no timer could be armed on.")
      .field("timer_error", &LibSamples::timer_error, "The first refusal to time a live thread ('' if none).");
  m.def("lib_sampler_start", &lib_sampler_start, py::arg("period_us"), py::arg("capacity"),
        py::call_guard<py::gil_scoped_release>(),
        "Time every thread every period_us of its CPU time, storing up to capacity samples; return the signal.");
  m.def("lib_sampler_stop", &lib_sampler_stop, py::call_guard<py::gil_scoped_release>(),
        "Close the window: delete the timers, restore the signal, map the samples to objects.");
  m.def("lib_sampler_signal", &lib_sampler_signal, "The signal of the open window, 0 when none is open.");
  m.attr("LIB_SAMPLER_MIN_PERIOD_US") = kMinSamplePeriodUs;
  m.attr("LIB_SAMPLER_MAX_PERIOD_US") = kMaxSamplePeriodUs;
  m.attr("LIB_SAMPLER_MAX_CAPACITY") = kMaxSampleCapacity;
}

}  // namespace benchctl
