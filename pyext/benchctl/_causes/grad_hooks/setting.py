"""The ``grad_hooks`` setting: the gradient hooks on leaf tensors as the code registered them, or detached for the
timed calls."""

from __future__ import annotations

from typing import Any

from ..._setting import AroundCalls
from . import control as grad_hooks

__all__ = ["GradHooks", "GRAD_HOOKS", "SETTINGS"]


class GradHooks(AroundCalls):
    """``grad_hooks``: the gradient hooks on leaf tensors as the workload's code registered them (``code``), or
    detached for the timed calls of a user workload (``off``: :func:`benchctl._causes.grad_hooks.control.detached`)."""

    name = "grad_hooks"
    help = ("code | off: gradient hooks on leaf tensors (Tensor.register_hook on parameters) as the workload's code "
            "registered them, or those registered before the timed calls of a callable or setup()/run(state) "
            "workload detached for them (post-accumulate hooks, an optimizer stepping in backward, stay)")
    order = 50
    needs_torch = True
    probe = "off"
    control = grad_hooks
    held_words = "with them detached"
    # No counter shows it: the cause reads the hooks the probe worker's call ran (its evidence).
    mechanism = ("a Python hook on each hooked tensor's gradient that autograd calls in every backward, one call per "
                 "tensor, with the ops and syncs it does (a norm and an .item() per parameter)")

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs with the hooks detached (off) or as registered (code).
        return grad_hooks.detach_calls() if value == "off" else grad_hooks.attach_calls()


GRAD_HOOKS = GradHooks()
SETTINGS = (GRAD_HOOKS,)
