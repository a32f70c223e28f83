"""benchctl: true, explained PyTorch timings.

Submodules: :mod:`benchctl.clock` (precise ticks and timing loops),
:mod:`benchctl.counters` (per-iteration event counters), :mod:`benchctl.stats`
(warm-up, robust summaries, comparisons), :mod:`benchctl.metadata` (the
context of a result), :mod:`benchctl.doctor` (what distorts timings here), :mod:`benchctl.omp`
(loaded OpenMP runtimes), :mod:`benchctl.threads` and :mod:`benchctl.topology`
(thread counts, pinning, CPU layout), :mod:`benchctl.cuda` (GPU event timing),
:mod:`benchctl.fpenv` (FTZ/DAZ on every thread, read back), :mod:`benchctl.denormals`
(subnormal census and the CPU's penalty profile).
"""

# Light imports: torch is imported only when a call needs it.
from . import clock, counters, cuda, denormals, doctor, fpenv, metadata, omp, stats, threads, topology

__all__ = ["clock", "counters", "cuda", "denormals", "doctor", "fpenv", "metadata", "omp", "stats", "threads",
           "topology"]
__version__ = "0.1.0"
