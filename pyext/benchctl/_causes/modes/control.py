"""Torch's Python modes: the ones on in this thread, and each timed call run with them off.

A ``TorchFunctionMode`` (``torch.set_default_device``'s ``DeviceContext``, a user's logging or tracing mode) runs its
``__torch_function__`` in Python on every torch call made while it is on; a ``TorchDispatchMode`` runs its
``__torch_dispatch__`` on every aten op. Entered at import or in ``setup()`` and never left, one stays on around
every call of the code. Both stacks are per thread. :func:`suspended` takes the modes :func:`switchable` off the two
stacks for a block and puts them back after it in their order, also on an exception; a ``DeviceContext`` that
makes tensors elsewhere than the CPU stays (without it they would be made on the CPU: another workload).

:func:`suspend_calls` runs every later timed call of a user workload with the modes off (:mod:`benchctl._timed_call`;
a worker's ``modes=off`` cell): they are taken off as the first such call starts and stay off until
:func:`restore_calls` puts them back, rather than around each call, whose share of a short call the switch would
be; :func:`held` says whether every call so far ended with none of them on again.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

from ... import _timed_call

__all__ = ["WHAT", "FUNCTION", "DISPATCH", "Stack", "STACKS", "mode_name", "sets_device", "switchable", "on",
           "suspended",
           "suspend_calls", "restore_calls", "enabled", "held", "state"]

#: The setting value this control serves, as :mod:`benchctl._timed_call` names it.
WHAT = "modes=off"


@dataclass(frozen=True)
class Stack:
    """One of torch's per-thread mode stacks: its kind in words and torch's functions that read and change it."""

    kind: str
    module: str  # where torch keeps its _get_current_*_mode_stack, _pop_mode and _push_mode
    current: str
    handler: str  # the method each of its modes runs

    def _torch(self) -> Any:
        import importlib

        return importlib.import_module(self.module)

    def modes(self) -> list:
        """The modes on this thread's stack, the innermost last."""
        return list(getattr(self._torch(), self.current)())

    def pop(self) -> Any:
        return self._torch()._pop_mode()

    def push(self, mode: Any) -> None:
        self._torch()._push_mode(mode)


FUNCTION = Stack("torch function", "torch.overrides", "_get_current_function_mode_stack", "__torch_function__")
DISPATCH = Stack("torch dispatch", "torch.utils._python_dispatch", "_get_current_dispatch_mode_stack",
                 "__torch_dispatch__")
STACKS = (FUNCTION, DISPATCH)


def _device_context(mode: Any) -> Any:
    """The device a ``DeviceContext`` (``torch.set_default_device``, ``with torch.device(...)``) makes tensors on,
    or None for any other mode."""
    try:
        from torch.utils._device import DeviceContext
    except ImportError:  # a torch without it has no such mode
        return None
    return mode.device if isinstance(mode, DeviceContext) else None


def mode_name(mode: Any) -> str:
    """``"LoggingMode"``; ``"DeviceContext(cpu)"`` for the default device's mode."""
    device = _device_context(mode)
    name = type(mode).__qualname__.rsplit("<locals>.", 1)[-1]
    return f"{name}({device})" if device is not None else name


def sets_device(mode: Any) -> bool:
    """Whether ``mode`` is the default device's (``torch.set_default_device``, ``with torch.device(...)``)."""
    return _device_context(mode) is not None


def switchable(mode: Any) -> bool:
    """Whether the control takes ``mode`` off: every mode but a ``DeviceContext`` that makes tensors elsewhere
    than the CPU (off, the code would make them on the CPU)."""
    device = _device_context(mode)
    return device is None or getattr(device, "type", str(device)) == "cpu"


def on() -> dict[Stack, list]:
    """``{stack: the modes on this thread's stack}`` for both stacks (a stack torch does not have: empty)."""
    out = {}
    for stack in STACKS:
        try:
            out[stack] = stack.modes()
        except (ImportError, AttributeError):
            out[stack] = []
    return out


def _take_off(stack: Stack) -> tuple[list, list]:
    """Pop every mode of ``stack`` and push back those not :func:`switchable`: (all it held, those kept)."""
    held = stack.modes()
    for _ in held:
        stack.pop()
    kept = [mode for mode in held if not switchable(mode)]
    for mode in kept:
        stack.push(mode)
    return held, kept


def _put_back(stack: Stack, held: list, kept: list) -> None:
    """Give ``stack`` the modes it ``held`` back in their order; modes the block left on above the ``kept`` ones
    stay on above them (the code entered them and did not leave them)."""
    now = stack.modes()
    left_on = [mode for mode in now if not any(mode is k for k in kept)]
    for _ in now:
        stack.pop()
    for mode in held + left_on:
        stack.push(mode)


@contextlib.contextmanager
def suspended() -> Iterator[dict[Stack, list]]:
    """Every :func:`switchable` mode of this thread's two stacks off inside the block, each back after it in its
    place, also on an exception. Yields ``{stack: the modes taken off}``."""
    taken: list[tuple[Stack, list, list]] = []
    try:
        for stack in STACKS:
            held, kept = _take_off(stack)
            taken.append((stack, held, kept))
        yield {stack: [m for m in held if not any(m is k for k in kept)] for stack, held, kept in taken}
    finally:
        for stack, held, kept in reversed(taken):
            _put_back(stack, held, kept)


def _lengths() -> tuple[int, ...]:
    """The length of each stack (torch's own count: cheaper than listing them)."""
    import torch

    return torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()


# The modes off from the first timed call to the switch back, not around each call (taking them off and back costs
# about 10 us, a share of a call of a few hundred); a call held where both stacks are as long at its end as at its
# start (no mode taken off was entered again and left on).
_suspended_calls = _timed_call.SpanContext(WHAT, suspended, lambda _taken: _lengths())


def suspend_calls() -> dict[str, Any]:
    """Run every later timed call with the modes off (counts start at zero; already so: kept); the state right
    after."""
    _suspended_calls.start()
    return state()


def restore_calls() -> dict[str, Any]:
    """The modes back as the code left them, and the timed calls run so again; the state right after."""
    _suspended_calls.stop()
    return state()


def enabled() -> bool:
    return _suspended_calls.enabled


def held() -> bool:
    """Whether at least one timed call ran with the modes off and each ended with none of them on again."""
    return _suspended_calls.all_held()


def state() -> dict[str, Any]:
    """``{"suspending", "calls", "held", "on"}``: whether timed calls run with the modes off, how many did, how many
    held, and the modes on this thread now by kind (their names)."""
    return {"suspending": enabled(), **_suspended_calls.counts(),
            "on": {stack.kind: [mode_name(m) for m in modes] for stack, modes in on().items()}}
