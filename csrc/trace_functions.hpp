// The calling thread's trace and profile functions (sys.settrace and sys.setprofile, or a C tracer's
// PyEval_SetTrace and PyEval_SetProfile: coverage's, cProfile's), taken off and put back exactly.
// Python cannot put a C tracer back: sys.settrace(obj) installs obj as a Python function called through
// the interpreter's trampoline (cProfile's profiler is not callable at all).
#pragma once

#include <Python.h>

#include <memory>

namespace benchctl {

// One of a thread's two slots: the C function the interpreter calls and the object it passes to it.
struct TraceSlot {
  Py_tracefunc func = nullptr;
  PyObject* obj = nullptr;  // a strong reference while set aside
};

// What take() took off the calling thread, put back on it at most once. Every call needs the GIL.
class SetAsideTracing {
 public:
  // Take the calling thread's trace and profile functions off it.
  static std::unique_ptr<SetAsideTracing> take();
  ~SetAsideTracing();
  SetAsideTracing(const SetAsideTracing&) = delete;
  SetAsideTracing& operator=(const SetAsideTracing&) = delete;

  // Put back the slots asked for that were taken off and not yet put back; false, nothing changed, on
  // another thread than the one they were taken from.
  bool put_back(bool trace, bool profile);
  PyObject* trace_object() const { return trace_.obj; }
  PyObject* profile_object() const { return profile_.obj; }

 private:
  SetAsideTracing() = default;
  PyThreadState* thread_ = nullptr;  // the thread the slots were taken from
  TraceSlot trace_, profile_;
};
}  // namespace benchctl
