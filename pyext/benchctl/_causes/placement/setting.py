"""The ``pin`` setting: place torch's OpenMP team from the worker's start."""

from __future__ import annotations

import json
import os
from typing import Any

from ... import threads
from ..._setting import Setting, SettingError, format_value
from ..threads.setting import THREADS

__all__ = ["Pinning", "PINNING", "SETTINGS"]


class Pinning(Setting):
    """``pin``: place the OpenMP team from the worker's start, census read back after the run.

    The placement is given through :func:`benchctl.threads.launch_env`
    (``OMP_PLACES``/``OMP_PROC_BIND`` or ``KMP_AFFINITY``), so the OpenMP
    runtime binds each team thread as it creates it and the initial thread at
    start-up. Pinning again in-process would be wrong here: the bound initial
    thread sees a one-CPU mask, so every policy would collapse onto one CPU.

    In a paired cell :meth:`switch` places the team in the running process
    instead, with :func:`benchctl.threads.pin`, and gives every thread back
    the mask it had before the first pin with :func:`benchctl.threads.unpin`:
    its worker must start unplaced (``pin=off``'s environment), for the
    reason above.
    """

    name = "pin"
    help = "off | compact | scatter | [cpu,cpu,...]: place torch's OpenMP team (benchctl.threads.launch_env)"
    order = 20
    needs_torch = True
    in_process = True
    unapplied = "off"
    POLICIES = ("off", "compact", "scatter")
    # Count variables launch_env returns: a pin cell must not change the
    # thread count (that is the threads setting's job), or pin=off vs compact
    # would compare two things at once.
    _COUNT_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")

    def canonical(self, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            cpus = value
        elif isinstance(value, str) and value.strip().startswith("["):
            try:
                cpus = json.loads(value)
            except json.JSONDecodeError:
                raise SettingError(f"pin={value!r}: a CPU list is written [0,1,...]") from None
        else:
            return self._choice(value, self.POLICIES)
        if not cpus or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cpus):
            raise SettingError(f"pin={value!r}: a CPU list must hold non-negative integers")
        if len(set(cpus)) != len(cpus):
            raise SettingError(f"pin={value!r}: CPU ids repeat")
        return list(cpus)

    def environment(self, value: Any, env: dict[str, str], cell: dict) -> dict[str, str]:
        if value == "off":
            return env
        n = cell.get(THREADS.name)
        if n is None:
            # Places for every allowed (or listed) CPU; the count variables are
            # dropped below, leaving torch's own default thread count.
            count = len(value) if isinstance(value, list) else len(os.sched_getaffinity(0))
        else:
            count = n
        try:
            placement = threads.launch_env(value, count)
        except ValueError as e:
            raise SettingError(f"pin={format_value(value)}: {e}") from None
        if n is None:
            placement = {k: v for k, v in placement.items() if k not in self._COUNT_VARS}
        return {**env, **placement}

    probe = "compact"
    evidence_counter = "cpu_migrations_per_iter"
    mechanism = "threads migrating between CPUs"

    def facts(self, observed: dict) -> dict:
        return {"team_single_cpu": observed.get("team_single_cpu")}

    def facts_phrase(self, facts: dict) -> str:
        return "each team thread read back on one CPU" if facts.get("team_single_cpu") else ""

    def switch(self, value: Any) -> Any:
        # A policy pins the team (again: a re-pin) at its current size; off unpins. Either restores every mask it
        # changed if it fails; a bad policy raises before any mask changes. The placement read back after it.
        return self._observed(threads.unpin() if value == "off" else threads.pin(value))

    def readback(self, value: Any) -> Any:
        return self._observed(threads.census())

    @staticmethod
    def _observed(census: list[dict]) -> dict:
        team = [t for t in census if t.get("omp_thread") is not None]
        return {
            "census": census,
            "team_single_cpu": bool(team) and all(len(t.get("allowed_cpus") or []) == 1 for t in team),
        }


PINNING = Pinning()
SETTINGS = (PINNING,)
