"""benchctl: true, explained PyTorch timings.

Submodules: :mod:`benchctl.clock` (precise ticks and timing loops).
"""

from . import clock
from . import cuda
from . import threads, topology  # light: torch is imported only when a call needs it

__all__ = ["clock"]
__version__ = "0.1.0"
