"""What the probe worker learns of weight initialisation over its timed iterations: how many modules the calls built
(``torch.nn.Module.__init__``), how many ``torch.nn.init`` functions they called (the outermost of nested ones) and
the time those took, beside the iterations' own time, read back as :class:`InitFacts`.

A module built inside the timed call initialises its weights there, every call: ``nn.Linear`` and the convolutions
draw theirs with ``init.kaiming_uniform_``, embeddings with ``init.normal_``, norms fill theirs with ``init.ones_``
and ``init.zeros_`` (their ``reset_parameters``). A draw of random numbers costs more than the layer's forward pass
on a small batch: a ``Linear(512, 1024)`` and a ``Linear(1024, 512)`` built and run on 32 rows here spent 74% of the
call in ``aten::uniform_``. The ``torch.nn.init`` functions are what every torch module's reset calls (through the
module attribute, so a wrapper there sees them); one imported by name elsewhere is not seen.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from dataclasses import dataclass
from typing import Any, Iterator

from ..._probe import EntryProbe, NoteFacts, ProbedCall, milliseconds

__all__ = ["InitTally", "watching_init", "InitFacts", "InitProbe", "PROBE", "PROBES"]


@dataclass
class InitTally:
    """Over a block: ``modules`` built, ``init_calls`` of torch.nn.init's functions (the outermost of nested ones),
    ``init_s`` the time they took, ``wall_s`` the block's own time."""

    modules: int = 0
    init_calls: int = 0
    init_s: float = 0.0
    wall_s: float = 0.0

    def note(self) -> dict:
        return {"modules": self.modules, "init_calls": self.init_calls, "init_ms": self.init_s * 1e3,
                "wall_ms": self.wall_s * 1e3}


def _draws(function: Any) -> bool:
    """Whether an init function fills a tensor: its first parameter is the tensor (uniform_(tensor, ...)); a
    deprecated alias (uniform(*args)) is judged by its successor. calculate_gain returns a number: not counted."""
    return next(iter(inspect.signature(function).parameters), None) == "tensor"


def _init_functions(init_module: Any) -> dict[str, Any]:
    """torch.nn.init's public functions that fill a tensor, by name (those defined there: not what it imports)."""
    own = {name: f for name, f in vars(init_module).items()
           if not name.startswith("_") and inspect.isfunction(f) and f.__module__ == init_module.__name__}
    return {name: f for name, f in own.items()
            if _draws(f) or (name + "_" in own and _draws(own[name + "_"]))}


@contextlib.contextmanager
def watching_init() -> Iterator[InitTally]:
    """Count the modules built inside the block and time torch.nn.init's functions called in it (torch's own
    functions back after it, also on an exception); yields the :class:`InitTally` it fills."""
    tally = InitTally()
    started = time.perf_counter()
    try:
        import torch
        from torch.nn import init as init_module
    except ImportError:
        yield tally
        tally.wall_s = time.perf_counter() - started
        return
    own_module_init = torch.nn.Module.__init__
    own = _init_functions(init_module)
    depth = [0]  # nested init functions (a deprecated alias calling its successor) count once, the outermost

    def module_init(self: Any, *args: Any, **kwargs: Any) -> None:
        tally.modules += 1
        own_module_init(self, *args, **kwargs)

    def timed(function: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            began = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    tally.init_calls += 1
                    tally.init_s += time.perf_counter() - began
        call.__wrapped__ = function
        return call

    torch.nn.Module.__init__ = module_init
    for name, function in own.items():
        setattr(init_module, name, timed(function))
    try:
        yield tally
    finally:
        tally.wall_s = time.perf_counter() - started
        torch.nn.Module.__init__ = own_module_init
        for name, function in own.items():
            setattr(init_module, name, function)


#: The probe note's key, written and read here only.
_INIT = "weight_init"


@dataclass(frozen=True)
class InitFacts(NoteFacts):
    """Over the probe worker's timed iterations: ``modules`` built, ``init_calls`` of torch.nn.init's functions,
    ``init_ms`` spent in them, ``wall_ms`` the iterations' time."""

    modules: int = 0
    init_calls: int = 0
    init_ms: float = 0.0
    wall_ms: float = 0.0

    @property
    def share(self) -> float:
        """The share of the time spent initialising weights."""
        return min(1.0, self.init_ms / self.wall_ms) if self.wall_ms > 0 else 0.0

    def text(self) -> str:
        """``"over its timed iterations it built 90 modules and called torch.nn.init's functions 60 times: 1.21 s
        initialising weights, 81% of their 1.49 s"``."""
        return (f"over its timed iterations it built {self.modules:,} module{'s' * (self.modules != 1)} and called "
                f"torch.nn.init's functions {self.init_calls:,} time{'s' * (self.init_calls != 1)}: "
                f"{milliseconds(self.init_ms)} initialising weights, {self.share:.0%} of their "
                f"{milliseconds(self.wall_ms)}")


class InitProbe(EntryProbe):
    """The modules built and weights initialised over the timed iterations (none for a workload that times itself:
    its own regions are not the window)."""

    key = "weight_init"
    fact = InitFacts
    entry = _INIT

    def watch(self) -> contextlib.AbstractContextManager:
        return watching_init()

    def record(self, probed: ProbedCall) -> dict:
        tally = probed.watcher(self)
        if probed.call is None or tally is None:
            return {}
        return {_INIT: tally.note()}


PROBE = InitProbe()
PROBES = (PROBE,)
