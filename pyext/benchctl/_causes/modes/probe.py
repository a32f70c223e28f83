"""What the probe worker learns of torch's modes: over its profiled call, the modes on as it started, the modes the
call entered itself, and how often each ran its handler (:func:`watching`), read back as :class:`ModesFacts`. It
counts during the profiled call (a Python frame more per handler run, under the profiler's own cost) rather than in
a call of its own. A mode the call enters itself is named but not probed: the control cannot take it off from
outside the call; torch's own machinery (an infra dispatch mode, a class of a private ``torch._`` module: tracing,
fake tensors) is not counted as entered."""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..._probe import EntryProbe, NoteFacts, ProbedCall
from .control import STACKS, mode_name, on, sets_device, switchable

__all__ = ["Tally", "watching", "ModesFacts", "ModesProbe", "PROBE", "PROBES"]

# Each stack's handler by its kind, as the facts name it.
_HANDLER = {stack.kind: stack.handler for stack in STACKS}


@dataclass
class Tally:
    """The modes on as a block started (``{kind: names}``, the names of those the control would keep and of those
    that set the default device), the modes the block entered (``{kind: {name: times}}``), and how often each ran
    its handler inside it."""

    on: dict[str, list[str]] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    runs: Counter = field(default_factory=Counter)
    entered: defaultdict = field(default_factory=lambda: defaultdict(Counter))

    def note(self) -> dict:
        return {"on": self.on, "kept": self.kept, "devices": self.devices, "runs": dict(self.runs),
                "entered": {kind: dict(names) for kind, names in self.entered.items()}}


def _users(mode: Any) -> bool:
    """Whether ``mode`` is one of the code's own (or a torch tool it chose: FlopCounterMode, a device), not torch's
    machinery entering a mode inside an op (an infra dispatch mode, a class of a private ``torch._`` module)."""
    infra = getattr(mode, "is_infra_mode", None)
    with contextlib.suppress(Exception):
        if callable(infra) and infra():
            return False
    return not type(mode).__module__.startswith("torch._")


@contextlib.contextmanager
def watching() -> Iterator[Tally]:
    """Count, inside the block, the handler runs of each mode on as it starts and of each mode of the code's own
    it enters (each mode class's handler wrapped for the block, and torch's ``_push_mode`` of each stack, the
    originals back after it, also on an exception); yields the :class:`Tally` it fills."""
    tally = Tally()
    wrapped: list[tuple[Any, str, Any]] = []

    def count_handler(mode: Any, handler: str) -> None:
        # The class that defines the handler the mode runs (a subclass may inherit it): wrapped once.
        cls = next((c for c in type(mode).__mro__ if handler in vars(c)), None)
        if cls is None or any(cls is done for done, _, _ in wrapped):
            return
        own = vars(cls)[handler]
        try:
            setattr(cls, handler, _counting(own, tally.runs))
        except (TypeError, AttributeError):  # a class that takes no new attribute (native): not counted
            return
        wrapped.append((cls, handler, own))

    try:
        for stack, modes in on().items():
            tally.on[stack.kind] = [mode_name(mode) for mode in modes]
            tally.kept += [mode_name(mode) for mode in modes if not switchable(mode)]
            tally.devices += [mode_name(mode) for mode in modes if sets_device(mode)]
            for mode in modes:
                count_handler(mode, stack.handler)
        for stack in STACKS:
            try:
                module = stack._torch()
                own_push = module._push_mode
            except (ImportError, AttributeError):  # a torch without that stack
                continue

            def pushing(mode: Any, _own: Any = own_push, _stack: Any = stack) -> Any:
                if _users(mode):
                    tally.entered[_stack.kind][mode_name(mode)] += 1
                    count_handler(mode, _stack.handler)
                return _own(mode)

            module._push_mode = pushing
            wrapped.append((module, "_push_mode", own_push))
        yield tally
    finally:
        for holder, name, own in reversed(wrapped):
            setattr(holder, name, own)


def _counting(own: Any, runs: Counter) -> Any:
    """``own`` (a mode class's handler as its class holds it: a function, or a class- or static method) counting
    its runs under the name of the mode that ran it (its class's, for a class- or static method)."""
    if isinstance(own, (classmethod, staticmethod)):
        inner = own.__func__

        def counted_unbound(*args: Any, **kwargs: Any) -> Any:
            first = args[0] if args and isinstance(own, classmethod) else None
            runs[getattr(first, "__qualname__", "?").rsplit("<locals>.", 1)[-1]] += 1
            return inner(*args, **kwargs)

        return type(own)(counted_unbound)

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        runs[mode_name(self)] += 1
        return own(self, *args, **kwargs)

    return counted


#: The probe note's key, written and read here only.
_MODES = "modes"


@dataclass(frozen=True)
class ModesFacts(NoteFacts):
    """As the profiled call started: ``on``, the modes on by kind (their names, the innermost last); ``kept``, those
    the control leaves on (a ``DeviceContext`` making tensors elsewhere than the CPU); ``runs``, how often each ran
    its handler in the call; ``devices``, those that set the default device; ``entered``, the modes of the code's
    own the call entered itself, by kind (``{kind: {name: times}}``; none in a results file from before they were
    counted)."""

    on: dict[str, list[str]] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    runs: dict[str, int] = field(default_factory=dict)
    devices: list[str] = field(default_factory=list)
    entered: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [name for modes in self.on.values() for name in modes]

    @property
    def switchable(self) -> list[str]:
        """The modes on that the control takes off."""
        kept = list(self.kept)
        out = []
        for name in self.names:
            if name in kept:
                kept.remove(name)
            else:
                out.append(name)
        return out

    def text(self) -> str:
        """``"in its profiled call, a torch function mode was on from its start: DeviceContext(cpu), its handler run
        2,400 times"``."""
        parts = []
        for kind, modes in self.on.items():
            for name in modes:
                runs = self.runs.get(name)
                ran = f", its {_HANDLER[kind]} run {runs:,} times" if runs is not None else ""
                parts.append(f"{name} ({kind} mode{ran})")
        kept = f"; left on by the probe: {', '.join(self.kept)} (it sets the device tensors are made on)" \
            if self.kept else ""
        return f"in its profiled call, on from its start: {'; '.join(parts)}{kept}"

    def entered_text(self) -> str:
        """``"its call entered FlopCounterMode itself (torch dispatch mode, 1 time; its __torch_dispatch__ run 96
        times)"``; "" where it entered none."""
        parts = []
        for kind, names in self.entered.items():
            for name, times in names.items():
                runs = self.runs.get(name)
                ran = f"; its {_HANDLER[kind]} run {runs:,} times" if runs else ""
                parts.append(f"{name} ({kind} mode, {times:,} time{'s' * (times != 1)}{ran})")
        return f"its call entered {', '.join(parts)} itself" if parts else ""

    def none_text(self) -> str:
        if self.names:
            return (f"the only modes on as its profiled call started set the device tensors are made on "
                    f"({', '.join(self.kept)}): taken off, the code would make them on the CPU")
        return "no torch function or dispatch mode was on as its profiled call started"


class ModesProbe(EntryProbe):
    """The modes on around the profiled call, and their handlers' runs (none for a workload that times itself)."""

    key = "modes"
    fact = ModesFacts
    entry = _MODES

    def watch_call(self) -> contextlib.AbstractContextManager:
        return watching()

    def record(self, probed: ProbedCall) -> dict:
        tally = probed.call_watcher(self)
        if probed.call is None or tally is None:
            return {}  # a @benchctl.workload function times its own iterations: no call was watched
        return {_MODES: tally.note()}


PROBE = ModesProbe()
PROBES = (PROBE,)
