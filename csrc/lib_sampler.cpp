#include "lib_sampler.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <link.h>
#include <memory>
#include <mutex>
#include <new>
#include <pthread.h>
#include <sched.h>
#include <set>
#include <signal.h>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <thread>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

// glibc before 2.35 names the thread id of SIGEV_THREAD_ID only by its union member.
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif
#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID 4
#endif

namespace benchctl {

namespace {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "the handler needs lock-free atomics");
static_assert(std::atomic<size_t>::is_always_lock_free, "the handler needs lock-free atomics");
static_assert(std::atomic<void*>::is_always_lock_free, "the handler needs lock-free atomics");

#if defined(__x86_64__) || defined(__aarch64__)
constexpr bool kHaveIp = true;
#else
constexpr bool kHaveIp = false;
#endif

// Async-signal-safe: reads the interrupted context the kernel saved.
uintptr_t interrupted_ip(const void* ucontext) {
#if defined(__x86_64__)
  return static_cast<uintptr_t>(static_cast<const ucontext_t*>(ucontext)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(static_cast<const ucontext_t*>(ucontext)->uc_mcontext.pc);
#else
  (void)ucontext;
  return 0;
#endif
}

// More threads than this in one window are counted as not timed: the slots
// are allocated before the window opens, as the handler may not allocate.
constexpr size_t kMaxThreads = 4096;
// How often the helper thread looks for threads born during the window:
// soon at first (pools start with the first op that needs them), then ever
// less often, so that its own CPU time stays far below what the OpenMP-wait
// probe counts as the workload's other threads running beside torch's team.
constexpr auto kFirstRescan = std::chrono::milliseconds(10);
constexpr auto kLastRescan = std::chrono::milliseconds(160);
constexpr auto kHandlerDrainLimit = std::chrono::seconds(1);

struct Slot {
  pid_t tid = 0;
  int timer = -1;                     // the kernel's timer id
  std::atomic<uint64_t> samples{0};   // the only field the handler writes
  char name[16] = {0};                // TASK_COMM_LEN
};

// One window. The handler finds it through g_live and touches only `next`,
// `ips`, `weights`, `dropped` and a slot's `samples`; the rest is guarded by
// g_slots_mutex (arming) or belongs to start/stop.
struct Session {
  uint32_t generation = 0;
  int signal = 0;
  struct sigaction previous;
  int64_t period_ns = 0;
  size_t capacity = 0;
  std::unique_ptr<uintptr_t[]> ips;
  std::unique_ptr<uint32_t[]> weights;
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> dropped{0};
  std::unique_ptr<Slot[]> slots;  // kMaxThreads of them
  size_t used = 0;
  std::set<pid_t> seen;           // tasks already armed, skipped or refused
  uint64_t not_timed = 0;
  std::string timer_error;
  int64_t wall_start_ns = 0;
  int64_t user_start_ns = 0;
  int64_t system_start_ns = 0;
  // The helper thread that times threads born during the window.
  std::thread watcher;
  std::mutex watch_mutex;
  std::condition_variable watch_cv;
  bool watch_stop = false;
};

std::atomic<Session*> g_live{nullptr};  // what the handler reads
std::atomic<int> g_handlers_running{0};
std::mutex g_control_mutex;              // one start or stop at a time
std::unique_ptr<Session> g_open;         // the open window (g_control_mutex)
std::mutex g_slots_mutex;                // arming timers: start, the helper, stop
uint32_t g_generation = 0;               // g_control_mutex

uintptr_t encode_payload(uint32_t generation, size_t index) {
  return (static_cast<uintptr_t>(generation) << 32) | static_cast<uintptr_t>(index);
}

// Async-signal-safe: atomics and arithmetic only; errno is saved.
void on_sample(int, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  // Counted before the window is looked at, so that stop can wait for every
  // handler that might still be using it before freeing it.
  g_handlers_running.fetch_add(1);
  Session* s = g_live.load();
  if (s != nullptr && info->si_code == SI_TIMER) {
    const auto payload = reinterpret_cast<uintptr_t>(info->si_value.sival_ptr);
    const auto index = static_cast<size_t>(payload & 0xffffffffu);
    // A signal of an earlier window's timer carries that window's generation.
    if (static_cast<uint32_t>(payload >> 32) == s->generation && index < kMaxThreads) {
      // Periods that expired while this signal was pending, each one period of CPU time.
      const uint64_t weight = 1 + static_cast<uint64_t>(info->si_overrun > 0 ? info->si_overrun : 0);
      s->slots[index].samples.fetch_add(weight, std::memory_order_relaxed);
      const size_t at = s->next.fetch_add(1, std::memory_order_relaxed);
      if (at < s->capacity) {
        s->ips[at] = interrupted_ip(ucontext);
        s->weights[at] = static_cast<uint32_t>(std::min<uint64_t>(weight, UINT32_MAX));
      } else {
        s->dropped.fetch_add(weight, std::memory_order_relaxed);
      }
    }
  }
  g_handlers_running.fetch_sub(1);
  errno = saved_errno;
}

bool is_our_handler(const struct sigaction& sa) {
  return (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == on_sample;
}

// Claim a real-time signal whose disposition is SIG_DFL, from SIGRTMAX-1
// down (SIGRTMAX is where the FP broadcast starts its search).
void install_handler(Session& s) {
  struct sigaction ours;
  std::memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = on_sample;
  ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  for (int sig = SIGRTMAX - 1; sig >= SIGRTMIN; --sig) {
    struct sigaction old;
    if (sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
    // Swap and check what was there, in case another thread claimed the
    // signal between the look and the swap.
    if (sigaction(sig, &ours, &old) != 0) continue;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
      sigaction(sig, &old, nullptr);
      continue;
    }
    s.signal = sig;
    s.previous = old;
    return;
  }
  throw std::runtime_error("no free real-time signal: every one from SIGRTMIN to SIGRTMAX-1 has a handler");
}

// Put the saved disposition back, through SIG_IGN: setting SIG_IGN discards
// the signal wherever it is still pending (also on a thread that blocks it),
// so no late instance reaches SIG_DFL, whose action would end the process.
// Left alone when the application installed its own handler meanwhile.
void restore_handler(const Session& s) {
  struct sigaction now;
  if (sigaction(s.signal, nullptr, &now) != 0 || !is_our_handler(now)) return;
  struct sigaction ignore;
  std::memset(&ignore, 0, sizeof ignore);
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(s.signal, &ignore, nullptr);
  sigaction(s.signal, &s.previous, nullptr);
}

pid_t current_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

int64_t monotonic_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t timeval_ns(const struct timeval& tv) {
  return static_cast<int64_t>(tv.tv_sec) * 1000000000 + static_cast<int64_t>(tv.tv_usec) * 1000;
}

void process_cpu_ns(int64_t* user_ns, int64_t* system_ns) {
  struct rusage ru;
  std::memset(&ru, 0, sizeof ru);
  getrusage(RUSAGE_SELF, &ru);
  *user_ns = timeval_ns(ru.ru_utime);
  *system_ns = timeval_ns(ru.ru_stime);
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

bool task_alive(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d", static_cast<int>(tid));
  return access(path, F_OK) == 0;
}

void read_task_name(pid_t tid, char (&name)[16]) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", static_cast<int>(tid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t n = read(fd, name, sizeof name - 1);
  close(fd);
  size_t len = n > 0 ? static_cast<size_t>(n) : 0;
  if (len > 0 && name[len - 1] == '\n') --len;
  name[len] = '\0';
}

// The CPU-time clock of any thread of this process by its tid (Linux's
// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)): no pthread_t needed.
clockid_t thread_cpu_clock(pid_t tid) { return static_cast<clockid_t>((~static_cast<unsigned>(tid)) << 3) | 6; }

// Raw system calls: glibc before 2.34 keeps the timer calls in librt.
int timer_create_raw(clockid_t clock, struct sigevent* sev, int* timer) {
  return static_cast<int>(syscall(SYS_timer_create, clock, sev, timer));
}
int timer_settime_raw(int timer, const struct itimerspec* spec) {
  return static_cast<int>(syscall(SYS_timer_settime, timer, 0, spec, nullptr));
}
void timer_delete_raw(int timer) { syscall(SYS_timer_delete, timer); }

// Time one task; g_slots_mutex held.
void arm_task(Session& s, pid_t tid) {
  s.seen.insert(tid);
  if (s.used >= kMaxThreads) {
    ++s.not_timed;
    return;
  }
  const size_t index = s.used;
  struct sigevent sev;
  std::memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = s.signal;
  sev.sigev_value.sival_ptr = reinterpret_cast<void*>(encode_payload(s.generation, index));
  sev.sigev_notify_thread_id = tid;
  int timer = -1;
  if (timer_create_raw(thread_cpu_clock(tid), &sev, &timer) != 0) {
    const int err = errno;
    if (task_alive(tid)) {  // a thread that exited meanwhile is not a refusal
      ++s.not_timed;
      if (s.timer_error.empty())
        s.timer_error = std::string("timer_create on thread ") + std::to_string(tid) + ": " + std::strerror(err);
    }
    return;
  }
  Slot& slot = s.slots[index];
  slot.tid = tid;
  slot.timer = timer;
  read_task_name(tid, slot.name);
  ++s.used;
  const time_t sec = static_cast<time_t>(s.period_ns / 1000000000);
  const long nsec = static_cast<long>(s.period_ns % 1000000000);
  struct itimerspec spec;
  spec.it_interval = {sec, nsec};
  spec.it_value = {sec, nsec};
  if (timer_settime_raw(timer, &spec) != 0 && s.timer_error.empty())
    s.timer_error = std::string("timer_settime on thread ") + std::to_string(tid) + ": " + std::strerror(errno);
}

// Time every task not seen yet, except `skip` (the helper thread).
void arm_new_tasks(Session& s, pid_t skip) {
  const std::vector<pid_t> tids = list_tasks();  // allocates: outside the lock
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  for (pid_t tid : tids)
    if (tid != skip && s.seen.count(tid) == 0) arm_task(s, tid);
}

void watch_threads(Session* s) {
  const pid_t self = current_tid();
  {
    std::lock_guard<std::mutex> lock(g_slots_mutex);
    s->seen.insert(self);
  }
  std::unique_lock<std::mutex> lock(s->watch_mutex);
  for (auto wait = kFirstRescan; !s->watch_cv.wait_for(lock, wait, [s] { return s->watch_stop; });
       wait = std::min<std::chrono::milliseconds>(wait * 2, kLastRescan)) {
    lock.unlock();
    try {
      arm_new_tasks(*s, self);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> slots(g_slots_mutex);
      if (s->timer_error.empty()) s->timer_error = std::string("threads born during the window: ") + e.what();
    }
    lock.lock();
  }
}

// The helper keeps the caller's signal mask: blocking more would leave it
// unreachable by the FP broadcast (signal_broadcast.cpp), which would then
// wait its whole deadline for it.
void start_watcher(Session& s) { s.watcher = std::thread(watch_threads, &s); }

void stop_watcher(Session& s) {
  if (!s.watcher.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(s.watch_mutex);
    s.watch_stop = true;
  }
  s.watch_cv.notify_all();
  s.watcher.join();
}

void delete_timers(Session& s) {
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  for (size_t i = 0; i < s.used; ++i) {
    if (s.slots[i].timer >= 0) timer_delete_raw(s.slots[i].timer);
    s.slots[i].timer = -1;
  }
}

// Stop handing the window to handlers, then wait for any still inside it.
// False when one never finished: the window must then not be freed.
bool close_window() {
  g_live.store(nullptr);
  const auto limit = std::chrono::steady_clock::now() + kHandlerDrainLimit;
  while (g_handlers_running.load() != 0) {
    if (std::chrono::steady_clock::now() >= limit) return false;
    sched_yield();
  }
  return true;
}

// Undo a start that failed part way (g_control_mutex held).
void abandon(std::unique_ptr<Session> s) {
  stop_watcher(*s);
  delete_timers(*s);
  const bool drained = close_window();
  if (s->signal != 0) restore_handler(*s);
  if (!drained) (void)s.release();
}

// The executable segments of every loaded object, for mapping addresses.
struct Segment {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  size_t object = 0;
};

struct LoadedObjects {
  std::vector<std::string> paths;
  std::vector<Segment> segments;  // sorted by lo
};

std::string main_program() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("(main program)");
}

int collect_object(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<LoadedObjects*>(data);
  const bool main = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
  const size_t object = out->paths.size();
  out->paths.push_back(main ? main_program() : std::string(info->dlpi_name));
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const uintptr_t lo = static_cast<uintptr_t>(info->dlpi_addr + ph.p_vaddr);
    out->segments.push_back({lo, lo + static_cast<uintptr_t>(ph.p_memsz), object});
  }
  return 0;
}

LoadedObjects loaded_objects() {
  LoadedObjects out;
  dl_iterate_phdr(collect_object, &out);
  std::sort(out.segments.begin(), out.segments.end(), [](const Segment& a, const Segment& b) { return a.lo < b.lo; });
  return out;
}

// The object holding `ip`, or -1.
long object_of(const LoadedObjects& loaded, uintptr_t ip) {
  auto it = std::upper_bound(loaded.segments.begin(), loaded.segments.end(), ip,
                             [](uintptr_t v, const Segment& seg) { return v < seg.lo; });
  if (it == loaded.segments.begin()) return -1;
  --it;
  return ip < it->hi ? static_cast<long>(it->object) : -1;
}

void map_samples(const Session& s, LibSamples& out) {
  const LoadedObjects loaded = loaded_objects();
  std::vector<uint64_t> by_object(loaded.paths.size(), 0);
  const size_t stored = std::min(s.next.load(), s.capacity);
  for (size_t i = 0; i < stored; ++i) {
    const uint64_t weight = s.weights[i];
    out.samples += weight;
    const long object = object_of(loaded, s.ips[i]);
    if (object < 0)
      out.unmapped += weight;
    else
      by_object[static_cast<size_t>(object)] += weight;
  }
  for (size_t i = 0; i < by_object.size(); ++i)
    if (by_object[i] > 0) out.objects.push_back({loaded.paths[i], by_object[i]});
  std::sort(out.objects.begin(), out.objects.end(), [](const ObjectSamples& a, const ObjectSamples& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.path < b.path;
  });
}

// A child forked during a window has no timers (timers are not inherited),
// no helper thread, and maybe a lock some other thread held at the fork: it
// starts with no window open, the disposition restored, and fresh locks.
// The parent's window is left to the parent (its memory is dropped here,
// not freed: freeing would destroy a thread object that has no thread).
void forget_window_in_child() {
  g_live.store(nullptr);
  g_handlers_running.store(0);  // a handler running on another thread at the fork has no thread here
  Session* inherited = g_open.release();
  if (inherited != nullptr) restore_handler(*inherited);
  new (&g_control_mutex) std::mutex;
  new (&g_slots_mutex) std::mutex;
}

void check_start_arguments(int64_t period_us, int64_t capacity) {
  if (period_us < kMinSamplePeriodUs || period_us > kMaxSamplePeriodUs)
    throw std::invalid_argument("period_us must be from " + std::to_string(kMinSamplePeriodUs) + " to " +
                                std::to_string(kMaxSamplePeriodUs) + ", got " + std::to_string(period_us));
  if (capacity < 1 || capacity > kMaxSampleCapacity)
    throw std::invalid_argument("capacity must be from 1 to " + std::to_string(kMaxSampleCapacity) + ", got " +
                                std::to_string(capacity));
  if (!kHaveIp) throw std::runtime_error("no instruction pointer is read on this architecture");
  static const int registered = pthread_atfork(nullptr, nullptr, forget_window_in_child);
  if (registered != 0) throw std::runtime_error(std::string("pthread_atfork: ") + std::strerror(registered));
}

}  // namespace

int lib_sampler_start(int64_t period_us, int64_t capacity) {
  check_start_arguments(period_us, capacity);
  std::lock_guard<std::mutex> lock(g_control_mutex);
  if (g_open != nullptr)
    throw std::runtime_error("the library sampler is already running (on signal " + std::to_string(g_open->signal) +
                             "): stop it before starting another window");
  auto s = std::make_unique<Session>();
  s->period_ns = period_us * 1000;
  s->capacity = static_cast<size_t>(capacity);
  s->ips.reset(new uintptr_t[s->capacity]);
  s->weights.reset(new uint32_t[s->capacity]);
  s->slots.reset(new Slot[kMaxThreads]);
  if (++g_generation == 0) ++g_generation;
  s->generation = g_generation;
  try {
    install_handler(*s);
    g_live.store(s.get());
    s->wall_start_ns = monotonic_ns();
    process_cpu_ns(&s->user_start_ns, &s->system_start_ns);
    arm_new_tasks(*s, 0);
    if (s->used == 0)
      throw std::runtime_error("no thread could be timed: " +
                               (s->timer_error.empty() ? std::string("every thread exited") : s->timer_error));
    start_watcher(*s);
  } catch (...) {
    abandon(std::move(s));
    throw;
  }
  const int sig = s->signal;
  g_open = std::move(s);
  return sig;
}

LibSamples lib_sampler_stop() {
  std::lock_guard<std::mutex> lock(g_control_mutex);
  if (g_open == nullptr) throw std::runtime_error("the library sampler is not running: nothing to stop");
  std::unique_ptr<Session> s = std::move(g_open);
  stop_watcher(*s);
  delete_timers(*s);
  LibSamples out;
  out.wall_ns = monotonic_ns() - s->wall_start_ns;
  int64_t user_ns = 0, system_ns = 0;
  process_cpu_ns(&user_ns, &system_ns);
  out.user_ns = user_ns - s->user_start_ns;
  out.system_ns = system_ns - s->system_start_ns;
  const bool drained = close_window();
  restore_handler(*s);
  out.signal = s->signal;
  out.period_ns = s->period_ns;
  out.dropped = s->dropped.load();
  out.not_timed = s->not_timed;
  out.timer_error = s->timer_error;
  for (size_t i = 0; i < s->used; ++i) {
    const Slot& slot = s->slots[i];
    out.threads.push_back({slot.tid, std::string(slot.name, strnlen(slot.name, sizeof slot.name)), slot.samples.load()});
  }
  std::sort(out.threads.begin(), out.threads.end(),
            [](const ThreadSamples& a, const ThreadSamples& b) { return a.tid < b.tid; });
  map_samples(*s, out);
  // A handler still inside the window a second later may yet write to it: leak it rather than free it under them.
  if (!drained) (void)s.release();
  return out;
}

int lib_sampler_signal() {
  std::lock_guard<std::mutex> lock(g_control_mutex);
  return g_open != nullptr ? g_open->signal : 0;
}

}  // namespace benchctl
