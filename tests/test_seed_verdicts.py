"""The seeds' rules (benchctl._studies.seed_rules) on synthetic results documents with known answers.

Each document is judged as the seed pipeline judges it: its summary filled by
:func:`benchctl._results.analysis.analyse` from the runs (counters included), then every rule of the
seed over every phase (:func:`benchctl._results.rules.judge`) with the facts from before the run (the
values' census) and the penalty profile. The pre-checks that rule FTZ out before any cell runs are
asked directly, as the pipeline asks them.
"""

from __future__ import annotations

import itertools

import pytest

from benchctl._results import rules
from benchctl._results.analysis import analyse
from benchctl._results.comparison import Outcome
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._studies import seed_rules
from benchctl._causes.denormals.rule import Denormals, penalty_evidence

# Deterministic spread around a median: the sample median is exactly `median`.
JITTER = [1 + 0.01 * k for k in range(-5, 6)]
# Three fresh processes per cell whose medians differ a little, as real processes do; symmetric in
# log, so a cell's median (the geometric mean of its processes') is `median` again.
PROCESS_FACTORS = (1 / 1.005, 1.0, 1.005)
DENORMALS = "denormals (subnormal arithmetic): "


def samples(median_ms: float, process: float = 1.0) -> list[float]:
    return [median_ms * 1e6 * j * process for j in JITTER]


def penalty(fma_subnormal: float, ftz_removes: bool = True, sqrt_zero: float = 6.0) -> dict:
    """Normalised penalty evidence with the given FMA subnormal ratio."""
    def op(sub, zero=1.0):
        penalised = sub >= 1.5
        return {"subnormal_ratio": sub, "zero_ratio": zero, "subnormal_ratio_ftz": 1.0 if ftz_removes else sub,
                "class": "x", "penalised_subnormal": penalised, "penalised_zero": zero >= 1.5,
                "ftz_removes": ftz_removes if penalised else None, "threads": 2}
    return {"conv2d": op(fma_subnormal), "matmul": op(fma_subnormal), "addcmul": op(fma_subnormal),
            "sqrt": op(38.0, sqrt_zero)}


def make_doc(workload: str, matrix: dict, phases: dict, notes=None, faults=None, penalty_ev=None,
             readback=None, census=None) -> dict:
    """A results document before analysis: ``phases[phase](cell) -> median ms`` (None: the cell does not run
    that phase); notes(cell) -> dict; faults(cell) -> minor faults per iteration, as the runner counts them;
    ``census``: the values' census taken before the run, stored as the pipeline stores its facts."""
    runs = []
    for values in itertools.product(*matrix.values()):
        cell = dict(zip(matrix, values))
        medians = {phase: median_of(cell) for phase, median_of in phases.items()}
        medians = {phase: m for phase, m in medians.items() if m is not None}
        counters = {"minor_faults": [faults(cell)] * len(JITTER)} if faults else {}
        for rep, process in enumerate(PROCESS_FACTORS):
            run_phases = {phase: {"ns": samples(median, process), "ticks": [], "counters": counters, "warmup": 0}
                          for phase, median in medians.items()}
            runs.append({"cell": cell, "repetition": rep, "status": "ok", "phases": run_phases,
                         "readback": readback(cell) if readback else {}, "notes": notes(cell) if notes else {}})
    return {"schema": "benchctl.results", "version": 2, "metadata": {}, "workload": workload, "args": {},
            "matrix": matrix, "repeat": len(PROCESS_FACTORS), "control": None, "runs": runs,
            "summary": [], "verdict": [],
            "evidence": {"penalty": penalty_ev,
                         "facts": None if census is None else Facts.from_census(census).to_json()}}


def judge(doc: dict, rule_list, focus: str) -> list:
    """The findings of ``rule_list`` over every phase of ``doc``, its summary filled from its runs."""
    analyse(doc, with_verdict=False)
    assert "analysis_error" not in doc["metadata"], doc["metadata"]
    evidence = doc["evidence"]
    return rules.judge(doc, rule_list, focus=focus, facts=Facts.from_json(evidence.get("facts")),
                       penalty=evidence.get("penalty"))


def resnet_findings(doc: dict) -> list:
    return judge(doc, seed_rules.resnet_order_rules(), "order")


def zero_weights_findings(doc: dict) -> list:
    return judge(doc, seed_rules.zero_weights_rules(), "init")


def by_rule(findings, rule):
    return [f for f in findings if f.rule == rule]


RESNET_MATRIX = {"order": ["eval_only", "train_then_eval"], "ftz": ["off", "process"], "alloc": ["default", "retain"]}
WEIGHTS_CLEAN = {"available": True, "values": 25_557_032, "subnormal": 0, "fraction": 0.0, "by_tensor": {}}
WEIGHTS_DENORMAL = {"available": True, "values": 25_557_032, "subnormal": 1_000_000, "fraction": 0.04, "by_tensor": {}}
ACTS_CLEAN = {"available": True, "values": 10_000_000, "subnormal": 0, "by_layer": {}}
CLEAN_CENSUS = {"weights": WEIGHTS_CLEAN, "activations": ACTS_CLEAN}
DENORMAL_CENSUS = {"weights": WEIGHTS_DENORMAL, "activations": ACTS_CLEAN}
# What Denormals.precheck says of each piece of evidence (benchctl._causes.denormals.rule).
NO_FMA_PENALTY = ("this CPU does not penalise subnormal multiply-adds (conv2d 1.0×, matmul 1.0×, addcmul 1.0× "
                  "on subnormal inputs, penalty profile)")
CLEAN_VALUES = ("no subnormal values in what it computes (census: weights 0 subnormal of 25,557,032, "
                "activations 0 subnormal of 10,000,000)")


def ftz_readback(cell):
    """The runner's ftz readback shape (benchctl.settings)."""
    return {"ftz": {"requested": cell["ftz"], "observed": {
        "threads": 3, "reached": 3, "flushed": 3 if cell["ftz"] == "process" else 0}}}


def zen4_allocator_doc(matrix=RESNET_MATRIX):
    """eval_only 1.45x slower unless alloc=retain; 340k faults/iter; FTZ changes nothing."""
    def eval_ms(cell):
        return 1450.0 if cell["order"] == "eval_only" and cell["alloc"] == "default" else 1000.0

    def faults(cell):
        return 340_000 if cell["order"] == "eval_only" and cell["alloc"] == "default" else 50
    notes = lambda cell: {"weights": {"used": "random"}, "weights_census": WEIGHTS_CLEAN,  # noqa: E731
                          "activation_census": ACTS_CLEAN}
    return make_doc("resnet_order", matrix,
                    {"eval": eval_ms, "train": lambda c: 1100.0 if c["order"] == "train_then_eval" else None},
                    notes=notes, faults=faults, penalty_ev=penalty(1.0),
                    readback=ftz_readback if "ftz" in matrix else None, census=CLEAN_CENSUS)


def intel_denormal_doc():
    """eval_only 1.45x slower unless ftz=process; the CPU penalises FMAs; weights hold subnormals."""
    def eval_ms(cell):
        return 1450.0 if cell["order"] == "eval_only" and cell["ftz"] == "off" else 1000.0
    notes = lambda cell: {"weights": {"used": "imagenet"}, "weights_census": WEIGHTS_DENORMAL,  # noqa: E731
                          "activation_census": ACTS_CLEAN}
    return make_doc("resnet_order", RESNET_MATRIX, {"eval": eval_ms}, notes=notes, faults=lambda c: 50,
                    penalty_ev=penalty(5.0), readback=ftz_readback, census=DENORMAL_CENSUS)


def no_ftz_effect(found, why: str = "") -> str:
    """The denormal cause's words for an ftz=process cell no faster than ftz=off (threads read back), with
    what the penalty profile and the census say (``why``)."""
    return f"{DENORMALS}FTZ/DAZ changes nothing beyond ±5% ({found.comparison.ratio_text()}); " \
           "FTZ/DAZ read back on 3/3 threads" + (f": {why}" if why else "")


# The census as the denormal cause quotes it when judging.
CLEAN_COUNTS = "the census counts weights 0 subnormal of 25,557,032, activations 0 subnormal of 10,000,000"
DENORMAL_COUNTS = ("the census counts weights 1,000,000 subnormal of 25,557,032, activations 0 subnormal of "
                   "10,000,000")
FMA_PENALTY = ("this CPU penalises subnormal multiply-adds and FTZ/DAZ removes it (conv2d 5.0×, matmul 5.0×, "
               "addcmul 5.0× on subnormal inputs, penalty profile)")


def test_allocator_case_rules_ftz_out_before_running_and_says_why():
    reason = Denormals().precheck(Facts.from_census(CLEAN_CENSUS), penalty(1.0))
    assert reason == f"{NO_FMA_PENALTY} and {CLEAN_VALUES}"
    found = Denormals().ruled_out(reason)
    assert found.rule == "cause_denormals" and found.phase is None and found.comparison is None
    assert found.status is Status.RULED_OUT and found.mark == "-" and not found.explains
    assert found.message == f"{DENORMALS}ruled out before running: {reason}"


def test_allocator_case_ftz_run_anyway_changes_nothing():
    """The ftz=process cells run (as with --set ftz=off,process): the denormal cause shows no effect."""
    [ftz] = by_rule(resnet_findings(zen4_allocator_doc()), "cause_denormals")
    assert ftz.phase == "eval" and ftz.setting == "ftz=process"
    assert ftz.status is Status.NOT_CAUSE and ftz.mark == "-" and not ftz.explains
    assert ftz.comparison.outcome is Outcome.NO_EFFECT and not ftz.comparison.beyond_band
    assert ftz.a == {"order": "eval_only", "ftz": "process", "alloc": "default"}
    assert ftz.b == {"order": "eval_only", "ftz": "off", "alloc": "default"}
    assert ftz.comparison.ratio == pytest.approx(1.0)
    assert ftz.comparison.ratio_text().startswith("1.000× [95% CI 0.9")
    assert ftz.message == no_ftz_effect(ftz, f"{NO_FMA_PENALTY}; {CLEAN_COUNTS}")
    assert ftz.evidence["census"] == CLEAN_CENSUS and ftz.evidence["penalty"] == penalty(1.0)
    assert ftz.evidence["ftz_readback"] == {"flushed": 3, "threads": 3}


def test_allocator_case_names_the_allocator_by_its_faults():
    [alloc] = by_rule(resnet_findings(zen4_allocator_doc()), "cause_allocator")
    assert alloc.status is Status.CAUSE and alloc.explains and alloc.mark == "*" and alloc.setting == "alloc=retain"
    assert alloc.phase == "eval" and alloc.comparison.faster
    assert alloc.a == {"order": "eval_only", "ftz": "off", "alloc": "retain"}
    assert alloc.b == {"order": "eval_only", "ftz": "off", "alloc": "default"}
    assert alloc.comparison.effect_text().startswith("1.45× faster [95% CI 1.4")
    assert alloc.message == (f"allocator: with alloc=retain it is {alloc.comparison.effect_text()}; minor page "
                             "faults/iter go from 340k to 50: memory returned to the OS and faulted back in")
    assert alloc.evidence["faults_per_iter"] == {"default": 340_000, "retain": 50}
    [alloc] = by_rule(resnet_findings(intel_denormal_doc()), "cause_allocator")
    assert alloc.status is Status.NOT_CAUSE and not alloc.explains
    assert alloc.message == (f"allocator: alloc=retain changes nothing beyond ±5% ({alloc.comparison.ratio_text()}); "
                             "minor page faults/iter go from 50 to 50")


def test_allocator_case_order_gap_closes_under_alloc_retain():
    """The order gap is the generic rules' (Gap, GapUnderSetting with focus="order"), as for any run."""
    found = resnet_findings(zen4_allocator_doc())
    [gap] = by_rule(found, "gap")
    assert gap.status is Status.MEASURED and gap.comparison.slower
    assert gap.comparison.ratio == pytest.approx(1.45)
    [closes] = by_rule(found, "closes_gap")
    assert closes.status is Status.CAUSE and closes.setting == "alloc=retain"
    assert closes.evidence["counters_moving_with_gap"] == ["minor_faults_per_iter"]
    assert closes.message.endswith("minor page faults/iter go from 340k to 50: the slowdown is memory returned to "
                                   "the OS and faulted back in")
    [keeps] = by_rule(found, "keeps_gap")
    assert keeps.setting == "ftz=process" and keeps.status is Status.NOT_CAUSE


def test_denormal_case_names_ftz_with_its_evidence():
    assert Denormals().precheck(Facts.from_census(DENORMAL_CENSUS), penalty(5.0)) is None
    [ftz] = by_rule(resnet_findings(intel_denormal_doc()), "cause_denormals")
    assert ftz.status is Status.CAUSE and ftz.explains and ftz.mark == "*"
    assert ftz.comparison.beyond_band and ftz.comparison.ratio == pytest.approx(1000 / 1450)
    assert ftz.comparison.effect_text().startswith("1.45× faster [95% CI 1.4")
    assert ftz.message == (
        f"{DENORMALS}with FTZ/DAZ on every thread it is {ftz.comparison.effect_text()}; FTZ/DAZ read back on 3/3 "
        f"threads: arithmetic on subnormal (denormal) numbers, which FTZ/DAZ removes; {FMA_PENALTY}; "
        f"{DENORMAL_COUNTS}")


def test_penalty_that_ftz_does_not_remove_does_not_predict_an_ftz_effect():
    reason = Denormals().precheck(Facts.from_census(DENORMAL_CENSUS), penalty(5.0, ftz_removes=False))
    assert reason == ("this CPU's penalty on subnormal multiply-adds is a slow path FTZ/DAZ does not remove "
                      "(conv2d 5.0×, matmul 5.0×, addcmul 5.0× on subnormal inputs, penalty profile)")


def test_ftz_speed_up_the_penalty_profile_cannot_explain_is_not_named_denormals():
    """FTZ made it faster, yet this CPU's penalty is a slow path FTZ/DAZ does not remove: not denormals."""
    doc = intel_denormal_doc()
    doc["evidence"]["penalty"] = penalty(5.0, ftz_removes=False)
    [ftz] = by_rule(resnet_findings(doc), "cause_denormals")
    assert ftz.comparison.faster and ftz.status is Status.UNCONFIRMED and ftz.mark == "?"
    assert ftz.message == (
        f"{DENORMALS}with FTZ/DAZ on every thread it is {ftz.comparison.effect_text()}; FTZ/DAZ read back on 3/3 "
        "threads, yet no penalty FTZ/DAZ removes explains it: this CPU's penalty on subnormal multiply-adds is a "
        "slow path FTZ/DAZ does not remove (conv2d 5.0×, matmul 5.0×, addcmul 5.0× on subnormal inputs, penalty "
        f"profile); {DENORMAL_COUNTS}: the mechanism is not denormals")


def test_penalty_and_subnormals_without_an_effect_show_the_readback():
    doc = intel_denormal_doc()
    for run in doc["runs"]:
        run["phases"]["eval"]["ns"] = samples(1000.0)
    [ftz] = by_rule(resnet_findings(doc), "cause_denormals")
    assert ftz.status is Status.NOT_CAUSE and not ftz.explains and ftz.comparison.outcome is Outcome.NO_EFFECT
    assert ftz.message == no_ftz_effect(ftz, f"{FMA_PENALTY}; {DENORMAL_COUNTS}; both say it should matter: check "
                                             "the readback")


def _no_effect_doc_with_weights(subnormal: int, densest: float | None, float16: int = 0):
    """intel_denormal_doc with no FTZ effect, its weights' census holding ``subnormal`` values (``float16`` of them
    in float16 tensors), at most ``densest`` of one tensor of another dtype: its denormals finding."""
    weights = {**WEIGHTS_DENORMAL, "subnormal": subnormal, "fraction": subnormal / 25_557_032, "densest": densest,
               "float16_subnormal": float16}
    doc = make_doc("resnet_order", RESNET_MATRIX, {"eval": lambda cell: 1000.0}, faults=lambda c: 50,
                   penalty_ev=penalty(5.0), readback=ftz_readback,
                   census={"weights": weights, "activations": {**ACTS_CLEAN, "densest": 0.0}})
    [ftz] = by_rule(resnet_findings(doc), "cause_denormals")
    return ftz


def test_subnormals_too_sparse_for_the_penalty_to_matter_are_not_expected_to():
    """60 subnormals, at most 0.01% of one tensor: 3 values an op at that share, at the profile's 5x, add at most
    0.12% (under the 5% floor): no "should matter", and an FTZ speed-up would not be explained by them."""
    ftz = _no_effect_doc_with_weights(60, 1e-4)
    assert ftz.status is Status.NOT_CAUSE and ftz.evidence["expected"] is False
    assert ftz.message == no_ftz_effect(ftz, (
        f"{FMA_PENALTY}; the census counts weights 60 subnormal of 25,557,032, activations 0 subnormal of 10,000,000, "
        "at most 0.010% of any one tensor: with an op's 3 values at that share, the penalty profile's largest "
        "slowdown (conv2d 5.0×) adds at most 0.12% to its time, under the 5% floor: too few subnormals to matter"))
    # One tensor a tenth subnormal (a conv's weights, which every multiply-add of its layer reads): it may matter.
    dense = _no_effect_doc_with_weights(60, 0.1)
    assert dense.evidence["expected"] is True
    assert dense.message.endswith("both say it should matter: check the readback")
    # A census from before `densest` was counted: nothing is assumed of how the subnormals are spread.
    legacy = _no_effect_doc_with_weights(60, None)
    assert legacy.evidence["expected"] is True


def test_float16_subnormals_say_nothing_of_the_float32_penalty():
    """Every subnormal a float16 value: normal numbers in float32, where the profile times its ops (a float16 conv of
    them ran no slower on a Xeon with avx512_fp16): not known to matter, though the profile penalises conv2d 5x."""
    ftz = _no_effect_doc_with_weights(1_000_000, 0.0, float16=1_000_000)
    assert ftz.evidence["expected"] is None and ftz.status is Status.NOT_CAUSE
    assert ftz.message == no_ftz_effect(ftz, (
        f"{FMA_PENALTY}; the census counts weights 1,000,000 subnormal of 25,557,032, activations 0 subnormal of "
        "10,000,000, all of them float16 values, whose subnormals (below 6.1e-5) are normal numbers in float32, in "
        "which the penalty profile times its ops: what they cost here is not measured"))
    # Some of them float32: judged by the share of those.
    assert _no_effect_doc_with_weights(1_000_000, 0.5, float16=999_000).evidence["expected"] is True


def test_missing_runs_are_not_raised_and_leave_no_ftz_finding():
    doc = zen4_allocator_doc()
    for run in doc["runs"]:
        if run["cell"]["ftz"] == "process":
            run["status"] = "failed"
    found = resnet_findings(doc)
    assert by_rule(found, "cause_denormals") == []
    assert not [f for f in found if f.setting == "ftz=process"]
    # The cells that did run are still judged.
    assert [f.status for f in by_rule(found, "cause_allocator")] == [Status.CAUSE]


def test_missing_penalty_profile_and_census_rule_nothing_out():
    assert Denormals().precheck(Facts.from_census(None), None) is None
    # Either piece of evidence alone rules FTZ out when it says FTZ cannot matter.
    assert Denormals().precheck(Facts.from_census(None), penalty(1.0)) == NO_FMA_PENALTY
    assert Denormals().precheck(Facts.from_census(CLEAN_CENSUS), None) == CLEAN_VALUES
    doc = zen4_allocator_doc()
    doc["evidence"] = {}
    for run in doc["runs"]:
        run["notes"] = {}
    [ftz] = by_rule(resnet_findings(doc), "cause_denormals")
    assert ftz.status is Status.NOT_CAUSE and ftz.evidence["penalty"] is None and ftz.evidence["census"] is None
    assert ftz.message == no_ftz_effect(ftz)


def test_wide_ci_is_not_called_no_effect():
    """The ftz=process processes disagree widely with each other: no effect can be ruled out."""
    doc = zen4_allocator_doc()
    for run in doc["runs"]:
        if run["cell"]["ftz"] == "process":
            scale = (0.6, 1.0, 1.6)[run["repetition"]]
            run["phases"]["eval"]["ns"] = [v * scale for v in run["phases"]["eval"]["ns"]]
    [ftz] = by_rule(resnet_findings(doc), "cause_denormals")
    assert not ftz.comparison.beyond_band and ftz.comparison.outcome is Outcome.UNRESOLVED
    assert ftz.status is Status.UNRESOLVED and ftz.mark == "?" and ftz.is_open
    assert ftz.message == (f"{DENORMALS}unresolved: FTZ/DAZ gives a time ratio of {ftz.comparison.ratio_text()}, "
                           "across the ±5% band; "
                           f"FTZ/DAZ read back on 3/3 threads: {NO_FMA_PENALTY}; {CLEAN_COUNTS}")


def test_matrix_without_ftz_axis_has_no_ftz_finding():
    found = resnet_findings(zen4_allocator_doc({"order": RESNET_MATRIX["order"], "alloc": RESNET_MATRIX["alloc"]}))
    assert by_rule(found, "cause_denormals") == []
    assert not [f for f in found if (f.setting or "").startswith("ftz")]
    assert [f.status for f in by_rule(found, "cause_allocator")] == [Status.CAUSE]


# --- zero_weights -----------------------------------------------------------

ZW_MATRIX = {"init": ["uniform", "zero"], "device": ["cpu", "cuda"], "ftz": ["off", "process"]}
# The census zero_weights.value_census takes before the run: both inits' weights and activations, summed.
ZW_CENSUS = {"weights": {"values": 2 * 370_624, "subnormal": 0}, "activations": {"values": 2 * 11 * 65536,
                                                                                 "subnormal": 0}}


def zw_notes(cell):
    uniform = cell["init"] == "uniform"
    layers = [{"layer": f"conv_{i}", "numel": 65536, "max_abs": (100.0 ** i if uniform else 0.0), "nonfinite": 0,
               "subnormal": 0} for i in range(11)]
    return {"naive_seed_timing": {"trials": 1000, "forward_ms": 45.2, "seed_forward_backward_ms": 42.9,
                                  "seed_backward_called": False},
            "activations": layers,
            "weights_census": {"available": True, "values": 370_624, "subnormal": 0}}


def zero_weights_doc():
    """CPU: zero == uniform (4.3 ms forward, 13 ms fwd+bwd); GPU: zero 1.3x faster."""
    def forward(cell):
        return 4.3 if cell["device"] == "cpu" else (1.0 if cell["init"] == "zero" else 1.3)

    def forward_backward(cell):
        return 13.0 if cell["device"] == "cpu" else (3.0 if cell["init"] == "zero" else 3.9)
    return make_doc("zero_weights", ZW_MATRIX, {"forward": forward, "forward_backward": forward_backward},
                    notes=zw_notes, penalty_ev=penalty(1.0, sqrt_zero=6.0), census=ZW_CENSUS)


def test_cpu_answer_says_why_values_do_not_matter():
    [f] = by_rule(zero_weights_findings(zero_weights_doc()), "values_do_not_matter_on_cpu")
    assert f.status is Status.NOT_CAUSE and f.mark == "-" and not f.explains
    assert f.comparison.outcome is Outcome.NO_EFFECT and f.comparison.ratio == pytest.approx(1.0)
    assert f.phase == "forward" and f.a["init"] == "zero" and f.b["init"] == "uniform"
    msg = f.message
    assert msg.startswith("on cpu, zero and uniform weights show no difference beyond ±5%, this run's resolution "
                          "(forward 4.30 vs 4.30 ms, zero/uniform 1.000× [95% CI ")
    assert "forward_backward 13.00 vs 13.00 ms" in msg
    # Only what was measured: the profile's conv2d ratios, not a claim about GEMM kernels.
    assert "GEMM" not in msg
    assert "conv2d is not slower on zero or subnormal inputs on this CPU" in msg
    assert ("the penalty profile measures conv2d 1.0×, matmul 1.0× on zeros and conv2d 1.0×, matmul 1.0× "
            "on subnormals") in msg
    assert "sqrt 6.0× on zeros" in msg and "this net runs only convolutions and ReLU" in msg
    assert "uniform weights grow activations to 1.0e+20, 0 subnormal" in msg
    assert "zero weights make every activation 0" in msg


def test_seed_naive_timing_is_shown_to_mislead():
    findings = by_rule(zero_weights_findings(zero_weights_doc()), "seed_naive_timing")
    assert len(findings) == 4  # 2 devices x 2 inits, at the baseline ftz
    assert all(f.phase == "forward_backward" and f.a["ftz"] == "off" and f.comparison is None for f in findings)
    cpu = next(f for f in findings if f.a["device"] == "cpu" and f.a["init"] == "uniform")
    assert cpu.status is Status.CAUSE and cpu.explains and cpu.mark == "*"
    assert cpu.evidence["naive_over_measured"] == pytest.approx(42.9 / 13.0)
    assert cpu.evidence["median_forward_backward_ms"] == pytest.approx(13.0)
    assert "never runs" in cpu.message and "3.0× forward" in cpu.message
    gpu = next(f for f in findings if f.a["device"] == "cuda")
    assert "without synchronize" in gpu.message


def test_gpu_zero_weights_differ_but_cpu_rule_only_speaks_for_cpu():
    [f] = by_rule(zero_weights_findings(zero_weights_doc()), "values_do_not_matter_on_cpu")
    assert f.a["device"] == "cpu" and f.b["device"] == "cpu"


def test_cpu_difference_is_reported_as_a_difference():
    doc = zero_weights_doc()
    for run in doc["runs"]:
        if run["cell"]["device"] == "cpu" and run["cell"]["init"] == "zero":
            run["phases"]["forward"]["ns"] = samples(3.0)
    [f] = by_rule(zero_weights_findings(doc), "values_do_not_matter_on_cpu")
    assert f.status is Status.MEASURED and f.mark == "*" and f.comparison.beyond_band
    assert f.message.startswith("on cpu, zero and uniform weights differ in time (forward 3.00 vs 4.30 ms")


def test_ftz_on_zero_weights_net_is_ruled_out_before_running():
    reason = Denormals().precheck(Facts.from_census(ZW_CENSUS), penalty(1.0, sqrt_zero=6.0))
    assert reason == (f"{NO_FMA_PENALTY} and no subnormal values in what it computes (census: weights 0 "
                      "subnormal of 741,248, activations 0 subnormal of 1,441,792)")


def test_ftz_run_anyway_on_zero_weights_net_changes_nothing():
    found = by_rule(zero_weights_findings(zero_weights_doc()), "cause_denormals")
    assert [f.phase for f in found] == ["forward", "forward_backward"]
    for f in found:
        assert f.status is Status.NOT_CAUSE and not f.explains and f.comparison.outcome is Outcome.NO_EFFECT
        assert f.a == {"init": "uniform", "device": "cpu", "ftz": "process"}
        assert f.message == (f"{DENORMALS}FTZ/DAZ changes nothing beyond ±5% ({f.comparison.ratio_text()}): "
                             f"{NO_FMA_PENALTY}; the census counts weights 0 subnormal of 741,248, activations 0 "
                             "subnormal of 1,441,792")


def test_penalty_evidence_normalises_the_penalty_profile():
    profile = {"penalty_ratio": 1.5, "ops": [
        {"op": "sqrt", "threads": 1, "zero_ratio_off": 6.1, "subnormal_ratio_off": 38.0,
         "zero_ratio_on": 6.0, "subnormal_ratio_on": 37.0, "classification": "slow path FTZ/DAZ does not remove"},
        {"op": "sqrt", "threads": 2, "zero_ratio_off": 5.0, "subnormal_ratio_off": 30.0,
         "zero_ratio_on": 5.0, "subnormal_ratio_on": 30.0, "classification": "slow path FTZ/DAZ does not remove"},
        {"op": "div", "threads": 2, "zero_ratio_off": 1.0, "subnormal_ratio_off": 2.6,
         "zero_ratio_on": 1.0, "subnormal_ratio_on": 1.1, "classification": "hardware penalty that FTZ/DAZ removes"},
        {"op": "conv2d", "threads": 2, "zero_ratio_off": 1.0, "subnormal_ratio_off": 1.02,
         "zero_ratio_on": 1.0, "subnormal_ratio_on": 1.0, "classification": "no penalty"},
    ]}
    ev = penalty_evidence(profile)
    assert ev["sqrt"]["threads"] == 1 and ev["sqrt"]["subnormal_ratio"] == 38.0
    assert ev["sqrt"]["penalised_zero"] and ev["sqrt"]["ftz_removes"] is False
    assert ev["div"]["penalised_subnormal"] and ev["div"]["ftz_removes"] is True and not ev["div"]["penalised_zero"]
    assert not ev["conv2d"]["penalised_subnormal"] and ev["conv2d"]["ftz_removes"] is None


MIB = 1 << 20
GLIBC_EVAL_ONLY = {"threshold_bytes": 24 * MIB + (512 << 10), "largest_free_bytes": 25 * MIB, "free_bytes": 155 * MIB}


def malloc_json(threshold_bytes, largest_free_bytes, free_bytes, fixed=(), probed=True):
    """A worker's phases[phase]["malloc"] (benchctl._causes.allocator.control.MallocState.to_json); ``probed=False``:
    mallinfo2 alone, as a worker reads every phase but the last."""
    if not probed:
        threshold_bytes = largest_free_bytes = None
    return {"library": "libc.so.6", "heap_bytes": free_bytes + 100 * MIB, "free_bytes": free_bytes,
            "top_bytes": 1 << 17, "mapped_blocks": 6, "mapped_bytes": 6 * MIB, "largest_free_bytes": largest_free_bytes,
            "threshold_bytes": threshold_bytes, "heap_below_bytes": None if threshold_bytes is None else
            threshold_bytes - 4096, "probe_max_bytes": 64 * MIB, "fixed": list(fixed), "probed": probed}


def glibc_doc(train_end: dict, eval_end: dict, eval_only: dict = GLIBC_EVAL_ONLY, train_probed=False):
    """zen4_allocator_doc with train before eval and each process's malloc readback where each phase ended."""
    doc = zen4_allocator_doc({"order": ["eval_only", "train_then_eval"], "alloc": ["default", "retain"]})
    retained = malloc_json(None, 300 * MIB, 500 * MIB, fixed=("glibc.malloc.mmap_threshold=4294967296",))
    for run in doc["runs"]:
        phases = run["phases"]
        run["phases"] = {name: phases[name] for name in ("train", "eval") if name in phases}
        if run["cell"]["alloc"] == "retain":
            for data in run["phases"].values():
                data["malloc"] = retained
        elif run["cell"]["order"] == "eval_only":
            run["phases"]["eval"]["malloc"] = malloc_json(**eval_only)
        else:
            run["phases"]["train"]["malloc"] = malloc_json(**train_end, probed=train_probed)
            run["phases"]["eval"]["malloc"] = malloc_json(**eval_end)
    return doc


def test_allocator_names_the_free_heap_blocks_training_left_from_the_readback():
    doc = glibc_doc(train_end={"threshold_bytes": 24 * MIB + (512 << 10), "largest_free_bytes": 74 * MIB,
                               "free_bytes": 1229 * MIB},
                    eval_end={"threshold_bytes": 24 * MIB + (512 << 10), "largest_free_bytes": 184 * MIB,
                              "free_bytes": 1200 * MIB})
    [alloc] = by_rule(resnet_findings(doc), "cause_allocator")
    assert alloc.status is Status.CAUSE
    assert ("glibc readback: in order=train_then_eval train left 1.2 GiB free in the heap, and at the end of eval "
            "its largest free block is 184 MiB: eval's large blocks come from the heap; "
            "in order=eval_only glibc's mmap threshold stands at 24.5 MiB, the most glibc raises it to is 32 MiB, "
            "and its largest free heap block is 25 MiB, so each eval iteration maps and unmaps every block above "
            "25 MiB, and glibc trims its heap top beyond 49 MiB free: 340k minor faults per iteration") in alloc.message
    assert alloc.evidence["glibc"]["mechanism"] == "free_heap"
    probed_train = glibc_doc(train_end={"threshold_bytes": 24 * MIB, "largest_free_bytes": 74 * MIB,
                                        "free_bytes": 1229 * MIB},
                             eval_end={"threshold_bytes": 24 * MIB, "largest_free_bytes": 184 * MIB,
                                       "free_bytes": 1200 * MIB}, train_probed=True)
    [found] = by_rule(resnet_findings(probed_train), "cause_allocator")
    assert "train left 1.2 GiB free in the heap (blocks up to 74 MiB), and at the end" in found.message
    assert alloc.evidence["glibc"]["largest_free_bytes"] == {"order=eval_only": 25 * MIB,
                                                             "order=train_then_eval": 184 * MIB}
    # The fixes: the measured one with its effect, the others named as not measured.
    assert (f"fixes measured here: alloc=retain (glibc malloc keeping freed memory (mmap/trim thresholds raised via "
            f"GLIBC_TUNABLES)) {alloc.comparison.headline()}; not measured here: "
            "MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=17179869184") in alloc.message
    assert "jemalloc (LD_PRELOAD, alloc=jemalloc)" in alloc.message and "a warm-up" in alloc.message


def test_allocator_names_a_raised_threshold_from_the_readback():
    doc = glibc_doc(train_end={"threshold_bytes": 32 * MIB, "largest_free_bytes": 2 * MIB, "free_bytes": 40 * MIB},
                    eval_end={"threshold_bytes": 32 * MIB, "largest_free_bytes": 2 * MIB, "free_bytes": 40 * MIB},
                    eval_only={"threshold_bytes": 128 << 10, "largest_free_bytes": 1 * MIB, "free_bytes": 3 * MIB})
    [alloc] = by_rule(resnet_findings(doc), "cause_allocator")
    assert ("glibc readback: in order=train_then_eval glibc's mmap threshold stands at 32 MiB at the end of eval "
            "(raised by freeing mapped blocks larger than it); in order=eval_only glibc's mmap threshold stands at "
            "128 KiB") in alloc.message
    assert ("maps and unmaps every block above 1 MiB, and glibc trims its heap top beyond 256 KiB free: 340k minor "
            "faults per iteration") in alloc.message
    assert alloc.evidence["glibc"]["mechanism"] == "threshold"


def test_allocator_readback_that_shows_no_difference_is_only_described():
    same = {"threshold_bytes": 24 * MIB + (512 << 10), "largest_free_bytes": 25 * MIB, "free_bytes": 155 * MIB}
    [alloc] = by_rule(resnet_findings(glibc_doc(train_end=same, eval_end=same)), "cause_allocator")
    assert "glibc readback: in order=eval_only glibc's mmap threshold stands at 24.5 MiB" in alloc.message
    assert "train left" not in alloc.message and alloc.evidence["glibc"]["mechanism"] is None
    [plain] = by_rule(resnet_findings(zen4_allocator_doc()), "cause_allocator")
    assert "glibc" not in plain.message and "fixes" not in plain.message  # no readback: no mechanism claimed


def test_allocator_readback_names_the_order_when_training_leaves_the_faults_in_place():
    """At the seed's own size (batch 128) eval after training still faulted 3.7M times an iteration against
    5.4M: no order's faults fall, and the readback is still said of the order it was read in."""
    same = {"threshold_bytes": 24 * MIB + (512 << 10), "largest_free_bytes": 25 * MIB, "free_bytes": 155 * MIB}
    doc = glibc_doc(train_end=same, eval_end=same)
    faults = {}
    for run in doc["runs"]:
        if run["cell"] == {"order": "eval_only", "alloc": "default"}:
            faults = run["phases"]["eval"]["counters"]["minor_faults"]
    for run in doc["runs"]:
        if run["cell"] == {"order": "train_then_eval", "alloc": "default"}:
            run["phases"]["eval"]["counters"]["minor_faults"] = list(faults)
    [alloc] = by_rule(resnet_findings(doc), "cause_allocator")
    assert "glibc readback: in order=eval_only glibc's mmap threshold stands at 24.5 MiB" in alloc.message
    assert "the unchanged workload" not in alloc.message


def test_allocator_readback_explains_faults_that_fell_while_the_time_is_open():
    doc = glibc_doc(train_end={"threshold_bytes": 24 * MIB, "largest_free_bytes": 74 * MIB, "free_bytes": 1229 * MIB},
                    eval_end={"threshold_bytes": 24 * MIB, "largest_free_bytes": 184 * MIB, "free_bytes": 1200 * MIB})
    kept = [r for r in doc["runs"] if r["cell"] == {"order": "eval_only", "alloc": "retain"}][:1]
    doc["runs"] = [r for r in doc["runs"] if r["cell"] != {"order": "eval_only", "alloc": "retain"}] + kept
    [alloc] = by_rule(resnet_findings(doc), "cause_allocator")
    assert alloc.status is Status.UNRESOLVED and alloc.mark == "?"  # one retain process: no call on the time
    assert "minor page faults/iter go from 340k to 50; glibc readback: in order=train_then_eval" in alloc.message
    assert "fixes measured here: alloc=retain (" in alloc.message
    assert alloc.evidence["glibc"]["mechanism"] == "free_heap"
