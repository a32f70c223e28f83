"""What the probe worker learns of the gradient hooks on leaf tensors: the tensors that hold one, and one more call
of the workload (untimed, after the profiled one) with each of their hooks counted as it runs (:func:`census`), and
:class:`GradHooksFacts`, which reads it back."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from ..._probe import CallCensusProbe, NoteFacts, ProbedCall, hook_name
from . import control

__all__ = ["TOP_HOOKS", "census", "GradHooksFacts", "GradHooksProbe", "PROBE", "PROBES"]

#: How many hook functions the note names (the most run first).
TOP_HOOKS = 3


def census(call: Callable[[], Any], top: int) -> dict[str, Any]:
    """The leaf tensors holding a gradient hook, and one more call of ``call`` with each of their hooks counted as it
    runs: ``{"tensors": hooked leaf tensors, "hooks": their hooks by kind, "runs": hook calls over the call,
    "names": {the ``top`` most run hook functions: runs}}``, or ``{"error": ...}`` when the call failed under it.
    With no hooked tensor, the call is not run."""
    leaves = control.hooked_leaves()
    hooks = Counter(kind for tensor in leaves for kind, found in control.hook_dicts(tensor) for _ in found)
    note: dict[str, Any] = {"tensors": len(leaves), "hooks": dict(hooks), "runs": 0, "names": {}}
    if not leaves:
        return note
    runs: Counter = Counter()

    def counting(hook: Any) -> Callable[..., Any]:
        name = hook_name(hook)

        def counted(*args: Any) -> Any:
            runs[name] += 1
            return hook(*args)

        return counted

    # The hooks taken out and counting ones put in their places; detached() puts the hooks back after the call, and
    # the counting ones, registered "by the block", are taken out again as the dicts are refilled.
    try:
        with control.detached(lambda: leaves) as out:
            for hooks_dict, items in out.taken:
                hooks_dict.update((key, counting(hook)) for key, hook in items)
            try:
                call()
            finally:
                for hooks_dict, items in out.taken:
                    for key, _ in items:
                        hooks_dict.pop(key, None)
    except Exception as e:  # the call ran fine untimed; under the count it did not: say so, go on
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    return {**note, "runs": sum(runs.values()), "names": dict(runs.most_common(top))}


# The probe note's key, written and read here only.
_GRAD_HOOKS = "grad_hooks"


@dataclass(frozen=True)
class GradHooksFacts(NoteFacts):
    """The leaf tensors that held a gradient hook as the probe worker's extra call began (``tensors``), their hooks by
    kind (``hooks``), the hook calls over that call (``runs``) and the most run hook functions (``names``). ``error``:
    the call failed under the count (then nothing else is known)."""

    tensors: int = 0
    hooks: dict[str, int] = field(default_factory=dict)
    runs: int = 0
    names: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    @property
    def known(self) -> bool:
        return self.error is None

    @property
    def ran(self) -> bool:
        return self.known and self.runs > 0

    def text(self) -> str:
        """``"in its probe call, 24 gradient hook calls on 24 leaf tensors that hold hooks (log_norm ×24)"``."""
        names = ", ".join(f"{name} ×{n:,}" for name, n in self.names.items())
        return (f"in its probe call, {self.runs:,} gradient hook call{'s' * (self.runs != 1)} on {self.tensors:,} "
                f"leaf tensor{'s' * (self.tensors != 1)} that hold hooks ({names})")

    def none_text(self) -> str:
        """Why nothing is left to detach: no tensor holds a hook, or none ran."""
        if not self.tensors:
            return "no leaf tensor held a gradient hook as its probe call began"
        hooks = sum(self.hooks.values())
        return (f"{self.tensors:,} leaf tensor{'s' * (self.tensors != 1)} held {hooks:,} gradient "
                f"hook{'s' * (hooks != 1)}, yet none ran in its probe call (no backward reached them)")


class GradHooksProbe(CallCensusProbe):
    """One more call of the workload under :func:`census` (none for a workload that times itself)."""

    key = "grad_hooks"
    fact = GradHooksFacts
    entry = _GRAD_HOOKS

    def call_census(self, probed: ProbedCall) -> dict:
        return census(probed.call, TOP_HOOKS)


PROBE = GradHooksProbe()
PROBES = (PROBE,)
