#include <pybind11/stl.h>

#include <optional>
#include <utility>

#include "bindings.hpp"
#include "fpenv.hpp"
#include "signal_broadcast.hpp"

namespace py = pybind11;

namespace benchctl {

namespace {
// Python spells a target as None (read only) or (ftz, daz).
using PyTarget = std::optional<std::pair<bool, bool>>;

FpTarget to_target(const PyTarget& t) {
  FpTarget out;
  if (t) out = {true, t->first, t->second};
  return out;
}

using PyTargets = std::unordered_map<pid_t, PyTarget>;

std::unordered_map<pid_t, FpTarget> to_targets(const PyTargets& m) {
  std::unordered_map<pid_t, FpTarget> out;
  for (const auto& [tid, t] : m) out[tid] = to_target(t);
  return out;
}
}  // namespace

void bind_fpenv(py::module_& m) {
  m.def("fp_control_register", &fp_control_register);
  m.def("fp_masks", []() { return py::make_tuple(fp_ftz_mask(), fp_daz_mask()); });
  m.def(
      "fp_thread_apply",
      [](const PyTarget& target) {
        FpChange c = fp_thread_apply(to_target(target));
        return py::make_tuple(c.before, c.after);
      },
      py::arg("target"));
  m.def(
      "fp_omp_team_apply",
      [](const std::string& kind, const std::string& path, int num_threads, const PyTarget& default_target,
         const PyTargets& per_tid) {
        std::vector<TeamFpChange> team;
        {
          py::gil_scoped_release nogil;
          team = fp_omp_team_apply({kind, path}, num_threads, to_target(default_target), to_targets(per_tid));
        }
        py::list out;
        for (const auto& t : team)
          out.append(py::make_tuple(t.member.omp_thread, t.member.tid, t.member.cpu, t.change.before,
                                    t.change.after));
        return out;
      },
      py::arg("kind"), py::arg("path"), py::arg("num_threads"), py::arg("default_target"), py::arg("per_tid"));
  m.def(
      "fp_broadcast",
      [](const PyTarget& default_target, const PyTargets& per_tid, double deadline_s, bool only_listed) {
        FpBroadcast b;
        {
          py::gil_scoped_release nogil;
          b = fp_broadcast(to_target(default_target), to_targets(per_tid), deadline_s, only_listed);
        }
        py::list tasks;
        for (const auto& t : b.tasks)
          tasks.append(py::make_tuple(t.tid, t.reached, t.changed, t.before, t.after, t.name));
        return py::make_tuple(b.signal, tasks, b.handler_kept, b.incomplete);
      },
      py::arg("default_target"), py::arg("per_tid"), py::arg("deadline_s"), py::arg("only_listed") = false);
  m.attr("FP_BROADCAST_MAX_DEADLINE_S") = kMaxBroadcastDeadlineS;
  m.def("fp_broadcast_handler_state", []() {
    BroadcastHandlerState s = fp_broadcast_handler_state();
    return py::make_tuple(s.signal, s.installed, s.maybe_pending);
  });
  m.def("signal_disposition", &signal_disposition, py::arg("sig"));
}

}  // namespace benchctl
