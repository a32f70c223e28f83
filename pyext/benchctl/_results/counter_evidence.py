"""When a per-iteration counter is evidence: the one test of "this counter moved", and its words.

A counter moves with a time when it falls by :data:`FACTOR` and by at least a few events per
iteration (:data:`LEAST`, per counter: half a migration per iteration is already a pattern, a
fault is not). Every rule that cites a counter as evidence asks :func:`moved_down` or
:func:`differ`; every sentence that quotes one uses :func:`change_text`.
"""

from __future__ import annotations

from . import wording

__all__ = ["FAULT_COST_MIN_US", "FAULT_COST_MAX_US", "FACTOR", "LEAST", "WORDS", "MINOR_FAULTS", "CONTEXT_SWITCHES",
           "CPU_MIGRATIONS", "least", "differ", "moved_down", "change_text"]

MINOR_FAULTS = "minor_faults_per_iter"
CONTEXT_SWITCHES = "context_switches_per_iter"
CPU_MIGRATIONS = "cpu_migrations_per_iter"

#: What one minor page fault was seen to cost on the development machines, page zeroing included: 0.5-3 µs.
#: The least: faults that would cost under a negligible share of an iteration at this price are not probed as
#: a cause (explain's pre-checks; the optimistic end, kept as the pre-checks have always judged) ...
FAULT_COST_MIN_US = 0.5
#: ... and the most: extra faults that would cost less than a slowdown at this price cannot be what slowed it.
FAULT_COST_MAX_US = 3.0

#: A counter "differs" between two cells when one is this many times the other ...
FACTOR = 2.0
#: ... and the difference is at least this many events per iteration (1 unless listed).
LEAST = {CPU_MIGRATIONS: 0.5}

WORDS = {
    MINOR_FAULTS: "minor page faults/iter",
    "major_faults_per_iter": "major page faults/iter",
    CONTEXT_SWITCHES: "context switches/iter",
    CPU_MIGRATIONS: "CPU migrations/iter",
}


def least(field: str) -> float:
    return LEAST.get(field, 1.0)


def differ(field: str, x: float | None, y: float | None) -> bool:
    """Whether two per-iteration values of ``field`` differ (either way)."""
    if x is None or y is None:
        return False
    lo, hi = sorted((abs(x), abs(y)))
    return hi - lo >= least(field) and hi >= FACTOR * lo


def moved_down(field: str, before: float | None, after: float | None) -> bool:
    """Whether ``field`` fell from ``before`` to ``after`` by the factor and the least difference."""
    return before is not None and after is not None and before > after and differ(field, before, after)


def change_text(field: str, before: float | None, after: float | None) -> str:
    """``"minor page faults/iter go from 330k to 2,507"``."""
    return f"{WORDS[field]} go from {wording.count(before)} to {wording.count(after)}"
