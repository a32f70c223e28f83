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

void bind_records(py::module_& m) {
  Record<FpMasks>(m, "FpMasks", "The bits of the raw FP control register that decide denormal handling.")
      .field("ftz", &FpMasks::ftz, "The flush-to-zero bit (MXCSR bit 15, FPCR.FZ bit 24).")
      .field("daz", &FpMasks::daz, "The denormals-are-zero bit (MXCSR bit 6), 0 where the CPU has none.");
  Record<FpChange>(m, "FpChange", "One thread's FP control register around a change.")
      .field("before", &FpChange::before, "The raw register before the change.")
      .field("after", &FpChange::after, "The raw register read back after it.");
  Record<TeamFpChange>(m, "TeamFpChange", "One OpenMP team thread and the change it made to its own register.")
      .field("member", &TeamFpChange::member, "The thread (omp_thread, tid, cpu).")
      .field("change", &TeamFpChange::change, "Its register before and after.");
  Record<TaskFpChange>(m, "TaskFpChange", "What a process-wide broadcast did to one task.")
      .field("tid", &TaskFpChange::tid, "The task's thread id.")
      .field("reached", &TaskFpChange::reached, "The thread answered and its register was read back in time.")
      .field("changed", &TaskFpChange::changed, "The change was applied (also when unreached: its readback came late).")
      .field("before", &TaskFpChange::before, "The raw register before the change (valid if changed or reached).")
      .field("after", &TaskFpChange::after, "The raw register read back after it (valid if reached).")
      .field("name", &TaskFpChange::name, "The task's comm at the time of the broadcast ('' if gone).");
  Record<FpBroadcast>(m, "FpBroadcast", "The report of one process-wide broadcast.")
      .field("signal", &FpBroadcast::signal, "The real-time signal used (0: the caller was the only task).")
      .field("tasks", &FpBroadcast::tasks, "Every live task, the caller included, by tid.")
      .field("handler_kept", &FpBroadcast::handler_kept, "A signal of ours may still be pending somewhere.")
      .field("incomplete", &FpBroadcast::incomplete, "Why tasks born during the broadcast may be missing ('' if none).");
  Record<BroadcastHandlerState>(m, "BroadcastHandlerState", "The broadcast's signal handler, now.")
      .field("signal", &BroadcastHandlerState::signal, "The signal it is installed on (0: none).")
      .field("installed", &BroadcastHandlerState::installed, "Whether a handler of ours is installed.")
      .field("maybe_pending", &BroadcastHandlerState::maybe_pending, "Tasks that may still hold a signal of ours.");
}
}  // namespace

void bind_fpenv(py::module_& m) {
  bind_records(m);
  m.def("fp_control_register", &fp_control_register,
        "The register that holds FTZ/DAZ: 'MXCSR', 'FPCR', or '' where none is implemented.");
  m.def("fp_masks", &fp_masks, "The FTZ and DAZ bits of the raw register.");
  m.def(
      "fp_thread_apply", [](const PyTarget& target) { return fp_thread_apply(to_target(target)); },
      py::arg("target"), "Apply target (None: read only; (ftz, daz)) to the calling thread.");
  m.def(
      "fp_omp_team_apply",
      [](const std::string& kind, const std::string& path, int num_threads, const PyTarget& default_target,
         const PyTargets& per_tid) {
        return fp_omp_team_apply({kind, path}, num_threads, to_target(default_target), to_targets(per_tid));
      },
      py::arg("kind"), py::arg("path"), py::arg("num_threads"), py::arg("default_target"), py::arg("per_tid"),
      py::call_guard<py::gil_scoped_release>(),
      "Apply per_tid[tid] (else default_target) on every thread of an OpenMP team, each reading itself back.");
  m.def(
      "fp_broadcast",
      [](const PyTarget& default_target, const PyTargets& per_tid, double deadline_s, bool only_listed) {
        return fp_broadcast(to_target(default_target), to_targets(per_tid), deadline_s, only_listed);
      },
      py::arg("default_target"), py::arg("per_tid"), py::arg("deadline_s"), py::arg("only_listed") = false,
      py::call_guard<py::gil_scoped_release>(),
      "Apply per_tid[tid] (else default_target) to every task (only_listed: to those per_tid names) by a "
      "real-time signal; read each back.");
  m.attr("FP_BROADCAST_MAX_DEADLINE_S") = kMaxBroadcastDeadlineS;
  m.def("fp_broadcast_handler_state", &fp_broadcast_handler_state, "The broadcast's signal handler, now.");
  m.def("signal_disposition", &signal_disposition, py::arg("sig"),
        "Disposition of sig: 'default', 'ignore', 'benchctl' (the broadcast handler) or 'other'.");
}

}  // namespace benchctl
