"""What the probe worker learns of the saved-tensor hooks: one more call of the workload (untimed, after the
profiled one) with the hooks on as it began counted, and the tensors they packed (:func:`census`), and
:class:`SavedHooksFacts`, which reads it back."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from ..._probe import CallCensusProbe, NoteFacts, ProbedCall, hook_name
from . import control

__all__ = ["TOP_HOOKS", "census", "SavedHooksFacts", "SavedHooksProbe", "PROBE", "PROBES"]

#: How many pack functions the note names (the most run first).
TOP_HOOKS = 3


def census(call: Callable[[], Any], top: int) -> dict[str, Any]:
    """One more call of ``call`` with each pack function on the stack as it began counted: ``{"on": pairs on the
    stack, "packs": tensors they packed over the call, "names": {the ``top`` most run pack functions: packs},
    "on_top": the pack function on top, which autograd calls}``, or ``{"error": ...}`` when the call failed under it.
    Hooks the call enters itself are not counted: they are its own. With none on, the call is not run."""
    if not control.stack():
        return {"on": 0, "packs": 0, "names": {}, "on_top": None}  # nothing on: no call to spend
    packs: Counter = Counter()

    def counted(pair: control.Pair) -> control.Pair:
        pack, unpack = pair
        name = hook_name(pack)

        def counting(tensor: Any) -> Any:
            packs[name] += 1
            return pack(tensor)

        return counting, unpack

    try:
        with control.swapped(counted) as found:
            call()
    except Exception as e:  # the call ran fine untimed; under the count it did not: say so, go on
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    return {"on": len(found), "packs": sum(packs.values()), "names": dict(packs.most_common(top)),
            "on_top": hook_name(found[0][0]) if found else None}


# The probe note's key, written and read here only.
_SAVED_HOOKS = "saved_hooks"


@dataclass(frozen=True)
class SavedHooksFacts(NoteFacts):
    """In one call of the workload: ``on`` saved-tensor hook pairs on torch's stack as it began (``on_top``: the
    pack function autograd would call), ``packs`` the tensors they packed over it, ``names`` the most run pack
    functions. ``error``: the call failed under the count (then nothing else is known)."""

    on: int = 0
    packs: int = 0
    names: dict[str, int] = field(default_factory=dict)
    on_top: str | None = None
    error: str | None = None

    @property
    def known(self) -> bool:
        return self.error is None

    @property
    def packed(self) -> bool:
        return self.known and self.packs > 0

    def text(self) -> str:
        """``"in its probe call, a saved-tensor hook on before the call (pack) packed 42 tensors autograd saved for
        backward"``."""
        names = ", ".join(f"{name} ×{n:,}" for name, n in self.names.items())
        hooks = "a saved-tensor hook" if self.on == 1 else f"{self.on} saved-tensor hooks"
        return (f"in its probe call, {hooks} on before the call ({names}) packed {self.packs:,} "
                f"tensor{'s' * (self.packs != 1)} autograd saved for backward")

    def none_text(self) -> str:
        """Why nothing is left to set aside: none on, or none packed a tensor."""
        if self.on == 0:
            return "no saved-tensor hook was on as its probe call began"
        return (f"a saved-tensor hook was on as its probe call began ({self.on_top}), yet it packed no tensor "
                f"(autograd saved none for backward)")


class SavedHooksProbe(CallCensusProbe):
    """One more call of the workload under :func:`census` (none for a workload that times itself)."""

    key = "saved_hooks"
    fact = SavedHooksFacts
    entry = _SAVED_HOOKS

    def call_census(self, probed: ProbedCall) -> dict:
        return census(probed.call, TOP_HOOKS)


PROBE = SavedHooksProbe()
PROBES = (PROBE,)
