"""What the probe worker learns of training mode: over its profiled call, every module call counted, those made in
training mode, and by class those of modules that compute differently there (:func:`counting`), read back as
:class:`TrainModeFacts`. It counts during the profiled call (a Python frame more per module call, under the
profiler's own cost) rather than in a call of its own: the workload is not called once more for it. The modules inside
a ``torch.compile``d module run in its graph, not through ``_call_impl``: they are not counted (nor switched by the
control)."""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..._module_calls import seeing_module_calls
from ..._probe import EntryProbe, NoteFacts, ProbedCall

__all__ = ["TOP_CLASSES", "differs_in_training", "Tally", "counting", "TrainModeFacts", "TrainModeProbe", "PROBE",
           "PROBES"]

#: How many module classes the evidence names (the most called first).
TOP_CLASSES = 4


def differs_in_training(module: Any) -> bool:
    """Whether ``module`` computes something else in training mode than in eval mode: dropout (a random mask),
    batch norm and instance norm that track running statistics (the batch's statistics, and an update of the
    running ones), RReLU (a random slope), attention and transformer layers (their fused inference path is taken
    in eval mode only)."""
    import torch.nn as nn
    from torch.nn.modules.batchnorm import _BatchNorm
    from torch.nn.modules.dropout import _DropoutNd
    from torch.nn.modules.instancenorm import _InstanceNorm

    if isinstance(module, _InstanceNorm):
        return bool(module.track_running_stats)
    return isinstance(module, (_DropoutNd, _BatchNorm, nn.RReLU, nn.MultiheadAttention, nn.TransformerEncoderLayer))


@dataclass
class Tally:
    """Module calls over a block: all of them, those in training mode, and by class those of :func:`differs_in_training`
    modules made in training mode."""

    module_calls: int = 0
    training_calls: int = 0
    differing: Counter = field(default_factory=Counter)

    def note(self, top: int = TOP_CLASSES) -> dict:
        return {"module_calls": self.module_calls, "training_calls": self.training_calls,
                "differing_calls": sum(self.differing.values()), "classes": dict(self.differing.most_common(top))}


@contextlib.contextmanager
def counting() -> Iterator[Tally]:
    """Count the module calls made inside the block (torch's own ``_call_impl`` back after it, also on an
    exception); yields the :class:`Tally` it fills."""
    tally = Tally()

    def counted(module: Any) -> None:
        tally.module_calls += 1
        if module.training:
            tally.training_calls += 1
            if differs_in_training(module):
                tally.differing[type(module).__name__] += 1

    with seeing_module_calls(counted):
        yield tally


#: The probe note's key, written and read here only.
_TRAIN_MODE = "train_mode"


@dataclass(frozen=True)
class TrainModeFacts(NoteFacts):
    """In the profiled call: ``module_calls`` module calls, ``training_calls`` of them in training mode,
    ``differing_calls`` of those in modules that compute differently there, ``classes`` the most called of
    those by class."""

    module_calls: int = 0
    training_calls: int = 0
    differing_calls: int = 0
    classes: dict[str, int] = field(default_factory=dict)

    @property
    def differs(self) -> bool:
        return self.differing_calls > 0

    def text(self) -> str:
        """``"in its profiled call, 6 of 11 module calls ran in training mode, 4 of them in modules that compute
        differently there (Dropout ×2, BatchNorm2d ×2)"``."""
        classes = ", ".join(f"{name} ×{n:,}" for name, n in self.classes.items())
        return (f"in its profiled call, {self.training_calls:,} of {self.module_calls:,} module calls ran in training "
                f"mode, {self.differing_calls:,} of them in modules that compute differently there ({classes})")

    def none_text(self) -> str:
        """``"no module that computes differently in training ran in training mode in its profiled call (11 module
        calls, 6 in training mode)"``."""
        return (f"no module that computes differently in training ran in training mode in its profiled call "
                f"({self.module_calls:,} module calls, {self.training_calls:,} in training mode)")


class TrainModeProbe(EntryProbe):
    """The module calls of the profiled call, counted (none for a workload that times itself)."""

    key = "train_mode"
    fact = TrainModeFacts
    entry = _TRAIN_MODE

    def watch_call(self) -> contextlib.AbstractContextManager:
        return counting()

    def record(self, probed: ProbedCall) -> dict:
        tally = probed.call_watcher(self)
        if probed.call is None or tally is None:
            return {}  # a @benchctl.workload function times its own iterations: no call was counted
        return {_TRAIN_MODE: tally.note()}


PROBE = TrainModeProbe()
PROBES = (PROBE,)
