"""The ``anomaly`` setting: torch's autograd anomaly detection as the code sets it, or kept off."""

from __future__ import annotations

from ..._setting import KeptOff
from . import control as anomaly

__all__ = ["AnomalyDetection", "ANOMALY", "SETTINGS"]


class AnomalyDetection(KeptOff):
    """``anomaly``: torch's autograd anomaly detection as the code sets it, or kept off against its calls
    (:mod:`benchctl._causes.anomaly.control`)."""

    name = "anomaly"
    help = ("code | off: autograd anomaly detection as the workload's code sets it, or kept off against "
            "its set_detect_anomaly/detect_anomaly calls")
    control = anomaly
    # No counter shows it: the cause reads the mode in the probe worker's call (its evidence).
    mechanism = ("autograd anomaly detection, which records a Python traceback for every op autograd records "
                 "and checks every gradient for NaN: a debugging aid left on")

    def code_state(self) -> tuple[bool, bool]:
        # keep_off() turns the mode off now: what the code had set comes back when the guard comes out.
        import torch

        return bool(torch.is_anomaly_enabled()), bool(torch.is_anomaly_check_nan_enabled())

    def restore_code_state(self, saved: tuple[bool, bool] | None) -> None:
        if saved is not None:
            import torch

            torch.set_anomaly_enabled(*saved)


ANOMALY = AnomalyDetection()
SETTINGS = (ANOMALY,)
