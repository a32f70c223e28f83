#include <pybind11/stl.h>

#include "affinity.hpp"
#include "bindings.hpp"

namespace py = pybind11;

namespace benchctl {

void bind_affinity(py::module_& m) {
  Record<PinnedMember>(m, "PinnedMember", "One OpenMP team thread pinned from inside itself, with its readback.")
      .field("omp_thread", &PinnedMember::omp_thread, "The thread's number in the team.")
      .field("tid", &PinnedMember::tid, "Its kernel thread id.")
      .field("before", &PinnedMember::before, "Its affinity mask before the call (CPU ids, ascending).")
      .field("after", &PinnedMember::after, "Its mask read back after the set.")
      .field("cpu_after", &PinnedMember::cpu_after, "The CPU it ran on right after the set (sched_getcpu).");

  m.def(
      "omp_team_pin",
      [](const std::string& kind, const std::string& path, const std::vector<CpuList>& masks) {
        return pin_omp_team({kind, path}, masks);
      },
      py::arg("kind"), py::arg("path"), py::arg("masks"), py::call_guard<py::gil_scoped_release>(),
      "Restrict omp thread i of a region of len(masks) threads to masks[i], from inside it; "
      "all or nothing (RuntimeError, every mask restored).");
}

}  // namespace benchctl
