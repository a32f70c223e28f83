#include "counters.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#ifdef __linux__
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace benchctl {

#ifdef __linux__

const std::vector<PerfEventKind>& perf_event_kinds() {
  static const std::vector<PerfEventKind> kinds = {
      {"minor_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, false},
      {"major_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, false},
      {"context_switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, false},
      {"cpu_migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, false},
      {"task_clock_ns", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, false},
      {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, true},
      {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, true},
      {"branch_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, true},
      {"cache_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, true},
  };
  return kinds;
}

namespace {

constexpr uint64_t kReadFormat = PERF_FORMAT_GROUP | PERF_FORMAT_ID |
                                 PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
// A group read: nr, time_enabled, time_running, then {value, id} per member.
constexpr size_t kHeaderWords = 3;
// How long a group read failing with ECHILD (an inherited thread exiting) is tried again: the exiting thread must
// run to finish folding its counts, and on 2 vCPUs it may wait a scheduler tick or more for one.
constexpr std::chrono::milliseconds kExitWait{200};
// Retries that only yield the CPU before the retries sleep briefly.
constexpr int kYieldRetries = 100;

const PerfEventKind& kind_named(const std::string& name) {
  for (const auto& k : perf_event_kinds())
    if (k.name == name) return k;
  throw std::invalid_argument("unknown perf event name: " + name);
}

int open_event(const PerfEventKind& kind, pid_t pid, int group_fd, bool exclude_kernel) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = kind.type;
  attr.config = kind.config;
  attr.read_format = kReadFormat;
  attr.inherit = 1;
  attr.exclude_kernel = exclude_kernel ? 1 : 0;
  attr.exclude_hv = 1;
  return static_cast<int>(
      syscall(SYS_perf_event_open, &attr, pid, -1, group_fd, PERF_FLAG_FD_CLOEXEC));
}

}  // namespace

PerfCounterGroup::PerfCounterGroup(const std::vector<std::string>& events,
                                   const std::vector<pid_t>& tids,
                                   const std::vector<bool>& exclude_kernel) {
  if (events.size() > perf_event_kinds().size())
    throw std::invalid_argument("more events than benchctl knows");
  if (!exclude_kernel.empty() && exclude_kernel.size() != events.size())
    throw std::invalid_argument("exclude_kernel needs one flag per event (or none)");
  exclude_kernel_ = exclude_kernel;
  exclude_kernel_.resize(events.size(), false);
  for (const auto& name : events) {
    for (const auto& s : status_)
      if (s.name == name) throw std::invalid_argument("event listed twice: " + name);
    hardware_.push_back(kind_named(name).hardware);
    PerfEventStatus s;
    s.name = name;
    s.opened = true;  // until a thread refuses it
    status_.push_back(s);
  }
  if (tids.empty()) {
    ThreadGroups t;
    if (open_thread(0, true, &t)) threads_.push_back(std::move(t));
  } else {
    for (pid_t tid : tids) {
      ThreadGroups t;
      if (open_thread(tid, false, &t)) threads_.push_back(std::move(t));
    }
  }
}

bool PerfCounterGroup::open_thread(pid_t tid, bool inherit_calling_thread, ThreadGroups* out) {
  out->tid = inherit_calling_thread ? 0 : tid;
  for (bool hardware : {false, true}) {
    Group g;
    for (size_t i = 0; i < status_.size(); ++i) {
      PerfEventStatus& s = status_[i];
      if (hardware_[i] != hardware || !s.opened) continue;
      const PerfEventKind& kind = kind_named(s.name);
      int fd = open_event(kind, out->tid, g.leader_fd, exclude_kernel_[i]);
      if (fd < 0) {
        int err = errno;
        if (err == ESRCH && !inherit_calling_thread) {
          // The thread exited between listing and opening: nothing of it to count.
          for (auto& done : out->groups)
            for (int f : done.fds) ::close(f);
          for (int f : g.fds) ::close(f);
          out->groups.clear();
          return false;
        }
        s.opened = false;
        s.error = err;
        s.failed_tid = out->tid;
        continue;
      }
      uint64_t id = 0;
      if (ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) {
        int err = errno;
        ::close(fd);
        s.opened = false;
        s.error = err;
        s.failed_tid = out->tid;
        continue;
      }
      if (g.leader_fd < 0) g.leader_fd = fd;
      g.fds.push_back(fd);
      g.ids.push_back(id);
      g.event_index.push_back(i);
    }
    if (g.leader_fd >= 0) out->groups.push_back(std::move(g));
  }
  return true;
}

std::vector<pid_t> PerfCounterGroup::threads() const {
  std::vector<pid_t> out;
  for (const auto& t : threads_) out.push_back(t.tid);
  return out;
}

std::vector<PerfMemberReading> PerfCounterGroup::read() const {
  if (closed_) throw std::runtime_error("counter group is closed");
  std::vector<PerfMemberReading> out;
  uint64_t buf[kHeaderWords + 2 * 16];
  for (const auto& t : threads_) {
    for (const auto& g : t.groups) {
      ssize_t want = static_cast<ssize_t>((kHeaderWords + 2 * g.fds.size()) * sizeof(uint64_t));
      ssize_t got = ::read(g.leader_fd, buf, sizeof(buf));
      int err = got < 0 ? errno : 0;
      // An inherited thread exiting as its counts fold into the group's fails the read with ECHILD for a
      // moment (kernel 6.18: ~4% of reads right after threads joined); a read after it has run sums them. 100
      // back-to-back retries were not always enough on an AMD EPYC VM: the retries give it the CPU.
      if (err == ECHILD) {
        const auto until = std::chrono::steady_clock::now() + kExitWait;
        for (int retry = 0; err == ECHILD && std::chrono::steady_clock::now() < until; ++retry) {
          if (retry < kYieldRetries)
            std::this_thread::yield();
          else
            std::this_thread::sleep_for(std::chrono::microseconds(50));
          got = ::read(g.leader_fd, buf, sizeof(buf));
          err = got < 0 ? errno : 0;
        }
      }
      if (got < want)
        throw std::runtime_error(std::string("reading a perf event group failed: ") +
                                 (got < 0 ? std::strerror(err) : "short read"));
      uint64_t nr = buf[0], enabled = buf[1], running = buf[2];
      for (uint64_t m = 0; m < nr; ++m) {
        uint64_t value = buf[kHeaderWords + 2 * m];
        uint64_t id = buf[kHeaderWords + 2 * m + 1];
        size_t k = m < g.ids.size() && g.ids[m] == id ? m : g.ids.size();
        for (size_t j = 0; k == g.ids.size() && j < g.ids.size(); ++j)
          if (g.ids[j] == id) k = j;
        if (k == g.ids.size()) continue;  // not a member we opened
        out.push_back({g.event_index[k], value, enabled, running});
      }
    }
  }
  return out;
}

void PerfCounterGroup::close() {
  for (auto& t : threads_)
    for (auto& g : t.groups)
      for (int fd : g.fds) ::close(fd);
  threads_.clear();
  closed_ = true;
}

PerfCounterGroup::~PerfCounterGroup() { close(); }

#else  // not Linux: no perf_event_open; every event reports ENOSYS.

const std::vector<PerfEventKind>& perf_event_kinds() {
  // Names only: nothing here can be opened.
  static const std::vector<PerfEventKind> kinds = {
      {"minor_faults", 0, 0, false},     {"major_faults", 0, 0, false},
      {"context_switches", 0, 0, false}, {"cpu_migrations", 0, 0, false},
      {"task_clock_ns", 0, 0, false},    {"cycles", 0, 0, true},
      {"instructions", 0, 0, true},      {"branch_misses", 0, 0, true},
      {"cache_misses", 0, 0, true},
  };
  return kinds;
}

PerfCounterGroup::PerfCounterGroup(const std::vector<std::string>& events,
                                   const std::vector<pid_t>&, const std::vector<bool>&) {
  for (const auto& name : events) {
    PerfEventStatus s;
    s.name = name;
    s.error = ENOSYS;
    status_.push_back(s);
    hardware_.push_back(false);
  }
}
bool PerfCounterGroup::open_thread(pid_t, bool, ThreadGroups*) { return false; }
std::vector<pid_t> PerfCounterGroup::threads() const { return {}; }
std::vector<PerfMemberReading> PerfCounterGroup::read() const {
  if (closed_) throw std::runtime_error("counter group is closed");
  return {};
}
void PerfCounterGroup::close() { closed_ = true; }
PerfCounterGroup::~PerfCounterGroup() = default;

#endif

}  // namespace benchctl
