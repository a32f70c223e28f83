"""The library of causes ``benchctl explain`` probes: one small class each (:mod:`.base` says what they declare).

Add a cause by writing its class and listing it in :data:`CAUSES`; the order
is the order of the answer.
"""

from ... import _plugins
from ...causes.thp import rule as _thp
from .allocator import Allocator
from .autograd import Anomaly, Recording
from ..cause import Cause
from .cpu_fit import CpuFit
from .denormals import Denormals
from .dtypes import Float64, HalfPrecision
from .gpu import AsyncClock, CudaFirstCall, CudnnAutotune, Tf32
from .isa import Isa
from .memory_format import MemoryFormat
from .omp_wait import OmpWait
from .order import Order
from .pools import CompetingPools
from .python_time import PythonTime
from .recompiles import Recompiles
from .threads import Placement, Threads
from .warmup import Warmup

__all__ = ["Cause", "CAUSES", "Denormals", "Allocator", "Threads", "Placement", "Warmup", "Order",
           "CompetingPools", "CpuFit", "OmpWait", "Isa", "Anomaly", "Recording", "HalfPrecision", "Float64",
           "PythonTime", "MemoryFormat", "Recompiles", "AsyncClock", "CudnnAutotune", "CudaFirstCall", "Tf32"]

# CPU causes first, then the GPU ones (ruled out at once where no CUDA work ran).
CAUSES: tuple[Cause, ...] = (Denormals(), Allocator(), *_thp.CAUSES, Threads(), Placement(), Warmup(), Order(),
                             CompetingPools(), CpuFit(), OmpWait(), Isa(), Anomaly(), Recording(), HalfPrecision(),
                             Float64(), PythonTime(), MemoryFormat(), Recompiles(), AsyncClock(), CudnnAutotune(),
                             CudaFirstCall(), Tf32(), *_plugins.gathered("rule", "CAUSES"))
