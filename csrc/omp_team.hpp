// Run code on every thread of an OpenMP team that is already loaded in the
// process (torch's bundled libgomp, libiomp5 or libomp), through that
// runtime's own fork entry point, so the threads reached are the runtime's
// pool threads that torch's parallel regions reuse.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace benchctl {

struct OmpRuntime {
  std::string kind;  // "libgomp" | "libiomp5" | "libomp"
  std::string path;  // as the dynamic loader names it
};

struct TeamMember {
  int omp_thread = -1;
  pid_t tid = 0;
  int cpu = -1;
};

// Paths of the shared libraries mapped into this process, in load order (as
// the dynamic loader names them; the main program is left out). Which of
// them is an OpenMP runtime is decided in Python (benchctl.omp).
std::vector<std::string> loaded_library_paths();

// Run fn on every thread of a parallel region of `runtime` with num_threads
// threads (0: the runtime's current default for the calling thread). Each
// TeamMember arrives with omp_thread, tid and cpu filled in; fn may add to
// its own captured per-thread state. Returns the members ordered by
// omp_thread. Throws std::runtime_error if the runtime is no longer loaded or
// lacks its entry points.
std::vector<TeamMember> run_on_omp_team(const OmpRuntime& runtime, int num_threads,
                                        const std::function<void(TeamMember&)>& fn);

}  // namespace benchctl
