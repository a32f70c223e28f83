"""The ``threads`` setting: intra-op thread count for torch and every BLAS/OpenMP pool."""

from __future__ import annotations

from typing import Any

from ... import _validate, threads
from ..._setting import Setting, SettingError

__all__ = ["ThreadCount", "THREADS", "SETTINGS"]


class ThreadCount(Setting):
    """``threads``: intra-op thread count for torch and every BLAS/OpenMP pool."""

    name = "threads"
    help = "N: intra-op threads (OMP_NUM_THREADS/MKL_NUM_THREADS at start, benchctl.threads after import)"
    order = 10
    needs_torch = True
    in_process = True  # benchctl.threads resizes every pool of a running process
    # Whatever OMP_NUM_THREADS/MKL_NUM_THREADS sized at start: a 384x384 matmul switched to 1 and 2 threads
    # took 1.09 and 0.58 ms in processes started with either count (AMD EPYC Zen 4, 3 processes each).
    switch_undoes_environment = True
    # Beside a neighbour that held one of 2 CPUs for a whole paired worker, its 2-thread arm took 15.9 ms a
    # 384x384 matmul (0.57-0.61 ms in the others) while its 1-thread arm kept 1.10 ms (AMD EPYC Zen 4).
    changes_cpus_used = True

    def canonical(self, value: Any) -> int:
        text_count = isinstance(value, str) and value.strip().isdecimal()  # isdigit() admits "²", int() does not
        try:
            return _validate.count("threads", int(value) if text_count else value, 1)
        except _validate.ArgumentError:
            raise SettingError(f"threads={value!r}: expected a positive integer") from None

    def environment(self, value: int, env: dict[str, str], cell: dict) -> dict[str, str]:
        # Sized at start as well: pools created before our call then agree.
        return {**env, "OMP_NUM_THREADS": str(value), "MKL_NUM_THREADS": str(value)}

    def apply(self, value: int) -> Any:
        return self.switch(value)

    def switch(self, value: int) -> Any:
        # Every count set to ``value`` whatever it was; on a failure set_num_threads puts back what it changed.
        return threads.set_num_threads(value)

    probe = 1
    evidence_counter = "context_switches_per_iter"
    mechanism = "more threads than the CPUs can run at once"

    @property
    def unapplied(self) -> int:  # type: ignore[override]
        # What the workload's code left: a paired cell's baseline arm switches every pool back to it.
        import torch  # imported by the worker before any setting that needs it

        return torch.get_num_threads()

    def readback(self, value: int) -> Any:
        return threads.get_num_threads()

    def during(self, value: int) -> int:
        import torch  # imported by the worker before any setting that needs it

        return torch.get_num_threads()


THREADS = ThreadCount()
SETTINGS = (THREADS,)
