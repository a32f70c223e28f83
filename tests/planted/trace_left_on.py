"""Planted cause: a trace function left on. The setup of an inference step over a stack of small layers starts a
line tracer (``sys.settrace``, as a debugging session or a coverage tool started by the code does) and never stops
it: the interpreter calls it on every Python call, line and return of every later step, torch.nn's module calls
among them. The fix is the same step without the tracer (``Plain``); what it measured in fresh processes is
``bench/plant_toggles.py --only trace_left_on``'s to say."""

import sys

import torch

# What this file plants, for tests/test_explain.py and bench/explain_planted.py (tests/planted/plants.py).
PLANT = {"target": "Traced", "cause": "tracing", "fixed": {"target": "Plain"}}

WIDTH, DEPTH, BATCH = 32, 16, 8
lines = [0]


def _model():
    torch.set_num_threads(1)  # small ops: a second thread only waits (and beside other work oversubscribes)
    torch.manual_seed(0)
    layers = [m for _ in range(DEPTH) for m in (torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU())]
    return torch.nn.Sequential(*layers).eval(), torch.randn(BATCH, WIDTH)


def _step(state):
    model, x = state
    with torch.no_grad():
        return model(x)


def _count_lines(frame, event, arg):  # a line tracer, as debugging or coverage sets one
    if event == "line":
        lines[0] += 1
    return _count_lines


class Traced:
    @staticmethod
    def setup():
        state = _model()
        sys.settrace(_count_lines)  # started, never stopped
        return state

    run = staticmethod(_step)


class Plain:
    setup = staticmethod(_model)
    run = staticmethod(_step)
