"""What the probe worker learns of autocast's cache: over its profiled call, how often it was cleared (each time the
code's outermost autocast block exited: :func:`benchctl._causes.autocast_cache.control.counting_clears`), and which
float32 weights of the modules it called under autocast that cache can keep at all (:func:`tallying_weights`), read
back as :class:`AutocastFacts`. It counts during the profiled call rather than in a call of its own."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..._module_calls import seeing_module_calls
from ..._probe import Probe, ProbedCall
from .control import counting_clears

__all__ = ["WeightTally", "tallying_weights", "AutocastFacts", "AutocastProbe", "PROBE", "PROBES"]

#: The probe note's keys, written and read here only.
_CLEARS = "autocast_cache_clears"
_WEIGHTS = "autocast_weights"


@dataclass
class WeightTally:
    """The float32 parameters of the modules called while autocast was on, each counted once (elements): those its
    cache can keep (``cached``) and those it casts anew at every use: not requiring grad (``frozen``) or used under
    inference mode (``inference``)."""

    cached: int = 0
    frozen: int = 0
    inference: int = 0
    _seen: set = field(default_factory=set, repr=False)

    def note(self) -> dict:
        return {"cached": self.cached, "frozen": self.frozen, "inference": self.inference}


def _autocast_on(torch: Any, devices: tuple[str, ...]) -> bool:
    try:
        return any(torch.is_autocast_enabled(device) for device in devices)
    except TypeError:  # torch before 2.4 takes no device: its CPU and CUDA functions apart
        return bool(torch.is_autocast_cpu_enabled() or torch.is_autocast_enabled())


@contextlib.contextmanager
def tallying_weights() -> Iterator[WeightTally]:
    """Tally the float32 parameters of every module called inside the block while autocast is on
    (:func:`~benchctl._module_calls.seeing_module_calls`). Autocast caches the cast of a float32 tensor only where it
    is a leaf that requires grad, outside inference mode (``cached_cast`` in torch's autocast_mode.cpp): a frozen
    weight, or any weight under inference mode, is cast again at every use, inside one autocast block too."""
    import torch

    tally = WeightTally()
    # Asked at every module call of the profiled call: only of the devices there are.
    devices = ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)

    def tallied(module: Any) -> None:
        if not _autocast_on(torch, devices):
            return
        inference = torch.is_inference_mode_enabled()
        for weight in module.parameters(recurse=False):
            if weight.dtype != torch.float32 or id(weight) in tally._seen:
                continue
            tally._seen.add(id(weight))
            if inference:
                tally.inference += weight.numel()
            elif not (weight.requires_grad and weight.is_leaf):
                tally.frozen += weight.numel()
            else:
                tally.cached += weight.numel()

    with seeing_module_calls(tallied):
        yield tally


@dataclass(frozen=True)
class AutocastFacts:
    """In the profiled call: ``clears``, how often autocast's cache of cast weights was cleared; the elements of the
    float32 weights its modules used under autocast that the cache can keep (``cached``), and of those it cannot:
    ``frozen`` (not requiring grad), ``inference`` (used under inference mode)."""

    clears: int = 0
    cached: int = 0
    frozen: int = 0
    inference: int = 0

    @property
    def cleared(self) -> bool:
        return self.clears > 0

    @property
    def uncached(self) -> int:
        return self.frozen + self.inference

    @property
    def mostly_uncached(self) -> bool:
        """Whether the weights autocast casts anew at every use, whatever its cache, are at least half of those it
        cast (by elements): then keeping the cache across calls cannot remove most of the casts."""
        return self.uncached > 0 and self.uncached >= self.cached

    def text(self) -> str:
        """``"in its profiled call autocast's cache of cast weights was cleared 1 time, as its outermost autocast
        block exited"``."""
        times = f"{self.clears:,} time{'s' * (self.clears != 1)}"
        return f"in its profiled call autocast's cache of cast weights was cleared {times}, as its outermost " \
               "autocast block exited"

    def uncached_text(self) -> str:
        """``"100% of the float32 weights its modules used under autocast (16,640 of 16,640 elements) are ones its
        cache cannot keep: they do not require grad"``."""
        total = self.uncached + self.cached
        why = [reason for reason, n in (("they do not require grad", self.frozen),
                                        ("they were used under inference mode", self.inference)) if n]
        return (f"{self.uncached / total:.0%} of the float32 weights its modules used under autocast "
                f"({self.uncached:,} of {total:,} elements) are ones its cache cannot keep: {'; '.join(why)}")

    @staticmethod
    def none_text() -> str:
        return ("autocast's cache was not cleared in its profiled call (no autocast block ran in it, or one stayed "
                "open from before it: the casts already live from one call to the next)")


class AutocastProbe(Probe):
    """The clears of autocast's cache over the profiled call (none for a workload that times itself)."""

    key = "autocast_cache"
    fact = AutocastFacts

    def watch_call(self) -> contextlib.AbstractContextManager:
        return _watching()

    def record(self, probed: ProbedCall) -> dict:
        watched = probed.call_watcher(self)
        if probed.call is None or watched is None:
            return {}  # a @benchctl.workload function times its own iterations: no call was watched
        clears, weights = watched
        return {_CLEARS: clears.count, _WEIGHTS: weights.note()}

    def read(self, note: dict) -> AutocastFacts | None:
        clears = note.get(_CLEARS)
        if clears is None:
            return None
        weights = {k: int(v) for k, v in (note.get(_WEIGHTS) or {}).items() if k in ("cached", "frozen", "inference")}
        return AutocastFacts(clears=int(clears), **weights)

    def from_json(self, data: dict) -> AutocastFacts | None:
        return AutocastFacts(**{k: v for k, v in data.items() if k in AutocastFacts.__dataclass_fields__})


@contextlib.contextmanager
def _watching() -> Iterator[tuple]:
    with counting_clears() as clears, tallying_weights() as weights:
        yield clears, weights


PROBE = AutocastProbe()
PROBES = (PROBE,)
