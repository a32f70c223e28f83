"""The ``omp_wait`` setting: how idle OpenMP team threads wait, set at the worker's start; the wait
variables each runtime reads, listed once here."""

from __future__ import annotations

import os
from typing import Any

from ..._setting import Setting

__all__ = ["PASSIVE_WAIT", "RUNTIME_WAIT_VARIABLES", "WAIT_VARIABLES", "OmpWaitPolicy", "OMP_WAIT", "SETTINGS"]


#: Every variable that sets how an OpenMP runtime's idle team threads wait, listed once: the runtimes that read
#: it (benchctl.omp's kinds: libgomp; Intel's libiomp5 and LLVM's libomp) and the value that makes their
#: threads sleep at once instead of spinning (None: no value of it alone does). The probe worker records all
#: of them as the process saw them; the lists below are drawn from it.
WAIT_VARIABLES = {"OMP_WAIT_POLICY": (("libgomp", "libiomp5", "libomp"), "PASSIVE"),
                  "GOMP_SPINCOUNT": (("libgomp",), "0"),
                  "KMP_BLOCKTIME": (("libiomp5", "libomp"), "0"),
                  "KMP_LIBRARY": (("libiomp5", "libomp"), None)}
#: The wait variables that make idle OpenMP team threads sleep at once instead of spinning ...
PASSIVE_WAIT = {name: passive for name, (_, passive) in WAIT_VARIABLES.items() if passive is not None}
#: ... and those each runtime reads.
RUNTIME_WAIT_VARIABLES = {runtime: tuple(name for name, (runtimes, _) in WAIT_VARIABLES.items()
                                         if runtime in runtimes and name in PASSIVE_WAIT)
                          for runtime in ("libgomp", "libiomp5", "libomp")}


class OmpWaitPolicy(Setting):
    """``omp_wait``: how idle OpenMP team threads wait, set at the worker's start (the runtimes read it once).

    ``passive`` sets the passive policy of every runtime (libgomp: ``OMP_WAIT_POLICY=PASSIVE``,
    ``GOMP_SPINCOUNT=0``; Intel's and LLVM's: ``KMP_BLOCKTIME=0``): a process may load two
    runtimes (torch's libgomp beside an MKL build's libiomp5), and each ignores the others'
    variables. The readback names the runtimes loaded and the variables the process saw."""

    name = "omp_wait"
    help = ("default | passive: idle OpenMP threads sleep at once (OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=0, "
            "KMP_BLOCKTIME=0 at start)")
    in_process = False  # the runtimes read their variables once, as they start

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("default", "passive"))

    def environment(self, value: str, env: dict[str, str], cell: dict) -> dict[str, str]:
        return {**env, **PASSIVE_WAIT} if value == "passive" else env

    def owns(self, value: str) -> tuple[str, ...]:
        return tuple(PASSIVE_WAIT) if value == "passive" else ()

    probe = "passive"
    # Its counter moves up, not down, when it takes effect (passive threads sleep after each region
    # and are woken for the next): the OpenMP wait cause reads it, the generic rules do not.
    mechanism = "idle OpenMP threads spinning on CPUs the workload's other threads or processes needed"

    def facts(self, observed: dict) -> dict:
        return {"runtimes": observed.get("runtimes"), "variables": observed.get("variables")}

    def facts_phrase(self, facts: dict) -> str:
        variables = ", ".join(f"{k}={v}" for k, v in (facts.get("variables") or {}).items())
        return f"{', '.join(facts.get('runtimes') or ['no runtime'])} started with {variables or 'no wait variable'}"

    def readback(self, value: str) -> dict:
        from ... import omp  # the OpenMP runtimes mapped now, torch's among them

        return {"runtimes": sorted({rt["kind"] for rt in omp.runtimes()}),
                "variables": {name: os.environ[name] for name in PASSIVE_WAIT if name in os.environ}}


OMP_WAIT = OmpWaitPolicy()
SETTINGS = (OMP_WAIT,)
