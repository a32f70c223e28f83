"""The ``train_mode`` setting: modules in the mode the code left them, or in eval mode for each timed call."""

from __future__ import annotations

from typing import Any

from ..._setting import AroundCalls
from . import control as train_mode

__all__ = ["TrainMode", "TRAIN_MODE", "SETTINGS"]


class TrainMode(AroundCalls):
    """``train_mode``: modules in the mode the workload's code left them (``code``), or each module called in a
    timed call of a user workload in eval mode for that call (``eval``: :func:`benchctl._causes.train_mode.control.
    evaluating`)."""

    name = "train_mode"
    help = ("code | eval: modules in the mode the workload's code left them, or every module called in each timed "
            "call of a callable or setup()/run(state) workload in eval mode for that call, as model.eval() would "
            "(a timing probe: Dropout then passes its input, BatchNorm uses its running statistics)")
    order = 50
    needs_torch = True
    probe = "eval"
    control = train_mode
    held_words = "with its modules in eval mode"
    # No counter shows it: the cause reads the modules the probe worker's call ran in training mode (its evidence).
    mechanism = ("modules left in training mode doing training work on every call: Dropout drawing a random mask "
                 "and scaling by it, BatchNorm computing each batch's statistics and updating its running ones, "
                 "attention layers off their fused inference path")

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs with its modules in eval mode (eval) or as left (code).
        return train_mode.evaluate_calls() if value == "eval" else train_mode.restore_calls()


TRAIN_MODE = TrainMode()
SETTINGS = (TRAIN_MODE,)
