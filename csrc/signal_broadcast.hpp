// Read or change the FP control state of every thread of the process, also
// threads that no library API reaches (pools that are not OpenMP, threads
// that other libraries started): a real-time signal is queued to each task in
// /proc/self/task, and its SA_SIGINFO handler edits the FP state saved in the
// ucontext, which the kernel reloads on sigreturn. glibc changes credentials
// on every thread the same way (its SIGSETXID broadcast).
//
// Guarantees: a deadline bounds the wait. A thread that does not answer in
// time (it blocks the signal, or never gets scheduled) is reported
// unreached, with `changed` telling a change that came in time but whose
// readback did not from a thread left as it was; a change signal delivered
// after the broadcast does nothing, so the report stays true. A thread that
// still holds a signal of an earlier broadcast pending is reported unreached
// without a new one: real-time signals queue, and a thread that blocks them
// for good would otherwise fill the user's signal queue (RLIMIT_SIGPENDING). (The one
// exception: a handler still running a second after the deadline, see
// close_request in the .cpp.) The signal used is one whose disposition was
// SIG_DFL, so no handler of the application is replaced. See the .cpp for
// why the handler can stay installed after a broadcast.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

#include "fpenv.hpp"

namespace benchctl {

struct TaskFpChange {
  pid_t tid = 0;
  bool reached = false;  // the thread answered and its state was read back
  bool changed = false;  // the change was applied (also when unreached: its readback came late)
  uint64_t before = 0;   // register value before the change (valid if changed or reached)
  uint64_t after = 0;    // register value read back after the change (valid if reached)
  std::string name;      // /proc/self/task/<tid>/comm at the time of the broadcast
};

struct FpBroadcast {
  int signal = 0;  // the real-time signal used (0 for a single-threaded process)
  std::vector<TaskFpChange> tasks;  // every live task, the caller included
  bool handler_kept = false;        // a signal of ours may still be pending somewhere
  std::string incomplete;           // why tasks born during the broadcast may be missing ("" if none)
};

// The longest wait a broadcast accepts. A bound keeps the deadline
// arithmetic far from overflow, and nobody means to stall a process longer.
constexpr double kMaxBroadcastDeadlineS = 60.0;

// Apply per_tid[tid] (else default_target) to every task of the process and
// read each one back after the change; with only_listed, to the tasks
// per_tid names and no others. The calling thread is handled directly.
// Tasks that appear while the broadcast runs are picked up in further
// rounds. Returns by deadline_s at the latest (plus scheduling delays). Throws std::invalid_argument unless 0 < deadline_s <=
// kMaxBroadcastDeadlineS; std::runtime_error where unsupported or when no
// real-time signal is free. A throw leaves every thread unchanged: the
// steps that can fail come before the first change; a failure after it
// (listing tasks born meanwhile) is reported in `incomplete` instead.
FpBroadcast fp_broadcast(const FpTarget& default_target, const std::unordered_map<pid_t, FpTarget>& per_tid,
                         double deadline_s, bool only_listed = false);

struct BroadcastHandlerState {
  int signal = 0;      // 0: no handler of ours is installed
  bool installed = false;
  std::vector<pid_t> maybe_pending;  // tasks that may still hold a signal of ours
};
BroadcastHandlerState fp_broadcast_handler_state();

// Disposition of `sig` now: "default", "ignore", "benchctl" (our broadcast
// handler) or "other".
std::string signal_disposition(int sig);

}  // namespace benchctl
