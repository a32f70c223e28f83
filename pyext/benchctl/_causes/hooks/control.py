"""Module hooks: run a block, or each timed call, with every module's hooks skipped.

Every ``module(x)`` goes through ``torch.nn.Module._call_impl``, looked up on the class at call time:
with no hook on the module and none global it calls ``forward`` at once; with one it takes the slow
path that runs the forward pre-hooks, the forward hooks and sets up the backward ones, each a Python
call (a hook registered on every submodule to log a statistic costs an op and often a ``.item()`` sync
per module per call). :func:`detached` replaces ``_call_impl`` for a block with torch's own no-hook path,
so that no hook runs, per module (``register_forward_hook`` and the others) or global
(``register_module_forward_hook``, ...), whichever module is called, one the workload's state does not
reach or one created inside the call included; the hook dicts are left as they are (a handle removed
inside the block removes its hook), and ``_call_impl`` is torch's own again after the block, also on an
exception. A module compiled with ``torch.compile`` keeps the hooks traced into its graph.

:func:`detach_calls` puts :func:`detached` around every later timed call of a user workload
(:mod:`benchctl._timed_call`; a worker's ``hooks=off`` cell) and :func:`attach_calls` takes it out;
:func:`held` says whether every call so far ran detached to its end. The probe worker's count of the hooks a
call runs is :func:`benchctl._causes.hooks.probe.census`.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from ... import _timed_call

__all__ = ["WHAT", "detached", "detach_calls", "attach_calls", "enabled", "held", "state"]

#: The setting value this control serves, as :mod:`benchctl._timed_call` names it.
WHAT = "hooks=off"


@contextlib.contextmanager
def detached() -> Iterator[Callable]:
    """No module hook runs inside the block (``Module._call_impl`` takes torch's no-hook path); torch's own
    ``_call_impl`` back after it, also on an exception. Yields the function put in its place."""
    import torch

    tracing = torch._C._get_tracing_state
    own = torch.nn.Module._call_impl

    def without_hooks(self, *args: Any, **kwargs: Any) -> Any:
        # torch's own path for a module with no hook (Module._call_impl's first lines)
        forward = self._slow_forward if tracing() else self.forward
        return forward(*args, **kwargs)

    torch.nn.Module._call_impl = without_hooks
    try:
        yield without_hooks
    finally:
        torch.nn.Module._call_impl = own


def _still_detached(without_hooks: Callable) -> bool:
    import torch

    return torch.nn.Module._call_impl is without_hooks


_detached_calls = _timed_call.HeldContext(WHAT, detached, _still_detached)


def detach_calls() -> dict[str, Any]:
    """Run every later timed call with the module hooks detached (counts start at zero; already so: kept);
    the state right after."""
    _detached_calls.start()
    return state()


def attach_calls() -> dict[str, Any]:
    """The timed calls run with their hooks again; the state right after."""
    _detached_calls.stop()
    return state()


def enabled() -> bool:
    return _detached_calls.enabled


def held() -> bool:
    """Whether at least one timed call ran detached and every one of them stayed so to its end."""
    return _detached_calls.all_held()


def state() -> dict[str, Any]:
    """``{"detached", "calls", "held"}``: whether timed calls run detached, how many did, how many held to their end."""
    return {"detached": enabled(), **_detached_calls.counts()}
