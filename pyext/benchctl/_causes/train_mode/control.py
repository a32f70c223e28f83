"""Training mode: run a block, or each timed call, with every module called in it in eval mode.

A module's ``training`` flag decides what some of them compute: ``Dropout`` draws a random mask and scales by it
(in eval it returns its input), ``BatchNorm`` computes each batch's statistics and updates its running ones (in
eval it uses the running ones), a ``TransformerEncoderLayer`` takes its fused fast path only in eval. A model
never put in eval mode does that training work on every inference call. :func:`evaluating` replaces
``torch.nn.Module._call_impl`` for a block with a call that clears the flag of each module it calls for that
call and sets it back after, as ``model.eval()`` would for the block, whichever module is called (one the
workload's state does not reach or one created inside the call included); torch's own ``_call_impl`` is back
after the block, also on an exception. What each call computes changes with it (no random masks, running
statistics): the setting is a timing probe.

:func:`evaluate_calls` puts :func:`evaluating` around every later timed call of a user workload
(:mod:`benchctl._timed_call`; a worker's ``train_mode=eval`` cell) and :func:`restore_calls` takes it out;
:func:`held` says whether every call so far ran so to its end. The probe worker's count of the modules called
in training mode is :func:`benchctl._causes.train_mode.probe.counting`.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from ... import _timed_call

__all__ = ["WHAT", "evaluating", "evaluate_calls", "restore_calls", "enabled", "held", "state"]

#: The setting value this control serves, as :mod:`benchctl._timed_call` names it.
WHAT = "train_mode=eval"


@contextlib.contextmanager
def evaluating() -> Iterator[Callable]:
    """Every module called inside the block runs with ``training`` False for its call (restored after it);
    torch's own ``_call_impl`` back after the block, also on an exception. Yields the function put in its place."""
    import torch

    own = torch.nn.Module._call_impl

    def in_eval(self, *args: Any, **kwargs: Any) -> Any:
        if not self.training:
            return own(self, *args, **kwargs)
        self.training = False
        try:
            return own(self, *args, **kwargs)
        finally:
            self.training = True

    torch.nn.Module._call_impl = in_eval
    try:
        yield in_eval
    finally:
        torch.nn.Module._call_impl = own


def _still_evaluating(in_eval: Callable) -> bool:
    import torch

    return torch.nn.Module._call_impl is in_eval


_evaluated_calls = _timed_call.HeldContext(WHAT, evaluating, _still_evaluating)


def evaluate_calls() -> dict[str, Any]:
    """Run every later timed call with its modules in eval mode (counts start at zero; already so: kept); the
    state right after."""
    _evaluated_calls.start()
    return state()


def restore_calls() -> dict[str, Any]:
    """The timed calls run with their modules as the code left them again; the state right after."""
    _evaluated_calls.stop()
    return state()


def enabled() -> bool:
    return _evaluated_calls.enabled


def held() -> bool:
    """Whether at least one timed call ran in eval mode and every one of them stayed so to its end."""
    return _evaluated_calls.all_held()


def state() -> dict[str, Any]:
    """``{"evaluating", "calls", "held"}``: whether timed calls run in eval mode, how many did, how many held."""
    return {"evaluating": enabled(), **_evaluated_calls.counts()}
