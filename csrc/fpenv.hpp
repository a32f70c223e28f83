// The floating-point control state that decides denormal handling, per thread:
// x86-64 MXCSR (FTZ bit 15 flushes subnormal results to zero, DAZ bit 6 reads
// subnormal inputs as zero); aarch64 FPCR.FZ (bit 24, flushes subnormal inputs
// and results alike; there is no separate DAZ control). Other architectures
// build, and report that they have no control here.
//
// Everything below works on the raw register value so that it is usable from a
// signal handler (pure bit arithmetic, no allocation, no locks).
#pragma once

#include <cstdint>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

#include "omp_team.hpp"

namespace benchctl {

// "MXCSR", "FPCR", or "" when this architecture has no control implemented.
const char* fp_control_register();

// Bits of the raw register: FTZ, and DAZ (0 where the CPU has no DAZ control).
struct FpMasks {
  uint64_t ftz = 0;
  uint64_t daz = 0;
};
FpMasks fp_masks();

// The calling thread's register. Throw std::runtime_error where unsupported.
uint64_t fp_read();
void fp_write(uint64_t raw);

// What to do to one thread: leave it (read only) or set both flags.
struct FpTarget {
  bool change = false;
  bool ftz = false;
  bool daz = false;  // ignored where there is no DAZ bit
};
uint64_t fp_apply(uint64_t raw, const FpTarget& target);

// The register saved in a signal handler's ucontext (the third SA_SIGINFO
// argument). The kernel reloads it on sigreturn, so writing it here is how a
// handler changes the interrupted thread's state. False where unavailable.
bool fp_saved_read(const void* ucontext, uint64_t* raw);
bool fp_saved_write(void* ucontext, uint64_t raw);

struct FpChange {
  uint64_t before = 0;
  uint64_t after = 0;  // read back from the register after the write
};

// Apply `target` to the calling thread.
FpChange fp_thread_apply(const FpTarget& target);

struct TeamFpChange {
  TeamMember member;
  FpChange change;
};

// Apply per_tid[tid] (else default_target) on every thread of an OpenMP team;
// each thread reads its own register back after writing it.
std::vector<TeamFpChange> fp_omp_team_apply(const OmpRuntime& runtime, int num_threads,
                                            const FpTarget& default_target,
                                            const std::unordered_map<pid_t, FpTarget>& per_tid);

}  // namespace benchctl
