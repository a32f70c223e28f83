"""The causes ``benchctl explain`` and the seed scripts judge: every cause package's rule
(``benchctl._causes.<name>.rule``, one import line each), then those of installed packages
(``benchctl.causes`` entry points: :mod:`benchctl._plugins`). The order is the answer's.
"""

from ... import _plugins
from ..._causes.allocator import rule as _allocator
from ..._causes.anomaly import rule as _anomaly
from ..._causes.async_clock import rule as _async_clock
from ..._causes.cpu_fit import rule as _cpu_fit
from ..._causes.cuda_first_call import rule as _cuda_first_call
from ..._causes.cudnn_autotune import rule as _cudnn_autotune
from ..._causes.denormals import rule as _denormals
from ..._causes.float64 import rule as _float64
from ..._causes.half import rule as _half
from ..._causes.isa import rule as _isa
from ..._causes.memory_format import rule as _memory_format
from ..._causes.omp_wait import rule as _omp_wait
from ..._causes.order import rule as _order
from ..._causes.placement import rule as _placement
from ..._causes.pools import rule as _pools
from ..._causes.profiler import rule as _profiler
from ..._causes.python_time import rule as _python_time
from ..._causes.recompiles import rule as _recompiles
from ..._causes.recording import rule as _recording
from ..._causes.tf32 import rule as _tf32
from ..._causes.thp import rule as _thp
from ..._causes.threads import rule as _threads
from ..._causes.warmup import rule as _warmup
from ..cause import Cause

__all__ = ["Cause", "CAUSES"]

# CPU causes first, then the GPU ones (ruled out at once where no CUDA work ran).
CAUSES: tuple[Cause, ...] = (*_denormals.CAUSES, *_allocator.CAUSES, *_thp.CAUSES, *_threads.CAUSES,
                             *_placement.CAUSES, *_warmup.CAUSES, *_order.CAUSES,
                             *_pools.CAUSES, *_cpu_fit.CAUSES, *_omp_wait.CAUSES, *_isa.CAUSES,
                             *_anomaly.CAUSES, *_recording.CAUSES, *_profiler.CAUSES,
                             *_half.CAUSES, *_float64.CAUSES, *_python_time.CAUSES, *_memory_format.CAUSES,
                             *_recompiles.CAUSES, *_async_clock.CAUSES, *_cudnn_autotune.CAUSES,
                             *_cuda_first_call.CAUSES, *_tf32.CAUSES, *_plugins.gathered("rule", "CAUSES"))
