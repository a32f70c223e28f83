"""The ``matmul_precision`` setting: torch's float32 matmul precision as the code sets it, or set."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from ..async_clock import control as cuda_state

__all__ = ["MatmulPrecision", "MATMUL_PRECISION", "SETTINGS"]


class MatmulPrecision(Setting):
    """``matmul_precision``: torch's float32 matmul precision as the code sets it, or set after its import."""

    name = "matmul_precision"
    help = ("code | highest | high | medium: torch.set_float32_matmul_precision after the workload's import "
            "(high: TF32 matmuls on GPUs that have it)")
    order = 60
    needs_torch = True
    in_process = True  # a global a running process sets and sets back
    unapplied = "code"

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code",) + cuda_state.PRECISIONS)

    def apply(self, value: str) -> Any:
        return self.switch(value)

    #: The precision as the workload's code had it the first time :meth:`switch` left ``code`` (None: never left).
    _code: str | None = None

    def switch(self, value: str) -> Any:
        # "code" is the value the code set: remembered the first time the process leaves it, and set again on every
        # switch back (a change the code makes to the precision while another is set is not seen). Read back after.
        if value == "code":
            return cuda_state.matmul_precision() if self._code is None else cuda_state.set_matmul_precision(self._code)
        if self._code is None:
            self._code = cuda_state.matmul_precision()
        return cuda_state.set_matmul_precision(value)

    # The TF32 cause chooses its probe from the precision the code runs (the other one); this is the usual.
    probe = "high"
    mechanism = ("float32 matmuls at full float32 precision, where TF32 tensor cores run them several times "
                 "faster with a 10-bit mantissa")

    def during(self, value: str) -> str | None:
        return None if value == "code" else cuda_state.matmul_precision()

    def readback(self, value: str) -> str:
        return cuda_state.matmul_precision()


MATMUL_PRECISION = MatmulPrecision()
SETTINGS = (MATMUL_PRECISION,)
