// The hardware cycle counter, read three ways: raw, and serialized for the
// beginning and the end of an interval so that no instruction of the timed
// region is reordered across the read.
#pragma once

#include <cstdint>
#include <ctime>

namespace benchctl {

// BENCHCTL_NO_CYCLE_COUNTER builds the portable path on any architecture, so
// the "unsupported architecture" build is compiled and tested everywhere.
#if defined(__x86_64__) && !defined(BENCHCTL_NO_CYCLE_COUNTER)
#define BENCHCTL_HAS_CYCLE_COUNTER 1
inline constexpr const char* kCycleCounterName = "rdtsc";

inline uint64_t counter_raw() {
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t(hi) << 32) | lo;
}
// lfence waits for earlier instructions to finish before rdtsc reads.
inline uint64_t counter_begin() {
  uint32_t lo, hi;
  asm volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
  return (uint64_t(hi) << 32) | lo;
}
// rdtscp waits for earlier instructions; lfence keeps later ones from starting
// before the read.
inline uint64_t counter_end() {
  uint32_t lo, hi, aux;
  asm volatile("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
  return (uint64_t(hi) << 32) | lo;
}
// The read chained between consecutive timed calls: it ends one sample and
// begins the next. lfence first, so the call just timed has finished before
// the read. No lfence after it: that one cost ~15 ns on the development VM,
// as much as half a small Python call, and all it prevents is the next call's
// first instructions overlapping the read by a few cycles - the same for every
// sample, and inside the back-to-back overhead subtracted from each.
inline uint64_t counter_fenced() {
  uint32_t lo, hi;
  asm volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
  return (uint64_t(hi) << 32) | lo;
}

#elif defined(__aarch64__) && !defined(BENCHCTL_NO_CYCLE_COUNTER)
#define BENCHCTL_HAS_CYCLE_COUNTER 1
inline constexpr const char* kCycleCounterName = "cntvct";

inline uint64_t counter_raw() {
  uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
}
// isb drains the pipeline so the read is ordered after earlier instructions.
inline uint64_t counter_begin() {
  uint64_t v;
  asm volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
  return v;
}
inline uint64_t counter_end() {
  uint64_t v;
  asm volatile("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v)::"memory");
  return v;
}
// isb before the read: the call just timed has finished (see the x86 note).
inline uint64_t counter_fenced() { return counter_begin(); }
inline uint64_t counter_frequency_register() {
  uint64_t v;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(v));
  return v;
}

#else
#define BENCHCTL_HAS_CYCLE_COUNTER 0
inline constexpr const char* kCycleCounterName = "";
#endif

// The portable fallback: nanoseconds of CLOCK_MONOTONIC_RAW (no NTP slewing).
inline uint64_t monotonic_raw_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace benchctl
