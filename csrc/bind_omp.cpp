#include <pybind11/stl.h>

#include "bindings.hpp"
#include "omp_team.hpp"

namespace py = pybind11;

namespace benchctl {

void bind_omp(py::module_& m) {
  m.def("loaded_libraries", &loaded_library_paths);
  m.def(
      "omp_team_members",
      [](const std::string& kind, const std::string& path, int num_threads) {
        std::vector<TeamMember> members;
        {
          py::gil_scoped_release nogil;
          members = run_on_omp_team({kind, path}, num_threads, [](TeamMember&) {});
        }
        py::list out;
        for (const auto& t : members) out.append(py::make_tuple(t.omp_thread, t.tid, t.cpu));
        return out;
      },
      py::arg("kind"), py::arg("path"), py::arg("num_threads"));
}

}  // namespace benchctl
