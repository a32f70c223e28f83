"""The ``anomaly`` setting: torch's autograd anomaly detection as the code sets it, or kept off."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from . import control as anomaly

__all__ = ["AnomalyDetection", "ANOMALY", "SETTINGS"]


class AnomalyDetection(Setting):
    """``anomaly``: torch's autograd anomaly detection as the code sets it, or kept off against its calls
    (:mod:`benchctl._causes.anomaly.control`)."""

    name = "anomaly"
    help = ("code | off: autograd anomaly detection as the workload's code sets it, or kept off against "
            "its set_detect_anomaly/detect_anomaly calls")
    order = 50  # after torch is imported and the thread settings applied; nothing else depends on it
    needs_torch = True
    in_process = True  # the guard is put in and taken out again in a running process

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code", "off"))

    def apply(self, value: str) -> Any:
        return anomaly.keep_off() if value == "off" else anomaly.state()

    # No counter shows it: the cause reads the mode in the probe worker's call (its evidence).
    probe = "off"
    mechanism = ("autograd anomaly detection, which records a Python traceback for every op autograd records "
                 "and checks every gradient for NaN: a debugging aid left on")

    def facts(self, observed: dict) -> dict:
        return {"enabled": observed.get("enabled"), "refused": observed.get("refused")}

    def facts_phrase(self, facts: dict) -> str:
        refused = facts.get("refused")
        if facts.get("enabled") is not False or refused is None:
            return ""
        if not refused:
            return "read back off after the run"
        return f"kept off against {refused} call{'s' * (refused != 1)} of the code that turned it on"

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "on" if the code switched it on by a way around the guard.
        if value == "code":
            return None
        return "on" if anomaly.is_on() else "off"

    def readback(self, value: str) -> dict:
        return anomaly.state()


ANOMALY = AnomalyDetection()
SETTINGS = (ANOMALY,)
