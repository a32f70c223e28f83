"""The studies benchctl knows by name, and the rules each one judges with.

A results document records the study that made it (``evidence["study"]``), so ``benchctl
report`` can judge a saved file again by this version's rules (:func:`pipeline.reanswer`).
"""

from __future__ import annotations

from .._results.rules import Rule
from . import seed_rules
from .causes import CAUSES

__all__ = ["STUDIES", "rules_of"]

STUDIES = {
    "explain": lambda: CAUSES,
    "resnet_order": seed_rules.resnet_order_rules,
    "zero_weights": seed_rules.zero_weights_rules,
}


def rules_of(name: str) -> tuple[Rule, ...] | None:
    """The rules of study ``name``; None for a document no study made (a plain ``benchctl run``)."""
    make = STUDIES.get(name)
    return None if make is None else tuple(make())
