#include "signal_broadcast.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <linux/futex.h>
#include <memory>
#include <mutex>
#include <sched.h>
#include <set>
#include <signal.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// Handler lifetime, and why it may outlive a broadcast.
//
// A thread that blocks the signal keeps it pending. If we put SIG_DFL back
// while it is pending, the thread dies the moment it unblocks (the default
// action of a real-time signal is to terminate the process). So after each
// broadcast we restore the previous disposition only when no signal of ours
// can still be pending: every thread answered, or each unanswered one has
// exited or no longer shows the signal in /proc/<tid>/status SigPnd. Otherwise
// the handler stays installed ("kept") and the check is repeated after the
// next broadcast. A signal that arrives after its broadcast has closed finds
// no open request with its generation and does nothing: a thread reported
// unchanged is not changed behind the report's back.

namespace benchctl {

namespace {

static_assert(std::atomic<int>::is_always_lock_free, "the futex word must be a plain int");
static_assert(sizeof(std::atomic<int>) == sizeof(int), "the futex word must be a plain int");
static_assert(std::atomic<void*>::is_always_lock_free, "the handler needs lock-free atomics");

constexpr int kMaxRounds = 8;                          // re-list for threads born meanwhile
constexpr auto kHandlerDrainLimit = std::chrono::seconds(1);

// A thread to be changed gets kChange: its handler edits the saved state and
// queues kObserve to its own thread. That signal stays pending while the
// handler runs (the handler blocks its own signal) and is delivered on the
// way out of sigreturn, after the edited state has been loaded: its handler
// reads what the thread now runs with. That is the readback, with one
// wake-up per thread. A read-only broadcast sends kObserve directly.
enum Phase : uintptr_t { kChange = 0, kObserve = 1 };
enum SlotState : int { kWaiting = 0, kChanged = 1, kObserved = 2, kNoFpState = 3 };

struct Slot {
  pid_t tid = 0;
  FpTarget target;
  std::atomic<int> state{kWaiting};
  uint64_t before = 0;
  uint64_t observed = 0;
  char name[16] = {0};  // the thread's comm, as it reports it (TASK_COMM_LEN)
};

// One round of a broadcast. The signal's payload carries (generation, phase,
// slot index), so a handler finds its slot without searching and ignores any
// signal from an earlier round.
struct Request {
  uint32_t generation = 0;
  pid_t pid = 0;
  size_t count = 0;
  std::unique_ptr<Slot[]> slots;
  std::atomic<int> remaining{0};  // futex word: slots not yet finished
};

constexpr int kPhaseShift = 31;
constexpr uintptr_t kIndexMask = (uintptr_t{1} << kPhaseShift) - 1;

uintptr_t encode_payload(uint32_t generation, Phase phase, size_t index) {
  return (static_cast<uintptr_t>(generation) << 32) | (static_cast<uintptr_t>(phase) << kPhaseShift) |
         static_cast<uintptr_t>(index);
}

std::atomic<Request*> g_open_request{nullptr};
std::atomic<int> g_handlers_running{0};

pid_t current_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void futex_wake_all(std::atomic<int>* word) {
  syscall(SYS_futex, reinterpret_cast<int*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

// Async-signal-safe (the handler queues the readback to its own thread).
int queue_signal(pid_t pid, pid_t tid, int sig, uintptr_t payload) {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  info.si_signo = sig;
  info.si_code = SI_QUEUE;
  info.si_pid = pid;
  info.si_uid = getuid();
  info.si_value.sival_ptr = reinterpret_cast<void*>(payload);
  // tgkill carries no payload; rt_tgsigqueueinfo is tgkill with a siginfo.
  return syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, &info) == 0 ? 0 : errno;
}

void finish(Request* req, Slot& slot, int state) {
  slot.state.store(state);
  if (req->remaining.fetch_sub(1) == 1) futex_wake_all(&req->remaining);
}

// Async-signal-safe: atomics, raw syscalls and bit arithmetic only.
void on_broadcast_signal(int sig, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  // Counted before the request is looked at, so that closing a request can
  // wait for every handler that might still be using it.
  g_handlers_running.fetch_add(1);
  Request* req = g_open_request.load();
  if (req != nullptr && info->si_code == SI_QUEUE && info->si_pid == req->pid) {
    const auto payload = reinterpret_cast<uintptr_t>(info->si_value.sival_ptr);
    const auto generation = static_cast<uint32_t>(payload >> 32);
    const auto phase = static_cast<Phase>((payload >> kPhaseShift) & 1u);
    const auto index = static_cast<size_t>(payload & kIndexMask);
    if (generation == req->generation && index < req->count && req->slots[index].tid == current_tid()) {
      Slot& slot = req->slots[index];
      const int state = slot.state.load();
      uint64_t raw = 0;
      const bool have_fp = fp_saved_read(ucontext, &raw);
      if (phase == kChange && state == kWaiting) {
        const uint64_t wanted = fp_apply(raw, slot.target);
        if (have_fp && (wanted == raw || fp_saved_write(ucontext, wanted))) {
          slot.before = raw;
          slot.state.store(kChanged);
          if (queue_signal(req->pid, slot.tid, sig, encode_payload(generation, kObserve, index)) != 0)
            finish(req, slot, kChanged);  // changed, but no readback will come
        } else {
          finish(req, slot, kNoFpState);
        }
      } else if (phase == kObserve && state == (slot.target.change ? kChanged : kWaiting)) {
        if (!slot.target.change) slot.before = raw;
        slot.observed = raw;
        // The thread names itself: one cheap syscall here instead of a /proc
        // lookup per thread in the broadcaster.
        syscall(SYS_prctl, PR_GET_NAME, slot.name);
        finish(req, slot, have_fp ? kObserved : kNoFpState);
      }
    }
  }
  g_handlers_running.fetch_sub(1);
  errno = saved_errno;
}

bool is_our_handler(const struct sigaction& sa) {
  return (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == on_broadcast_signal;
}

// Process-wide handler bookkeeping, guarded by g_mutex (one broadcast at a time).
std::mutex g_mutex;
int g_signal = 0;
struct sigaction g_previous;
std::set<pid_t> g_maybe_pending;
bool g_request_leaked = false;
uint32_t g_generation = 0;

// Install our handler on a real-time signal nobody uses. Highest first:
// applications and libraries hand out SIGRTMIN+n from the bottom.
int install_handler() {
  if (g_signal != 0) {
    struct sigaction now;
    if (sigaction(g_signal, nullptr, &now) == 0 && is_our_handler(now)) return g_signal;
    // The application took the signal over since: it is theirs now.
    g_signal = 0;
    g_maybe_pending.clear();
  }
  struct sigaction ours;
  std::memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = on_broadcast_signal;
  ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  for (int sig = SIGRTMAX; sig >= SIGRTMIN; --sig) {
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    // Swap atomically and check what was there, in case another thread
    // claimed the signal between the look and the swap.
    if (sigaction(sig, &ours, &old) != 0) continue;
    if (old.sa_handler != SIG_DFL) {
      sigaction(sig, &old, nullptr);
      continue;
    }
    g_signal = sig;
    g_previous = old;
    return sig;
  }
  throw std::runtime_error("no free real-time signal: every one from SIGRTMIN to SIGRTMAX has a handler");
}

bool signal_pending_on(pid_t tid, int sig) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/status", static_cast<int>(tid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return false;  // the thread has exited: its pending signals died with it
  char line[256];
  bool pending = false;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long mask = 0;
    if (std::sscanf(line, "SigPnd: %llx", &mask) == 1) {
      pending = (mask >> (sig - 1)) & 1u;
      break;
    }
  }
  std::fclose(f);
  return pending;
}

bool task_alive(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d", static_cast<int>(tid));
  return access(path, F_OK) == 0;
}

void restore_handler_if_safe() {
  if (g_signal == 0) return;
  for (auto it = g_maybe_pending.begin(); it != g_maybe_pending.end();)
    it = signal_pending_on(*it, g_signal) ? std::next(it) : g_maybe_pending.erase(it);
  if (!g_maybe_pending.empty() || g_request_leaked) return;
  struct sigaction now;
  if (sigaction(g_signal, nullptr, &now) == 0 && is_our_handler(now)) sigaction(g_signal, &g_previous, nullptr);
  g_signal = 0;
}

std::vector<pid_t> list_tasks() {
  std::vector<pid_t> tids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) throw std::runtime_error(std::string("cannot list /proc/self/task: ") + std::strerror(errno));
  while (struct dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    tids.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

std::string task_name(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", static_cast<int>(tid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[64];
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  std::string name(buf, n > 0 ? static_cast<size_t>(n) : 0);
  if (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

using Clock = std::chrono::steady_clock;

// Sleep on the futex until every slot answered or the deadline passed.
void wait_for_answers(Request& req, Clock::time_point deadline) {
  for (;;) {
    const int left = req.remaining.load();
    if (left <= 0) return;
    const auto now = Clock::now();
    if (now >= deadline) return;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count();
    struct timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    syscall(SYS_futex, reinterpret_cast<int*>(&req.remaining), FUTEX_WAIT_PRIVATE, left, &ts, nullptr, 0);
  }
}

// Close the request to late handlers, then wait for any handler still inside
// it. Returns false (and the request must be leaked) if one never finishes.
bool close_request() {
  g_open_request.store(nullptr);
  const auto limit = Clock::now() + kHandlerDrainLimit;
  while (g_handlers_running.load() != 0) {
    if (Clock::now() >= limit) return false;
    sched_yield();
  }
  return true;
}

bool handler_still_ours() {
  struct sigaction now;
  return g_signal != 0 && sigaction(g_signal, nullptr, &now) == 0 && is_our_handler(now);
}

using Wanted = std::function<bool(pid_t)>;

// Wanted tasks of the process not in `handled`, which they join.
std::vector<pid_t> unhandled_tasks(std::set<pid_t>& handled, const Wanted& wanted) {
  std::vector<pid_t> fresh;
  for (pid_t tid : list_tasks())
    if (handled.count(tid) == 0 && wanted(tid)) fresh.push_back(tid);
  handled.insert(fresh.begin(), fresh.end());
  return fresh;
}

using TargetFor = std::function<FpTarget(pid_t)>;

// A round's request with everything allocated, not yet published.
std::unique_ptr<Request> make_request(pid_t pid, const std::vector<pid_t>& fresh, const TargetFor& target_for) {
  auto req = std::make_unique<Request>();
  req->pid = pid;
  req->count = fresh.size();
  req->slots.reset(new Slot[fresh.size()]);
  for (size_t i = 0; i < fresh.size(); ++i) {
    req->slots[i].tid = fresh[i];
    req->slots[i].target = target_for(fresh[i]);
  }
  req->remaining.store(static_cast<int>(fresh.size()));
  if (++g_generation == 0) ++g_generation;
  req->generation = g_generation;
  return req;
}

// Signal every slot of `req`, wait for the answers until `deadline`, and add
// what each task reported to `out`.
void run_round(std::unique_ptr<Request> req, int sig, Clock::time_point deadline, FpBroadcast& out) {
  // Allocated before the request is published: a throw after publishing
  // would free a request that handlers can still find.
  std::vector<int> send_error(req->count, 0);
  // A thread that still holds a signal of ours pending blocks it: another
  // one would only wait behind it. Real-time signals queue, and the queue is
  // the user's, shared by all their processes (RLIMIT_SIGPENDING): a thread
  // that blocks them for good, broadcast to again and again, would fill it,
  // and then no signal could be queued to anyone. Such a thread is reported
  // unreached without a new signal.
  std::vector<bool> still_pending(req->count, false);
  for (size_t i = 0; i < req->count; ++i)
    still_pending[i] = g_maybe_pending.count(req->slots[i].tid) != 0 && signal_pending_on(req->slots[i].tid, sig);
  g_open_request.store(req.get());
  for (size_t i = 0; i < req->count; ++i) {
    const Phase first = req->slots[i].target.change ? kChange : kObserve;
    send_error[i] = still_pending[i] ? EAGAIN
                                     : queue_signal(req->pid, req->slots[i].tid, sig,
                                                    encode_payload(req->generation, first, i));
    if (send_error[i] != 0) req->remaining.fetch_sub(1);  // never queued: nobody will answer
  }
  wait_for_answers(*req, deadline);
  // A handler that never drained may still touch the request: leak it, and
  // keep the handler installed for good. Decided before anything below
  // can throw and free it.
  Request& closed = *req;
  if (!close_request()) {
    (void)req.release();
    g_request_leaked = true;
  }

  for (size_t i = 0; i < closed.count; ++i) {
    const Slot& s = closed.slots[i];
    const int state = s.state.load();
    const bool changed = s.target.change && (state == kChanged || state == kObserved);
    if (state == kObserved) {
      out.tasks.push_back({s.tid, true, changed, s.before, s.observed, std::string(s.name, strnlen(s.name, sizeof s.name))});
      continue;
    }
    if (send_error[i] == ESRCH || !task_alive(s.tid)) continue;  // exited: not part of the process now
    out.tasks.push_back({s.tid, false, changed, s.before, 0, task_name(s.tid)});
    if ((send_error[i] == 0 || still_pending[i]) && state != kNoFpState) g_maybe_pending.insert(s.tid);
  }
}

// What one broadcast works from: who it is for and until when, and the
// tasks already handled (signalled, or the caller).
struct BroadcastPlan {
  pid_t pid;
  pid_t self;
  TargetFor target_for;
  Wanted wanted;
  Clock::time_point deadline;
  std::set<pid_t> handled;
};

void check_broadcast_arguments(double deadline_s) {
  if (*fp_control_register() == '\0')
    throw std::runtime_error("no floating-point control register is implemented for this architecture");
  // Also refuses NaN and infinity, which the comparisons below never pass.
  if (!(deadline_s > 0 && deadline_s <= kMaxBroadcastDeadlineS))
    throw std::invalid_argument("deadline_s must be > 0 and <= " + std::to_string(kMaxBroadcastDeadlineS) +
                                " seconds, got " + std::to_string(deadline_s));
}

// Everything that can fail (listing the tasks, finding a free signal,
// allocating) comes before the first change, the caller's own: a call that
// throws leaves every thread as it was. Lists the caller in `out` (unchanged
// yet) and returns the first round's request, or null when no other task is
// wanted.
std::unique_ptr<Request> prepare_first_round(BroadcastPlan& plan, FpBroadcast& out) {
  std::unique_ptr<Request> req;
  try {
    const std::vector<pid_t> fresh = unhandled_tasks(plan.handled, plan.wanted);
    if (!fresh.empty()) {
      out.signal = install_handler();
      req = make_request(plan.pid, fresh, plan.target_for);
    }
    out.tasks.reserve(fresh.size() + 1);
    if (plan.wanted(plan.self)) out.tasks.push_back({plan.self, true, false, 0, 0, task_name(plan.self)});
  } catch (...) {
    restore_handler_if_safe();
    throw;
  }
  return req;
}

// The caller changes its own register directly; its entry is the one
// prepare_first_round listed.
void change_caller(const BroadcastPlan& plan, FpBroadcast& out) {
  if (!plan.wanted(plan.self)) return;
  const FpTarget target = plan.target_for(plan.self);
  const FpChange mine = fp_thread_apply(target);
  TaskFpChange& entry = out.tasks.back();
  entry.changed = target.change;
  entry.before = mine.before;
  entry.after = mine.after;
}

// Tasks born during the last round when no further round can run (the
// deadline passed, or kMaxRounds ran): listed unreached and unchanged, so
// the report still names every task (one born of a changed thread has
// inherited the change: the caller must not count it as untouched).
void report_unsignalled(BroadcastPlan& plan, FpBroadcast& out) {
  try {
    for (pid_t tid : unhandled_tasks(plan.handled, plan.wanted))
      out.tasks.push_back({tid, false, false, 0, 0, task_name(tid)});
  } catch (const std::exception& e) {
    out.incomplete = std::string("tasks started during the broadcast may be missing: ") + e.what();
  }
}

// Run `req`, then a round for the tasks born meanwhile, until none is new,
// the deadline passes or kMaxRounds ran.
void run_rounds(std::unique_ptr<Request> req, BroadcastPlan& plan, FpBroadcast& out) {
  for (int round = 1; req != nullptr; ++round) {
    run_round(std::move(req), out.signal, plan.deadline, out);
    if (round >= kMaxRounds || Clock::now() >= plan.deadline) {
      report_unsignalled(plan, out);
      break;
    }
    // Threads are already changed by now, so a failure here ends the
    // broadcast with a report rather than an exception.
    try {
      const std::vector<pid_t> fresh = unhandled_tasks(plan.handled, plan.wanted);
      if (fresh.empty()) break;
      if (!handler_still_ours())
        throw std::runtime_error("the application installed its own handler on signal " +
                                 std::to_string(out.signal) + " during the broadcast");
      req = make_request(plan.pid, fresh, plan.target_for);
    } catch (const std::exception& e) {
      out.incomplete = std::string("tasks started during the broadcast were not signalled: ") + e.what();
    }
  }
}

}  // namespace

FpBroadcast fp_broadcast(const FpTarget& default_target, const std::unordered_map<pid_t, FpTarget>& per_tid,
                         double deadline_s, bool only_listed) {
  check_broadcast_arguments(deadline_s);
  std::lock_guard<std::mutex> lock(g_mutex);
  const pid_t self = current_tid();
  BroadcastPlan plan{
      getpid(),
      self,
      [&](pid_t tid) {
        auto it = per_tid.find(tid);
        return it != per_tid.end() ? it->second : default_target;
      },
      [&](pid_t tid) { return !only_listed || per_tid.count(tid) != 0; },
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(deadline_s)),
      {self},
  };

  FpBroadcast out;
  std::unique_ptr<Request> first = prepare_first_round(plan, out);
  change_caller(plan, out);
  run_rounds(std::move(first), plan, out);

  restore_handler_if_safe();
  out.handler_kept = g_signal != 0;
  std::sort(out.tasks.begin(), out.tasks.end(),
            [](const TaskFpChange& a, const TaskFpChange& b) { return a.tid < b.tid; });
  return out;
}

BroadcastHandlerState fp_broadcast_handler_state() {
  std::lock_guard<std::mutex> lock(g_mutex);
  BroadcastHandlerState s;
  s.signal = g_signal;
  s.installed = g_signal != 0;
  s.maybe_pending.assign(g_maybe_pending.begin(), g_maybe_pending.end());
  return s;
}

std::string signal_disposition(int sig) {
  struct sigaction now;
  if (sigaction(sig, nullptr, &now) != 0)
    throw std::invalid_argument("not a signal number: " + std::to_string(sig));
  if (is_our_handler(now)) return "benchctl";
  if (!(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL) return "default";
  if (!(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_IGN) return "ignore";
  return "other";
}

}  // namespace benchctl
