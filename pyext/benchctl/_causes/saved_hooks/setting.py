"""The ``saved_hooks`` setting: the saved-tensor hooks as the code left them, or set aside for each timed call."""

from __future__ import annotations

from typing import Any

from ..._setting import AroundCalls
from . import control as saved_hooks

__all__ = ["SavedHooks", "SAVED_HOOKS", "SETTINGS"]


class SavedHooks(AroundCalls):
    """``saved_hooks``: the saved-tensor hooks as the workload's code left them on (``code``), or set aside for each
    timed call of a user workload (``off``: :func:`benchctl._causes.saved_hooks.control.set_aside`)."""

    name = "saved_hooks"
    help = ("code | off: saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks, save_on_cpu) as the "
            "workload's code left them on, or those on before each timed call set aside for it (a callable or "
            "setup()/run(state) workload; hooks the call enters and exits itself run as written)")
    order = 50
    needs_torch = True
    probe = "off"
    control = saved_hooks
    held_words = "with them set aside"
    # No counter shows it: the cause reads the tensors the hooks packed in the probe worker's call (its evidence).
    mechanism = ("a saved-tensor pack hook left on, which autograd calls in Python on every tensor it saves for "
                 "backward, with the work it does there (a copy, a move to another device)")

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs with the hooks set aside (off) or as the code left them.
        return saved_hooks.set_aside_calls() if value == "off" else saved_hooks.restore_calls()


SAVED_HOOKS = SavedHooks()
SETTINGS = (SAVED_HOOKS,)
