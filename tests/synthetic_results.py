"""Synthetic results documents with known answers, for the verdict and report tests.

Every cell's samples are the same seeded series scaled by a known factor,
and each repetition (fresh process) scales it again by its own process
factor, the same for every cell: so the ratio between two cells is exactly
the ratio of their factors, and the processes of a cell disagree by a known,
small amount (as real processes do), which the intervals over processes
carry.
"""

import itertools

import numpy as np

from benchctl._results import document as results, queries, rules
from benchctl._results.analysis import analyse

BASE_NS = 10e6 * (1 + 0.01 * np.random.default_rng(7).standard_normal(16))
# Per-process factors: medians of one cell differ by about half a percent between processes.
PROCESS_FACTORS = (0.995, 1.0, 1.005, 0.998, 1.003)


def _run(cell, rep, ns, faults, readback, phase, arm=None, counters_of=None):
    counters = {}
    if faults is not None:
        counters = {"minor_faults": [faults(cell)] * len(ns), "cpu_migrations": [0] * len(ns)}
    if counters_of is not None:
        counters.update({event: [value] * len(ns) for event, value in counters_of(cell).items()})
    run = {
        "cell": cell, "repetition": rep, "status": "ok",
        "phases": {phase: {"ticks": [int(v) for v in ns], "ns": ns, "counters": counters, "warmup": 0}},
        "readback": readback(cell) if readback else {}, "notes": {},
        "exit_status": 0, "stderr_tail": None,
    }
    if arm is not None:
        run["arm"] = arm
    return run


def make_doc(matrix, factor, faults=None, readback=None, repeat=3, phase="eval", control=False, counters=None):
    """A document for ``matrix`` where cell c's samples in process r are
    ``BASE_NS * factor(c) * PROCESS_FACTORS[r]``.

    ``faults(c)``: minor faults per iteration (None: counters unavailable).
    ``readback(c)``: the run's readback dict. ``control``: the baseline cell
    also runs as the A/A control's arm B, with the same samples.
    ``counters(c)``: {event: per-iteration value} for any counters.
    """
    keys = list(matrix)
    cells = [dict(zip(keys, combo)) for combo in itertools.product(*matrix.values())]
    doc = results.new_document("synthetic", {}, matrix, repeat, {"hostname": "test"},
                               control_cell=cells[0] if control else None)
    for rep in range(repeat):
        for i, cell in enumerate(cells):
            ns = list(np.roll(BASE_NS, rep) * factor(cell) * PROCESS_FACTORS[rep])
            arm = "A" if control and i == 0 else None
            doc["runs"].append(_run(cell, rep, ns, faults, readback, phase, arm, counters))
        if control:
            ns = list(np.roll(BASE_NS, rep) * factor(cells[0]) * PROCESS_FACTORS[rep])
            doc["runs"].append(_run(cells[0], rep, ns, faults, readback, phase, "B", counters))
    return doc


def judge_switched(cause, cell, observed, facts, factor, during=None, failure=None):
    """The one finding a switched cause (``cause``, a SwitchedCause) gives on an explaining run of the baseline and
    its probe cell ``cell`` (``{setting: value}``), three processes each with the control: the probe cell takes
    ``factor`` times the baseline's time and reads back ``observed`` (and ``during``, the in-run check, where given),
    or its workers all failed with ``failure``; ``facts``: what the probe worker saw."""
    (name, value), = cell.items()

    def readback(c):
        if c["with"] != cell:
            return {}
        back = {name: {"requested": value, "applied": observed, "observed": observed}}
        if during is not None:
            back[name]["during"] = during
        return back

    doc = make_doc({"with": [{}, cell]}, factor=lambda c: factor if c["with"] == cell else 1.0, readback=readback,
                   phase="call", control=True)
    if failure is not None:
        for run in doc["runs"]:
            if run["cell"]["with"] == cell:
                run.update(status="failed", phases={}, error=failure)
    doc = analyse(doc)
    found = cause.judge(rules.Context(doc, "call", queries.Comparisons(doc), facts=facts))
    assert len(found) == 1
    return found[0]
