// Time a Python callable call by call with the selected tick source.
#pragma once

#include <cstdint>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

namespace benchctl {

// Call `fn()` `warmup` times untimed, then `n` times, each between a
// serialized begin/end read. Each sample is end - begin - overhead, floored at
// zero, written straight into an int64 array (no per-sample Python objects).
pybind11::array_t<int64_t> time_python_calls(pybind11::handle fn, int64_t n, int64_t warmup,
                                             uint64_t overhead);

}  // namespace benchctl
