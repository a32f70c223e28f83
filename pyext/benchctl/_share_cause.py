"""What a cause judged by its share of the time is: the probe worker's watch times one thing over its timed
iterations (DataLoader workers started and stopped, weights drawn by modules built in the call), no setting can
change the code, and the finding rests on the share of the iterations' time that thing took:

- under :data:`NEGLIGIBLE_SHARE`, or nothing of it seen: ruled out before any cell runs;
- under :data:`PART_SHARE`: not the cause;
- under :data:`DOMINANT_SHARE`: ``?``, it explains part of the time at most;
- from :data:`DOMINANT_SHARE` on: ``*``, evidence only.

A subclass names its watch and its words (:attr:`ShareCause.unwatched`, :attr:`ShareCause.mechanism`,
:attr:`ShareCause.fix`, :attr:`ShareCause.it`) and says what "nothing seen" is (:meth:`ShareCause.unseen`). The
watch's facts give ``share`` and ``text()``.

The lines have margin on purpose: a share from the timed iterations is a ratio of two sums, which moves by a few
points between runs (a loader plant read 85-87% over 20 calls; one profiled call of it read 49-70%).
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar, Protocol

from ._cause import EVIDENCE_ONLY, NOT_WATCHED, Cause
from ._results.facts import Facts
from ._results.findings import Finding, Status
from ._results.rules import Context

__all__ = ["NEGLIGIBLE_SHARE", "PART_SHARE", "DOMINANT_SHARE", "ShareFacts", "ShareCause"]

#: Under this share of the time, the thing timed cannot explain it: ruled out before running.
NEGLIGIBLE_SHARE = 0.05
#: From this share it explains part of the time (``?``) ...
PART_SHARE = 0.2
#: ... and from this share most of it (``*``).
DOMINANT_SHARE = 0.5


class ShareFacts(Protocol):
    """What a :class:`ShareCause`'s watch gives: the share of the timed iterations' time, and what it saw in words."""

    @property
    def share(self) -> float: ...

    def text(self) -> str: ...


class ShareCause(Cause):
    """A cause judged by the share of the probe worker's timed iterations that its ``watch`` timed."""

    #: The probe worker's watch (its key also names its facts in the evidence).
    watch: ClassVar[Any]
    #: What a workload that times its own iterations leaves unseen: "no call shows its DataLoader workers".
    unwatched: ClassVar[str]
    #: Why the thing timed costs time where it is the cause.
    mechanism: ClassVar[str]
    #: What the user changes when it is the cause.
    fix: ClassVar[str]
    #: The thing timed as the subject of "explains": "they" or "it".
    it: ClassVar[str]

    def probes(self, facts: Facts | None) -> list[dict]:
        return []

    def seen(self, facts: Facts | None) -> Any:
        """The watch's facts, or None where the probe worker did not watch the calls."""
        return facts.of(self.watch) if facts is not None else None

    @abc.abstractmethod
    def unseen(self, seen: Any) -> str | None:
        """Why the watch's facts ``seen`` hold nothing to judge ("no DataLoader started worker processes ..."), or
        None where they do."""

    def precheck(self, facts: Facts, penalty: dict | None) -> str | None:
        seen = self.seen(facts)
        if seen is None:
            return NOT_WATCHED.format(missing=self.unwatched)
        nothing = self.unseen(seen)
        if nothing is not None:
            return nothing
        if seen.share < NEGLIGIBLE_SHARE:
            return f"{seen.text()}: under {NEGLIGIBLE_SHARE:.0%}"
        return None

    def judge_phase(self, ctx: Context) -> Finding | None:
        called = ctx.facts.called_phase() if ctx.facts is not None else None  # whether or not it ran a torch op
        seen: ShareFacts | None = self.seen(ctx.facts) if ctx.phase == called else None
        if seen is None or self.unseen(seen) is not None:
            return None
        evidence = {self.watch.key: ctx.facts.to_json()["probed"].get(self.watch.key), "share": seen.share}
        if seen.share < PART_SHARE:
            return self.finding(ctx, None, f"{seen.text()}: under {PART_SHARE:.0%}", Status.NOT_CAUSE,
                                evidence=evidence)
        if seen.share < DOMINANT_SHARE:
            return self.finding(ctx, None, f"{seen.text()}; under {DOMINANT_SHARE:.0%}, {self.it} explain"
                                           f"{'s' * (self.it == 'it')} part of the time at most; the fix: {self.fix}",
                                Status.UNCONFIRMED, evidence=evidence)
        return self.finding(ctx, None, f"{seen.text()}: {self.mechanism}; the fix: {self.fix}; {EVIDENCE_ONLY}",
                            Status.CAUSE, evidence=evidence)
