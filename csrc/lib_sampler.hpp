// Where a process's CPU time goes, by loaded object: a sampler that interrupts
// every thread of the process once per period of that thread's own CPU time
// and notes the instruction it interrupted.
//
// Each thread gets a POSIX timer on its CPU-time clock (the tid-based clock
// id, so threads that no pthread_t of ours names are timed too: OpenMP and
// BLAS workers) that delivers a real-time signal to that thread alone
// (SIGEV_THREAD_ID). The handler stores the interrupted instruction pointer in
// a buffer allocated before the window opened: atomics only, no allocation,
// no lock. A helper thread lists /proc/self/task (every 10 ms at first, every
// 160 ms later) and times the threads born during the window. After the window the stored
// addresses are mapped to the objects loaded then (dl_iterate_phdr).
//
// What a sample means. A CPU-time clock counts user and kernel time alike;
// the signal is delivered on the way back to user space, so time spent in the
// kernel (a system call, a page fault) is charged to the user instruction
// that entered it. The kernel's part is therefore not in the samples: the
// window's user and system time (getrusage RUSAGE_SELF: every thread of the
// process, also those that exited, as the kernel accounts it) come with them.
// A timer expiring while its signal is still pending counts as an overrun;
// each sample is weighted by 1 + its overruns, so a thread that spent several
// periods in the kernel is not under-counted. A thread that blocks the signal
// is timed but yields no samples.
//
// The signal is a real-time one whose disposition was SIG_DFL (so no handler
// of the application is replaced), searched from SIGRTMAX-1 downwards:
// SIGRTMAX is where signal_broadcast.cpp starts its own search, so the two
// never reach for the same number first, and neither takes one the other
// holds. On stop the timers are deleted, then the disposition goes through
// SIG_IGN (which discards any instance still pending, on every thread, also
// one that blocks it) back to the saved one.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace benchctl {

// The period limits start accepts, in microseconds of a thread's CPU time.
constexpr int64_t kMinSamplePeriodUs = 100;
constexpr int64_t kMaxSamplePeriodUs = 1000000;
// The most samples one window can hold (a bound on the buffer allocated at
// start: 12 bytes a sample, some 200 MB at most).
constexpr int64_t kMaxSampleCapacity = int64_t{1} << 24;

struct ObjectSamples {
  std::string path;      // the loaded object (the main program by /proc/self/exe)
  uint64_t samples = 0;  // weighted samples whose address lies in its executable segments
};

struct ThreadSamples {
  pid_t tid = 0;
  std::string name;      // /proc/self/task/<tid>/comm when its timer was armed
  uint64_t samples = 0;  // weighted samples taken on it (stored or dropped)
};

struct LibSamples {
  int signal = 0;                     // the real-time signal the window used
  int64_t period_ns = 0;              // the timers' period, of each thread's CPU time
  int64_t wall_ns = 0;                // the window's length (CLOCK_MONOTONIC)
  int64_t user_ns = 0;                // user CPU time of the process over the window (getrusage)
  int64_t system_ns = 0;              // system (kernel) CPU time of the process over the window
  uint64_t samples = 0;               // weighted samples stored (mapped or not)
  uint64_t unmapped = 0;              // of those, at addresses in no loaded object (JIT code)
  uint64_t dropped = 0;               // weighted samples taken after the buffer was full
  std::vector<ObjectSamples> objects; // by object, most samples first
  std::vector<ThreadSamples> threads; // every thread timed, by tid
  uint64_t not_timed = 0;             // threads no timer could be armed on (beyond the slots, or refused)
  std::string timer_error;            // the first refusal other than an exited thread's ("" if none)
};

// Open a window: time every thread of the process (and those born during it)
// every period_us of its CPU time, storing up to `capacity` samples. Returns
// the signal used. Throws std::invalid_argument for a period or capacity
// outside the limits; std::runtime_error when a window is open already, where
// the architecture has no instruction pointer implemented here, when no
// real-time signal is free, or when no thread could be timed (the reason
// given). A throw leaves nothing installed.
int lib_sampler_start(int64_t period_us, int64_t capacity);

// Close the window: delete the timers, restore the signal's disposition and
// map the samples to objects. Throws std::runtime_error when none is open.
LibSamples lib_sampler_stop();

// The signal of the open window, 0 when none is open.
int lib_sampler_signal();

}  // namespace benchctl
