"""The ``mkldnn`` setting: torch's mkldnn (oneDNN) kernels as the code sets them, or kept on against its calls."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from . import control as mkldnn

__all__ = ["Mkldnn", "MKLDNN", "SETTINGS"]


class Mkldnn(Setting):
    """``mkldnn``: torch's mkldnn kernels as the workload's code sets them (``code``), or kept on against its
    calls that turn them off (``on``: :mod:`benchctl._causes.mkldnn.control`)."""

    name = "mkldnn"
    help = ("code | on: torch's mkldnn (oneDNN) kernels as the workload's code sets them, or kept on against its "
            "torch.backends.mkldnn.enabled = False / flags(enabled=False)")
    order = 50  # after torch is imported and the thread settings applied; nothing else depends on it
    needs_torch = True
    in_process = True  # the guard is put in and taken out again in a running process
    unapplied = "code"
    probe = "on"
    # No counter shows it: the cause reads the flag over the probe worker's timed iterations (its evidence).
    mechanism = ("torch's own fallback convolution kernels running where mkldnn's would: each convolution unfolded "
                 "into a column buffer (im2col) and multiplied as a plain matrix product")

    #: The flag as the code had it when the guard last went in (put back as it comes out).
    _saved: bool = True

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code", "on"))

    def apply(self, value: str) -> Any:
        return self.switch(value)

    def switch(self, value: str) -> Any:
        # ``on``: the guard put in; ``code``: taken out, the flag the code had set put back. The guard's own state
        # says which value the process holds, so switching to it again changes nothing.
        if value == "on":
            if mkldnn.state()["kept_on"]:
                return mkldnn.state()
            self._saved = mkldnn.is_enabled()
            try:
                return mkldnn.keep_on()
            except BaseException:  # nothing half-applied: the guard out again, the flag as the code left it
                mkldnn.release()
                mkldnn.set_enabled(self._saved)
                raise
        if mkldnn.state()["kept_on"]:
            mkldnn.release()
            mkldnn.set_enabled(self._saved)
        return mkldnn.state()

    def facts(self, observed: dict) -> dict:
        return {"enabled": observed.get("enabled"), "refused": observed.get("refused")}

    def facts_phrase(self, facts: dict) -> str:
        refused = facts.get("refused")
        if facts.get("enabled") is not True or refused is None:
            return ""
        if not refused:
            return "read back on after the run"
        return f"kept on against {refused} call{'s' * (refused != 1)} of the code that turned it off"

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "off" if the code turned them off by a way around the guard.
        if value == "code":
            return None
        return "on" if mkldnn.is_enabled() else "off"

    def readback(self, value: str) -> dict:
        return mkldnn.state()


MKLDNN = Mkldnn()
SETTINGS = (MKLDNN,)
