"""Gradient hooks on leaf tensors: find them, and run the timed calls with them detached.

``param.register_hook(fn)`` (a gradient logged, checked or clipped per parameter) puts ``fn`` in a dict of the
tensor's (``_backward_hooks``) that autograd holds and calls in Python, one call per hooked tensor in every
backward, with the ops and syncs the hook does (a norm and an ``.item()`` each). Registered in a setup on every
parameter and left there, they run in every training step. The hooks ``register_post_accumulate_grad_hook``
registers are left alone: they are how an optimizer steps inside backward, work the step needs, which detaching
would leave out and call a saving. No Python function funnels those calls, so :func:`hooked_leaves` finds the
tensors by the collector's list of objects (the leaf tensors whose dicts hold a hook: parameters, or tensors the code
made with ``requires_grad``), and :func:`detached` empties their dicts for a block and fills them again after it, in
place (the dict is the one autograd holds), with any hook the block registered after them, also on an exception. A
hook whose handle the block removes comes back after it (its handle found nothing to remove). The hooks of tensors a
graph made (not leaves) belong to that graph, not to later calls, and are left alone.

:func:`detach_calls` runs every later timed call of a user workload with them detached (:mod:`benchctl._timed_call`;
a worker's ``grad_hooks=off`` cell): detached as the first such call starts and until :func:`attach_calls`, rather
than around each call, where emptying and filling a dict per parameter would be a share of a short call. A paired
worker switches every few milliseconds, and the collector's list takes tens of them (60 ms for ResNet-50's 335,000
objects): the tensors found at the first switch are kept (weakly) and their dicts read again at each later one
(:func:`known_leaves`); a tensor that first holds a hook after it is the code's own, registered in its calls.
"""

from __future__ import annotations

import contextlib
import gc
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ... import _timed_call

__all__ = ["WHAT", "KINDS", "Detached", "hooked_leaves", "known_leaves", "hook_dicts", "detached", "detach_calls",
           "attach_calls", "enabled", "held", "state"]

#: The setting value this control serves, as :mod:`benchctl._timed_call` names it.
WHAT = "grad_hooks=off"
#: A leaf tensor's dicts of gradient hooks: (what its hooks are called here, the tensor's attribute). Not its
#: ``_post_accumulate_grad_hooks``: an optimizer step run in backward (the module's docstring).
KINDS = (("gradient", "_backward_hooks"),)


def hook_dicts(tensor: Any) -> list[tuple[str, dict]]:
    """(kind, dict) for each of ``tensor``'s dicts of gradient hooks that holds one."""
    found = []
    for kind, attribute in KINDS:
        hooks = getattr(tensor, attribute, None)
        if hooks:
            found.append((kind, hooks))
    return found


def hooked_leaves() -> list[Any]:
    """The leaf tensors of this process that hold a gradient hook (by the collector's list of its objects)."""
    import torch

    leaves, tensor = [], torch.Tensor
    for obj in gc.get_objects():
        # type(), not isinstance(): isinstance reads __class__, which some objects compute (with a warning)
        if not issubclass(type(obj), tensor):
            continue
        try:
            if obj.grad_fn is None and hook_dicts(obj):
                leaves.append(obj)
        except Exception:  # a tensor subclass whose attributes raise (a fake or meta tensor): not one of them
            continue
    return leaves


# The leaf tensors the first switch to "off" found: a list of the collector's is searched once a process.
_known: list[weakref.ref] | None = None


def known_leaves() -> list[Any]:
    """The leaf tensors :func:`hooked_leaves` found the first time this is called in the process, those still alive."""
    global _known
    if _known is None:
        _known = [weakref.ref(tensor) for tensor in hooked_leaves()]
    return [tensor for tensor in (ref() for ref in _known) if tensor is not None]


@dataclass
class Detached:
    """What :func:`detached` took out: for each dict emptied, the dict and its hooks as they were."""

    taken: list[tuple[dict, list]] = field(default_factory=list)
    #: The ids of the hook functions taken out (read after every timed call: kept, not rebuilt).
    functions: frozenset[int] = frozenset()

    @property
    def hooks(self) -> int:
        return sum(len(items) for _, items in self.taken)

    def back(self) -> int:
        """How many of the functions taken out are in the dicts again (the code registered them anew)."""
        return sum(id(hook) in self.functions for hooks, _ in self.taken for hook in hooks.values())


@contextlib.contextmanager
def detached(leaves: Callable[[], list[Any]] = hooked_leaves) -> Iterator[Detached]:
    """No gradient hook of the leaf tensors ``leaves()`` finds as the block starts runs inside it; each dict holds its
    hooks again after it, before any the block registered, also on an exception."""
    out = Detached()
    try:
        for tensor in leaves():
            for _, hooks in hook_dicts(tensor):
                out.taken.append((hooks, list(hooks.items())))
                hooks.clear()
        out.functions = frozenset(id(hook) for _, items in out.taken for _, hook in items)
        yield out
    finally:
        for hooks, items in out.taken:
            added = list(hooks.items())
            hooks.clear()
            hooks.update(items)
            hooks.update(added)


# Detached from the first timed call to the switch back; a call held where no hook taken out was registered again
# (a count over the dicts' hooks, a few µs a call for a few hundred parameters).
_detached_calls = _timed_call.SpanContext(WHAT, lambda: detached(known_leaves), lambda out: out.back())


def detach_calls() -> dict[str, Any]:
    """Run every later timed call with the gradient hooks detached (counts start at zero; already so: kept); the state
    right after."""
    _detached_calls.start()
    return state()


def attach_calls() -> dict[str, Any]:
    """The hooks back as the code left them, and the timed calls run so again; the state right after."""
    _detached_calls.stop()
    return state()


def enabled() -> bool:
    return _detached_calls.enabled


def held() -> bool:
    """Whether at least one timed call ran with the hooks detached and none of them was registered again in it."""
    return _detached_calls.all_held()


def state() -> dict[str, Any]:
    """``{"detached", "calls", "held"}``: whether timed calls run with the hooks detached, how many did, how many
    held to their end."""
    return {"detached": enabled(), **_detached_calls.counts()}
