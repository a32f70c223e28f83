"""The library of causes ``benchctl explain`` probes: one small class each (:mod:`.base` says what they declare).

Add a cause by writing its class and listing it in :data:`CAUSES`; the order
is the order of the answer.
"""

from .allocator import Allocator
from .base import Cause
from .denormals import Denormals
from .isa import Isa
from .omp_wait import OmpWait
from .order import Order
from .threads import Placement, Threads
from .warmup import Warmup

__all__ = ["Cause", "CAUSES", "Denormals", "Allocator", "Threads", "Placement", "Warmup", "Order", "Isa", "OmpWait"]

CAUSES: tuple[Cause, ...] = (Denormals(), Allocator(), Threads(), Placement(), Warmup(), Order(), Isa(), OmpWait())
