// The process-wide tick source: the hardware cycle counter when it is usable,
// else CLOCK_MONOTONIC_RAW nanoseconds. Policy (which one, which frequency)
// is decided in Python; this file provides the reads and the measurements.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cycle_counter.hpp"

namespace benchctl {

extern bool g_ticks_from_counter;

inline uint64_t ticks_raw() {
#if BENCHCTL_HAS_CYCLE_COUNTER
  if (g_ticks_from_counter) return counter_raw();
#endif
  return monotonic_raw_ns();
}
inline uint64_t ticks_begin() {
#if BENCHCTL_HAS_CYCLE_COUNTER
  if (g_ticks_from_counter) return counter_begin();
#endif
  return monotonic_raw_ns();
}
inline uint64_t ticks_end() {
#if BENCHCTL_HAS_CYCLE_COUNTER
  if (g_ticks_from_counter) return counter_end();
#endif
  return monotonic_raw_ns();
}
inline uint64_t ticks_fenced() {
#if BENCHCTL_HAS_CYCLE_COUNTER
  if (g_ticks_from_counter) return counter_fenced();
#endif
  return monotonic_raw_ns();
}

// Name of the hardware counter compiled in ("rdtsc", "cntvct"), or "" when
// this architecture has none.
std::string counter_name();

// Select the tick source. Selecting the counter where none is compiled in
// throws std::runtime_error.
void use_counter_ticks(bool on);
bool counter_ticks_in_use();

// CPUID 0x80000007 EDX bit 8 on x86-64; nullopt where the question has no
// CPUID answer (other architectures).
std::optional<bool> cpuid_invariant_tsc();

struct NominalFrequency {
  std::string source;      // e.g. "cpuid_0x15", "cntfrq_el0"
  double hz;
  double uncertainty_ppm;  // quantisation of the reported value
};
// Frequencies the hardware states for its counter, in order of trust.
std::vector<NominalFrequency> counter_nominal_frequencies();

struct Calibration {
  double hz;
  double uncertainty_ppm;
  double duration_ns;
};
// Counter frequency measured against CLOCK_MONOTONIC_RAW over duration_ns.
Calibration calibrate_counter(uint64_t duration_ns);

// Minimum of `samples` back-to-back serialized (begin, end) reads, in ticks
// of the selected source.
uint64_t measure_read_overhead(int samples);

// Minimum of `samples` back-to-back fenced reads: the fixed cost inside each
// sample of a chained timing loop (see call_timer.hpp).
uint64_t measure_chained_read_overhead(int samples);

// Spin until the selected source has advanced by `ticks`; returns the ticks
// that actually elapsed.
uint64_t busy_wait_ticks(uint64_t ticks);

}  // namespace benchctl
