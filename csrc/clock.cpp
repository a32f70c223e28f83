#include "clock.hpp"

#include <algorithm>
#include <stdexcept>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace benchctl {

bool g_ticks_from_counter = false;

std::string counter_name() { return kCycleCounterName; }

void use_counter_ticks(bool on) {
  if (on && !BENCHCTL_HAS_CYCLE_COUNTER)
    throw std::runtime_error("this architecture has no supported cycle counter");
  g_ticks_from_counter = on;
}

bool counter_ticks_in_use() { return g_ticks_from_counter; }

std::optional<bool> cpuid_invariant_tsc() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) return false;
  __cpuid(0x80000007u, a, b, c, d);
  return ((d >> 8) & 1u) != 0;
#else
  return std::nullopt;
#endif
}

std::vector<NominalFrequency> counter_nominal_frequencies() {
  std::vector<NominalFrequency> out;
#if BENCHCTL_HAS_CYCLE_COUNTER && defined(__x86_64__)
  unsigned a, b, c, d;
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf >= 0x15) {
    // TSC = crystal * EBX / EAX; ECX is the crystal in Hz (0 if not given).
    __cpuid_count(0x15, 0, a, b, c, d);
    if (a != 0 && b != 0 && c != 0)
      out.push_back({"cpuid_0x15", double(c) * b / a, 0.0});
  }
  // KVM and VMware publish the TSC frequency in kHz in leaf 0x40000010.
  __cpuid(1, a, b, c, d);
  bool hypervisor = (c >> 31) & 1u;
  if (hypervisor) {
    __cpuid(0x40000000u, a, b, c, d);
    if (a >= 0x40000010u) {
      __cpuid(0x40000010u, a, b, c, d);
      if (a != 0) out.push_back({"cpuid_0x40000010", a * 1e3, 0.5e6 / a});
    }
  }
  if (max_leaf >= 0x16) {
    // Base frequency in MHz: only an approximation of the TSC frequency.
    __cpuid_count(0x16, 0, a, b, c, d);
    unsigned mhz = a & 0xffffu;
    if (mhz != 0) out.push_back({"cpuid_0x16", mhz * 1e6, 0.5e6 / mhz});
  }
#elif BENCHCTL_HAS_CYCLE_COUNTER && defined(__aarch64__)
  uint64_t f = counter_frequency_register();
  if (f != 0) out.push_back({"cntfrq_el0", double(f), 0.0});
#endif
  return out;
}

namespace {

struct Anchor {
  double counter_mid;
  uint64_t counter_width;
  uint64_t ns;
};

// Pair a monotonic-raw reading with the counter read just before and after
// it; the narrowest bracket of several tries bounds the pairing error.
Anchor anchor_counter_to_monotonic() {
  Anchor best{0, UINT64_MAX, 0};
#if BENCHCTL_HAS_CYCLE_COUNTER
  for (int i = 0; i < 64; ++i) {
    uint64_t c0 = counter_begin();
    uint64_t t = monotonic_raw_ns();
    uint64_t c1 = counter_end();
    if (c1 - c0 < best.counter_width) best = {0.5 * double(c0) + 0.5 * double(c1), c1 - c0, t};
  }
#endif
  return best;
}

}  // namespace

Calibration calibrate_counter(uint64_t duration_ns) {
#if BENCHCTL_HAS_CYCLE_COUNTER
  // Shorter spans leave the pairing error above ~100 ppm.
  if (duration_ns < 1000000) throw std::invalid_argument("calibration needs duration_ns >= 1 ms");
  Anchor start = anchor_counter_to_monotonic();
  timespec req{time_t(duration_ns / 1000000000ull), long(duration_ns % 1000000000ull)};
  while (nanosleep(&req, &req) != 0) {
  }
  Anchor end = anchor_counter_to_monotonic();
  double ticks = end.counter_mid - start.counter_mid;
  double ns = double(end.ns - start.ns);
  double hz = ticks / ns * 1e9;
  // Each anchor may be off by half its bracket; each ns reading by 1 ns.
  double ppm = ((start.counter_width + end.counter_width) * 0.5 / ticks + 2.0 / ns) * 1e6;
  return {hz, ppm, ns};
#else
  (void)duration_ns;
  throw std::runtime_error("this architecture has no supported cycle counter");
#endif
}

namespace {
// Minimum over `samples` of Second() - First() read back to back.
template <uint64_t (*First)(), uint64_t (*Second)()>
uint64_t min_back_to_back(int samples) {
  if (samples < 1) throw std::invalid_argument("samples must be >= 1");
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < samples; ++i) {
    uint64_t t0 = First();
    uint64_t t1 = Second();
    best = std::min(best, t1 - t0);
  }
  return best;
}
}  // namespace

uint64_t measure_read_overhead(int samples) { return min_back_to_back<ticks_begin, ticks_end>(samples); }

uint64_t measure_chained_read_overhead(int samples) {
  return min_back_to_back<ticks_fenced, ticks_fenced>(samples);
}

uint64_t busy_wait_ticks(uint64_t ticks) {
  uint64_t start = ticks_begin();
  uint64_t now = start;
  while (now - start < ticks) now = ticks_raw();
  return ticks_end() - start;
}

}  // namespace benchctl
