#include "omp_team.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <dlfcn.h>
#include <link.h>
#include <mutex>
#include <sched.h>
#include <stdexcept>
#include <sys/syscall.h>
#include <unistd.h>

namespace benchctl {

namespace {

int collect_path(struct dl_phdr_info* info, size_t, void* out) {
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
    static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
  return 0;
}

// dlopen with RTLD_NOLOAD: a handle to the copy already mapped, never a new load.
struct LoadedLibrary {
  void* handle;
  explicit LoadedLibrary(const std::string& path)
      : handle(dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    if (handle == nullptr) throw std::runtime_error("OpenMP runtime is not loaded: " + path);
  }
  ~LoadedLibrary() { dlclose(handle); }
  LoadedLibrary(const LoadedLibrary&) = delete;
  LoadedLibrary& operator=(const LoadedLibrary&) = delete;

  template <typename Fn>
  Fn symbol(const char* name, const std::string& path) const {
    void* p = dlsym(handle, name);
    if (p == nullptr) throw std::runtime_error(std::string(name) + " not found in " + path);
    return reinterpret_cast<Fn>(p);
  }
};

struct TeamJob {
  // Set (release) once the job is filled in, read (acquire) by each member
  // first. The runtime's fork already orders the two, through its own
  // barrier, which ThreadSanitizer cannot see (the runtime is not
  // instrumented); the flag orders them visibly too.
  std::atomic<bool> published{false};
  const std::function<void(TeamMember&)>* fn;
  int (*get_thread_num)();
  std::mutex mutex;
  std::vector<TeamMember> members;
  std::string first_error;
};

void run_member(TeamJob* job) {
  (void)job->published.load(std::memory_order_acquire);
  TeamMember m;
  m.omp_thread = job->get_thread_num();
  m.tid = static_cast<pid_t>(syscall(SYS_gettid));
  m.cpu = sched_getcpu();
  std::string error;
  try {
    (*job->fn)(m);
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::lock_guard<std::mutex> lock(job->mutex);
  job->members.push_back(m);
  if (!error.empty() && job->first_error.empty()) job->first_error = error;
}

// libgomp: void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags)
void gomp_region(void* data) { run_member(static_cast<TeamJob*>(data)); }

// LLVM/Intel runtime: the source-location record __kmpc_* calls expect.
struct KmpIdent {
  int32_t reserved_1;
  int32_t flags;
  int32_t reserved_2;
  int32_t reserved_3;
  const char* psource;
};
constexpr int32_t kKmpIdentKmpc = 0x02;

void kmp_region(int32_t*, int32_t*, void* data) { run_member(static_cast<TeamJob*>(data)); }

}  // namespace

std::vector<std::string> loaded_library_paths() {
  std::vector<std::string> out;
  dl_iterate_phdr(collect_path, &out);
  return out;
}

std::vector<TeamMember> run_on_omp_team(const OmpRuntime& runtime, int num_threads,
                                        const std::function<void(TeamMember&)>& fn) {
  if (num_threads < 0) throw std::invalid_argument("num_threads must be >= 0");
  LoadedLibrary lib(runtime.path);
  TeamJob job;
  job.fn = &fn;
  job.get_thread_num = lib.symbol<int (*)()>("omp_get_thread_num", runtime.path);
  job.published.store(true, std::memory_order_release);

  if (runtime.kind == "libgomp") {
    using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);
    auto parallel = lib.symbol<GompParallel>("GOMP_parallel", runtime.path);
    parallel(gomp_region, &job, static_cast<unsigned>(num_threads), 0);
  } else if (runtime.kind == "libiomp5" || runtime.kind == "libomp") {
    using Microtask = void (*)(int32_t*, int32_t*, ...);
    using ForkCall = void (*)(KmpIdent*, int32_t, Microtask, ...);
    auto fork_call = lib.symbol<ForkCall>("__kmpc_fork_call", runtime.path);
    auto global_thread_num = lib.symbol<int32_t (*)(KmpIdent*)>("__kmpc_global_thread_num", runtime.path);
    auto push_num_threads =
        lib.symbol<void (*)(KmpIdent*, int32_t, int32_t)>("__kmpc_push_num_threads", runtime.path);
    KmpIdent loc{0, kKmpIdentKmpc, 0, 0, ";benchctl;run_on_omp_team;0;0;;"};
    if (num_threads > 0) push_num_threads(&loc, global_thread_num(&loc), num_threads);
    fork_call(&loc, 1, reinterpret_cast<Microtask>(kmp_region), static_cast<void*>(&job));
  } else {
    throw std::runtime_error("unknown OpenMP runtime kind: " + runtime.kind);
  }

  // The region's join already orders every member's writes before this
  // point, but through the runtime's own barrier, which ThreadSanitizer does
  // not see (the runtime is not instrumented); the lock each member released
  // after its writes orders them visibly too, at no cost outside a region.
  std::lock_guard<std::mutex> joined(job.mutex);
  if (!job.first_error.empty()) throw std::runtime_error(job.first_error);
  std::sort(job.members.begin(), job.members.end(),
            [](const TeamMember& a, const TeamMember& b) { return a.omp_thread < b.omp_thread; });
  return job.members;
}

}  // namespace benchctl
