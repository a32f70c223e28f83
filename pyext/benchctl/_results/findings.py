"""One statement of an answer, typed: what a rule found, its status (and so its mark), its comparison.

Every rule of the engine (:mod:`benchctl._results.rules`) returns :class:`Finding` objects; the
results document stores them as JSON (:meth:`Finding.to_json`), and :meth:`Finding.from_json`
reads both that and the flat shape of version-2 files. What a status means and which mark it gets
in an answer is written here once (:class:`Status`, :data:`LEGEND`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .comparison import Comparison, Outcome

__all__ = ["Status", "LEGEND", "MECHANISM_UNCONFIRMED", "Finding"]


class Status(str, enum.Enum):
    """What a finding says of its subject (the value is the JSON word)."""

    CAUSE = "cause"              # the effect is measured and this explains it, with its evidence
    MEASURED = "measured"        # an effect measured (a gap), whatever explains it
    UNCONFIRMED = "unconfirmed"  # the probe changes the time, but the evidence does not move with it
    UNRESOLVED = "unresolved"    # open: more processes could settle it
    NOT_CAUSE = "not_cause"      # measured, and not this: no effect, the opposite effect, or kept
    RULED_OUT = "ruled_out"      # ruled out before any cell ran, by cheap evidence

    @property
    def mark(self) -> str:
        return {"cause": "*", "measured": "*", "unconfirmed": "?", "unresolved": "?", "not_cause": "-",
                "ruled_out": "-"}[self.value]


#: How an answer explains its marks.
#: How a finding whose probe changed the time, with nothing its evidence shows moving with it, ends.
MECHANISM_UNCONFIRMED = "the mechanism is unconfirmed"
LEGEND = ("* measured, and what explains it; ? open: unresolved, or its mechanism unconfirmed; "
          "- ruled out, and why")


@dataclass(frozen=True)
class Finding:
    """One finding: ``rule`` said it about ``phase`` (None: before any cell ran); ``a`` and ``b`` are
    the cells compared (``comparison`` is a against b), ``setting`` the ``name=value`` it is about."""

    rule: str
    phase: str | None
    status: Status
    message: str
    comparison: Comparison | None = None
    a: dict | None = None
    b: dict | None = None
    setting: str | None = None
    evidence: dict = field(default_factory=dict)
    #: False for what only the report lists (a generic rule's "no effect" of every other setting).
    in_answer: bool = True

    @property
    def mark(self) -> str:
        return self.status.mark

    @property
    def explains(self) -> bool:
        """Whether this finding names what explains the effect it looks at."""
        return self.status is Status.CAUSE

    @property
    def is_open(self) -> bool:
        """Whether more processes could settle it."""
        return self.status is Status.UNRESOLVED and self.comparison is not None

    def cells(self) -> list[dict]:
        """The cells a new round of processes would measure to settle this finding: those its rule named
        (``evidence["cells_to_settle"]``: for a gap under a setting, the pairs whose intervals limit the
        share of the gap left), else its own two."""
        named = self.evidence.get("cells_to_settle")
        return [c for c in (named if named is not None else (self.a, self.b)) if c is not None]

    def to_json(self) -> dict:
        return {"rule": self.rule, "phase": self.phase, "status": self.status.value, "message": self.message,
                "comparison": None if self.comparison is None else self.comparison.to_json(),
                "a": self.a, "b": self.b, "setting": self.setting, "evidence": self.evidence,
                "in_answer": self.in_answer}

    @classmethod
    def from_json(cls, data: dict) -> "Finding":
        """A stored finding; a version-2 one (flat ratio/ci95/outcome, status only in a cause's
        evidence) gets the status its answer gave it."""
        if "status" in data:
            cmp = data.get("comparison")
            return cls(data["rule"], data.get("phase"), Status(data["status"]), data["message"],
                       None if cmp is None else Comparison.from_json(cmp), data.get("a"), data.get("b"),
                       data.get("setting"), data.get("evidence") or {}, data.get("in_answer", True))
        evidence = dict(data.get("evidence") or {})
        cmp = None
        if data.get("ratio") is not None:  # an outcome the file lacks is judged from its interval
            cmp = Comparison.from_json({k: data.get(k) for k in ("ratio", "ci95", "p_value", "band", "outcome")})
        status = evidence.pop("status", None)
        if status is None:
            unresolved = data.get("outcome") == Outcome.UNRESOLVED.value or data.get("rule") == "unresolved_gap"
            status = "unresolved" if unresolved else "cause" if data.get("explains") else "not_cause"
        return cls(data["rule"], data.get("phase"), Status(status), data["message"], cmp, data.get("a"),
                   data.get("b"), data.get("setting"), evidence)
