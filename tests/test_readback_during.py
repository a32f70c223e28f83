"""A probe the workload's own code undoes: read back during the timed iterations, reported, never judged."""

import textwrap

import pytest

from benchctl import fpenv

from benchctl._causes.placement.rule import Placement
from benchctl._causes.threads.rule import Threads
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.findings import Status
from benchctl._results.verdict import Gap, SettingEffect
from benchctl._run import runner
from test_causes import PROBES, facts
from synthetic_results import make_doc

UNDONE = ("the workload's own code set threads=2 during the timed iterations: the threads=1 probe was not "
          "measured")


def test_a_thread_count_the_setup_replaces_is_recorded_as_not_held(tmp_path):
    path = tmp_path / "resets_threads.py"
    path.write_text(textwrap.dedent("""
        import torch

        def setup():
            torch.set_num_threads(2)

        def run(state):
            sum(range(1000))
    """))
    doc = runner.run_matrix(f"{path}", {"iterations": 3}, {"threads": [1]}, progress=False, control=False)
    [run] = doc["runs"]
    assert run["status"] == "ok", run.get("error")
    during = run["readback"]["threads"]["during"]
    assert (during["held"], during["seen"]) == (False, 2) and 1 <= during["samples"] <= 3  # once a window at least
    assert queries.probe_held(doc, {"threads": 1}, "threads") == (False, 2)


def test_a_thread_count_left_alone_holds(tmp_path):
    path = tmp_path / "leaves_threads.py"
    path.write_text("def work():\n    return sum(range(1000))\n")
    doc = runner.run_matrix(f"{path}:work", {"iterations": 2}, {"threads": [1]}, progress=False, control=False)
    [run] = doc["runs"]
    during = run["readback"]["threads"]["during"]
    assert (during["held"], during["seen"]) == (True, 1) and 1 <= during["samples"] <= 2
    assert queries.probe_held(doc, {"threads": 1}, "threads") == (True, None)


def _undone_in_threads_cell(cell):
    """The readback of a run whose code replaced threads=1 by 2 (every other cell holds what it asked)."""
    if cell["with"] == {"threads": 1}:
        return {"threads": {"requested": 1, "observed": 2, "during": {"held": False, "seen": 2, "samples": 16}}}
    return {}


def test_the_engine_reports_an_undone_probe_and_never_judges_it():
    # Planted: one thread is 3.3x faster, with context switches falling: judged, it would be the cause.
    doc = analyse(make_doc({"with": PROBES}, factor=lambda c: 0.3 if c["with"] == {"threads": 1} else 1.0,
                           counters=lambda c: {"context_switches": 5.0 if c["with"] == {"threads": 1} else 400.0},
                           readback=_undone_in_threads_cell, phase="call", control=True))
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=facts())
    assert ctx.probe_held({"with": {"threads": 1}}, "threads") == (False, 2)
    [found] = Threads().judge(ctx)
    assert found.status is Status.UNRESOLVED and found.mark == "?" and not found.is_open
    assert found.message == f"{Threads.title}: {UNDONE}"
    assert found.evidence["undone"] == {"setting": "threads", "requested": 1, "seen": 2}
    # The generic rule says the same of that cell and still judges the others.
    effects = SettingEffect().judge(ctx)
    undone = [f for f in effects if f.a == {"with": {"threads": 1}}]
    assert [(f.status, f.message) for f in undone] == [(Status.UNRESOLVED, UNDONE)]
    assert all(f.comparison is not None for f in effects if f not in undone)
    # Causes whose probes held are judged as before.
    assert Placement().judge(ctx)[0].comparison is not None


def test_a_flush_mode_the_code_clears_is_recorded_as_not_held(tmp_path):
    if not fpenv.supported()[0]:
        pytest.skip(f"no FP control here: {fpenv.supported()[1]}")
    path = tmp_path / "clears_ftz.py"
    path.write_text(textwrap.dedent("""
        import torch

        def work():
            torch.set_flush_denormal(False)
    """))
    doc = runner.run_matrix(f"{path}:work", {"iterations": 2}, {"ftz": ["process"]}, progress=False, control=False)
    [run] = doc["runs"]
    during = run["readback"]["ftz"]["during"]
    assert (during["held"], during["seen"]) == (False, "off") and 1 <= during["samples"] <= 2


def test_a_focus_gap_whose_cell_was_undone_is_not_measured():
    doc = analyse(make_doc({"threads": [4, 1]}, factor=lambda c: 0.3 if c["threads"] == 1 else 1.0,
                           readback=lambda c: {"threads": {"requested": c["threads"], "observed": 2,
                                                           "during": {"held": False, "seen": 2, "samples": 16}}}
                           if c["threads"] == 1 else {}, phase="call"))
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), focus="threads")
    [found] = Gap().judge(ctx)
    assert (found.status, found.message, found.a) == (Status.UNRESOLVED, UNDONE, {"threads": 1})
