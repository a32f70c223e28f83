// A CUDA runtime library (libcudart) opened at run time by path.
//
// The build needs no CUDA headers and links no CUDA library: the few types
// used are declared here by hand, and the functions are resolved with dlsym
// from the path Python chose (which library, in which order, is policy and
// lives in benchctl/cuda.py).
#pragma once

#include <stdexcept>
#include <string>

namespace benchctl {

// cudaError_t is an enum whose underlying type is int; 0 is cudaSuccess.
using cuda_error_t = int;
// cudaEvent_t and cudaStream_t are pointers to opaque driver structs; a null
// stream is the legacy default stream.
using cuda_event_t = void*;
using cuda_stream_t = void*;

// A CUDA call returned an error: the call's name, the code and the runtime's
// own text for it (cudaGetErrorString).
class CudaError : public std::runtime_error {
 public:
  CudaError(std::string call, cuda_error_t code, const std::string& text);
  const std::string& call() const { return call_; }
  cuda_error_t code() const { return code_; }

 private:
  std::string call_;
  cuda_error_t code_;
};

class CudaRuntime {
 public:
  // dlopen `path` (a file path or a bare soname for the loader's search) and
  // resolve every function below. Throws std::runtime_error naming the path,
  // and the missing symbol when one is absent.
  explicit CudaRuntime(const std::string& path);

  // Never dlclose: the library may own live contexts, events and streams that
  // torch also uses, and unloading it under them is undefined.
  CudaRuntime(const CudaRuntime&) = delete;
  CudaRuntime& operator=(const CudaRuntime&) = delete;

  const std::string& path() const { return path_; }

  // Each throws CudaError when the call fails.
  int device_count() const;
  int runtime_version() const;  // e.g. 13000 for 13.0
  int driver_version() const;   // 0 when no driver is installed

  std::string error_string(cuda_error_t code) const;
  // cudaGetLastError: returns the calling thread's last error and resets it.
  cuda_error_t take_last_error() const;

  cuda_event_t create_timing_event() const;
  void record(cuda_event_t event, cuda_stream_t stream) const;
  void synchronize(cuda_event_t event) const;
  float elapsed_ms(cuda_event_t start, cuda_event_t end) const;
  void destroy(cuda_event_t event) const;
  // For cleanup while another error is already propagating: returns the code
  // instead of throwing.
  cuda_error_t destroy_nothrow(cuda_event_t event) const noexcept;

  // Throws CudaError for `call` when `code` is not cudaSuccess.
  void check(cuda_error_t code, const char* call) const;

 private:
  std::string path_;
  void* handle_ = nullptr;

  cuda_error_t (*event_create_with_flags_)(cuda_event_t*, unsigned int) = nullptr;
  cuda_error_t (*event_record_)(cuda_event_t, cuda_stream_t) = nullptr;
  cuda_error_t (*event_synchronize_)(cuda_event_t) = nullptr;
  cuda_error_t (*event_elapsed_time_)(float*, cuda_event_t, cuda_event_t) = nullptr;
  cuda_error_t (*event_destroy_)(cuda_event_t) = nullptr;
  cuda_error_t (*get_last_error_)() = nullptr;
  const char* (*get_error_string_)(cuda_error_t) = nullptr;
  cuda_error_t (*get_device_count_)(int*) = nullptr;
  cuda_error_t (*runtime_get_version_)(int*) = nullptr;
  cuda_error_t (*driver_get_version_)(int*) = nullptr;
};

}  // namespace benchctl
