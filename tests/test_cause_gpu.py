"""The GPU causes (async clock, cuDNN autotuning, CUDA's lazy start, TF32): pre-checks, judgements on synthetic
explaining runs, their settings and the probe worker's collector. The fast tests run anywhere (no GPU: every GPU
cause must rule itself out and add no cell); the tests marked ``cuda`` need a GPU."""

import json

import numpy as np
import pytest
import torch

from benchctl import settings
from benchctl._causes.async_clock import control as cuda_state
from benchctl._causes.async_clock.rule import HOST_COVERS_GPU, AsyncClock
from benchctl._causes.cuda_first_call.probe import PROBE as CUDA, CudaFacts, by_shapes, cuda_census, no_cuda_reason
from benchctl._causes.cuda_first_call.rule import CudaFirstCall
from benchctl._causes.cudnn_autotune.rule import CudnnAutotune
from benchctl._causes.tf32.rule import MIN_MATMUL_SHARE, Tf32
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._run.recorder import Recorder
from benchctl._workloads.user import load
from conftest import require_gpu
from synthetic_results import make_doc

GPU_CAUSES = (AsyncClock(), CudnnAutotune(), CudaFirstCall(), Tf32())
PROBES = [{}, {"sync": "cuda"}, {"cudnn_benchmark": "off"}, {"cuda_init": "eager"}, {"matmul_precision": "high"},
          {"matmul_precision": "highest"}]
ON_GPU = CudaFacts(initialized=True, available=True, cudnn_benchmark="on", matmul_precision="highest", host_ms=0.2,
                   event_ms=40.0, new_shape_ms=(90.0, 80.0, 85.0), seen_shape_ms=(), conv_calls=4,
                   matmul_fp32_share=0.6)


def facts(**cuda_changes):
    return Facts(phases=["call"], median_ms={"call": 10.0}, cpus=2,
                 probed={CUDA.key: CudaFacts(**{**ON_GPU.__dict__, **cuda_changes})})


def run_with(planted, readback=None):
    """An explaining run where ``planted(probe) -> time factor``: three processes a cell, with the control."""
    return analyse(make_doc({"with": PROBES}, factor=lambda c: planted(c["with"]), phase="call", control=True,
                            readback=readback))


def judge(cause, doc, the_facts=None):
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=the_facts or facts(), penalty=None)
    return cause.judge(ctx)[0]


def only(probe, factor, rest=1.0):
    return lambda p: factor if p == probe else rest


# --- pre-checks: out without CUDA, kept where the evidence is there ---------------------------------------------

@pytest.mark.parametrize("cause", GPU_CAUSES, ids=lambda c: c.name)
def test_every_gpu_cause_is_out_without_cuda_and_adds_no_cell(cause):
    no_device = Facts(probed={CUDA.key: CudaFacts(initialized=False, available=False)})
    assert "no CUDA device here" in cause.precheck(no_device, None) and cause.probes(no_device) == []
    cpu_work = Facts(probed={CUDA.key: CudaFacts(initialized=False, available=True)})
    assert "ran no CUDA work" in cause.precheck(cpu_work, None) and cause.probes(cpu_work) == []
    unknown = Facts()  # a registered workload whose probe note says nothing of CUDA
    assert "nothing is known of its GPU use" in cause.precheck(unknown, None) and cause.probes(unknown) == []
    assert cause.precheck(facts(), None) is None and len(cause.probes(facts())) == 1


def test_each_gpu_precheck_rules_out_on_its_own_evidence():
    assert "already waits for its own GPU work" in AsyncClock().precheck(facts(host_ms=39.0), None)
    assert "one call read 39 ms on the host clock against 40 ms on CUDA events" in \
        AsyncClock().precheck(facts(host_ms=39.0), None)
    assert AsyncClock().precheck(facts(host_ms=None, event_ms=None), None) is None  # unknown: probed
    autotune = CudnnAutotune()
    assert "benchmark is off" in autotune.precheck(facts(cudnn_benchmark="off"), None)
    assert "ran no convolution" in autotune.precheck(facts(conv_calls=0, new_shape_ms=()), None)
    assert "repeat from call to call" in autotune.precheck(facts(new_shape_ms=(), seen_shape_ms=(5.0, 5.1)), None)
    assert autotune.probes(facts(cudnn_benchmark="off")) == []
    assert "take 1.0% of its GPU kernel time" in Tf32().precheck(facts(matmul_fp32_share=0.01), None)
    assert Tf32().precheck(facts(matmul_fp32_share=None), None) is None


def test_cuda_first_call_is_out_where_the_probe_worker_had_no_lazy_start():
    def with_first(extra):
        return Facts(**{**facts().__dict__, "first_extra": {"call": extra}})
    reason = CudaFirstCall().precheck(with_first(2.0), None)
    assert "its first iterations cost 2.0 steady iterations in the probe worker: under 10" in reason
    assert CudaFirstCall().precheck(with_first(30.0), None) is None  # a lazy start: probed
    assert CudaFirstCall().precheck(with_first(None), None) is None  # too short to say: probed


def test_tf32_probes_the_other_precision():
    assert Tf32().probes(facts()) == [{"matmul_precision": "high"}]
    assert Tf32().probes(facts(matmul_precision="high")) == [{"matmul_precision": "highest"}]
    assert Tf32().probes(facts(matmul_precision="medium")) == [{"matmul_precision": "highest"}]


# --- judgements on synthetic runs --------------------------------------------------------------------------------

def test_async_clock_named_when_synchronising_shows_the_gpu_time_the_host_clock_missed():
    found = judge(AsyncClock(), run_with(only({"sync": "cuda"}, 20.0)))
    assert found.status == Status.CAUSE and found.mark == "*", found.message
    assert "synchronised before each clock read it is 20.00× slower [95% CI" in found.message
    assert "one call read 0.2 ms on the host clock against 40 ms on CUDA events" in found.message
    assert settings.SETTINGS["sync"].mechanism in found.message and "torch.cuda.synchronize()" in found.message
    same = judge(AsyncClock(), run_with(lambda p: 1.0))
    assert same.status == Status.NOT_CAUSE and same.mark == "-"
    assert "synchronising before each clock read changes nothing beyond ±5%" in same.message
    open_ = judge(AsyncClock(), run_with(only({"sync": "cuda"}, 1.05)))
    assert open_.status == Status.UNRESOLVED and open_.mark == "?", open_.message
    unexplained = judge(AsyncClock(), run_with(only({"sync": "cuda"}, 3.0)), facts(host_ms=None))
    assert unexplained.status == Status.UNCONFIRMED and "unconfirmed" in unexplained.message


def test_cudnn_autotune_named_when_benchmark_off_is_faster_and_shapes_were_new():
    found = judge(CudnnAutotune(), run_with(only({"cudnn_benchmark": "off"}, 0.4)))
    assert found.status == Status.CAUSE, found.message
    assert "with torch.backends.cudnn.benchmark off it is 2.50× faster" in found.message
    assert "3 of 3 probe calls after the first ran convolution shapes no earlier one ran (median 85 ms" in \
        found.message
    assert settings.SETTINGS["cudnn_benchmark"].mechanism in found.message
    seen = judge(CudnnAutotune(), run_with(only({"cudnn_benchmark": "off"}, 0.4)),
                 facts(new_shape_ms=(), seen_shape_ms=()))
    assert seen.status == Status.UNCONFIRMED and seen.mark == "?"
    same = judge(CudnnAutotune(), run_with(lambda p: 1.0))
    assert same.status == Status.NOT_CAUSE and "cudnn.benchmark off changes nothing beyond ±5%" in same.message
    assert judge(CudnnAutotune(), run_with(only({"cudnn_benchmark": "off"}, 0.952))).status == \
        Status.UNRESOLVED


def test_a_probe_the_code_switches_back_is_reported_never_judged():
    def readback(cell):
        if cell["with"] != {"cudnn_benchmark": "off"}:
            return {}
        return {"cudnn_benchmark": {"requested": "off", "observed": "on",
                                    "during": {"held": False, "seen": "on", "samples": 16}}}
    found = judge(CudnnAutotune(), run_with(only({"cudnn_benchmark": "off"}, 0.4), readback))
    assert found.status == Status.UNRESOLVED and found.comparison is None
    assert "the workload's own code set cudnn_benchmark=on during the timed iterations" in found.message


def _first_iterations(doc, lazy, eager):
    for run in doc["runs"]:
        run["phases"]["call"]["ns"][0] *= eager if run["cell"]["with"] == {"cuda_init": "eager"} else lazy
    return analyse(doc)


def test_cuda_first_call_named_when_an_eager_context_removes_the_first_iteration_cost():
    found = judge(CudaFirstCall(), _first_iterations(run_with(lambda p: 1.0), 50.0, 1.2))
    assert found.status == Status.CAUSE, found.message
    assert "its first iteration is 41.67× faster [95% CI" in found.message, found.message  # 50 / 1.2
    assert settings.SETTINGS["cuda_init"].mechanism in found.message
    kept = judge(CudaFirstCall(), _first_iterations(run_with(lambda p: 1.0), 50.0, 50.0))
    assert kept.status == Status.NOT_CAUSE and "warm-up cause's finding" in kept.message
    assert "creating the CUDA context first changes nothing beyond" in kept.message
    assert judge(CudaFirstCall(), _first_iterations(run_with(lambda p: 1.0), 1.05, 1.0)).status == \
        Status.UNRESOLVED


def test_tf32_named_when_tf32_matmuls_are_faster_and_matmuls_take_the_time():
    found = judge(Tf32(), run_with(only({"matmul_precision": "high"}, 0.5)))
    assert found.status == Status.CAUSE, found.message
    assert "at precision 'highest'; at 'high' it is 2.00× faster" in found.message
    assert "float32 matmuls take 60% of its GPU kernel time" in found.message
    unmeasured = judge(Tf32(), run_with(only({"matmul_precision": "high"}, 0.5)), facts(matmul_fp32_share=None))
    assert unmeasured.status == Status.UNCONFIRMED
    already = judge(Tf32(), run_with(only({"matmul_precision": "highest"}, 2.0)), facts(matmul_precision="high"))
    assert already.status == Status.NOT_CAUSE and "already runs TF32" in already.message, already.message
    assert judge(Tf32(), run_with(lambda p: 1.0)).status == Status.NOT_CAUSE
    assert judge(Tf32(), run_with(only({"matmul_precision": "high"}, 0.952))).status == Status.UNRESOLVED


# --- settings, facts and the collector (CPU) ----------------------------------------------------------------------

def test_the_gpu_settings_take_their_values_and_refuse_others():
    assert settings.canonical_value("sync", "CUDA", {}) == "cuda"
    assert settings.canonical_value("cudnn_benchmark", False, {}) == "off"
    assert settings.canonical_value("matmul_precision", "high", {}) == "high"
    assert settings.canonical_value("cuda_init", "eager", {}) == "eager"
    for name, bad in (("sync", "gpu"), ("cudnn_benchmark", "auto"), ("matmul_precision", "tf32"),
                      ("cuda_init", "now")):
        with pytest.raises(settings.SettingError, match=name):
            settings.canonical_value(name, bad, {})


def test_cudnn_benchmark_and_matmul_precision_apply_read_back_and_see_the_code_switch_them():
    before = torch.backends.cudnn.benchmark, torch.get_float32_matmul_precision()
    bench, precision = settings.SETTINGS["cudnn_benchmark"], settings.SETTINGS["matmul_precision"]
    try:
        torch.backends.cudnn.benchmark = True  # as the code's import left it
        assert bench.apply("off") == "off" and bench.readback("off") == "off" and bench.during("off") == "off"
        torch.backends.cudnn.benchmark = True  # the code's setup() switches it back
        assert bench.during("off") == "on" and bench.during("code") is None
        assert precision.apply("high") == "high" and precision.during("high") == "high"
        torch.backends.cuda.matmul.allow_tf32 = False  # the code's own switch, the older spelling
        assert precision.during("high") == "highest" and precision.readback("high") == "highest"
        assert precision.during("code") is None
    finally:
        torch.backends.cudnn.benchmark = before[0]
        torch.set_float32_matmul_precision(before[1])


def test_sync_makes_every_clock_read_of_an_iteration_wait_and_costs_nothing_without_cuda():
    sync = settings.SETTINGS["sync"]
    try:
        assert sync.apply("cuda") == {"on": True, "synced": 0, "skipped": 0}
        rec = Recorder()
        for _ in range(3):
            with rec.iteration("call"):
                pass
        state = sync.readback("cuda")
        waited = state["synced"] + state["skipped"]
        assert waited == 6  # before the start and before the stop of each iteration
        if not cuda_state.initialized():
            assert state["skipped"] == 6 and sync.facts_phrase(sync.facts(state)) == ""
    finally:
        sync.apply("off")
    assert cuda_state.sync_state() == {"on": False, "synced": 0, "skipped": 0}


def test_cuda_init_says_why_it_could_not_start_cuda_here():
    init = settings.SETTINGS["cuda_init"]
    assert init.apply("lazy")["reason"] is None
    if cuda_state.available():
        pytest.skip("a CUDA device is here: test_probe_collects_the_gpu_evidence covers eager start")
    assert init.apply("eager") == {"initialized": False,
                                   "reason": "torch.cuda.is_available() is False: no CUDA device"}


def test_the_collector_reads_one_flag_for_a_call_that_runs_no_cuda_work():
    if cuda_state.initialized():
        pytest.skip("another test initialised CUDA in this process")
    calls = []
    out = cuda_census(lambda: calls.append(torch.ones(4) @ torch.ones(4)))
    assert out == {"initialized": False, "available": cuda_state.available()} and calls == []  # not called again
    assert cuda_census(None) == out


def test_the_probe_worker_notes_the_gpu_evidence_of_a_user_workload(tmp_path):
    if cuda_state.initialized():
        pytest.skip("another test initialised CUDA in this process")
    user = tmp_path / "cpu_only.py"
    user.write_text("import torch\n\ndef fn():\n    return torch.ones(8) * 2\n")
    fn, params, _, _ = load(f"{user}:fn")
    rec = Recorder(probe=True)
    fn({**params, "iterations": 3}, rec)
    assert rec.notes["probe"]["cuda"] == {"initialized": False, "available": cuda_state.available()}
    assert no_cuda_reason(Facts(probed={CUDA.key: CudaFacts.from_json(rec.notes["probe"]["cuda"])})) is not None


def test_probe_calls_are_split_by_whether_their_convolution_shapes_are_new():
    a, b, c = ((1, 3, 64, 64), (8, 3, 3, 3)), ((1, 3, 68, 64), (8, 3, 3, 3)), ((1, 3, 72, 64), (8, 3, 3, 3))
    # The first call is the reference; a call with one new shape among seen ones is new; no convolution: neither.
    assert by_shapes([(50.0, {a}), (40.0, {b}), (5.0, {a}), (45.0, {a, c}), (1.0, set())]) == ([40.0, 45.0], [5.0])
    assert by_shapes([(50.0, {a}), (5.0, {a}), (5.1, {a})]) == ([], [5.0, 5.1])
    assert by_shapes([]) == ([], [])


def test_cuda_facts_survive_the_document():
    probe = {"cuda": {**ON_GPU.__dict__, "new_shape_ms": [90.0], "seen_shape_ms": [5.0]}}
    doc = make_doc({"with": [{}]}, factor=lambda c: 1.0, repeat=1, phase="call")
    doc["runs"][0]["notes"] = {"probe": probe}
    found = Facts.from_probe(analyse(doc))
    assert found.of(CUDA) == CudaFacts(**{**ON_GPU.__dict__, "new_shape_ms": (90.0,), "seen_shape_ms": (5.0,)})
    ns = doc["runs"][0]["phases"]["call"]["ns"]
    assert found.first_extra["call"] == pytest.approx(ns[0] / float(np.median(ns[1:])) - 1)
    assert Facts.from_json(json.loads(json.dumps(found.to_json()))) == found
    assert Facts.from_json(Facts().to_json()).of(CUDA) is None


def test_the_cause_words_are_module_constants():
    assert HOST_COVERS_GPU == 0.9 and MIN_MATMUL_SHARE == 0.05


# --- on a GPU ---------------------------------------------------------------------------------------------------

@pytest.mark.cuda
def test_probe_collects_the_gpu_evidence():
    require_gpu()
    a = torch.randn(2048, 2048, device="cuda")
    sizes = iter(range(40, 200, 8))

    def call():
        for _ in range(8):
            a @ a  # queued, not waited for
        x = torch.randn(4, 3, next(sizes), 64, device="cuda")
        return torch.nn.functional.conv2d(x, torch.ones(8, 3, 3, 3, device="cuda"))

    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        call()
        out = cuda_census(call)
    finally:
        torch.backends.cudnn.benchmark = before
    assert out["initialized"] and "error" not in out, out
    assert out["host_ms"] < out["event_ms"], out  # the host clock stopped before the GPU did
    assert out["conv_calls"] == 4 and len(out["new_shape_ms"]) == 3, out  # each call a new shape
    assert out["matmul_fp32_share"] > 0.5, out
    assert out["cudnn_benchmark"] == "on"


@pytest.mark.cuda
def test_sync_and_eager_start_on_a_gpu():
    require_gpu()
    assert settings.SETTINGS["cuda_init"].apply("eager") == {"initialized": True, "reason": None}
    sync = settings.SETTINGS["sync"]
    a = torch.randn(4096, 4096, device="cuda")
    rec = Recorder()
    try:
        sync.apply("cuda")
        with rec.iteration("call"):
            for _ in range(10):
                a @ a
        assert sync.readback("cuda") == {"on": True, "synced": 2, "skipped": 0}
    finally:
        sync.apply("off")
