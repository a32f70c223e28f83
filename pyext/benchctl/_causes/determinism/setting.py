"""The ``deterministic`` setting: torch's deterministic mode as the code sets it, or kept off against its calls."""

from __future__ import annotations

from ..._setting import KeptOff
from . import control as determinism

__all__ = ["Deterministic", "DETERMINISTIC", "SETTINGS"]


class Deterministic(KeptOff):
    """``deterministic``: torch's deterministic mode as the workload's code sets it (``code``), or kept off
    against its calls (``off``: :mod:`benchctl._causes.determinism.control`)."""

    name = "deterministic"
    help = ("code | off: torch's deterministic algorithms as the workload's code sets them, or kept off against "
            "its use_deterministic_algorithms/set_deterministic_debug_mode calls")
    control = determinism
    # No counter shows it: the cause reads the mode over the probe worker's timed iterations (its evidence).
    mechanism = ("torch's deterministic mode, which fills every new tensor from torch.empty and its kin "
                 "(torch.utils.deterministic.fill_uninitialized_memory) and holds ops to their deterministic kernels")

    def code_state(self) -> tuple[bool, bool]:
        # keep_off() turns the mode off now: what the code had set comes back when the guard comes out.
        return determinism.code_state()

    def restore_code_state(self, saved: tuple[bool, bool] | None) -> None:
        if saved is not None:
            determinism.restore(saved)


DETERMINISTIC = Deterministic()
SETTINGS = (DETERMINISTIC,)
