"""``benchctl explain`` end to end on workloads that each plant one cause (tests/planted/): it must name
the planted cause, invent none where nothing is planted, and fail clearly on a bad target."""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from benchctl import _validate, _workloads as workloads
from benchctl._cli.render import render
from benchctl._results import queries
from benchctl._results.findings import Finding, Status
from benchctl._studies import causes, explain
from conftest import require_gpu

PLANTED = os.path.join(os.path.dirname(__file__), "planted")
sys.path.insert(0, PLANTED)
from plants import FIX_KEYS, cause_here, declaration, declarations, plants  # noqa: E402 - the folder's own catalogue of each plant
BUDGET_S = 60.0  # half the default, for runs that call no effect (a fresh worker costs ~4 s here)


# A folder named here keeps each explain's results file and printed text (with how long it took): what a
# passing test ran is otherwise gone once pytest captures it.
KEEP_DIR = os.environ.get("BENCHCTL_KEEP_EXPLAIN")


def _case(target, planted):
    """A plant whose cause nobody has yet seen named `*` here says so in its ``PLANT["unverified"]``: its
    test runs, and a pass or a failure is reported as such without failing the tier (an open item of
    its issue, not a proof)."""
    why = declaration(target).get("unverified")
    return pytest.param(target, planted, marks=[pytest.mark.xfail(reason=why, strict=False)] if why else [])


def _explain(target, **kwargs):
    """The document and what ``benchctl explain`` prints: its progress lines, the report and the answer."""
    said = []
    path = os.path.join(PLANTED, target)
    started = time.perf_counter()
    environ = dict(os.environ)
    try:
        doc = explain.explain(path, budget_s=kwargs.pop("budget_s", BUDGET_S), progress=False, say=said.append,
                              **kwargs)
    finally:
        # explain imports the target here first; a plant that sets a variable at import (scalar_kernels.py:
        # ATEN_CPU_CAPABILITY=default) would otherwise reach every later plant's workers.
        os.environ.clear()
        os.environ.update(environ)
    text = "\n".join(said + [render(doc, path)])
    if KEEP_DIR:
        os.makedirs(KEEP_DIR, exist_ok=True)
        name = target.replace(":", "-").replace(".py", "")
        with open(os.path.join(KEEP_DIR, f"{name}.txt"), "w") as out:
            out.write(f"{target} took {time.perf_counter() - started:.1f} s\n{text}\n")
        with open(os.path.join(KEEP_DIR, f"{name}.json"), "w") as out:
            json.dump(doc, out)
    return doc, text


def _findings(doc):
    """{cause name: its finding} (a cause judged in several phases keeps its last)."""
    found = map(Finding.from_json, doc["verdict"])
    return {f.rule.removeprefix("cause_"): f for f in found if f.rule.startswith("cause_")}


def _status(finding):
    return finding.status


def test_every_plant_names_a_cause_of_the_library_and_its_reported_fix():
    """What bench/plant_toggles.py times against each plant: a fix in one of the forms it knows; and the
    cause it plants is one explain can name."""
    names = {c.name for c in causes.CAUSES}
    for name, plant in declarations():
        if plant["cause"] is None:
            continue
        assert plant["cause"] in names, name
        assert plant.get("fixed") and set(plant["fixed"]) <= set(FIX_KEYS), name


def test_a_plant_plants_nothing_on_a_cpu_with_a_flag_its_cause_needs_absent():
    """half_linear.py's float16 is native arithmetic on a CPU with avx512_fp16: there it plants nothing."""
    from benchctl._causes.isa.probe import cpu_flags

    flags = cpu_flags() or frozenset()
    plant = {"target": "Bench", "cause": "half"}
    assert cause_here(plant) == "half"
    assert cause_here({**plant, "cpu_lacks": ["no_such_flag"]}) == "half"
    if flags:
        assert cause_here({**plant, "cpu_lacks": ["no_such_flag", sorted(flags)[0]]}) is None
    half = declaration("half_linear.py:Bench")
    assert ("half_linear.py:Bench", cause_here(half)) in plants(("cpu",))
    assert (cause_here(half) is None) == bool({"avx512_fp16", "amx_fp16"} & flags)


@pytest.mark.slow
@pytest.mark.parametrize("target, planted", [_case(t, c) for t, c in plants(("cpu",)) if c is not None])
def test_explain_names_the_planted_cause_and_no_other(target, planted):
    """At the default budget, as the issue's target (2 minutes each) is set: this CPU's subnormal
    penalty is at most ~2x and processes here differ by up to ~20%; the allocator plant probes 6 cells.
    On a quiet machine the planted cause must be named; when most workers shared the CPUs with other
    work, "unresolved" (said with that reason) skips the test. A wrong cause fails it either way."""
    _names_the_planted_cause_and_no_other(target, planted)


@pytest.mark.slow
@pytest.mark.cuda
@pytest.mark.parametrize("target, planted", [p for p in plants(("cuda",)) if p[1] is not None])
def test_explain_names_the_planted_gpu_cause_and_no_other(target, planted):
    """The same on the plants that need a GPU (``"device": "cuda"``): skipped without one."""
    require_gpu()
    _names_the_planted_cause_and_no_other(target, planted)


def _names_the_planted_cause_and_no_other(target, planted):
    doc, text = _explain(target, budget_s=explain.DEFAULT_BUDGET_S)
    found = _findings(doc)
    assert set(found) == {c.name for c in causes.CAUSES}, "every cause of the library has a finding"
    named_with = {planted, *declaration(target).get("also", ())}  # causes judging the same evidence
    invented = [name for name, f in found.items() if name not in named_with and _status(f) == Status.CAUSE]
    assert not invented, text
    shared = sum(map(queries.shared_cpus, doc["runs"]))
    if _status(found[planted]) == Status.UNRESOLVED and queries.mostly_shared(doc["runs"]):
        # Beside other work its processes can differ more than the budget resolves (3.8x once, beside a
        # spinning process); "unresolved" is then the right answer, and the run must say why.
        assert f"{shared} of {len(doc['runs'])} workers shared the CPUs with other work" in text, text
        pytest.skip(f"other work shared the CPUs with {shared} of {len(doc['runs'])} workers and explain said "
                    f"unresolved: {found[planted].message}")
    if _status(found[planted]) == Status.UNCONFIRMED and "waiting for a CPU" not in found[planted].message:
        # The effect measured, and the one counter left to confirm its mechanism by did not move: the
        # oversubscribed plant where this kernel keeps no schedstat (no wait for a CPU to read), and its context
        # switches barely move under few, long slices (an Intel Xeon VM: 3 an iteration against 2).
        assert f" ? {found[planted].message}" in text and " fall with it" in found[planted].message, text
        pytest.skip(f"the planted effect was measured, its mechanism's counter did not move on this machine: "
                    f"{found[planted].message}")
    assert _status(found[planted]) == Status.CAUSE, text
    assert f" * {found[planted].message}" in text
    assert "none of the probed causes explains" not in text


@pytest.mark.slow
@pytest.mark.parametrize("target", [t for t, cause in plants(("cpu",)) if cause is None])
def test_explain_invents_no_cause_where_none_is_planted(target):
    doc, text = _explain(target)
    assert not [f for f in _findings(doc).values() if _status(f) == Status.CAUSE], text
    assert "none of the probed causes explains the time of" in text and " * " not in text


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs for a count below them")
def test_explain_names_an_environments_thread_count_below_the_cpus(monkeypatch):
    """OMP_NUM_THREADS=1 where the command starts (torchrun's default for several processes a node): the plain
    matmul's workers run one thread on two CPUs, and the few_threads cause holds the count at both."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    doc, text = _explain("plain.py:matmul")
    found = _findings(doc)["few_threads"]
    if _status(found) == Status.UNRESOLVED and queries.mostly_shared(doc["runs"]):
        pytest.skip(f"other work shared the CPUs and explain said unresolved: {found.message}")
    assert _status(found) == Status.CAUSE, text
    assert "as OMP_NUM_THREADS=1 in its environment asks" in found.message
    assert not [f for name, f in _findings(doc).items() if name != "few_threads" and _status(f) == Status.CAUSE], text


@pytest.mark.slow
def test_causes_their_prechecks_rule_out_run_no_cells():
    doc, text = _explain("plain.py:matmul", budget_s=30.0)
    ruled = [f for f in _findings(doc).values() if _status(f) == Status.RULED_OUT]
    assert {f.rule for f in ruled} >= {"cause_denormals", "cause_order"}  # no subnormals, one phase
    gpu = {"cause_async_clock", "cause_cudnn_autotune", "cause_cuda_first_call", "cause_tf32"}
    assert {f.rule for f in ruled} >= gpu  # a CPU matmul: no CUDA work, whether or not a GPU is here
    probed = doc["matrix"]["with"]
    assert {"ftz": "process"} not in probed and not any("only" in p for p in probed)
    assert not any({"sync", "cudnn_benchmark", "cuda_init", "matmul_precision"} & set(p) for p in probed)
    # The answer names what was ruled out on one line; the reasons are behind --verbose and in the file.
    named = next(line for line in text.splitlines() if line.startswith(" - ruled out before running: "))
    names = re.split(r"; | \(", named.split(": ", 1)[1])[0].split(", ")  # up to the next kind or the "(why"
    assert {"denormals", "order", "async_clock", "tf32"} <= set(names), named
    assert "denormals (subnormal arithmetic): ruled out before running: " in render(doc, verbose=True)


def test_explain_refuses_a_target_that_does_not_load(tmp_path):
    with pytest.raises(workloads.TargetImportError, match="no such file"):
        explain.explain(str(tmp_path / "missing.py") + ":fn", progress=False)
    bad = tmp_path / "syntax.py"
    bad.write_text("def fn(:\n")
    with pytest.raises(workloads.TargetImportError, match="SyntaxError: invalid syntax"):
        explain.explain(f"{bad}:fn", progress=False)


@pytest.mark.slow
def test_explain_names_the_phases_a_workload_runs_when_asked_for_another():
    with pytest.raises(_validate.ArgumentError, match=r"phase 'eval': .*plain.py:matmul runs call"):
        _explain("plain.py:matmul", phase="eval")


def test_a_workload_failing_in_its_probe_brings_back_its_traceback(tmp_path):
    user = tmp_path / "failing.py"
    user.write_text("def fn():\n    raise ValueError('planted failure')\n")
    with pytest.raises(RuntimeError, match=r"(?s)failed in its probe worker.*ValueError: planted failure"):
        explain.explain(f"{user}:fn", progress=False)


def test_explain_from_the_command_line_fails_with_one_clear_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "benchctl", "explain", f"{tmp_path}/nowhere.py:fn"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("explain: ")
    assert "nowhere.py" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "benchctl", "explain", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "setup() and run(state)" in proc.stdout and "--budget" in proc.stdout
    # The causes the help lists are the registry's, each with its probe.
    from benchctl._studies.causes import CAUSES

    listed = " ".join(proc.stdout.split())
    assert all(f"{cause.name} (" in listed for cause in CAUSES) and "profiler (profiler=off)" in listed
