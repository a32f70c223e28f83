"""The causes ``benchctl explain`` and the seed scripts judge: every cause package's rule
(``benchctl.causes.<name>.rule``, one import line each), then those of installed packages
(``benchctl.causes`` entry points: :mod:`benchctl._plugins`). The order is the answer's.
"""

from ... import _plugins
from ...causes.allocator import rule as _allocator
from ...causes.anomaly import rule as _anomaly
from ...causes.async_clock import rule as _async_clock
from ...causes.cpu_fit import rule as _cpu_fit
from ...causes.cuda_first_call import rule as _cuda_first_call
from ...causes.cudnn_autotune import rule as _cudnn_autotune
from ...causes.denormals import rule as _denormals
from ...causes.float64 import rule as _float64
from ...causes.half import rule as _half
from ...causes.isa import rule as _isa
from ...causes.memory_format import rule as _memory_format
from ...causes.omp_wait import rule as _omp_wait
from ...causes.order import rule as _order
from ...causes.placement import rule as _placement
from ...causes.pools import rule as _pools
from ...causes.profiler import rule as _profiler
from ...causes.python_time import rule as _python_time
from ...causes.recompiles import rule as _recompiles
from ...causes.recording import rule as _recording
from ...causes.tf32 import rule as _tf32
from ...causes.thp import rule as _thp
from ...causes.threads import rule as _threads
from ...causes.warmup import rule as _warmup
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
