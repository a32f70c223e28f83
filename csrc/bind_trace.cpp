#include "bindings.hpp"
#include "trace_functions.hpp"

namespace py = pybind11;

namespace benchctl {

namespace {
py::object object_or_none(PyObject* obj) {
  return obj == nullptr ? py::none() : py::reinterpret_borrow<py::object>(obj);
}
}  // namespace

void bind_trace(py::module_& m) {
  py::class_<SetAsideTracing>(m, "SetAsideTracing",
                              "The trace and profile functions take_trace_functions() took off a thread.")
      .def_property_readonly(
          "trace", [](const SetAsideTracing& a) { return object_or_none(a.trace_object()); },
          "The trace function's object (sys.gettrace() then), None where none was on or it is back.")
      .def_property_readonly(
          "profile", [](const SetAsideTracing& a) { return object_or_none(a.profile_object()); },
          "The profile function's object (sys.getprofile() then), None where none was on or it is back.")
      .def("put_back", &SetAsideTracing::put_back, py::arg("trace"), py::arg("profile"),
           "Put the slots asked for back as they were, each once; False (nothing changed) on another thread.");
  m.def("take_trace_functions", &SetAsideTracing::take,
        "Take the calling thread's trace and profile functions off it (C tracers too), to put back exactly.");
}
}  // namespace benchctl
