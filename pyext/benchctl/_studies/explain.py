"""``benchctl explain TARGET``: why the user's own code takes the time it takes.

The study (:mod:`.pipeline`) with the cause library as its rules: one probe worker runs the
workload unchanged in a fresh process (its phases, iteration times, counters, the torch ops it
runs, the subnormal census of what it computes); the penalty profile of those ops is measured
when the census found subnormals; each cause may rule itself out on that evidence; the others'
probes run as a star of single changes (``with=[...]``) around the unchanged workload, with the
A/A control and ``--repeat auto``, within the budget; each cause judges its probe with its
evidence.
"""

from __future__ import annotations

from typing import Callable

from .. import _validate, settings
from .._workloads import described
from . import catalog, pipeline

__all__ = ["DEFAULT_BUDGET_S", "check_target", "explain"]

DEFAULT_BUDGET_S = 120.0


def check_target(target: str, args: dict | None) -> dict:
    """The workload's arguments, typed like its defaults; user code is described here first (by a child process:
    :mod:`benchctl._workloads.described`), so a broken import fails before any worker starts."""
    workload = described.describe(target)
    given = {k: settings.canonical_value(k, v, workload.params) for k, v in (args or {}).items()}
    resolved = workload.resolve_args(given)
    workload.check_args(resolved)
    return resolved


def explain(target: str, args: dict | None = None, phase: str | None = None, budget_s: float = DEFAULT_BUDGET_S,
            json_path: str | None = None, progress: bool = True, control: bool = True, paired: bool = True,
            say: Callable[[str], None] = lambda _: None) -> dict:
    """Explain ``target``'s time; ``say`` receives the progress lines. Returns the results document. ``paired``:
    the probes a running process can switch are timed in the baseline's processes (:mod:`benchctl._run.paired`)."""
    budget_s = _validate.seconds("budget_s", budget_s)
    study = pipeline.Study("explain", target, check_target(target, args), catalog.rules_of("explain"), phase=phase,
                           budget_s=budget_s, control=control, json_path=json_path, progress=progress, paired=paired,
                           extra={"target": target})
    return pipeline.run_study(study, say)
