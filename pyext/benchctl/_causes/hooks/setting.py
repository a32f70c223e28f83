"""The ``hooks`` setting: the module hooks as the code registers them, or detached for each timed call."""

from __future__ import annotations

from typing import Any

from ..._setting import AroundCalls
from . import control as hooks

__all__ = ["Hooks", "HOOKS", "SETTINGS"]


class Hooks(AroundCalls):
    """``hooks``: the module hooks as the workload's code registers them (``code``), or detached for each timed
    call of a user workload (``off``: :func:`benchctl._causes.hooks.control.detached`)."""

    name = "hooks"
    help = ("code | off: module hooks as the workload's code registers them, or detached for each timed call of a "
            "callable or setup()/run(state) workload (no forward, backward or pre-hook runs, per module or global)")
    order = 50
    needs_torch = True
    probe = "off"
    control = hooks
    held_words = "with them detached"
    # No counter shows it: the cause reads the hooks the probe worker's call ran (its evidence).
    mechanism = ("every hooked module taking torch.nn.Module's slow path on each call to run its hooks in Python, "
                 "with the ops and syncs they do (a statistic logged per module: a reduction and an .item() each)")

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs with the hooks detached (off) or as written (code).
        return hooks.detach_calls() if value == "off" else hooks.attach_calls()


HOOKS = Hooks()
SETTINGS = (HOOKS,)
