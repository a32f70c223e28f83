"""Verdict rules on synthetic results with known answers."""

import math

import pytest

from benchctl._results import queries, rules, verdict
from benchctl._results.analysis import analyse
from benchctl._results.comparison import FLOOR, Comparison
from benchctl._results.verdict import CLOSED_SHARE, GapUnderSetting
from benchctl._results.findings import Finding, Status
from synthetic_results import make_doc

ORDERS = ["eval_only", "train_then_eval"]


def _only(found, rule, **match):
    found = [Finding.from_json(f) for f in found]
    hits = [f for f in found if f.rule == rule and all(getattr(f, k) == v for k, v in match.items())]
    assert len(hits) == 1, (rule, match, [(f.rule, f.setting) for f in found])
    return hits[0]


def allocator_story():
    """eval_only is 1.5x slower with 340k faults/iter unless alloc=retain: then equal, 20k faults."""
    def slow(c):
        return c["order"] == "eval_only" and c["alloc"] == "default"

    return make_doc({"order": ORDERS, "alloc": ["default", "retain"]},
                    factor=lambda c: 1.5 if slow(c) else 1.0,
                    faults=lambda c: 340_000 if slow(c) else 20_000,
                    readback=lambda c: {"alloc": {"observed": {
                        "large_block_mapping": "[heap]" if c["alloc"] == "retain" else "anonymous"}}})


def test_a_counter_that_moved_with_the_gap_is_said_in_its_own_unit():
    """The wait for a CPU is kept in nanoseconds and said in milliseconds, as its words say (the gap's closing
    sentence said "ms waiting for a CPU/iter go from 225.1M to 5.7M" for 225 ms)."""
    from benchctl._results import counter_evidence as ce
    assert ce.change_text(ce.RUNQUEUE_WAIT, 225.1e6, 5.7e6) == "ms waiting for a CPU/iter go from 225 to 5.7"
    assert ce.change_text(ce.MINOR_FAULTS, 340_000, 20_000) == "minor page faults/iter go from 340k to 20k"


def test_allocator_closes_the_gap_and_faults_move_with_it():
    doc = analyse(allocator_story(), focus="order")
    found = doc["verdict"]
    gap = _only(found, "gap")
    assert gap.a == {"order": "eval_only", "alloc": "default"}
    assert gap.b == {"order": "train_then_eval", "alloc": "default"}
    assert gap.comparison.ratio == pytest.approx(1.5)
    assert gap.comparison.ci95[0] > 1.4 and gap.comparison.ci95[1] < 1.6 and gap.comparison.beyond_band
    assert gap.message.startswith("order=eval_only is 1.50× slower than order=train_then_eval")

    closes = _only(found, "closes_gap")
    assert closes.setting == "alloc=retain" and closes.explains is True
    assert closes.comparison.ratio == pytest.approx(1.0)
    assert closes.comparison.beyond_band is False
    assert closes.evidence["counters_moving_with_gap"] == ["minor_faults_per_iter"]
    assert closes.evidence["counters"]["minor_faults_per_iter"] == {
        "a": 340_000, "b": 20_000, "a_with_setting": 20_000, "b_with_setting": 20_000}
    assert closes.evidence["readback"]["a"] == {"large_block_mapping": "[heap]", "preload_mapped": None}
    assert "a 64 MiB malloc read back from [heap]" in closes.message
    assert "minor page faults/iter go from 340k to 20k" in closes.message
    assert closes.message.endswith("the slowdown is memory returned to the OS and faulted back in")

    effect = _only(found, "setting_effect", setting="alloc=retain")
    assert effect.comparison.ratio == pytest.approx(1 / 1.5) and effect.status is Status.MEASURED
    assert "alloc=retain is 1.50× faster than alloc=default" in effect.message


def test_ftz_that_changes_nothing_is_reported_as_such():
    doc = make_doc({"order": ORDERS, "ftz": ["off", "process"]},
                   factor=lambda c: 1.5 if c["order"] == "eval_only" else 1.0,
                   readback=lambda c: {"ftz": {"observed": {"flushed": 3 if c["ftz"] == "process" else 0,
                                                            "threads": 3}}})
    found = analyse(doc, focus="order")["verdict"]
    keeps = _only(found, "keeps_gap")
    assert keeps.setting == "ftz=process" and keeps.explains is False
    assert ("with ftz=process (FTZ/DAZ read back on 3/3 threads) the gap order=eval_only vs order=train_then_eval "
            "is 1.50× slower") in keeps.message
    assert keeps.message.endswith("ftz=process does not explain the gap")
    effect = _only(found, "setting_effect", setting="ftz=process")
    assert effect.comparison.ratio == pytest.approx(1.0) and effect.comparison.beyond_band is False
    assert effect.explains is False
    assert effect.comparison.outcome == "no_effect" and effect.comparison.band == pytest.approx(0.05)
    assert effect.message.startswith("no difference beyond ±5% between ftz=process and ftz=off (ratio 1.000×")
    assert not [f for f in map(Finding.from_json, found) if f.explains]


@pytest.mark.parametrize("under, rule, explains", [
    (1.2, "narrows_gap", False),      # log 1.2 / log 1.5 = 0.45 of the gap is left
    (1.05, "closes_gap", True),       # 0.12 of the gap left: closed even though still significant
    (1.45, "keeps_gap", False),
    (0.6, "reverses_gap", False),
])
def test_how_much_of_the_gap_a_setting_closes(under, rule, explains):
    def factor(c):
        if c["order"] != "eval_only":
            return 1.0
        return 1.5 if c["threads"] == 2 else under

    doc = make_doc({"order": ORDERS, "threads": [2, 1]}, factor=factor)
    found = analyse(doc, focus="order")["verdict"]
    hit = _only(found, rule, setting="threads=1")
    assert hit.explains is explains
    assert hit.comparison.ratio == pytest.approx(under)
    if rule == "closes_gap":  # what is left is said as a remainder, never as a second, open question
        assert "the gap order=eval_only vs order=train_then_eval shrinks from 1.50× [95% CI" in hit.message
        assert "to 1.05× [95% CI" in hit.message and "unresolved" not in hit.message


def test_a_gap_left_within_the_band_is_closed_however_small_the_gap_was():
    """A 1.12x gap left at 1.03x: more than a quarter of the gap's log, but no difference beyond the band is
    left, which is all a run can resolve (in ten runs of resnet_order such remainders, 1.010x [0.961, 1.06]
    within ±6%, stayed 'open' to the end of the budget)."""
    def factor(c):
        if c["order"] != "eval_only":
            return 1.0
        return 1.12 if c["threads"] == 2 else 1.03

    doc = make_doc({"order": ORDERS, "threads": [2, 1]}, factor=factor)
    found = analyse(doc, focus="order")["verdict"]
    hit = _only(found, "closes_gap", setting="threads=1")
    assert hit.explains and hit.comparison.outcome == "no_effect"
    assert "the gap order=eval_only vs order=train_then_eval is within ±5% (ratio 1.03" in hit.message
    assert hit.message.endswith("threads=1 closes the gap")


def _comparison(ratio, lo, hi, df=8.0):
    return Comparison(ratio, (lo, hi), 5, 5, ratio, 1.0, df=df).judged(0.05)


@pytest.mark.parametrize("gap, left, does", [
    ((1.48, 1.40, 1.56), (0.983, 0.88, 1.09), "closes"),    # at most 18% of the gap left
    ((1.44, 1.24, 1.69), (1.028, 0.956, 1.11), "closes"),   # at most 24% left (one-sided; the two-sided top: 28%)
    ((1.44, 1.24, 1.69), (1.04, 0.96, 1.13), "unresolved"),  # up to 29% may be left
    ((1.44, 1.24, 1.69), (1.15, 1.10, 1.20), "narrows"),
])
def test_a_gap_is_closed_by_the_interval_of_the_share_left(gap, left, does):
    """Remainders from resnet_order runs on this machine: the first stayed 'open' while its top (1.09x) was
    judged against the gap's bottom (1.40x), two 95% ends at once; the share left r/g has its own bound."""
    comparison = _comparison

    base, under = comparison(*gap), comparison(*left)
    share = GapUnderSetting.share_left_upper(base, under)
    assert (share <= CLOSED_SHARE) is (does == "closes")
    outcome = GapUnderSetting.outcome(base, under, "alloc=retain")
    assert outcome[0] == does
    if does == "closes":
        assert outcome[2] == f": alloc=retain closes the gap (at most {share:.0%} of it is left)"
    # the same gap slower the other way round (b slower than a) is judged alike
    flipped = GapUnderSetting.outcome(comparison(1 / gap[0], 1 / gap[2], 1 / gap[1]),
                                      comparison(1 / left[0], 1 / left[2], 1 / left[1]), "alloc=retain")
    assert flipped[0] == does


def test_no_gap_and_a_gap_only_under_a_setting():
    doc = make_doc({"order": ORDERS, "pin": ["off", "compact"]},
                   factor=lambda c: 2.0 if (c["order"], c["pin"]) == ("eval_only", "compact") else 1.0)
    found = analyse(doc, focus="order")["verdict"]
    gap = _only(found, "gap")
    assert gap.comparison.beyond_band is False and gap.comparison.ratio == pytest.approx(1.0)
    assert gap.message.startswith("no difference beyond ±5% between order=eval_only and order=train_then_eval")
    opens = _only(found, "opens_gap", setting="pin=compact")
    assert opens.explains is False and opens.message.endswith("the gap appears only with this setting")


def test_no_gap_to_close_is_said_with_the_gap_measured_without_the_setting():
    doc = make_doc({"order": ORDERS, "pin": ["off", "compact"]}, factor=lambda c: 1.0)
    no = _only(analyse(doc, focus="order")["verdict"], "no_gap", setting="pin=compact")
    assert no.explains is False
    assert no.message.endswith("there is no gap to close (without pin=compact it is within ±5% (ratio 1.000× "
                               "[95% CI 0.991, 1.009]))")


def test_without_focus_only_setting_effects():
    found = analyse(allocator_story())["verdict"]
    assert {f.rule for f in map(Finding.from_json, found)} == {"setting_effect"}
    assert sorted(f.setting for f in map(Finding.from_json, found)) == ["alloc=retain", "order=train_then_eval"]


def test_missing_cells_are_skipped_not_invented():
    doc = allocator_story()
    doc["runs"] = [r for r in doc["runs"] if r["cell"] != {"order": "train_then_eval", "alloc": "retain"}]
    found = analyse(doc, focus="order")["verdict"]
    assert not [f for f in found if f["rule"] == "closes_gap"]
    assert _only(found, "gap").comparison.ratio == pytest.approx(1.5)


def test_unknown_focus():
    with pytest.raises(ValueError, match="focus 'batch' is not a matrix key"):
        verdict.findings(allocator_story(), focus="batch")


def test_pairs_stats_refuses_are_reported_not_dropped():
    doc = make_doc({"order": ORDERS}, factor=lambda c: 0.0 if c["order"] == "eval_only" else 1.0)
    found = analyse(doc, focus="order")["verdict"]
    (refused,) = map(Finding.from_json, found)
    assert refused.rule == "not_comparable" and refused.comparison is None
    assert refused.message.startswith("cannot compare order=eval_only with order=train_then_eval: per-process "
                                         "medians must be finite and > 0")


def test_differences_inside_the_floor_are_no_effect():
    """A 3% difference clearly apart from 1, yet wholly inside the 5% band: resolved as no effect."""
    assert FLOOR == pytest.approx(0.05)
    doc = make_doc({"order": ORDERS}, factor=lambda c: 1.03 if c["order"] == "eval_only" else 1.0)
    found = analyse(doc, focus="order")["verdict"]
    gap = _only(found, "gap")
    assert gap.comparison.ratio == pytest.approx(1.03)
    assert gap.comparison.ci95[0] > 1.0, "the synthetic processes separate the cells statistically"
    assert gap.comparison.beyond_band is False and gap.comparison.outcome == "no_effect"
    assert gap.message.startswith("no difference beyond ±5% between order=eval_only")


@pytest.mark.parametrize("factor, outcome", [(1.06, "unresolved"), (1.08, "effect")])
def test_a_difference_is_called_only_when_its_interval_clears_the_band(factor, outcome):
    """1.06 with an interval of about ±1% reaches below 1.05: unresolved; 1.08 clears it."""
    doc = make_doc({"order": ORDERS}, factor=lambda c: factor if c["order"] == "eval_only" else 1.0)
    gap = _only(analyse(doc, focus="order")["verdict"], "gap")
    assert gap.comparison.outcome == outcome and gap.comparison.beyond_band is (outcome == "effect")
    if outcome == "effect":
        assert gap.message.startswith("order=eval_only is 1.08× slower than order=train_then_eval [95% CI 1.0")
    else:
        assert "unresolved" in gap.message and "crosses the ±5% band" in gap.message


def test_processes_are_the_unit_of_the_interval():
    """Two processes a cell whose medians differ by 10%: a 7% gap is not resolved, though the pooled
    iterations (tight within each process) would separate the cells."""
    doc = make_doc({"order": ORDERS}, factor=lambda c: 1.07 if c["order"] == "eval_only" else 1.0, repeat=2)
    for run in doc["runs"]:
        if run["repetition"] == 1:
            run["phases"]["eval"]["ns"] = [v * 1.10 for v in run["phases"]["eval"]["ns"]]
    ctx = rules.Context(doc, "eval", queries.Comparisons(doc), "order")
    cmp = ctx.compare({"order": "eval_only"}, {"order": "train_then_eval"})
    assert cmp.k_a == cmp.k_b == 2 and cmp.method.startswith("Welch t interval")
    lo, hi = cmp.ci95
    assert not cmp.beyond_band and cmp.outcome == "unresolved"
    assert (hi - lo) > 0.08, "the interval spans the 10% between processes"


def test_one_process_per_cell_calls_no_difference_and_says_why():
    doc = make_doc({"order": ORDERS}, factor=lambda c: 1.5 if c["order"] == "eval_only" else 1.0, repeat=1)
    gap = _only(analyse(doc, focus="order")["verdict"], "gap")
    assert gap.comparison.outcome == "one_process" and gap.comparison.ci95 is None
    assert gap.comparison.beyond_band is False
    assert "no difference is called without two or more fresh processes per cell" in gap.message


def test_a_gap_hidden_by_noise_is_not_called_closed():
    """Under alloc=retain one process is as slow as the gap, the other is not: the gap is
    unresolved there, and that is not evidence that retain closes it."""
    doc = allocator_story()
    for run in doc["runs"]:
        cell = run["cell"]
        if cell == {"order": "eval_only", "alloc": "retain"} and run["repetition"] == 1:
            run["phases"]["eval"]["ns"] = [v * 1.6 for v in run["phases"]["eval"]["ns"]]
    found = analyse(doc, focus="order")["verdict"]
    assert not [f for f in found if f["rule"] == "closes_gap"]
    hit = _only(found, "unresolved_gap", setting="alloc=retain")
    assert hit.explains is False and "whether alloc=retain closes it is open" in hit.message
    # The noise is in the cells with the setting: --repeat auto gives them more processes, not the gap's.
    assert {(c["order"], c["alloc"]) for c in rules.open_cells([hit])} == {
        (o, "retain") for o in ("eval_only", "train_then_eval")}


@pytest.mark.parametrize("gap, left, gap_too", [
    ((1.33, 1.12, 1.59), (1.033, 0.960, 1.11), False),  # little left: its own interval limits the share
    ((1.46, 1.16, 1.82), (1.20, 1.15, 1.25), True),    # much left of a noisy gap: the gap's interval counts
    ((1.0, 0.9, 1.11), (1.20, 1.15, 1.25), True),      # an open gap measured at exactly 1.0
])
def test_more_processes_go_to_the_pair_that_limits_the_share_left(gap, left, gap_too):
    def comparison(ratio, lo, hi):
        return Comparison(ratio, (lo, hi), 5, 5, ratio, 1.0).judged(0.05)

    settle = GapUnderSetting.cells_to_settle(comparison(*gap), comparison(*left), ["a0", "b0"], ["a1", "b1"])
    assert settle == (["a1", "b1", "a0", "b0"] if gap_too else ["a1", "b1"])


def test_counters_count_as_evidence_only_when_they_fall_in_the_slow_cell():
    """Faults higher in the *fast* cell that converge under the setting are no evidence."""
    def slow(c):
        return c["order"] == "eval_only" and c["alloc"] == "default"

    doc = make_doc({"order": ORDERS, "alloc": ["default", "retain"]},
                   factor=lambda c: 1.5 if slow(c) else 1.0,
                   faults=lambda c: 340_000 if (c["order"] == "train_then_eval" and c["alloc"] == "default")
                   else 20_000)
    closes = _only(analyse(doc, focus="order")["verdict"], "closes_gap")
    assert closes.evidence["counters_moving_with_gap"] == []
    assert "page faults" not in closes.message


def test_the_closing_bound_is_one_sided():
    """"At most a quarter of the gap is left" is one claim in one direction (TOST): its bound is the one-sided
    95% one, at each comparison's own degrees of freedom; the top of the two-sided 95% interval tested it at
    97.5%, and left a 1.028x remainder of a 1.44x gap open at 28% where the one-sided bound is under 25%."""
    from benchctl._results.tdist import t_quantile
    from benchctl._results.verdict import CLOSED_CONFIDENCE

    base, under = _comparison(1.44, 1.24, 1.69), _comparison(1.028, 0.956, 1.11)
    one_sided = GapUnderSetting.share_left_upper(base, under)
    g, r = math.log(1.44), math.log(1.028)
    h_g, h_r = (math.log(hi / lo) / 2 for lo, hi in ((1.24, 1.69), (0.956, 1.11)))
    two_sided = (r + math.hypot(h_r, r / g * h_g)) / g
    scale = t_quantile(CLOSED_CONFIDENCE, 8.0) / t_quantile(0.975, 8.0)
    assert one_sided == pytest.approx((r + scale * math.hypot(h_r, r / g * h_g)) / g)
    assert one_sided < CLOSED_SHARE < two_sided
    # The same intervals from fewer degrees of freedom: their two-sided quantile was the larger share of their
    # width, so the one-sided reach is a smaller part of it; none stored (an old file): the normal's ratio.
    few, normal = (GapUnderSetting.share_left_upper(_comparison(1.44, 1.24, 1.69, df),
                                                    _comparison(1.028, 0.956, 1.11, df)) for df in (3.0, None))
    assert few < one_sided < normal < two_sided
