#include "cuda_runtime.hpp"

#include <dlfcn.h>

namespace benchctl {

namespace {
constexpr cuda_error_t kCudaSuccess = 0;
// cudaEventDefault: a plain event that records timing (no blocking sync, and
// not cudaEventDisableTiming).
constexpr unsigned int kCudaEventDefault = 0;

std::string dl_error_text() {
  const char* e = dlerror();
  return e ? e : "unknown dlerror";
}

template <typename Fn>
void resolve(void* handle, const std::string& path, const char* name, Fn& out) {
  dlerror();  // clear any stale message so the one below belongs to this lookup
  void* sym = dlsym(handle, name);
  if (sym == nullptr)
    throw std::runtime_error("CUDA runtime " + path + " lacks symbol " + name + ": " +
                             dl_error_text());
  out = reinterpret_cast<Fn>(sym);
}
}  // namespace

CudaError::CudaError(std::string call, cuda_error_t code, const std::string& text)
    : std::runtime_error(call + " failed: " + text + " (cudaError " + std::to_string(code) + ")"),
      call_(std::move(call)),
      code_(code) {}

CudaRuntime::CudaRuntime(const std::string& path) : path_(path) {
  if (path.empty()) throw std::invalid_argument("CUDA runtime path is empty");
  // RTLD_LOCAL: keep our lookups from changing which symbols other libraries
  // bind to. If torch already loaded this file, dlopen returns that same copy.
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr)
    throw std::runtime_error("cannot open CUDA runtime " + path + ": " + dl_error_text());
  resolve(handle_, path_, "cudaEventCreateWithFlags", event_create_with_flags_);
  resolve(handle_, path_, "cudaEventRecord", event_record_);
  resolve(handle_, path_, "cudaEventSynchronize", event_synchronize_);
  resolve(handle_, path_, "cudaEventElapsedTime", event_elapsed_time_);
  resolve(handle_, path_, "cudaEventDestroy", event_destroy_);
  resolve(handle_, path_, "cudaGetLastError", get_last_error_);
  resolve(handle_, path_, "cudaGetErrorString", get_error_string_);
  resolve(handle_, path_, "cudaGetDeviceCount", get_device_count_);
  resolve(handle_, path_, "cudaRuntimeGetVersion", runtime_get_version_);
  resolve(handle_, path_, "cudaDriverGetVersion", driver_get_version_);
}

std::string CudaRuntime::error_string(cuda_error_t code) const {
  const char* s = get_error_string_(code);
  return s ? s : "(cudaGetErrorString returned no text)";
}

void CudaRuntime::check(cuda_error_t code, const char* call) const {
  if (code != kCudaSuccess) throw CudaError(call, code, error_string(code));
}

int CudaRuntime::device_count() const {
  int n = 0;
  check(get_device_count_(&n), "cudaGetDeviceCount");
  return n;
}

int CudaRuntime::runtime_version() const {
  int v = 0;
  check(runtime_get_version_(&v), "cudaRuntimeGetVersion");
  return v;
}

int CudaRuntime::driver_version() const {
  int v = 0;
  check(driver_get_version_(&v), "cudaDriverGetVersion");
  return v;
}

cuda_error_t CudaRuntime::take_last_error() const { return get_last_error_(); }

cuda_event_t CudaRuntime::create_timing_event() const {
  cuda_event_t e = nullptr;
  check(event_create_with_flags_(&e, kCudaEventDefault), "cudaEventCreateWithFlags");
  return e;
}

void CudaRuntime::record(cuda_event_t event, cuda_stream_t stream) const {
  check(event_record_(event, stream), "cudaEventRecord");
}

void CudaRuntime::synchronize(cuda_event_t event) const {
  check(event_synchronize_(event), "cudaEventSynchronize");
}

float CudaRuntime::elapsed_ms(cuda_event_t start, cuda_event_t end) const {
  float ms = 0.0f;
  check(event_elapsed_time_(&ms, start, end), "cudaEventElapsedTime");
  return ms;
}

void CudaRuntime::destroy(cuda_event_t event) const {
  check(event_destroy_(event), "cudaEventDestroy");
}

cuda_error_t CudaRuntime::destroy_nothrow(cuda_event_t event) const noexcept {
  return event_destroy_(event);
}

}  // namespace benchctl
