"""When a per-iteration counter is evidence: the one test of "this counter moved", and its words.

A counter moves with a time when it falls by :data:`FACTOR` and by at least a few events per
iteration (:data:`LEAST`, per counter: half a migration per iteration is already a pattern, a
fault is not). Every rule that cites a counter as evidence asks :func:`moved_down` or
:func:`differ`; every sentence that quotes one uses :func:`change_text`. The causes whose mechanism is
oversubscription (threads waiting for a CPU) read both of its counters through :class:`CpuWait`.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import wording
from .findings import MECHANISM_UNCONFIRMED

__all__ = ["FAULT_COST_MIN_US", "FAULT_COST_MAX_US", "FACTOR", "LEAST", "WAIT_SHARE", "WORDS", "MINOR_FAULTS",
           "CONTEXT_SWITCHES", "CPU_MIGRATIONS", "RUNQUEUE_WAIT", "least", "differ", "moved_down", "change_text",
           "CpuWait"]

MINOR_FAULTS = "minor_faults_per_iter"
CONTEXT_SWITCHES = "context_switches_per_iter"
CPU_MIGRATIONS = "cpu_migrations_per_iter"
#: Nanoseconds the process's threads were runnable but waited for a CPU (:mod:`benchctl._run_delay`).
RUNQUEUE_WAIT = "runqueue_wait_ns_per_iter"

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
#: A wait for a CPU (a time, summarised by its mean) is the mechanism of a time saved where it fell by at least this
#: share of the time saved: a team waits for its slowest member, so a member's wait is the team's. Not a factor of
#: what it was: in a paired worker the team's idle threads still spin, and wait, through the first iterations on
#: one thread (the oversubscribed plant: ~8.6 ms an iteration on two threads, 1.8-6.7 ms on one, 4.7 ms saved).
WAIT_SHARE = 0.25

WORDS = {
    MINOR_FAULTS: "minor page faults/iter",
    "major_faults_per_iter": "major page faults/iter",
    CONTEXT_SWITCHES: "context switches/iter",
    CPU_MIGRATIONS: "CPU migrations/iter",
    RUNQUEUE_WAIT: "ms waiting for a CPU/iter",
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
    """``"minor page faults/iter go from 330k to 2,507"``; the wait for a CPU in milliseconds, as its words say."""
    value = _ms if field == RUNQUEUE_WAIT else wording.count
    return f"{WORDS[field]} go from {value(before)} to {value(after)}"


def _ms(ns: float | None) -> str:
    return "n/a" if ns is None else f"{ns / 1e6:.3g}"


@dataclass(frozen=True)
class CpuWait:
    """The two counters of oversubscription between a cell and the one it is judged against (``before`` the
    baseline, ``after`` the cell): context switches per iteration (median), and the time the process's threads
    waited on a run queue per iteration (mean; None where a counter was not read). Under a scheduler of short slices the
    switches show it; under one of few, long slices (EEVDF) only the wait does."""

    switches_before: float | None
    switches_after: float | None
    wait_before: float | None
    wait_after: float | None

    @classmethod
    def of(cls, ctx, before: dict, after: dict) -> "CpuWait":
        """From the summary of ``before`` and ``after`` (cells) in ``ctx`` (a rule's Context)."""
        return cls(ctx.counter(before, CONTEXT_SWITCHES), ctx.counter(after, CONTEXT_SWITCHES),
                   ctx.counter(before, RUNQUEUE_WAIT), ctx.counter(after, RUNQUEUE_WAIT))

    def wait_fell(self, saved_ns: float) -> bool:
        """Whether the wait fell by at least :data:`WAIT_SHARE` of ``saved_ns``."""
        b, a = self.wait_before, self.wait_after
        return b is not None and a is not None and saved_ns > 0 and b - a >= WAIT_SHARE * saved_ns

    def fell(self, saved_ns: float) -> bool:
        """Whether oversubscription fell with the time saved: the wait for a CPU where it was read (a time, which
        must account for a share of the time saved), the context switches only where it was not. Two switches an
        iteration going to none beside a call 27x faster is not its mechanism: a conv on subnormal inputs whose
        code set FTZ in its calling thread alone ran fast on that one thread, its wait 0.11 ms of ~100 ms."""
        if self.read:
            return self.wait_fell(saved_ns)
        return moved_down(CONTEXT_SWITCHES, self.switches_before, self.switches_after)

    def text(self) -> str:
        """``"context switches/iter go from 3 to 2; ms waiting for a CPU/iter go from 4.8 to 0.012"``."""
        switches = change_text(CONTEXT_SWITCHES, self.switches_before, self.switches_after)
        if self.wait_before is None or self.wait_after is None:
            return switches
        return f"{switches}; {change_text(RUNQUEUE_WAIT, self.wait_before, self.wait_after)}"

    @property
    def read(self) -> bool:
        """Whether the wait for a CPU was read on both sides (then it, not the switches, decides)."""
        return self.wait_before is not None and self.wait_after is not None

    def unconfirmed(self) -> str:
        """Why a time saved without oversubscription falling with it leaves the mechanism open, after its head."""
        if self.read:
            return (f", yet the wait for a CPU does not fall by {WAIT_SHARE:.0%} of the time saved: "
                    f"{MECHANISM_UNCONFIRMED}")
        return f", yet neither context switches nor the wait for a CPU fall with it: {MECHANISM_UNCONFIRMED}"

    def evidence(self, before: str, after: str) -> dict:
        """The counters for a finding's evidence, each keyed ``before`` and ``after`` (e.g. "all" and "1")."""
        return {CONTEXT_SWITCHES: {before: self.switches_before, after: self.switches_after},
                RUNQUEUE_WAIT: {before: self.wait_before, after: self.wait_after}}
