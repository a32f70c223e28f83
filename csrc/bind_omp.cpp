#include <pybind11/stl.h>

#include "bindings.hpp"
#include "omp_team.hpp"

namespace py = pybind11;

namespace benchctl {

void bind_omp(py::module_& m) {
  Record<TeamMember>(m, "TeamMember", "One thread of an OpenMP team, as it reported itself inside a parallel region.")
      .field("omp_thread", &TeamMember::omp_thread, "The thread's number in the team (0: the thread that forked it).")
      .field("tid", &TeamMember::tid, "Its kernel thread id.")
      .field("cpu", &TeamMember::cpu, "The CPU it ran on in the region (sched_getcpu).");

  m.def("loaded_libraries", &loaded_library_paths,
        "Paths of the shared libraries mapped into this process, in load order.");
  m.def(
      "omp_team_members",
      [](const std::string& kind, const std::string& path, int num_threads) {
        return run_on_omp_team({kind, path}, num_threads, [](TeamMember&) {});
      },
      py::arg("kind"), py::arg("path"), py::arg("num_threads"), py::call_guard<py::gil_scoped_release>(),
      "Run an empty region of num_threads threads (0: the runtime's default) on a loaded runtime; "
      "its members by omp_thread.");
}

}  // namespace benchctl
