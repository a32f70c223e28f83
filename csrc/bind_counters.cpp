#include <pybind11/stl.h>

#include "bindings.hpp"
#include "counters.hpp"

namespace py = pybind11;

namespace benchctl {

void bind_counters(py::module_& m) {
  m.def("perf_event_names", []() {
    py::list out;
    for (const auto& k : perf_event_kinds()) out.append(py::make_tuple(k.name, k.hardware));
    return out;
  });
  py::class_<PerfCounterGroup>(m, "PerfCounterGroup")
      .def(py::init<const std::vector<std::string>&, const std::vector<pid_t>&, const std::vector<bool>&>(),
           py::arg("events"), py::arg("tids"), py::arg("exclude_kernel"))
      .def("status",
           [](const PerfCounterGroup& g) {
             py::list out;
             for (const auto& s : g.status())
               out.append(py::make_tuple(s.name, s.opened, s.error, s.failed_tid));
             return out;
           })
      .def("threads", &PerfCounterGroup::threads)
      .def("read",
           [](const PerfCounterGroup& g) {
             py::list out;
             for (const auto& r : g.read())
               out.append(py::make_tuple(r.event, r.value, r.time_enabled, r.time_running));
             return out;
           })
      .def("close", &PerfCounterGroup::close)
      .def_property_readonly("closed", &PerfCounterGroup::closed);
}

}  // namespace benchctl
