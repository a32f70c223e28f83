// Time a Python callable call by call with CUDA events on the caller's stream.
#pragma once

#include <cstdint>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "cuda_runtime.hpp"

namespace benchctl {

// Call `fn()` `n` times; around each call record one event pair on `stream`
// (a cudaStream_t as an integer, e.g. torch.cuda.current_stream().cuda_stream).
// `before`, unless None, is called before each call, outside the pair (an L2
// flush, say). Only the last event is synchronized, after the loop, so the
// host never waits between calls. Returns the GPU milliseconds between each
// pair. All events are destroyed on every path; a CUDA failure raises
// CudaError, an exception from `fn` or `before` propagates unchanged.
pybind11::array_t<double> time_cuda_calls(const CudaRuntime& rt, pybind11::handle fn, int64_t n,
                                          uintptr_t stream, pybind11::handle before);

}  // namespace benchctl
