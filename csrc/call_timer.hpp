// Time a Python callable call by call with the selected tick source.
#pragma once

#include <cstdint>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

namespace benchctl {

// Call `fn()` `warmup` times untimed, then `n` times. The timed calls are
// chained: one fenced read separates consecutive calls, so each read ends
// one sample and begins the next (half the reads of begin/end pairs, which
// matters when a fenced read costs as much as a small Python call). A sample
// is the ticks between its two reads minus `overhead` (the back-to-back
// fenced-read cost), floored at zero; it includes the loop's own bookkeeping
// (releasing the previous result, one store). Samples go straight into an
// int64 array: no per-sample Python objects.
pybind11::array_t<int64_t> time_python_calls(pybind11::handle fn, int64_t n, int64_t warmup,
                                             uint64_t overhead);

}  // namespace benchctl
