#include <pybind11/stl.h>

#include "affinity.hpp"
#include "bindings.hpp"

namespace py = pybind11;

namespace benchctl {

void bind_affinity(py::module_& m) {
  m.def(
      "omp_team_pin",
      [](const std::string& kind, const std::string& path, const std::vector<CpuList>& masks) {
        std::vector<PinnedMember> members;
        {
          py::gil_scoped_release nogil;
          members = pin_omp_team({kind, path}, masks);
        }
        py::list out;
        for (const auto& t : members)
          out.append(py::make_tuple(t.omp_thread, t.tid, t.before, t.after, t.cpu_after));
        return out;
      },
      py::arg("kind"), py::arg("path"), py::arg("masks"));
}

}  // namespace benchctl
