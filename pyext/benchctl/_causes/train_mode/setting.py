"""The ``train_mode`` setting: modules in the mode the code left them, or in eval mode for each timed call."""

from __future__ import annotations

from typing import Any

from ..._setting import Setting
from . import control as train_mode

__all__ = ["TrainMode", "TRAIN_MODE", "SETTINGS"]


class TrainMode(Setting):
    """``train_mode``: modules in the mode the workload's code left them (``code``), or each module called in a
    timed call of a user workload in eval mode for that call (``eval``: :func:`benchctl._causes.train_mode.control.
    evaluating`)."""

    name = "train_mode"
    help = ("code | eval: modules in the mode the workload's code left them, or every module called in each timed "
            "call of a callable or setup()/run(state) workload in eval mode for that call, as model.eval() would "
            "(a timing probe: Dropout then passes its input, BatchNorm uses its running statistics)")
    order = 50
    needs_torch = True
    in_process = True  # the evaluating context is put around the timed calls and taken out in a running process
    held_by_calls = True  # during() reads the calls since the switch
    unapplied = "code"
    probe = "eval"
    # No counter shows it: the cause reads the modules the probe worker's call ran in training mode (its evidence).
    mechanism = ("modules left in training mode doing training work on every call: Dropout drawing a random mask "
                 "and scaling by it, BatchNorm computing each batch's statistics and updating its running ones, "
                 "attention layers off their fused inference path")

    def canonical(self, value: Any) -> str:
        return self._choice(value, ("code", "eval"))

    def apply(self, value: str) -> Any:
        return self.switch(value)

    def switch(self, value: str) -> Any:
        # Between timed iterations: the next call runs with its modules in eval mode (eval) or as left (code).
        return train_mode.evaluate_calls() if value == "eval" else train_mode.restore_calls()

    def facts(self, observed: dict) -> dict:
        # Whether every timed call held, not how many ran: a time target runs a different count in each process.
        calls = observed.get("calls")
        return {"held": bool(calls) and observed.get("held") == calls}

    def facts_phrase(self, facts: dict) -> str:
        return "every timed call read back with its modules in eval mode" if facts.get("held") else ""

    def during(self, value: str) -> str | None:
        # Sampled after every timed iteration: "code" once a call ran with torch's call path as the code had it.
        if value == "code":
            return None
        return "eval" if train_mode.held() else "code"

    def readback(self, value: str) -> dict:
        return train_mode.state()


TRAIN_MODE = TrainMode()
SETTINGS = (TRAIN_MODE,)
