"""The report names a process the machine slowed (results.outlying), and only such a process."""

import pytest

from benchctl._results import outlying, queries, report, wording
from benchctl._results.summary import summarize
from synthetic_results import make_doc

MATRIX = {"alloc": ["default", "retain"]}
RETAIN = {"alloc": "retain"}


def _doc(repeat=5, slow=1.5, faults=2000, switches=60, slow_faults=None, slow_switches=None, round_=3):
    doc = make_doc(MATRIX, lambda c: 1.0, faults=lambda c: faults, repeat=repeat,
                   counters=lambda c: {"context_switches": switches})
    for run in doc["runs"]:
        if run["cell"] == RETAIN and run["repetition"] == round_:
            data = run["phases"]["eval"]
            data["ns"] = [v * slow for v in data["ns"]]
            if slow_faults is not None:
                data["counters"]["minor_faults"] = [slow_faults] * len(data["ns"])
            if slow_switches is not None:
                data["counters"]["context_switches"] = [slow_switches] * len(data["ns"])
    return doc


def test_a_slow_process_counting_no_more_is_named_with_its_counters():
    slowed = outlying.outlying_process(_doc(slow_faults=1500), "eval", RETAIN)
    assert slowed is not None
    assert slowed.repetition == 3 and slowed.others == 4
    assert slowed.ratio == pytest.approx(1.5, rel=0.02)
    assert [c for c, _, _ in slowed.counters] == ["minor_faults", "context_switches"]
    text = slowed.describe()
    assert f"round 4 ran {wording.factor(slowed.ratio)}× slower than the cell's other 4" in text
    assert ("with 1,500 and 60 page faults and context switches per iteration against their 2,000 and 60: "
            "nothing counted explains it") in text


def test_without_counters_it_says_none_was_read():
    doc = _doc()
    for run in doc["runs"]:
        run["phases"]["eval"]["counters"] = {}
    slowed = outlying.outlying_process(doc, "eval", RETAIN)
    assert slowed.counters == () and ": no counter was read that could explain it, as when" in slowed.describe()


def test_extra_faults_too_few_to_cost_the_slowdown_do_not_explain_it():
    # 700 more faults an iteration cost at most 2.1 ms (3 µs each) of the 5 ms this process is slower by.
    slowed = outlying.outlying_process(_doc(faults=100, slow_faults=800), "eval", RETAIN)
    assert slowed is not None and slowed.counters[0] == ("minor_faults", 800.0, 100.0)
    # 900 more could cost 2.7 ms, over half of it: they may be what slowed it.
    assert outlying.outlying_process(_doc(faults=100, slow_faults=1000), "eval", RETAIN) is None


def test_the_report_prints_it_under_its_cell_and_nowhere_else():
    doc = _doc()
    doc["summary"] = summarize(doc)
    notes = [line for line in report.format_report(doc).splitlines() if "nothing counted explains it" in line]
    assert len(notes) == 1 and notes[0].startswith("  note [alloc=retain]:")


@pytest.mark.parametrize("change", [
    {"slow_faults": 200_000},    # it faulted: the cell's own behaviour (resnet_order's train_then_eval/default)
    {"slow_switches": 500},      # it was switched out far more: preempted or waiting, which the counters show
    {"slow": 0.6},               # faster is not slowed
    {"slow": 1.0},               # processes 0.5% apart: nothing stands out
    {"slow": 1.12},              # within four of the floor's standard deviations
    {"repeat": 3},               # two others say nothing of the spread
])
def test_no_process_is_named_without_one_the_counters_leave_unexplained(change):
    assert outlying.outlying_process(_doc(**change), "eval", RETAIN) is None


def test_the_cells_other_processes_set_the_bar_when_they_spread_more_than_the_floor():
    doc = _doc(slow=1.5)
    # The others spread by about 15% (log sd): 1.5x is then within four of their standard deviations.
    for run, f in zip((r for r in doc["runs"] if r["cell"] == RETAIN and r["repetition"] != 3),
                      (0.85, 1.0, 1.15, 1.3)):
        run["phases"]["eval"]["ns"] = [v * f for v in run["phases"]["eval"]["ns"]]
    assert outlying.outlying_process(doc, "eval", RETAIN) is None


def _finding(status, doc):
    from benchctl._results import processes
    from benchctl._results.findings import Finding

    values = {c: queries.process_medians(doc, "eval", {"alloc": c}) for c in ("default", "retain")}
    cmp = processes.compare(values["retain"], values["default"])
    return Finding("retain_effect", "eval", status, "alloc=retain against alloc=default", cmp,
                   a=RETAIN, b={"alloc": "default"})


def test_an_open_finding_says_which_slowed_process_widens_it_and_a_settled_one_does_not():
    from benchctl._cli.render import render
    from benchctl._results.findings import Status

    doc = _doc()
    doc["summary"] = summarize(doc)
    open_one, settled = _finding(Status.UNRESOLVED, doc), _finding(Status.NOT_CAUSE, doc)
    assert [o.cell for o in outlying.widening(doc, open_one)] == [RETAIN]
    assert outlying.widening(doc, settled) == []
    ratio = wording.factor(outlying.outlying_process(doc, "eval", RETAIN).ratio)
    doc["verdict"] = [open_one.to_json()]
    line = render(doc).splitlines()[-1]
    assert line.startswith(" ? alloc=retain against alloc=default")
    assert line.endswith(f"; in alloc=retain the process of round 4 ran {ratio}× slower than the cell's other 4, "
                         "nothing counted explaining it (the note under the table)")
    doc["verdict"] = [settled.to_json()]
    assert "the process of round" not in render(doc).splitlines()[-1]
