"""The ``cudnn_benchmark`` setting: cuDNN's autotuner as the code sets it, or set."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from ..async_clock import control as cuda_state

__all__ = ["CudnnBenchmark", "CUDNN_BENCHMARK", "SETTINGS"]


class CudnnBenchmark(Setting):
    """``cudnn_benchmark``: cuDNN's autotuner (``torch.backends.cudnn.benchmark``) as the code sets it, or set."""

    name = "cudnn_benchmark"
    help = "code | off | on: torch.backends.cudnn.benchmark as the workload's code sets it, or set after its import"
    order = 60
    needs_torch = True
    in_process = True  # a flag a running process sets and sets back
    unapplied = "code"

    def canonical(self, value: Any) -> str:
        if isinstance(value, bool):
            return "on" if value else "off"
        return self._choice(value, ("code", "off", "on"))

    def apply(self, value: str) -> Any:
        return self.switch(value)

    #: The flag as the workload's code had it the first time :meth:`switch` left ``code`` (None: never left).
    _code: str | None = None

    def switch(self, value: str) -> Any:
        # "code" is the value the code set: remembered the first time the process leaves it, and set again on every
        # switch back (a change the code makes to the flag while on/off is set is not seen). The flag read back.
        if value == "code":
            return cuda_state.cudnn_benchmark() if self._code is None else cuda_state.set_cudnn_benchmark(self._code)
        if self._code is None:
            self._code = cuda_state.cudnn_benchmark()
        return cuda_state.set_cudnn_benchmark(value)

    probe = "off"
    mechanism = ("cuDNN autotuning (torch.backends.cudnn.benchmark): each convolution shape not seen before "
                 "times every algorithm before it runs")

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "on" once the code's own setup() or run() switched it back.
        return None if value == "code" else cuda_state.cudnn_benchmark()

    def readback(self, value: str) -> str:
        return cuda_state.cudnn_benchmark()


CUDNN_BENCHMARK = CudnnBenchmark()
SETTINGS = (CUDNN_BENCHMARK,)
