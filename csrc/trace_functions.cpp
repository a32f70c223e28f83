#include "trace_functions.hpp"

namespace benchctl {

std::unique_ptr<SetAsideTracing> SetAsideTracing::take() {
  std::unique_ptr<SetAsideTracing> aside(new SetAsideTracing());
  PyThreadState* ts = PyThreadState_Get();
  aside->thread_ = ts;
  // Our own references first: clearing a slot drops the thread's.
  aside->trace_ = {ts->c_tracefunc, ts->c_traceobj};
  aside->profile_ = {ts->c_profilefunc, ts->c_profileobj};
  Py_XINCREF(aside->trace_.obj);
  Py_XINCREF(aside->profile_.obj);
  if (aside->trace_.func != nullptr) PyEval_SetTrace(nullptr, nullptr);
  if (aside->profile_.func != nullptr) PyEval_SetProfile(nullptr, nullptr);
  return aside;
}

bool SetAsideTracing::put_back(bool trace, bool profile) {
  if (PyThreadState_Get() != thread_) return false;
  // PyEval_Set* keep their own reference to the object: ours is dropped once it is set.
  if (trace && trace_.func != nullptr) {
    PyEval_SetTrace(trace_.func, trace_.obj);
    trace_.func = nullptr;
    Py_CLEAR(trace_.obj);
  }
  if (profile && profile_.func != nullptr) {
    PyEval_SetProfile(profile_.func, profile_.obj);
    profile_.func = nullptr;
    Py_CLEAR(profile_.obj);
  }
  return true;
}

SetAsideTracing::~SetAsideTracing() {
  // Not put back: left off (a destructor may run on any thread, where no slot of the taken one is reachable).
  Py_XDECREF(trace_.obj);
  Py_XDECREF(profile_.obj);
}
}  // namespace benchctl
