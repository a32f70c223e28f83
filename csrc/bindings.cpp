#include "bindings.hpp"

PYBIND11_MODULE(_native, m) {
  m.doc() = "benchctl native core (use the benchctl Python package, not this module)";
  benchctl::bind_clock(m);
  benchctl::bind_omp(m);
  benchctl::bind_affinity(m);
  benchctl::bind_cuda(m);
  benchctl::bind_counters(m);
  benchctl::bind_fpenv(m);
  benchctl::bind_sampler(m);
  benchctl::bind_trace(m);
}
