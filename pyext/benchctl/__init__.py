"""benchctl: true, explained PyTorch timings.

Submodules: :mod:`benchctl.clock` (precise ticks and timing loops),
:mod:`benchctl.counters` (per-iteration event counters), :mod:`benchctl.stats`
(warm-up, robust summaries, comparisons), :mod:`benchctl.metadata` (the
context of a result), :mod:`benchctl.doctor` (what distorts timings here), :mod:`benchctl.fpenv`
(FTZ/DAZ on every thread, read back), :mod:`benchctl.denormals` (subnormal
census and the CPU's penalty profile).
"""

from . import clock
from . import cuda
from . import counters, doctor, metadata, stats
from . import denormals, fpenv

__all__ = ["clock", "counters", "denormals", "doctor", "fpenv", "metadata", "stats"]
__version__ = "0.1.0"
