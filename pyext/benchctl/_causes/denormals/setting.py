"""The ``ftz`` setting: flush denormals (FTZ+DAZ) with :mod:`benchctl.fpenv`, census of every thread."""

from __future__ import annotations

from typing import Any

from ... import fpenv
from ..._setting import Setting, SettingUnavailable

__all__ = ["FlushDenormals", "FTZ", "SETTINGS"]


class FlushDenormals(Setting):
    """``ftz``: flush denormals (FTZ+DAZ) with benchctl.fpenv, census of every thread."""

    name = "ftz"
    help = "off | thread | openmp | process: FTZ/DAZ via benchctl.fpenv, per-thread census read back"
    order = 30
    needs_torch = True
    in_process = True  # set and cleared in each thread's MXCSR
    unapplied = "off"
    SCOPES = ("thread", "openmp", "process")

    def canonical(self, value: Any) -> str:
        if value is False:
            return "off"
        if value is True:
            return "process"
        return self._choice(value, ("off",) + self.SCOPES)

    def check_available(self) -> None:
        ok, reason = fpenv.supported()
        if not ok:
            raise SettingUnavailable(f"ftz cannot be applied here: {reason}")

    def apply(self, value: str) -> Any:
        if value == "off":
            return None  # a fresh process starts with FTZ/DAZ clear; the readback shows it
        return fpenv.set_flush_denormal(True, scope=value)  # nothing to clear first in a fresh process

    def switch(self, value: str) -> Any:
        # off: cleared on every thread. process: set on every thread (whatever held it before). thread and
        # openmp: cleared on every thread, then set on the scope's, so that a wider scope held before is
        # undone; if setting fails, each thread gets back the bits it had before the clearing.
        if value in ("off", "process"):
            return fpenv.set_flush_denormal(value != "off", scope="process")
        clearing = fpenv.flush_denormals(False, scope="process")
        clearing.__enter__()
        try:
            return fpenv.set_flush_denormal(True, scope=value)
        except BaseException as error:
            clearing.__exit__(type(error), error, error.__traceback__)
            raise

    # No per-iteration counter shows subnormal arithmetic (no PMU event here), so
    # the generic rules never name this mechanism; the denormal cause does, from
    # the values' census and the CPU's penalty profile.
    probe = "process"
    mechanism = "arithmetic on subnormal (denormal) numbers, which FTZ/DAZ removes"

    def facts(self, observed: dict) -> dict:
        return {"flushed": observed.get("flushed"), "threads": observed.get("threads")}

    def facts_phrase(self, facts: dict) -> str:
        return f"FTZ/DAZ read back on {facts['flushed']}/{facts['threads']} threads" if facts.get("threads") else ""

    def during(self, value: str) -> str:
        # The calling thread's MXCSR (the thread that runs the iterations): "off" once the code cleared
        # it (torch.set_flush_denormal(False)), "thread" when it set it in an ftz=off cell.
        flushed = fpenv.is_flushed(fpenv.thread_state())
        if flushed == (value != "off"):
            return value
        return "thread" if flushed else "off"

    def readback(self, value: str) -> dict:
        census = fpenv.census(scope="process")
        reached = [t for t in census if t.get("reached", True)]
        flushed = [t for t in reached if fpenv.is_flushed(t)]
        return {
            "census": census,
            "threads": len(census),
            "reached": len(reached),
            "flushed": len(flushed),
            "all_flushed": bool(reached) and len(flushed) == len(census),
            "none_flushed": not flushed,
        }


FTZ = FlushDenormals()
SETTINGS = (FTZ,)
