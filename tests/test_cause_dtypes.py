"""The dtype causes (half / bfloat16, float64): their pre-check on the op table, their judgement on the
dtype profile, and the profile's collector and replay on tiny in-process calls (no explain run, no
timing assertion)."""

import json

import pytest
import torch

from benchctl.denormals import CENSUS_SCOPE, layer_watch
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.dtype_profile import DtypeProfile, DtypeTiming, OpCall, OpInput
from benchctl._results.facts import Facts, OpRow
from benchctl._results.findings import Status
from benchctl._studies import dtype_profile, pipeline
from benchctl._causes.float64.rule import Float64
from benchctl._causes.half.rule import HalfPrecision
from benchctl._studies.causes import CAUSES
from benchctl._workloads import op_calls, op_table
from synthetic_results import make_doc

HALF, DOUBLE = "c10::Half", "double"
ADDMM = OpCall("aten::addmm", (HALF,), (OpInput(HALF, (64,)), OpInput(HALF, (8, 32)), OpInput(HALF, (32, 64)),
                                         OpInput("Scalar", value=1), OpInput("Scalar", value=1)))


def table(dtype=HALF, costly_us=900.0, other_us=100.0):
    """An op table: addmm in ``dtype`` for ``costly_us``, a float32 relu for ``other_us``; both called
    from Python, so the ops hold the whole call's wall time."""
    return (OpRow("aten::addmm", (dtype,), 1, costly_us, costly_us), OpRow("aten::relu", ("float",), 1, other_us,
                                                                           other_us))


def facts_with(timings=None, dtype=HALF, costly_us=900.0, flags=("f16c", "avx512_bf16"), **changes):
    profile = None if timings is None else DtypeProfile(tuple(timings), flags, threads=1, seconds=0.2)
    call = OpCall(ADDMM.op, (dtype,), ADDMM.inputs)
    return Facts(phases=["run"], op_table=table(dtype, costly_us), call_wall_us=costly_us + 100.0,
                 op_calls=(call,), dtype_profile=profile, cpus=2, **changes)


def timing(ratio, low, high, share=0.9, dtype=HALF, op="aten::addmm"):
    return DtypeTiming(op, dtype, share, dtype_us=ratio * 100.0, float32_us=100.0, low=low, high=high, repeats=7)


def judge(cause, facts):
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="run", control=True))
    return cause.judge_phase(rules.Context(doc, "run", queries.Comparisons(doc), facts=facts))


def test_both_causes_are_in_the_library():
    assert {"half", "float64"} <= {c.name for c in CAUSES}


@pytest.mark.parametrize("cause, dtype, words", [(HalfPrecision(), HALF, "float16 / bfloat16"),
                                                 (Float64(), DOUBLE, "float64")])
def test_precheck_rules_out_without_a_meaningful_share_of_the_dtype(cause, dtype, words):
    assert cause.precheck(facts_with(dtype="float"), None) == f"no op in {words} (under 10%)"
    assert cause.precheck(facts_with(dtype=dtype, costly_us=5.0), None) == \
        f"ops holding 5% of its op time in {words} (under 10%)"
    assert cause.precheck(facts_with(dtype=dtype), None) is None
    assert "no op time" in cause.precheck(Facts(), None)  # a decorated workload: nothing profiled


def test_named_with_the_measured_ratio_share_and_estimate():
    found = judge(HalfPrecision(), facts_with([timing(4.6, 4.0, 5.0)]))
    assert found.status is Status.CAUSE
    # 90% of op time at 1/4.6 of it, the ops the whole wall time: 1 / (0.1 + 0.9 / 4.6) = 3.38.
    assert ("90% of its op time is aten::addmm in float16, which runs 4.6× slower than in float32 on this CPU "
            "(measured, [4.0, 5.0] over its repeats)") in found.message
    assert "an estimated 3.38× faster on the whole call" in found.message
    assert "no native float16 arithmetic (avx512_fp16 or amx_fp16)" in found.message
    assert "bfloat16: avx512_bf16" in found.message and "no probe can change" in found.message
    assert "; f16c converts only" in found.message
    assert found.evidence["estimated_speedup"] == pytest.approx(1 / (0.1 + 0.9 / 4.6))
    assert found.message.startswith("half / bfloat16 slower than float32 on this CPU: ")
    # A CPU with float16 arithmetic where these ops still ran slower (oneDNN's float16 convolution, 1.8x here):
    # measured, so named, and the flags said as they are.
    native = judge(HalfPrecision(), facts_with([timing(1.8, 1.7, 2.1)], flags=("f16c", "avx512_fp16")))
    assert native.status is Status.CAUSE and "float16: avx512_fp16" in native.message
    assert "f16c converts only" not in native.message and "no native float16" not in native.message


def test_not_the_cause_where_the_dtype_runs_as_fast_as_float32():
    found = judge(HalfPrecision(), facts_with([timing(0.6, 0.5, 0.9)]))
    assert found.status is Status.NOT_CAUSE and "not what makes it slow here" in found.message
    assert "(measured: aten::addmm 0.6× [0.5, 0.9])" in found.message and "faster on the whole" not in found.message


def test_open_where_the_profile_or_the_share_is_weak():
    within_spread = judge(HalfPrecision(), facts_with([timing(1.3, 1.0, 2.0)]))
    assert within_spread.status is Status.UNCONFIRMED
    assert "cannot tell it from float32 beyond its repeats' spread" in within_spread.message
    small = judge(Float64(), facts_with([timing(3.0, 2.8, 3.2, share=0.3, dtype=DOUBLE)], dtype=DOUBLE,
                                               costly_us=43.0))
    assert small.status is Status.UNCONFIRMED and "hold only 30% of its op time" in small.message
    unmeasured = judge(HalfPrecision(), facts_with(None))
    assert unmeasured.status is Status.UNCONFIRMED and "the dtype profile was not measured" in unmeasured.message
    failed = judge(HalfPrecision(), facts_with([DtypeTiming("aten::addmm", HALF, 0.9, error="not an aten op")]))
    assert failed.status is Status.UNCONFIRMED and "aten::addmm not replayed (not an aten op)" in failed.message


def test_several_slower_ops_are_named_together_with_their_ratios():
    both = [timing(2.7, 2.0, 3.0, share=0.8, dtype=DOUBLE), timing(1.9, 1.8, 2.0, share=0.15, dtype=DOUBLE,
                                                                    op="aten::tanh")]
    found = judge(Float64(), facts_with(both, dtype=DOUBLE))
    assert found.status is Status.CAUSE
    assert ("95% of its op time is aten::addmm and aten::tanh in float64, which run slower than in float32 on this "
            "CPU (measured: aten::addmm 2.7× [2.0, 3.0], aten::tanh 1.9× [1.8, 2.0])") in found.message


def test_each_cause_reads_only_its_own_dtypes():
    facts = facts_with([timing(2.5, 2.2, 2.8, dtype=DOUBLE)], dtype=DOUBLE)
    assert judge(Float64(), facts).status is Status.CAUSE
    assert "cast to float32" in judge(Float64(), facts).message
    assert HalfPrecision().precheck(facts, None) is not None  # no half op: out before judging


def test_a_float64_default_dtype_is_named_as_the_fix_and_read_by_the_probe():
    from benchctl._causes.float64.probe import PROBE as DEFAULT_DTYPE, DefaultDtype
    from benchctl._causes.float64.rule import DEFAULT_DTYPE_FIX
    from benchctl._probe import ProbedCall

    before = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)  # left on at import: every Linear and randn is float64
        note = DEFAULT_DTYPE.record(ProbedCall(call=lambda: None))
    finally:
        torch.set_default_dtype(before)
    assert DEFAULT_DTYPE.read(note) == DefaultDtype("torch.float64") and DEFAULT_DTYPE.read({}) is None
    assert DEFAULT_DTYPE.record(ProbedCall()) == {}  # a workload that times itself: no call shows it
    timings = [timing(2.1, 2.0, 2.2, dtype=DOUBLE)]
    switched = judge(Float64(), facts_with(timings, dtype=DOUBLE, probed={DEFAULT_DTYPE.key: DEFAULT_DTYPE.read(note)}))
    assert switched.status is Status.CAUSE and DEFAULT_DTYPE_FIX in switched.message
    assert "cast to float32" not in switched.message
    float32 = {DEFAULT_DTYPE.key: DefaultDtype("torch.float32")}
    plain = judge(Float64(), facts_with(timings, dtype=DOUBLE, probed=float32))
    assert "cast to float32" in plain.message and DEFAULT_DTYPE_FIX not in plain.message


def test_calls_to_profile_keep_the_costly_ops_with_their_shares():
    calls = dtype_profile.calls_to_profile(facts_with(None))
    assert [(c.op, d, round(s, 2)) for c, d, s in calls] == [("aten::addmm", HALF, 0.9)]
    assert dtype_profile.calls_to_profile(facts_with(None, dtype="float")) == []
    plain = facts_with(None, dtype="float")
    assert pipeline.measure_dtype_profile(plain) is plain  # nothing costly: no profile runs


def test_facts_with_the_profile_round_trip_through_json():
    facts = facts_with([timing(4.6, 4.0, 5.0), DtypeTiming("aten::cat", HALF, 0.05, error="a list")])
    assert Facts.from_json(json.loads(json.dumps(facts.to_json()))) == facts


def test_cpu_flags_are_read_from_cpuinfo_fields():
    fields = {"flags": "fpu sse2 avx2 f16c avx512f avx512_bf16 amx_bf16"}
    assert dtype_profile.cpu_flags(fields) == ("f16c", "avx512_bf16", "amx_bf16")
    assert dtype_profile.cpu_flags({}) == ()


def _profiled(call):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        call()
    return prof.events()


def test_first_calls_record_every_input_and_replay_in_both_dtypes():
    linear = torch.nn.Linear(32, 16).half()
    x = torch.randn(4, 32).half()
    events = _profiled(lambda: linear(x))
    recorded = op_calls.first_calls(events)
    json.dumps(recorded)  # it travels in the probe note
    addmm = OpCall.from_json(next(c for c in recorded if c["op"] == "aten::addmm"))
    assert HALF in addmm.dtypes and [i.shape for i in addmm.inputs][:3] == [(16,), (4, 32), (32, 16)]
    assert addmm.inputs[2].strides == (1, 32)  # the transposed weight, as the profiler saw it
    assert {r["op"] for r in op_table.rows(events)} >= {c["op"] for c in recorded}
    out16, out32 = dtype_profile.replay(addmm)(), dtype_profile.replay(addmm, cast=(HALF,))()
    assert out16.dtype == torch.float16 and out32.dtype == torch.float32 and out32.shape == (4, 16)
    assert out16.stride() == out32.stride()


def test_casts_between_dtypes_are_not_replayed():
    # x.float() on bfloat16: aten::to, aten::_to_copy and a copy_ from bfloat16 into float32; replayed "in float32"
    # they would cast nothing, and a cast read as bfloat16 arithmetic 31.8x slower than float32's.
    a, b = torch.randn(64, 64).bfloat16(), torch.randn(64, 64).bfloat16()
    events = _profiled(lambda: (a @ b).float())
    recorded = [OpCall.from_json(c) for c in op_calls.first_calls(events)]
    casts = {c.op for c in recorded if c.casts}
    assert {"aten::to", "aten::_to_copy", "aten::copy_"} <= casts and "aten::mm" not in casts
    rows = tuple(OpRow(c.op, c.dtypes, 1, 100.0, 100.0) for c in recorded)
    facts = Facts(phases=["run"], op_table=rows, call_wall_us=100.0 * len(rows), op_calls=tuple(recorded), cpus=2)
    replayed = {c.op for c, _, _ in HalfPrecision().calls(facts)}
    assert "aten::mm" in replayed and not replayed & casts
    assert not OpCall("aten::copy_", ("c10::BFloat16", "c10::BFloat16")).casts  # a copy in one dtype is replayed
    assert not OpCall("aten::mul", ("c10::BFloat16", "float")).casts  # as is arithmetic on two dtypes


def test_replay_refuses_what_it_cannot_run():
    with pytest.raises(ValueError, match="not an aten op"):
        dtype_profile.replay(OpCall("my_module.forward", (HALF,), ()))
    with pytest.raises(ValueError, match="no overload"):
        dtype_profile.replay(OpCall("aten::addmm", (HALF,), (OpInput(HALF, (2, 2)),)))
    huge = OpCall("aten::relu", (HALF,), (OpInput(HALF, (1 << 14, 1 << 13)),))
    with pytest.raises(ValueError, match="too large"):
        dtype_profile.replay(huge)


def test_measure_times_each_call_against_float32_and_keeps_failures():
    threads = torch.get_num_threads()
    profile = dtype_profile.measure([(ADDMM, HALF, 0.9), (OpCall("aten::nope", (HALF,), ()), HALF, 0.1)])
    assert torch.get_num_threads() == threads  # restored
    done, failed = profile.timings
    assert done.ratio is not None and done.low <= done.ratio <= done.high
    assert done.repeats >= dtype_profile.MIN_ROUNDS and failed.error == "not an aten op" and failed.ratio is None
    assert profile.threads == 1 and profile.cpu_flags == dtype_profile.cpu_flags()


def test_the_census_hooks_own_ops_are_not_the_workloads():
    """The probe call runs with the census's forward hooks (they compute in float64): none of their ops may
    land in the op table, or a float32 model would show float64 time."""
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU())
    x = torch.randn(4, 16)
    with layer_watch(model):
        events = _profiled(lambda: model(x))
    assert any(e.name == CENSUS_SCOPE for e in events)  # the hooks ran, in their scope
    rows = op_table.rows(events)
    assert not [r for r in rows if DOUBLE in r["dtypes"] or r["op"] == CENSUS_SCOPE], rows
    assert {"aten::addmm", "aten::relu"} <= {r["op"] for r in rows}
    assert not [c for c in op_calls.first_calls(events) if DOUBLE in c["dtypes"]]
    assert 0 < op_table.census_us(events)
