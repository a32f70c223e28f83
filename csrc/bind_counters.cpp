#include <pybind11/stl.h>

#include "bindings.hpp"
#include "counters.hpp"

namespace py = pybind11;

namespace benchctl {

void bind_counters(py::module_& m) {
  Record<PerfEventKind>(m, "PerfEventKind", "An event benchctl knows, by the name Python uses for it.")
      .field("name", &PerfEventKind::name, "The event's name, e.g. 'minor_faults', 'cycles'.")
      .field("type", &PerfEventKind::type, "perf_event_attr.type: PERF_TYPE_SOFTWARE or PERF_TYPE_HARDWARE.")
      .field("config", &PerfEventKind::config, "perf_event_attr.config: PERF_COUNT_SW_* or PERF_COUNT_HW_*.")
      .field("hardware", &PerfEventKind::hardware, "Whether the CPU's PMU counts it.");
  Record<PerfEventStatus>(m, "PerfEventStatus", "What opening one event came to.")
      .field("name", &PerfEventStatus::name, "The event's name.")
      .field("opened", &PerfEventStatus::opened, "Counting on every thread that was asked for.")
      .field("error", &PerfEventStatus::error, "errno of the first failure (0 when opened).")
      .field("failed_tid", &PerfEventStatus::failed_tid, "Thread the failure happened on (0: the calling thread).");
  Record<PerfMemberReading>(m, "PerfMemberReading", "One event's count on one thread, as the kernel reports it.")
      .field("event", &PerfMemberReading::event, "Index into the events the group was opened with.")
      .field("value", &PerfMemberReading::value, "The raw count.")
      .field("time_enabled", &PerfMemberReading::time_enabled, "ns the event was enabled.")
      .field("time_running", &PerfMemberReading::time_running,
             "ns it was actually on the PMU (< time_enabled: multiplexed; 0: never scheduled).");

  m.def("perf_event_kinds", &perf_event_kinds, "Every event benchctl can count, software first.");
  py::class_<PerfCounterGroup>(m, "PerfCounterGroup",
                               "Kernel event counters (perf_event_open), opened once, read with one read() per group.")
      .def(py::init<const std::vector<std::string>&, const std::vector<pid_t>&, const std::vector<bool>&>(),
           py::arg("events"), py::arg("tids"), py::arg("exclude_kernel"),
           "Open events on tids (empty: the calling thread and its future threads); exclude_kernel: one flag "
           "per event.")
      .def("status", &PerfCounterGroup::status, "What opening each event came to, in the order asked for.")
      .def("threads", &PerfCounterGroup::threads, "Threads being counted (0: the calling thread, inherit mode).")
      .def("read", &PerfCounterGroup::read, "Cumulative counts: one reading per opened event per thread.")
      .def("close", &PerfCounterGroup::close, "Close the counters (idempotent); read() then raises.")
      .def_property_readonly("closed", &PerfCounterGroup::closed, "Whether close() has run.");
}

}  // namespace benchctl
