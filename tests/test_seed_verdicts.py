"""The seed verdict rules on synthetic results documents with known answers."""

from __future__ import annotations

import itertools

import pytest

from benchctl.studies import seed_rules as sv
from benchctl.studies.causes.denormals import penalty_evidence

# Deterministic spread around a median: the sample median is exactly `median`.
JITTER = [1 + 0.01 * k for k in range(-5, 6)]
# Three fresh processes per cell whose medians differ a little, as real processes do.
PROCESS_FACTORS = (0.995, 1.0, 1.005)


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
             readback=None) -> dict:
    """A results document: ``phases[phase](cell) -> median ms``; notes(cell) -> dict; faults(cell) -> per iter."""
    runs, summary = [], []
    for values in itertools.product(*matrix.values()):
        cell = dict(zip(matrix, values))
        medians = {phase: median_of(cell) for phase, median_of in phases.items()}
        medians = {phase: m for phase, m in medians.items() if m is not None}
        for phase, median in medians.items():
            summary.append({"workload": workload, "phase": phase, "cell": cell, "n": len(JITTER),
                            "median_ms": median, "ci95_ms": [median * 0.99, median * 1.01],
                            "iqr_over_median": 0.05,
                            "minor_faults_per_iter": faults(cell) if faults else None})
        for rep, process in enumerate(PROCESS_FACTORS):
            run_phases = {phase: {"ns": samples(median, process), "ticks": [], "counters": {}, "warmup": 0}
                          for phase, median in medians.items()}
            runs.append({"cell": cell, "repetition": rep, "status": "ok", "phases": run_phases,
                         "readback": readback(cell) if readback else {}, "notes": notes(cell) if notes else {}})
    return {"schema": "benchctl.results", "version": 2, "metadata": {}, "workload": workload, "args": {},
            "matrix": matrix, "repeat": len(PROCESS_FACTORS), "control": None, "runs": runs,
            "summary": summary, "verdict": [], "evidence": {"penalty": penalty_ev}}


RESNET_MATRIX = {"order": ["eval_only", "train_then_eval"], "ftz": ["off", "process"], "alloc": ["default", "retain"]}
WEIGHTS_CLEAN = {"available": True, "values": 25_557_032, "subnormal": 0, "fraction": 0.0, "by_tensor": {}}
WEIGHTS_DENORMAL = {"available": True, "values": 25_557_032, "subnormal": 1_000_000, "fraction": 0.04, "by_tensor": {}}
ACTS_CLEAN = {"available": True, "values": 10_000_000, "subnormal": 0, "by_layer": {}}


def ftz_readback(cell):
    """The runner's ftz readback shape (benchctl.settings)."""
    return {"ftz": {"requested": cell["ftz"], "observed": {
        "threads": 3, "reached": 3, "flushed": 3 if cell["ftz"] == "process" else 0}}}


def zen4_allocator_doc():
    """eval_only 1.45x slower unless alloc=retain; 340k faults/iter; FTZ changes nothing."""
    def eval_ms(cell):
        return 1450.0 if cell["order"] == "eval_only" and cell["alloc"] == "default" else 1000.0

    def faults(cell):
        return 340_000 if cell["order"] == "eval_only" and cell["alloc"] == "default" else 50
    notes = lambda cell: {"weights": {"used": "random"}, "weights_census": WEIGHTS_CLEAN,  # noqa: E731
                          "activation_census": ACTS_CLEAN}
    return make_doc("resnet_order", RESNET_MATRIX,
                    {"eval": eval_ms, "train": lambda c: 1100.0 if c["order"] == "train_then_eval" else None},
                    notes=notes, faults=faults, penalty_ev=penalty(1.0), readback=ftz_readback)


def intel_denormal_doc():
    """eval_only 1.45x slower unless ftz=process; the CPU penalises FMAs; weights hold subnormals."""
    def eval_ms(cell):
        return 1450.0 if cell["order"] == "eval_only" and cell["ftz"] == "off" else 1000.0
    notes = lambda cell: {"weights": {"used": "imagenet"}, "weights_census": WEIGHTS_DENORMAL,  # noqa: E731
                          "activation_census": ACTS_CLEAN}
    return make_doc("resnet_order", RESNET_MATRIX, {"eval": eval_ms}, notes=notes, faults=lambda c: 50,
                    penalty_ev=penalty(5.0), readback=ftz_readback)


def by_rule(findings, rule):
    return [f for f in findings if f["rule"] == rule]


def test_allocator_case_explains_why_ftz_does_nothing():
    [ftz] = sv.resnet_order_findings(zen4_allocator_doc())
    assert ftz["rule"] == "ftz_explained" and ftz["phase"] == "eval"
    assert not ftz["explains"] and not ftz["significant"] and ftz["setting"] == "ftz=process"
    assert ftz["a"] == {"order": "eval_only", "ftz": "process", "alloc": "default"}
    assert ftz["b"] == {"order": "eval_only", "ftz": "off", "alloc": "default"}
    assert ftz["ratio"] == pytest.approx(1.0)
    assert ftz["message"].startswith("FTZ has no effect beyond ±5% (1.000× [95% CI 0.9")
    assert ("because this CPU does not penalise subnormal multiply-adds (conv2d 1.0×, matmul 1.0×, addcmul 1.0× "
            "on subnormal inputs, penalty profile)") in ftz["message"]
    assert "and the weights have none (census: 0 of 25,557,032 weights subnormal, activations 0)" in ftz["message"]
    assert "flushed 3/3 threads" in ftz["message"]
    assert ftz["evidence"]["weights_census"] == WEIGHTS_CLEAN and ftz["evidence"]["ftz_readback"] == {
        "flushed": 3, "threads": 3}


def test_denormal_case_names_ftz_with_its_evidence():
    [ftz] = sv.resnet_order_findings(intel_denormal_doc())
    assert ftz["explains"] and ftz["significant"] and ftz["ratio"] == pytest.approx(1000 / 1450)
    assert ftz["message"].startswith("FTZ explains a speed-up")
    assert "this CPU penalises subnormal multiply-adds and FTZ/DAZ removes it (conv2d 5.0×" in ftz["message"]
    assert "the values hold subnormals (census: weights 1,000,000 of 25,557,032" in ftz["message"]


def test_penalty_that_ftz_does_not_remove_does_not_predict_an_ftz_effect():
    doc = intel_denormal_doc()
    doc["evidence"]["penalty"] = penalty(5.0, ftz_removes=False)
    [ftz] = sv.resnet_order_findings(doc)
    assert not ftz["explains"] and "not explained by denormals" in ftz["message"]
    assert "is a slow path FTZ/DAZ does not remove (conv2d 5.0×" in ftz["message"]


def test_penalty_and_subnormals_without_an_effect_say_to_check_the_readback():
    doc = intel_denormal_doc()
    for run in doc["runs"]:
        run["phases"]["eval"]["ns"] = samples(1000.0)
    [ftz] = sv.resnet_order_findings(doc)
    assert not ftz["explains"] and ftz["message"].startswith("FTZ should matter here")


def test_missing_runs_are_reported_not_raised():
    doc = zen4_allocator_doc()
    for run in doc["runs"]:
        if run["cell"]["ftz"] == "process":
            run["status"] = "failed"
    [ftz] = sv.resnet_order_findings(doc)
    assert ftz["ratio"] is None and "not measurable" in ftz["message"]


def test_missing_penalty_profile_and_census_say_so():
    doc = zen4_allocator_doc()
    doc["evidence"] = {}
    for run in doc["runs"]:
        run["notes"] = {}
    [ftz] = sv.resnet_order_findings(doc)
    assert "no penalty profile or census was recorded" in ftz["message"]


def test_wide_ci_is_not_called_no_effect():
    """The ftz=process processes disagree widely with each other: no effect can be ruled out."""
    doc = zen4_allocator_doc()
    for run in doc["runs"]:
        if run["cell"]["ftz"] == "process":
            scale = (0.6, 1.0, 1.6)[run["repetition"]]
            run["phases"]["eval"]["ns"] = [v * scale for v in run["phases"]["eval"]["ns"]]
    [ftz] = sv.resnet_order_findings(doc)
    assert not ftz["significant"]
    assert ftz["outcome"] == "unresolved"
    assert ftz["message"].startswith("FTZ's effect is unresolved (") and "crosses the ±5% band" in ftz["message"]


def test_matrix_without_ftz_axis_has_no_ftz_finding():
    doc = zen4_allocator_doc()
    doc["matrix"] = {"order": RESNET_MATRIX["order"], "alloc": RESNET_MATRIX["alloc"]}
    assert sv.resnet_order_findings(doc) == []


# --- zero_weights -----------------------------------------------------------

ZW_MATRIX = {"init": ["uniform", "zero"], "device": ["cpu", "cuda"], "ftz": ["off", "process"]}


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
                    notes=zw_notes, penalty_ev=penalty(1.0, sqrt_zero=6.0))


def test_cpu_answer_says_why_values_do_not_matter():
    [f] = by_rule(sv.zero_weights_findings(zero_weights_doc()), "values_do_not_matter_on_cpu")
    assert not f["explains"] and f["ratio"] == pytest.approx(1.0) and f["a"]["init"] == "zero"
    msg = f["message"]
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
    findings = by_rule(sv.zero_weights_findings(zero_weights_doc()), "seed_naive_timing")
    assert len(findings) == 4  # 2 devices x 2 inits, at the baseline ftz
    cpu = next(f for f in findings if f["a"]["device"] == "cpu" and f["a"]["init"] == "uniform")
    assert cpu["explains"] and cpu["ratio"] == pytest.approx(42.9 / 13.0)
    assert cpu["evidence"]["median_forward_backward_ms"] == 13.0
    assert "never runs" in cpu["message"] and "3.0× forward" in cpu["message"]
    gpu = next(f for f in findings if f["a"]["device"] == "cuda")
    assert "without synchronize" in gpu["message"]


def test_gpu_zero_weights_differ_but_cpu_rule_only_speaks_for_cpu():
    [f] = by_rule(sv.zero_weights_findings(zero_weights_doc()), "values_do_not_matter_on_cpu")
    assert f["a"]["device"] == "cpu" and f["b"]["device"] == "cpu"


def test_cpu_difference_is_reported_as_a_difference():
    doc = zero_weights_doc()
    for run in doc["runs"]:
        if run["cell"]["device"] == "cpu" and run["cell"]["init"] == "zero":
            run["phases"]["forward"]["ns"] = samples(3.0)
    [f] = by_rule(sv.zero_weights_findings(doc), "values_do_not_matter_on_cpu")
    assert f["explains"] and f["message"].startswith("on cpu, zero and uniform weights differ in time")


def test_ftz_no_effect_on_zero_weights_net():
    [f] = by_rule(sv.zero_weights_findings(zero_weights_doc()), "ftz_no_effect_zero_weights")
    assert not f["explains"] and f["message"].startswith("FTZ on this net has no effect")
    assert "activations 0" in f["message"]


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
