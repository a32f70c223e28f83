"""One comparison of two cells, typed: its ratio, interval, outcome against a no-effect band, and its words.

A :class:`Comparison` is what :func:`benchctl._results.processes.compare` returns and what every
rule, report and answer reads: ``ratio`` is time(a) / time(b) (> 1: a is slower), ``ci95`` its
interval over processes (None with one process on a side), ``outcome`` what the interval says
against the no-effect ``band`` (:class:`Outcome`). The sentences a comparison appears in
("1.45× slower [95% CI ...]", "within ±5%", "unresolved: ... crosses the ±10% band") are its
methods, written here once.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace
from typing import Any

from . import wording

__all__ = ["CONFIDENCE", "FLOOR", "MAX_NO_EFFECT_BAND", "Outcome", "outcome_of", "Comparison"]

CONFIDENCE = 0.95
#: Differences under 5% are never called: the floor of every no-effect band.
FLOOR = 0.05
#: "No effect" is never said against a band wider than this: when identical processes differ by
#: more, a run can only say it did not resolve the question.
MAX_NO_EFFECT_BAND = 0.25


class Outcome(str, enum.Enum):
    """What a comparison's interval says against the no-effect band (the value is the JSON word)."""

    EFFECT = "effect"            # the interval lies wholly beyond the band
    NO_EFFECT = "no_effect"      # wholly inside it (and the band is at most MAX_NO_EFFECT_BAND)
    UNRESOLVED = "unresolved"    # across an edge, or an effect in a phase whose A/A arms differ
    ONE_PROCESS = "one_process"  # a side has one process: no interval, nothing is called

    @property
    def table_mark(self) -> str:
        """The mark after a ratio in a table column."""
        return {"effect": "*", "no_effect": "=", "unresolved": "?", "one_process": ""}[self.value]

    @property
    def words(self) -> str:
        return self.value.replace("_", " ")


def outcome_of(ci95: Any, band: float = FLOOR) -> Outcome:
    """The outcome of an interval (None: no interval) against the no-effect band ±``band``."""
    if ci95 is None:
        return Outcome.ONE_PROCESS
    edge = math.log1p(band)
    lo, hi = (math.log(v) for v in ci95)
    if lo > edge or hi < -edge:
        return Outcome.EFFECT
    if -edge <= lo and hi <= edge and band <= MAX_NO_EFFECT_BAND:
        return Outcome.NO_EFFECT
    return Outcome.UNRESOLVED


@dataclass(frozen=True)
class Comparison:
    """Cell a against cell b, the process as the unit (see :mod:`benchctl._results.processes`)."""

    ratio: float
    ci95: tuple[float, float] | None
    k_a: int
    k_b: int
    median_a: float
    median_b: float
    p_value: float | None = None
    df: float | None = None
    log_se: float | None = None
    method: str = ""
    confidence: float = CONFIDENCE
    band: float = FLOOR
    outcome: Outcome = Outcome.ONE_PROCESS
    #: The phase's A/A control arms differ: no effect is called in it (an effect reads unresolved).
    unreliable: bool = False

    def judged(self, band: float = FLOOR, unreliable: bool = False) -> "Comparison":
        """This comparison judged against ±``band``; with ``unreliable`` an effect is not called."""
        outcome = outcome_of(self.ci95, band)
        if unreliable and outcome is Outcome.EFFECT:
            outcome = Outcome.UNRESOLVED
        return replace(self, band=band, outcome=outcome, unreliable=unreliable)

    # --- what it says -------------------------------------------------------

    @property
    def beyond_band(self) -> bool:
        """Whether a difference is called: the interval lies beyond the no-effect band."""
        return self.outcome is Outcome.EFFECT

    @property
    def faster(self) -> bool:
        """Whether a is called faster than b."""
        return self.beyond_band and self.ratio < 1

    @property
    def slower(self) -> bool:
        """Whether a is called slower than b."""
        return self.beyond_band and self.ratio > 1

    def band_text(self) -> str:
        return f"±{self.band:.0%}"

    def ratio_text(self) -> str:
        """``"1.45× [95% CI 1.38, 1.52]"``, or the ratio alone when there is no interval."""
        if self.ci95 is None:
            return f"{wording.factor(self.ratio)}× (no interval: one process)"
        return wording.ratio_ci(self.ratio, self.ci95, self.confidence)

    def effect_text(self) -> str:
        """``"1.45× slower [95% CI 1.38, 1.52]"`` or ``"1.30× faster [...]"`` (needs an interval)."""
        return " ".join(wording.slower_or_faster(self.ratio, self.ci95, self.confidence))

    def table_text(self) -> str:
        """The ratio column of a table: ``"1.450 [1.380, 1.520]*"``."""
        if self.ci95 is None:
            return f"{self.ratio:.3f} (1 process)"
        return wording.table_ratio(self.ratio, self.ci95) + self.outcome.table_mark

    def _one_process_text(self) -> str:
        return (f"{self.ratio_text()} from {self.k_a} and {self.k_b} process(es): no difference is called without "
                "two or more fresh processes per cell")

    def _unresolved_text(self) -> str:
        why = ("the run's A/A control arms differ, so no effect is called in this phase" if self.unreliable
               else f"it crosses the {self.band_text()} band")
        return f"unresolved: {self.ratio_text()}, {why}"

    def describe(self) -> str:
        """``"1.45× slower [95% CI ...]"``, ``"within ±5% (ratio ...)"``, ``"unresolved: ..."``, or why no
        interval exists."""
        if self.outcome is Outcome.EFFECT:
            return self.effect_text()
        if self.outcome is Outcome.NO_EFFECT:
            return f"within {self.band_text()} (ratio {self.ratio_text()})"
        if self.outcome is Outcome.UNRESOLVED:
            return self._unresolved_text()
        return self._one_process_text()

    def headline(self) -> str:
        """``"1.45× slower"``, ``"1.30× faster"``, ``"no difference beyond ±5%"``, ``"unresolved"``..."""
        if self.outcome is Outcome.EFFECT:
            return wording.slower_or_faster(self.ratio, self.ci95, self.confidence)[0]
        if self.outcome is Outcome.NO_EFFECT:
            return f"no difference beyond {self.band_text()}"
        return self.outcome.words

    def relation(self, a_label: str, b_label: str) -> str:
        """``"A is 1.45× slower than B [95% CI ...]"``, or what is known when no difference is called."""
        if self.outcome is Outcome.EFFECT:
            how, interval = wording.slower_or_faster(self.ratio, self.ci95, self.confidence)
            return f"{a_label} is {how} than {b_label} {interval}"
        if self.outcome is Outcome.NO_EFFECT:
            return (f"no difference beyond {self.band_text()} between {a_label} and {b_label} "
                    f"(ratio {self.ratio_text()})")
        if self.outcome is Outcome.UNRESOLVED:
            return f"{a_label} against {b_label} is {self._unresolved_text()}"
        return f"{a_label}/{b_label} = {self._one_process_text()}"

    def change_text(self, what: str) -> str:
        """What ``what`` (a probe, a setting) does to the time, whatever the outcome."""
        if self.outcome is Outcome.EFFECT:
            return f"{what} makes it {self.effect_text()}"
        if self.outcome is Outcome.NO_EFFECT:
            return f"{what} changes nothing beyond {self.band_text()} ({self.ratio_text()})"
        if self.outcome is Outcome.UNRESOLVED:
            # "a time ratio of": a bare "0.80×" beside a cause's "1.24× faster" reads as slower
            return f"unresolved: {what} gives a time ratio of {self.ratio_text()}, across the {self.band_text()} band"
        return f"{what} gives a time ratio of {self.ratio_text()}: one process per cell calls nothing"

    # --- as stored ----------------------------------------------------------

    def to_json(self) -> dict:
        return {"ratio": self.ratio, "ci95": None if self.ci95 is None else list(self.ci95), "k_a": self.k_a,
                "k_b": self.k_b, "median_a": self.median_a, "median_b": self.median_b, "p_value": self.p_value,
                "df": self.df, "log_se": self.log_se, "method": self.method, "confidence": self.confidence,
                "band": self.band, "outcome": self.outcome.value, "unreliable": self.unreliable}

    @classmethod
    def from_json(cls, data: dict) -> "Comparison":
        ci = data.get("ci95")
        return cls(ratio=data["ratio"], ci95=None if ci is None else (float(ci[0]), float(ci[1])),
                   k_a=data.get("k_a", 0), k_b=data.get("k_b", 0), median_a=data.get("median_a", math.nan),
                   median_b=data.get("median_b", math.nan), p_value=data.get("p_value"), df=data.get("df"),
                   log_se=data.get("log_se"), method=data.get("method", ""),
                   confidence=data.get("confidence", CONFIDENCE), band=data.get("band") or FLOOR,
                   outcome=Outcome(data.get("outcome") or outcome_of(ci, data.get("band") or FLOOR)),
                   unreliable=bool(data.get("unreliable")))
