#include "fpenv.hpp"

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <ucontext.h>

// BENCHCTL_NO_FP_CONTROL builds the branch that unsupported architectures
// get, so that it can be compiled and tested on any machine.
#if defined(__x86_64__) && !defined(BENCHCTL_NO_FP_CONTROL)
#define BENCHCTL_FP_MXCSR 1
#include <xmmintrin.h>
#elif defined(__aarch64__) && !defined(BENCHCTL_NO_FP_CONTROL)
#define BENCHCTL_FP_FPCR 1
#endif

namespace benchctl {

namespace {

#if BENCHCTL_FP_MXCSR
constexpr uint64_t kFtzBit = 1u << 15;
constexpr uint64_t kDazBit = 1u << 6;

// DAZ exists when the MXCSR_MASK that FXSAVE stores has bit 6 set (a zero
// mask means the legacy default 0xFFBF, which lacks DAZ). Writing a bit the
// mask lacks faults, and in a signal frame makes sigreturn kill the thread.
uint64_t detect_daz_mask() {
  alignas(16) unsigned char area[512];
  std::memset(area, 0, sizeof area);
  asm volatile("fxsave64 %0" : "=m"(area));
  uint32_t mxcsr_mask;
  std::memcpy(&mxcsr_mask, area + 28, sizeof mxcsr_mask);
  if (mxcsr_mask == 0) mxcsr_mask = 0xFFBF;
  return (mxcsr_mask & kDazBit) ? kDazBit : 0;
}
const uint64_t kDazMask = detect_daz_mask();

#elif BENCHCTL_FP_FPCR
constexpr uint64_t kFtzBit = 1u << 24;  // FPCR.FZ
constexpr uint64_t kDazMask = 0;

// Kernel signal-frame ABI (arch/arm64/include/uapi/asm/sigcontext.h), spelled
// out here because <asm/sigcontext.h> clashes with glibc's <signal.h>.
struct Aarch64CtxHeader {
  uint32_t magic;
  uint32_t size;
};
struct Aarch64FpsimdContext {
  Aarch64CtxHeader head;
  uint32_t fpsr;
  uint32_t fpcr;
  // followed by the 32 vector registers
};
constexpr uint32_t kFpsimdMagic = 0x46508001;

// The records in mcontext.__reserved are a chain ended by magic 0; the FPSIMD
// record is normally first, but walk the chain rather than assume it.
Aarch64FpsimdContext* find_fpsimd(const void* ucontext) {
  auto* uc = static_cast<const ucontext_t*>(ucontext);
  auto* base = const_cast<unsigned char*>(uc->uc_mcontext.__reserved);
  const size_t limit = sizeof uc->uc_mcontext.__reserved;
  size_t offset = 0;
  while (offset + sizeof(Aarch64CtxHeader) <= limit) {
    auto* head = reinterpret_cast<Aarch64CtxHeader*>(base + offset);
    if (head->magic == 0 || head->size < sizeof(Aarch64CtxHeader)) return nullptr;
    if (head->magic == kFpsimdMagic) return reinterpret_cast<Aarch64FpsimdContext*>(head);
    offset += head->size;
  }
  return nullptr;
}
#else
constexpr uint64_t kFtzBit = 0;
constexpr uint64_t kDazMask = 0;
#endif

[[noreturn]] void unsupported() {
  throw std::runtime_error("no floating-point control register is implemented for this architecture");
}

}  // namespace

const char* fp_control_register() {
#if BENCHCTL_FP_MXCSR
  return "MXCSR";
#elif BENCHCTL_FP_FPCR
  return "FPCR";
#else
  return "";
#endif
}

FpMasks fp_masks() { return {kFtzBit, kDazMask}; }

uint64_t fp_read() {
#if BENCHCTL_FP_MXCSR
  return _mm_getcsr();
#elif BENCHCTL_FP_FPCR
  uint64_t v;
  asm volatile("mrs %0, fpcr" : "=r"(v));
  return v;
#else
  unsupported();
#endif
}

void fp_write(uint64_t raw) {
#if BENCHCTL_FP_MXCSR
  _mm_setcsr(static_cast<unsigned int>(raw));
#elif BENCHCTL_FP_FPCR
  asm volatile("msr fpcr, %0" : : "r"(raw));
#else
  (void)raw;
  unsupported();
#endif
}

uint64_t fp_apply(uint64_t raw, const FpTarget& target) {
  if (!target.change) return raw;
  raw = target.ftz ? (raw | kFtzBit) : (raw & ~kFtzBit);
  raw = target.daz ? (raw | kDazMask) : (raw & ~kDazMask);
  return raw;
}

namespace {
// Where the kernel saved this thread's FP control word in a signal frame
// (restored by sigreturn), or nullptr. Pointer arithmetic only: signal-safe.
uint32_t* saved_fp_word(const void* ucontext) {
  if (ucontext == nullptr) return nullptr;
#if BENCHCTL_FP_MXCSR
  auto* uc = static_cast<const ucontext_t*>(ucontext);
  return uc->uc_mcontext.fpregs == nullptr ? nullptr : &uc->uc_mcontext.fpregs->mxcsr;
#elif BENCHCTL_FP_FPCR
  Aarch64FpsimdContext* fp = find_fpsimd(ucontext);
  return fp == nullptr ? nullptr : &fp->fpcr;
#else
  return nullptr;
#endif
}
}  // namespace

bool fp_saved_read(const void* ucontext, uint64_t* raw) {
  const uint32_t* word = saved_fp_word(ucontext);
  if (word == nullptr) return false;
  *raw = *word;
  return true;
}

bool fp_saved_write(void* ucontext, uint64_t raw) {
  uint32_t* word = saved_fp_word(ucontext);
  if (word == nullptr) return false;
  *word = static_cast<uint32_t>(raw);
  return true;
}

FpChange fp_thread_apply(const FpTarget& target) {
  FpChange c;
  c.before = fp_read();
  if (target.change) fp_write(fp_apply(c.before, target));
  c.after = fp_read();
  return c;
}

std::vector<TeamFpChange> fp_omp_team_apply(const OmpRuntime& runtime, int num_threads,
                                            const FpTarget& default_target,
                                            const std::unordered_map<pid_t, FpTarget>& per_tid) {
  if (*fp_control_register() == '\0') unsupported();
  // Team threads record their change under a lock, keyed by tid; the map is
  // read only after the region has joined.
  std::unordered_map<pid_t, FpChange> changes;
  std::mutex mutex;
  std::vector<TeamMember> members = run_on_omp_team(runtime, num_threads, [&](TeamMember& m) {
    auto it = per_tid.find(m.tid);
    FpChange c = fp_thread_apply(it != per_tid.end() ? it->second : default_target);
    std::lock_guard<std::mutex> lock(mutex);
    changes[m.tid] = c;
  });
  std::vector<TeamFpChange> out;
  out.reserve(members.size());
  for (const auto& m : members) out.push_back({m, changes.at(m.tid)});
  return out;
}

}  // namespace benchctl
