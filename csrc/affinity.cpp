#include "affinity.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace benchctl {

namespace {

// A dynamically sized cpu_set_t: the kernel rejects a mask buffer smaller than
// its nr_cpu_ids, and ids may exceed the 1024 a fixed cpu_set_t holds.
struct CpuSet {
  int count;
  size_t bytes;
  std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> set;
  explicit CpuSet(int cpus)
      : count(cpus), bytes(CPU_ALLOC_SIZE(cpus)), set(CPU_ALLOC(cpus), [](cpu_set_t* s) { CPU_FREE(s); }) {
    if (!set) throw std::bad_alloc();
    CPU_ZERO_S(bytes, set.get());
  }
};

std::string errno_text(const char* what, pid_t tid, int err) {
  const std::string who = tid == 0 ? "the calling thread" : "tid " + std::to_string(tid);
  return std::string(what) + " for " + who + " failed: " + std::strerror(err);
}

}  // namespace

CpuList thread_affinity(pid_t tid) {
  for (int cpus = 1024;; cpus *= 2) {
    CpuSet s(cpus);
    if (sched_getaffinity(tid, s.bytes, s.set.get()) == 0) {
      CpuList out;
      for (int c = 0; c < cpus; ++c)
        if (CPU_ISSET_S(c, s.bytes, s.set.get())) out.push_back(c);
      return out;
    }
    // EINVAL: the buffer is smaller than the kernel's CPU count; grow it.
    if (errno != EINVAL || cpus >= (1 << 22)) throw std::runtime_error(errno_text("sched_getaffinity", tid, errno));
  }
}

void set_thread_affinity(pid_t tid, const CpuList& cpus) {
  if (cpus.empty()) throw std::invalid_argument("an affinity mask needs at least one CPU");
  int highest = 0;
  for (int c : cpus) {
    if (c < 0) throw std::invalid_argument("negative CPU id " + std::to_string(c));
    highest = std::max(highest, c);
  }
  CpuSet s(highest + 1);
  for (int c : cpus) CPU_SET_S(c, s.bytes, s.set.get());
  if (sched_setaffinity(tid, s.bytes, s.set.get()) != 0)
    throw std::runtime_error(errno_text("sched_setaffinity", tid, errno));
}

namespace {

// One slot per omp thread; each team thread writes only its own slot.
struct PinSlot {
  PinnedMember member;
  bool reached = false;
  bool changed = false;
  std::string error;
};

void restore_changed(const std::vector<PinSlot>& slots, std::string& report) {
  for (const auto& s : slots) {
    if (!s.changed) continue;
    try {
      set_thread_affinity(s.member.tid, s.member.before);
    } catch (const std::exception& e) {
      report += "; rollback failed for omp thread " + std::to_string(s.member.omp_thread) + ": " + e.what();
    }
  }
}

}  // namespace

std::vector<PinnedMember> pin_omp_team(const OmpRuntime& runtime, const std::vector<CpuList>& masks) {
  if (masks.empty()) throw std::invalid_argument("pin_omp_team needs one mask per team thread, got none");
  for (const auto& m : masks) {
    if (m.empty()) throw std::invalid_argument("an affinity mask needs at least one CPU");
    for (int c : m)
      if (c < 0) throw std::invalid_argument("negative CPU id " + std::to_string(c));
  }

  std::vector<PinSlot> slots(masks.size());
  const auto members = run_on_omp_team(runtime, static_cast<int>(masks.size()), [&](TeamMember& tm) {
    if (tm.omp_thread < 0 || static_cast<size_t>(tm.omp_thread) >= slots.size()) return;
    PinSlot& slot = slots[tm.omp_thread];
    slot.reached = true;
    slot.member.omp_thread = tm.omp_thread;
    slot.member.tid = tm.tid;
    // Never throw from here: every slot must be filled for a rollback.
    try {
      slot.member.before = thread_affinity(0);
      set_thread_affinity(0, masks[tm.omp_thread]);
      slot.changed = true;
      slot.member.after = thread_affinity(0);
      slot.member.cpu_after = sched_getcpu();
    } catch (const std::exception& e) {
      slot.error = e.what();
    }
  });

  std::string failure;
  if (members.size() != masks.size())
    failure = "the runtime formed a team of " + std::to_string(members.size()) + " threads for " +
              std::to_string(masks.size()) + " masks";
  for (const auto& s : slots) {
    if (!failure.empty()) break;
    if (!s.reached) failure = "an omp thread was not reached";
    else if (!s.error.empty()) failure = "omp thread " + std::to_string(s.member.omp_thread) + ": " + s.error;
  }
  if (!failure.empty()) {
    restore_changed(slots, failure);
    throw std::runtime_error("pinning the OpenMP team failed, previous masks restored: " + failure);
  }

  std::vector<PinnedMember> out;
  out.reserve(slots.size());
  for (auto& s : slots) out.push_back(std::move(s.member));
  return out;
}

}  // namespace benchctl
