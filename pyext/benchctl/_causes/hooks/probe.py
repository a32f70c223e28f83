"""What the probe worker learns of the module hooks: one more call of the workload (untimed, after the
profiled one) with every module call counted and the hooks it runs, by kind (:func:`census`), and
:class:`HooksFacts`, which reads it back."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from ..._module_calls import seeing_module_calls
from ..._probe import CallCensusProbe, NoteFacts, ProbedCall, hook_name

__all__ = ["KINDS", "TOP_HOOKS", "census", "HooksFacts", "HooksProbe", "PROBE", "PROBES"]

#: Each kind of module hook: (its name here, the module's dict of them, torch's global dict of them).
KINDS = (("forward_pre", "_forward_pre_hooks", "_global_forward_pre_hooks"),
         ("forward", "_forward_hooks", "_global_forward_hooks"),
         ("backward_pre", "_backward_pre_hooks", "_global_backward_pre_hooks"),
         ("backward", "_backward_hooks", "_global_backward_hooks"))

#: How many hook functions the note names (the most run first).
TOP_HOOKS = 3


@dataclass
class _Tally:
    module_calls: int = 0
    runs: Counter = field(default_factory=Counter)
    ids: dict = field(default_factory=lambda: {kind: set() for kind, _, _ in KINDS})
    names: Counter = field(default_factory=Counter)


def census(call: Callable[[], Any], top: int) -> dict[str, Any]:
    """One more call of ``call`` with every module call counted: ``{"module_calls", "runs": {kind: hooks run
    (forward side) or set up (backward side) over the call}, "registered": {kind: distinct hooks seen},
    "global_hooks": hooks registered globally, "names": {the ``top`` most frequent hook functions: runs}}``, or
    ``{"error": ...}`` when the call failed under it."""
    import torch.nn.modules.module as module_py

    tally = _Tally()

    def counting(module: Any) -> None:
        tally.module_calls += 1
        for kind, local, shared in KINDS:
            hooks, everywhere = getattr(module, local), getattr(module_py, shared)
            for hook_id, hook in (*everywhere.items(), *hooks.items()):
                tally.runs[kind] += 1
                tally.ids[kind].add(hook_id)  # handle ids are unique across modules and the global dicts
                tally.names[hook_name(hook)] += 1

    try:
        with seeing_module_calls(counting):
            call()
    except Exception as e:  # the call ran fine untimed; under the count it did not: say so, go on
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    return {"module_calls": tally.module_calls, "runs": {kind: tally.runs[kind] for kind, _, _ in KINDS},
            "registered": {kind: len(tally.ids[kind]) for kind, _, _ in KINDS},
            "global_hooks": sum(len(getattr(module_py, shared)) for _, _, shared in KINDS),
            "names": dict(tally.names.most_common(top))}


# Each kind in words, (one, many): forward hooks run in the call, backward ones are set up for its backward.
_WORDS = {"forward_pre": ("forward pre-hook call", "forward pre-hook calls"),
          "forward": ("forward hook call", "forward hook calls"),
          "backward_pre": ("backward pre-hook set up", "backward pre-hooks set up"),
          "backward": ("backward hook set up", "backward hooks set up")}
# The probe note's key, written and read here only.
_HOOKS = "hooks"


@dataclass(frozen=True)
class HooksFacts(NoteFacts):
    """In one call of the workload: ``module_calls`` module calls, ``runs`` the hooks they ran (forward side) or
    set up (backward side) by kind, ``registered`` the distinct hooks seen by kind, ``global_hooks`` those
    registered for every module, ``names`` the most run hook functions. ``error``: the call failed under the
    count (then nothing else is known)."""

    module_calls: int = 0
    runs: dict[str, int] = field(default_factory=dict)
    registered: dict[str, int] = field(default_factory=dict)
    global_hooks: int = 0
    names: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    @property
    def known(self) -> bool:
        return self.error is None

    @property
    def ran(self) -> bool:
        return self.known and sum(self.runs.values()) > 0

    def text(self) -> str:
        """``"in its probe call, 24 forward hook calls over 30 module calls (24 hooks, none global; log_stats
        ×24)"``."""
        runs = ", ".join(f"{n:,} {_WORDS[kind][n != 1]}" for kind, n in self.runs.items() if n)
        hooks = sum(self.registered.values())
        names = ", ".join(f"{name} ×{n:,}" for name, n in self.names.items())
        return (f"in its probe call, {runs} over {self.module_calls:,} module calls ({hooks:,} "
                f"hook{'s' * (hooks != 1)}, {self.global_hooks or 'none'} global; {names})")

    def none_text(self) -> str:
        """``"no module hook ran in its probe call (30 module calls)"``."""
        return f"no module hook ran in its probe call ({self.module_calls:,} module calls)"


class HooksProbe(CallCensusProbe):
    """One more call of the workload under :func:`census` (none for a workload that times itself)."""

    key = "hooks"
    fact = HooksFacts
    entry = _HOOKS

    def call_census(self, probed: ProbedCall) -> dict:
        return census(probed.call, TOP_HOOKS)


PROBE = HooksProbe()
PROBES = (PROBE,)
