#include "cuda_timer.hpp"

#include <vector>

namespace py = pybind11;

namespace benchctl {

namespace {

void call_and_discard(PyObject* fn) {
  PyObject* r = PyObject_CallNoArgs(fn);
  if (r == nullptr) throw py::error_already_set();
  Py_DECREF(r);
}

// Owns the events of one timing run. Created all up front so that creation
// costs nothing inside the loop.
class EventSet {
 public:
  EventSet(const CudaRuntime& rt, size_t count) : rt_(rt) {
    events_.reserve(count);
    try {
      for (size_t i = 0; i < count; ++i) events_.push_back(rt_.create_timing_event());
    } catch (...) {
      // A constructor that throws runs no destructor: free what was made.
      for (cuda_event_t e : events_) rt_.destroy_nothrow(e);
      throw;
    }
  }
  // Reached only when an exception is already propagating (the normal path
  // calls destroy_all): that error is the one to report, so cleanup failures
  // are not raised over it.
  ~EventSet() {
    for (cuda_event_t e : events_) rt_.destroy_nothrow(e);
  }
  EventSet(const EventSet&) = delete;
  EventSet& operator=(const EventSet&) = delete;

  cuda_event_t operator[](size_t i) const { return events_[i]; }

  // Destroys every event; raises the first failure after trying them all.
  void destroy_all() {
    std::vector<cuda_event_t> left;
    left.swap(events_);
    cuda_error_t first = 0;
    for (cuda_event_t e : left) {
      cuda_error_t rc = rt_.destroy_nothrow(e);
      if (rc != 0 && first == 0) first = rc;
    }
    rt_.check(first, "cudaEventDestroy");
  }

 private:
  const CudaRuntime& rt_;
  std::vector<cuda_event_t> events_;
};

}  // namespace

py::array_t<double> time_cuda_calls(const CudaRuntime& rt, py::handle fn, int64_t n,
                                    uintptr_t stream, py::handle before) {
  if (n < 1) throw std::invalid_argument("n must be at least 1, got " + std::to_string(n));
  if (!PyCallable_Check(fn.ptr())) throw py::type_error("fn must be callable");
  PyObject* between = before.is_none() ? nullptr : before.ptr();
  if (between && !PyCallable_Check(between)) throw py::type_error("before must be callable or None");

  const auto count = static_cast<size_t>(n);
  const auto s = reinterpret_cast<cuda_stream_t>(stream);
  EventSet events(rt, 2 * count);
  // A stale error left by earlier, unrelated calls on this thread is not the
  // timed work's; take it now so the check after the loop sees only ours.
  rt.take_last_error();
  for (size_t i = 0; i < count; ++i) {
    if (between) call_and_discard(between);
    rt.record(events[2 * i], s);
    call_and_discard(fn.ptr());
    rt.record(events[2 * i + 1], s);
  }
  rt.check(rt.take_last_error(), "a CUDA call inside the timed calls (cudaGetLastError)");
  {
    // The one wait of the run: every pair precedes the last event on the stream.
    py::gil_scoped_release nogil;
    rt.synchronize(events[2 * count - 1]);
  }
  py::array_t<double> out(n);
  double* ms = out.mutable_data();
  for (size_t i = 0; i < count; ++i) ms[i] = rt.elapsed_ms(events[2 * i], events[2 * i + 1]);
  events.destroy_all();
  return out;
}

}  // namespace benchctl
