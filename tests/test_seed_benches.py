"""The seed workloads through the runner (fresh worker processes) and the bench scripts, at tiny sizes.

The verdict rules run on these real small outputs (content checked loosely;
the synthetic cases in test_seed_verdicts.py check them exactly).
"""

from __future__ import annotations

import json
from dataclasses import replace
import os
import subprocess
import sys

import pytest

from benchctl._cli import seed
from benchctl._results import answer, rules
from benchctl._results.comparison import Comparison, Outcome
from benchctl._results.facts import Facts
from benchctl._results.findings import Finding, Status
from benchctl._run import runner
from benchctl._studies import pipeline, seed_rules

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_RESNET = {"arch": "mobilenet_v3_small", "image_size": 32, "batch_size": 2, "num_data": 4, "weights": "random"}
TINY_ZERO = {"iterations": 5, "naive_trials": 3}


@pytest.fixture(scope="module")
def resnet_doc(tmp_path_factory):
    path = tmp_path_factory.mktemp("resnet") / "results.json"
    # ftz=process only: the readback then has something to show, at two workers' cost.
    matrix = {"order": ["eval_only", "train_then_eval"], "ftz": ["process"]}
    return runner.run_matrix("resnet_order", TINY_RESNET, matrix, repeat=1, json_path=str(path),
                               progress=False, focus="order", control=False)


@pytest.fixture(scope="module")
def zero_doc():
    return runner.run_matrix("zero_weights", TINY_ZERO, {"init": ["uniform", "zero"], "ftz": ["off", "process"]},
                               repeat=1, progress=False, focus="init", control=False)


@pytest.mark.slow
def test_both_orders_run_in_their_own_processes_with_times_and_counters(resnet_doc):
    runs = resnet_doc["runs"]
    assert len(runs) == 2 and all(r["status"] == "ok" for r in runs), [r.get("error") for r in runs]
    assert len({r["worker"]["pid"] for r in runs}) == 2
    for run in runs:
        expected = {"eval"} if run["cell"]["order"] == "eval_only" else {"train", "eval"}
        assert set(run["phases"]) == expected
        for data in run["phases"].values():
            assert len(data["ns"]) == 2 and all(ns > 0 for ns in data["ns"])
            assert len(data["counters"]["minor_faults"]) == 2


@pytest.mark.slow
def test_cells_carry_their_settings_readback(resnet_doc):
    for run in resnet_doc["runs"]:
        assert run["readback"]["ftz"]["observed"]["all_flushed"]
    cells = [e["cell"] for e in resnet_doc["summary"] if e["phase"] == "eval"]
    assert sorted(c["order"] for c in cells) == ["eval_only", "train_then_eval"]
    assert all(c["ftz"] == "process" for c in cells)
    [train] = [e for e in resnet_doc["summary"] if e["phase"] == "train"]
    assert train["cell"]["order"] == "train_then_eval"


@pytest.mark.slow
def test_resnet_notes_carry_weights_and_census(resnet_doc):
    notes = resnet_doc["runs"][0]["notes"]
    assert notes["weights"]["used"] == "random"
    assert notes["weights_census"]["values"] > 0 and notes["weights_census"]["subnormal"] == 0
    assert notes["activation_census"]["values"] > 0


def _zero_findings(doc: dict) -> list[Finding]:
    """The zero_weights study's rules on a real document, with the census its cells noted."""
    census = {"weights": doc["runs"][0]["notes"]["weights_census"]}
    return rules.judge(doc, seed_rules.zero_weights_rules(), focus="init", facts=Facts.from_census(census))


@pytest.mark.slow
def test_ftz_rule_on_real_output(zero_doc):
    [finding, _] = [f for f in _zero_findings(zero_doc) if f.rule == "cause_denormals"]
    assert finding.comparison.ratio > 0 and finding.a["ftz"] == "process" and finding.b["ftz"] == "off"
    assert "the census counts weights 0 subnormal of" in finding.message
    readback = finding.evidence["ftz_readback"]
    assert readback["flushed"] == readback["threads"] > 0


@pytest.mark.slow
def test_zero_weights_cells_really_run_backward_and_keep_the_naive_timing(zero_doc):
    for run in zero_doc["runs"]:
        assert run["status"] == "ok", run.get("error")
        assert set(run["phases"]) == {"forward", "forward_backward"}
        grads = run["notes"]["gradients"]
        assert all(g["exists"] for g in grads.values())
        if run["cell"]["init"] == "uniform":
            assert all(g["nonzero"] > 0 for g in grads.values())
        assert run["notes"]["naive_seed_timing"]["forward_ms"] > 0
        assert run["phases"]["forward"]["counters"]["minor_faults"]


@pytest.mark.slow
def test_zero_weights_rules_on_real_output(zero_doc):
    findings = _zero_findings(zero_doc)
    names = {f.rule for f in findings}
    assert {"values_do_not_matter_on_cpu", "cause_denormals", "seed_naive_timing"} <= names
    naive = [f for f in findings if f.rule == "seed_naive_timing"]
    assert len(naive) == 2 and all("never runs" in f.message for f in naive)


def test_penalty_profile_evidence_is_normalised():
    ev = pipeline.measure_penalty(("conv2d",))
    assert set(ev["penalty"]) == {"conv2d"}
    assert {"subnormal_ratio", "zero_ratio", "penalised_subnormal", "ftz_removes"} <= set(ev["penalty"]["conv2d"])


def bench(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, os.path.join(ROOT, "bench", script), *args], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_zero_weights_script_answers(tmp_path):
    out = tmp_path / "zw.json"
    done = bench("zero_weights.py", "--iterations", "3", "--naive-trials", "3", "--set", "threads=1",
                 "--set", "ftz=off", "--set", "init=uniform", "--repeat", "1", "--skip-penalty", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "1 process(es) per cell" in done.stdout and "\nAnswer for zero_weights (" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].startswith(" "), "the answer is the last block"
    assert "never runs" in done.stdout
    doc = json.loads(out.read_text())
    assert doc["summary"] and doc["evidence"]["penalty"] is None
    assert any(f["rule"] == "seed_naive_timing" for f in doc["verdict"])
    # Resuming a finished file starts no worker and answers again from the same runs.
    again = bench("zero_weights.py", "--iterations", "3", "--naive-trials", "3", "--set", "threads=1",
                  "--set", "ftz=off", "--set", "init=uniform", "--repeat", "1", "--skip-penalty",
                  "--json", str(out), "--resume")
    assert again.returncode == 0, again.stderr
    resumed = json.loads(out.read_text())
    assert [r["worker"]["pid"] for r in resumed["runs"]] == [r["worker"]["pid"] for r in doc["runs"]]
    assert "never runs" in again.stdout


@pytest.mark.slow
def test_resnet_order_script_runs_one_cell(tmp_path):
    out = tmp_path / "ro.json"
    done = bench("resnet_order.py", "--arch", "mobilenet_v3_small", "--image-size", "32", "--batch-size", "2",
                 "--num-data", "2", "--weights", "random", "--set", "order=eval_only", "--set", "ftz=off",
                 "--set", "alloc=default", "--repeat", "1", "--skip-penalty", "--json", str(out))
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["matrix"] == {"order": ["eval_only"], "ftz": ["off"], "alloc": ["default"]}
    # The one cell, and again as the A/A control's second arm.
    assert [(r.get("arm"), r["status"]) for r in doc["runs"]] == [("A", "ok"), ("B", "ok")]
    assert "Values:" in done.stdout and "weights random: 0 of" in done.stdout


def test_resnet_order_script_rejects_bad_weights_before_running():
    done = bench("resnet_order.py", "--weights", "subnormal:2")
    assert done.returncode == 2 and "must be in (0, 1]" in done.stderr


@pytest.mark.slow
def test_resnet_order_script_offline_imagenet_names_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    monkeypatch.setenv("BENCHCTL_OFFLINE", "1")
    done = bench("resnet_order.py", "--weights", "imagenet")
    assert done.returncode == 3, done.stderr  # unavailable here, not refused: another node may have the file
    assert os.path.join(str(tmp_path), "hub", "checkpoints", "resnet50-0676ba61.pth") in done.stderr


# --- the seed scripts' helpers and the answer --------------------------------

def test_apply_sets_adds_and_narrows_axes():
    base = {"order": ["eval_only", "train_then_eval"], "alloc": ["default", "retain"]}
    got = seed.apply_sets(base, ["alloc=retain", "threads=1,2"])
    assert got == {"order": ["eval_only", "train_then_eval"], "alloc": ["retain"], "threads": ["1", "2"]}
    assert base["alloc"] == ["default", "retain"]
    with pytest.raises(ValueError, match="given twice"):
        seed.apply_sets(base, ["alloc=retain", "alloc=default"])


def load_script(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "bench", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_resnet_order_sizes_default_and_seed_exact():
    script = load_script("resnet_order")
    assert script.sizes(None, None, None) == (16, 80, 3)
    # The seed's experiment: choosing a size brings back its loop (train on every batch).
    assert script.sizes(128, 1024, None) == (128, 1024, None)
    assert script.sizes(None, None, 0) == (16, 80, None)
    assert script.sizes(32, None, 2) == (32, 80, 2)
    # Batches read before each loop at the default sizes only; streamed, as the seed, once a size is chosen.
    assert script.load_first(None, None) is True
    assert script.load_first(128, 1024) is False and script.load_first(None, 1024) is False


def _cmp(ratio: float, lo: float, hi: float, outcome: Outcome) -> Comparison:
    return Comparison(ratio=ratio, ci95=(lo, hi), k_a=3, k_b=3, median_a=ratio, median_b=1.0, log_se=0.05,
                      outcome=outcome)


def test_answer_says_each_finding_once_found_first_then_open_then_ruled_out():
    ruled = Finding("cause_denormals", None, Status.RULED_OUT, "denormals: ruled out before running: no penalty")
    closes = Finding("closes_gap", "eval", Status.CAUSE, "alloc=retain closes the gap",
                     _cmp(1.0, 0.97, 1.03, Outcome.NO_EFFECT))
    keeps = Finding("keeps_gap", "eval", Status.NOT_CAUSE, "ftz=process does not", _cmp(1.4, 1.3, 1.5, Outcome.EFFECT))
    open_gap = Finding("gap", "eval", Status.UNRESOLVED, "order=eval_only against order=train_then_eval is open",
                       _cmp(1.1, 0.9, 1.3, Outcome.UNRESOLVED), a={"order": "eval_only"}, b={"order": "x"})
    quiet = Finding("setting_effect", "eval", Status.NOT_CAUSE, "threads=2: no difference",
                    _cmp(1.0, 0.99, 1.01, Outcome.NO_EFFECT), in_answer=False)
    text = answer.format_answer([ruled, keeps, closes, open_gap, quiet], "resnet_order", verbose=True)
    lines = text.splitlines()
    assert lines[0].startswith("Answer for resnet_order (* measured, and what explains it;")
    assert lines[1:] == [  # one phase: no phase is named
        " * alloc=retain closes the gap",
        f" ? order=eval_only against order=train_then_eval is open{answer.settle_text(open_gap)}",
        " - ftz=process does not",
        " - denormals: ruled out before running: no penalty",
    ]
    # Without verbose the "-" findings are named on one line, ruled out before running apart from measured.
    short = answer.format_answer([ruled, keeps, closes, open_gap, quiet], "resnet_order").splitlines()
    assert short[:3] == lines[:3]
    assert short[3:] == [f" - ruled out before running: denormals; measured, not the cause: keeps_gap "
                         f"(why each: {answer.VERBOSE_FLAG})"]
    train = Finding("gap", "train", Status.MEASURED, "train is slower", _cmp(1.4, 1.3, 1.5, Outcome.EFFECT))
    assert " * [train] train is slower" in answer.format_answer([closes, train], "resnet_order").splitlines()
    assert answer.settle_text(open_gap).startswith("; about ") and "processes per cell would settle it" in lines[2]
    assert "no cell differs from the baseline" in answer.format_answer([quiet], "x")
    assert "no two cells to compare" in answer.format_answer([], "x")


def test_a_phase_whose_findings_name_no_cause_says_so():
    flat = Finding("cause_allocator", "call", Status.NOT_CAUSE, "allocator: alloc=retain changes nothing",
                   _cmp(1.0, 0.98, 1.02, Outcome.NO_EFFECT))
    text = answer.format_answer([flat], "plain.py:fn")
    assert answer.NO_CAUSE.format(subject="plain.py:fn", phase="call", band=0.05) in text
    # Identical processes 490% apart: no cell can show "no effect", and the sentence does not say one did.
    wide = Finding("cause_allocator", "call", Status.UNRESOLVED, "allocator: unresolved",
                   replace(_cmp(0.88, 0.16, 4.7, Outcome.UNRESOLVED), band=4.9))
    text = answer.format_answer([wide], "plain.py:fn")
    assert "no effect beyond" not in text
    assert ("none of the probed causes explains the time of plain.py:fn in phase call, and this run cannot tell "
            "whether one would: identical processes differ by up to ±490% here, over the ±25% within which "
            "'no effect' is said") in text


def test_beneath_no_cause_the_answer_says_which_ops_took_the_profiled_calls_time():
    from benchctl._results.facts import OpRow

    flat = Finding("cause_allocator", "call", Status.NOT_CAUSE, "allocator: alloc=retain changes nothing",
                   _cmp(1.0, 0.98, 1.02, Outcome.NO_EFFECT))
    rows = (OpRow("aten::resolve_conj", ("float",), 3, 3.0, 0.0, ((384, 384),)),
            OpRow("aten::mm", ("float",), 1, 600.0, 0.0, ((384, 384), (384, 384))),
            OpRow("aten::matmul", ("float",), 1, 11.0, 620.0, ((384, 384), (384, 384)), 1),
            OpRow("aten::add_", ("float",), 2, 50.0, 50.0, ((384, 384), ()), 2))
    facts = Facts(phases=["call"], op_table=rows, call_wall_us=800.0)
    lines = answer.format_answer([flat], "plain.py:fn", facts=facts).splitlines()
    said = answer.NO_CAUSE.format(subject="plain.py:fn", phase="call", band=0.05)
    where = lines[lines.index(" " + said) + 1]
    assert where == "   " + answer.TOP_OPS_SAID.format(
        wall_ms=0.8, ops="75% in aten::mm on 384x384, 384x384 (1 call), 6% in aten::add_ on 384x384 (2 calls), "
                         "1% in aten::matmul on 384x384, 384x384 (1 call)")
    assert answer.TOP_OPS == 3 and "resolve_conj" not in where  # the top three by self time only
    # No line where no call was profiled, for another phase than the profiled one, or without the facts.
    assert answer.format_answer([flat], "plain.py:fn", facts=Facts(phases=["call"])).splitlines() == \
        answer.format_answer([flat], "plain.py:fn").splitlines()
    other = Facts(phases=["setup", "train"], op_table=rows, call_wall_us=800.0)
    assert answer.format_answer([flat], "plain.py:fn", facts=other) == answer.format_answer([flat], "plain.py:fn")
    # Said under the answer's first line too, which takes the no-cause sentence's place (it says why none is named).
    first = answer.format_answer([flat], "plain.py:fn", first="busy", facts=facts).splitlines()
    assert first[1] == " busy" and where in first and " " + said not in first


def test_beneath_no_cause_the_answer_gives_the_split_by_library():
    from benchctl._causes.python_time.probe import PROBE as SPLIT
    from benchctl._libsplit import Kind, KindSamples, LibrarySplit
    from benchctl._results.facts import OpRow

    flat = Finding("cause_allocator", "call", Status.NOT_CAUSE, "allocator: alloc=retain changes nothing",
                   _cmp(1.0, 0.98, 1.02, Outcome.NO_EFFECT))
    rows = (OpRow("aten::mm", ("float",), 1, 600.0, 0.0, ((384, 384), (384, 384))),)
    split = LibrarySplit(kinds=(KindSamples(Kind.TORCH_CPU, 80), KindSamples(Kind.OPENMP, 20)), samples=100,
                         cpu_ns=100, kernel_ns=0, period_ns=1)
    facts = Facts(phases=["call"], op_table=rows, call_wall_us=800.0, probed={SPLIT.key: split})
    lines = answer.format_answer([flat], "plain.py:fn", facts=facts).splitlines()
    said = answer.NO_CAUSE.format(subject="plain.py:fn", phase="call", band=0.05)
    at = lines.index(" " + said)
    assert lines[at + 2] == f"   CPU time of its timed iterations by library: {split.text()}"  # under the top ops
    assert split.text() == "libtorch_cpu 80%, OpenMP runtime 20%"
    # the pools' and the allocator's evidence quote the same sentence; nothing where no split was sampled
    from benchctl._causes.python_time.probe import quoted
    assert quoted(facts) == f"; CPU time of its timed iterations by library: {split.text()}"
    assert quoted(Facts(phases=["call"])) == "" and quoted(None) == ""
    # an unsampled window says nothing there
    unsampled = Facts(phases=["call"], op_table=rows, call_wall_us=800.0,
                      probed={SPLIT.key: LibrarySplit.not_sampled("no timers here")})
    assert not any("by library" in line for line in
                   answer.format_answer([flat], "plain.py:fn", facts=unsampled).splitlines())
