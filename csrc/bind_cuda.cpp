#include "bindings.hpp"
#include "cuda_runtime.hpp"
#include "cuda_timer.hpp"

namespace py = pybind11;

namespace benchctl {

void bind_cuda(py::module_& m) {
  // benchctl._native.CudaError(RuntimeError) with .call and .code attributes.
  PyObject* error_type =
      PyErr_NewExceptionWithDoc("benchctl._native.CudaError",
                                "A CUDA runtime call failed; .call names it, .code is its cudaError_t.",
                                PyExc_RuntimeError, nullptr);
  if (error_type == nullptr) throw py::error_already_set();
  m.add_object("CudaError", py::reinterpret_steal<py::object>(error_type));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CudaError& e) {
      py::object type = py::module_::import("benchctl._native").attr("CudaError");
      py::object exc = type(e.what());
      exc.attr("call") = e.call();
      exc.attr("code") = e.code();
      PyErr_SetObject(type.ptr(), exc.ptr());
    }
  });

  py::class_<CudaRuntime>(m, "CudaRuntime",
                          "A libcudart opened by path; its functions resolved at run time.")
      .def(py::init<const std::string&>(), py::arg("path"),
           "dlopen path (a file or a soname) and resolve every function used; RuntimeError naming what is missing.")
      .def_property_readonly("path", &CudaRuntime::path, "The path or soname it was opened by.")
      .def("device_count", &CudaRuntime::device_count, "cudaGetDeviceCount.")
      .def("runtime_version", &CudaRuntime::runtime_version, "cudaRuntimeGetVersion, e.g. 13000 for 13.0.")
      .def("driver_version", &CudaRuntime::driver_version, "cudaDriverGetVersion; 0 when no driver is installed.")
      .def("error_string", &CudaRuntime::error_string, py::arg("code"), "cudaGetErrorString(code).")
      .def("take_last_error", &CudaRuntime::take_last_error,
           "cudaGetLastError: the calling thread's last error, which it resets.")
      .def("time_calls", &time_cuda_calls, py::arg("fn"), py::arg("n"), py::arg("stream"),
           py::arg("before") = py::none(),
           "GPU ms of each of n calls of fn(), one event pair each on stream; before(), if given, runs "
           "before each call, outside the pair.");
}

}  // namespace benchctl
