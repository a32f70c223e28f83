// Kernel event counters (perf_event_open) opened once and read with one
// read() syscall per group. Which events to ask for, whether to count kernel
// space, what a failure means, which fallback replaces a missing event and
// how a multiplexed count is extrapolated is decided in Python
// (benchctl.counters); this file opens, reads and closes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace benchctl {

// The events benchctl knows, by the name Python uses for them.
struct PerfEventKind {
  std::string name;
  uint32_t type;    // PERF_TYPE_SOFTWARE or PERF_TYPE_HARDWARE
  uint64_t config;  // PERF_COUNT_SW_* or PERF_COUNT_HW_*
  bool hardware;
};
const std::vector<PerfEventKind>& perf_event_kinds();

// What opening one event came to.
struct PerfEventStatus {
  std::string name;
  bool opened = false;  // counting on every thread that was asked for
  int error = 0;        // errno of the first failure (0 when opened)
  pid_t failed_tid = 0; // thread the failure happened on (0: the calling thread)
};

// One event's count on one thread, as the kernel reports it: the raw value
// and the nanoseconds the event was enabled and actually running on the PMU
// (running < enabled: multiplexed; running == 0: never scheduled).
struct PerfMemberReading {
  size_t event;  // index into the events the group was opened with
  uint64_t value;
  uint64_t time_enabled;
  uint64_t time_running;
};

// A set of counters. Software and hardware events go in separate kernel
// groups (a hardware group may not fit the PMU and then never runs; the
// software group always does), each group read with PERF_FORMAT_GROUP.
//
// tids empty: count the calling thread and the threads it creates later
// (inherit). Otherwise one pair of groups per listed thread, each also
// inherited: a thread that exits before it is opened (ESRCH) is skipped; one
// that exits later keeps its final counts. exclude_kernel (one flag per
// event, or empty for none) counts user space only.
class PerfCounterGroup {
 public:
  PerfCounterGroup(const std::vector<std::string>& events, const std::vector<pid_t>& tids,
                   const std::vector<bool>& exclude_kernel);
  ~PerfCounterGroup();
  PerfCounterGroup(const PerfCounterGroup&) = delete;
  PerfCounterGroup& operator=(const PerfCounterGroup&) = delete;

  const std::vector<PerfEventStatus>& status() const { return status_; }
  // Threads being counted (0 stands for the calling thread in inherit mode).
  std::vector<pid_t> threads() const;
  // Cumulative counts since opening, one reading per opened event per thread.
  // Throws std::runtime_error once closed or when the kernel refuses the read.
  std::vector<PerfMemberReading> read() const;
  void close();
  bool closed() const { return closed_; }

 private:
  struct Group {
    int leader_fd = -1;
    std::vector<int> fds;
    std::vector<uint64_t> ids;        // kernel id of each member, in fds order
    std::vector<size_t> event_index;  // index into status_ of each member
  };
  struct ThreadGroups {
    pid_t tid;
    std::vector<Group> groups;
  };

  bool open_thread(pid_t tid, bool inherit_calling_thread, ThreadGroups* out);

  std::vector<PerfEventStatus> status_;
  std::vector<bool> hardware_;
  std::vector<bool> exclude_kernel_;
  std::vector<ThreadGroups> threads_;
  bool closed_ = false;
};

}  // namespace benchctl
