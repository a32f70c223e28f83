// Pin the threads of a running OpenMP team from inside each thread.
//
// Why this is native: Python can set and read any thread's mask by tid
// (os.sched_setaffinity / os.sched_getaffinity), so restoring and reading
// masks stay in Python. What Python cannot do is run code *on* an OpenMP team
// thread. Setting each mask inside the parallel region (through omp_team's
// fork entry point) gives two things an outside set by tid cannot:
//  * identity: the thread that takes masks[i] is the thread the runtime runs
//    as omp thread i in that very region. The tid <-> thread-number mapping
//    is only the runtime's to keep; learning it in one region and applying
//    masks by tid later trusts it across regions.
//  * proof: the kernel moves a running thread off a CPU it may no longer use
//    before sched_setaffinity(0, ...) returns, so the thread's own
//    sched_getcpu() right after the set shows where it now runs, not the
//    stale "last CPU" /proc reports for a sleeping thread.
#pragma once

#include <sys/types.h>

#include <vector>

#include "omp_team.hpp"

namespace benchctl {

using CpuList = std::vector<int>;  // logical CPU ids, ascending

// Affinity mask of thread `tid` (0: the calling thread). Throws std::runtime_error.
CpuList thread_affinity(pid_t tid);

// Restrict thread `tid` (0: the calling thread) to `cpus`. Throws
// std::invalid_argument for an empty list or a negative id, std::runtime_error
// (with the errno text) when the kernel refuses.
void set_thread_affinity(pid_t tid, const CpuList& cpus);

struct PinnedMember {
  int omp_thread = -1;
  pid_t tid = 0;
  CpuList before;     // the mask the thread had before this call
  CpuList after;      // the mask the thread read back after setting it
  int cpu_after = -1; // sched_getcpu() on the thread right after the set
};

// Run a region of masks.size() threads on `runtime` and restrict omp thread i
// to masks[i], from inside that thread; returns the members by omp_thread.
// All or nothing: if any thread fails, or the runtime forms a team of another
// size, every thread already changed gets its previous mask back and this
// throws std::runtime_error naming what failed.
std::vector<PinnedMember> pin_omp_team(const OmpRuntime& runtime, const std::vector<CpuList>& masks);

}  // namespace benchctl
