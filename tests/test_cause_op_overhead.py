"""The per-op overhead cause: this machine's cost of one op (measured, through a results file), the op table's
calls made from Python, and the evidence-only judgement on synthetic facts: many ops of tiny work found, few
ops or big ones ruled out, and the python-time cause leaving such a call's time outside the ops to it."""

import json
import math
import threading
import time
from dataclasses import replace

import torch

from benchctl._probe import ProbedCall
from benchctl._causes.modes.probe import PROBE as MODES, ModesFacts
from benchctl._causes.op_overhead import rule as op_overhead
from benchctl._causes.op_overhead.probe import PROBE, OpCost, _BusyClock, op_cost_us
from benchctl._causes.python_time import rule as python_time
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts, OpRow
from benchctl._results.findings import Status
from benchctl._workloads import op_table
from synthetic_results import make_doc

COST = OpCost(0.5)
TINY_US = COST.us * op_overhead.TINY_MULTIPLE / 2  # an op called from Python that does almost no work
BIG_US = COST.us * op_overhead.TINY_MULTIPLE * 100  # one whose work dwarfs an op's cost


def _row(op, top_calls, us_per_call, nested=0, scoped=()):
    """An op called ``top_calls`` times from Python at ``us_per_call`` each (and ``nested`` times by other ops, and
    under the code's scopes as often as ``scoped``, (scope, calls) pairs, says)."""
    under = sum(n for _, n in scoped)
    calls = top_calls + nested + under
    return OpRow(op, ("float",), calls, us_per_call * calls, us_per_call * top_calls, ((4000,), (), ()), top_calls,
                 py_calls=top_calls + under, py_us=us_per_call * (top_calls + under), py_scoped=under,
                 py_scopes=tuple(scoped))


def facts(*rows, median_ms, cost=COST, wall_ms=None):
    wall_us = (wall_ms or median_ms) * 1e3
    return Facts(phases=["run"], median_ms={"run": median_ms}, op_table=tuple(rows), call_wall_us=wall_us,
                 probed={} if cost is None else {PROBE.key: cost})


def item_loop(elements=4000):
    """``x[i].item()`` over ``elements``: a select (its as_strided nested) and an item per element, in a call
    whose median is what their calls cost."""
    rows = (_row("aten::select", elements, TINY_US), _row("aten::item", elements, TINY_US / 2),
            _row("aten::as_strided", 0, TINY_US / 4, nested=elements))
    return facts(*rows, median_ms=2 * elements * COST.us / 1e3)


def judge(cause, f):
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="run", control=True))
    return cause.judge_phase(rules.Context(doc, "run", queries.Comparisons(doc), facts=f))


def test_this_machines_cost_of_one_op_is_measured_and_survives_the_results_file():
    us = op_cost_us(batches=3, calls=200)
    assert math.isfinite(us) and 0 < us < 1_000  # a microsecond or so; under a millisecond on any machine
    note = PROBE.record(ProbedCall(call=lambda: None))
    found = PROBE.read(note)
    assert isinstance(found, OpCost) and 0 < found.us < 1_000
    assert f"the {found.us:.2g} µs one op costs here" in found.text
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None  # a workload that times itself
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found


def test_the_measurement_ends_in_seconds_beside_a_python_thread_holding_the_gil():
    """Each call lets the GIL go and can wait a switch interval (5 ms) to take it back from a thread spinning in
    Python: 30,000 calls would take minutes, a batch ends after its time; and the wait, asleep, is not the op's
    cost (the wall clock read ~5 ms a call, the thread's CPU and run delay 25-130 µs, here)."""
    stop = threading.Event()

    def spin():
        n = 0
        while not stop.is_set():
            n = (n + 1) % 1_000_003

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        started = time.perf_counter()
        us = op_cost_us(batches=3, calls=10_000)
        took = time.perf_counter() - started
    finally:
        stop.set()
        spinner.join()
    assert took < 20, took
    assert math.isfinite(us) and us > 0
    clock = _BusyClock()
    readable = clock.read() is not None
    clock.close()
    if readable:  # where the kernel keeps no run delay the wall clock counts
        assert us < 1_000, us


def test_the_op_table_counts_the_calls_made_from_python_apart_from_nested_ones():
    x = torch.randn(50)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        for i in range(x.shape[0]):
            x[i].item()
    by_op = {r.op: r for r in (OpRow.from_json(row) for row in op_table.rows(prof.events()))}
    assert by_op["aten::select"].top_calls == by_op["aten::select"].calls == 50
    assert by_op["aten::as_strided"].calls == 50 and by_op["aten::as_strided"].top_calls == 0  # inside select
    assert by_op["aten::select"].top_us_per_call > 0 and by_op["aten::as_strided"].top_us_per_call is None
    assert by_op["aten::select"].shapes_text == "50"
    assert OpRow.from_json({"op": "aten::mm"}).top_calls == 0  # a results file written before they were counted


def test_many_ops_of_tiny_work_dominating_the_call_are_the_cause_with_the_fix_and_the_saving():
    f = item_loop()
    cause = op_overhead.OpOverhead()
    assert cause.probes(f) == [] and cause.precheck(f, None) is None
    found = judge(cause, f)
    assert found.status is Status.CAUSE and found.comparison is None, found.message
    assert "8,000 ops called from Python in each call do almost no work" in found.message
    assert "4,000 aten::select on 4000" in found.message and "aten::as_strided" not in found.message
    assert op_overhead.MECHANISM in found.message and op_overhead.FIX in found.message
    assert f"would save about {f.median_ms['run']:.3g} ms a call" in found.message
    assert found.evidence["tiny_calls"] == 8000 and found.evidence["overhead_share"] == 1.0


def test_a_mode_on_around_the_call_is_pointed_to():
    f = item_loop()
    assert "see modes" not in judge(op_overhead.OpOverhead(), f).message
    on = ModesFacts(on={"torch function": ["DeviceContext(cpu)"], "torch dispatch": []})
    found = judge(op_overhead.OpOverhead(), replace(f, probed={**f.probed, MODES.key: on}))
    assert found.status is Status.CAUSE and found.message.endswith(
        "; a mode was on around its call (DeviceContext(cpu)), which adds to every op's cost, this machine's cost of "
        "one op included: see modes")
    elsewhere = "DeviceContext(cuda)"
    kept = ModesFacts(on={"torch function": [elsewhere], "torch dispatch": []}, kept=[elsewhere])
    found = judge(op_overhead.OpOverhead(), replace(f, probed={**f.probed, MODES.key: kept}))
    assert "see modes" not in found.message


def test_a_share_between_the_thresholds_is_open_and_under_it_not_the_cause():
    share = (op_overhead.PART_SHARE + op_overhead.DOMINANT_SHARE) / 2
    calls = 1000
    part = facts(_row("aten::add", calls, TINY_US), median_ms=calls * COST.us / share / 1e3)
    assert op_overhead.OpOverhead().precheck(part, None) is None
    found = judge(op_overhead.OpOverhead(), part)
    assert found.status is Status.UNCONFIRMED and "they explain part of the time at most" in found.message
    few = facts(_row("aten::add", calls, TINY_US), median_ms=calls * COST.us / (op_overhead.PART_SHARE / 2) / 1e3)
    assert judge(op_overhead.OpOverhead(), few).status is Status.NOT_CAUSE


def test_ruled_out_before_running_for_few_ops_big_ops_or_no_evidence():
    cause = op_overhead.OpOverhead()
    few = facts(_row("aten::add", 3, TINY_US), _row("aten::mm", 1, BIG_US), median_ms=BIG_US / 1e3)
    assert "3 ops called from Python in each call do almost no work" in cause.precheck(few, None)
    assert f"under {op_overhead.PART_SHARE:.0%}" in cause.precheck(few, None)
    big = facts(_row("aten::mm", 200, BIG_US), median_ms=200 * BIG_US / 1e3)
    said = cause.precheck(big, None)
    assert said.startswith("its ops' work dwarfs one op's cost: the lightest it calls, aten::mm"), said
    dwarfed = judge(cause, big)
    assert dwarfed.status is Status.NOT_CAUSE and dwarfed.message.endswith(said)
    assert "not measured" in cause.precheck(facts(*item_loop().op_table, median_ms=4.0, cost=None), None)
    assert "no op time of its call is known" in cause.precheck(Facts(phases=["run"]), None)
    # The code's own scopes and the autograd engine's nodes are not ops called from Python.
    scopes = facts(_row("my_step", 4000, TINY_US), _row("autograd::engine::evaluate_function: MmBackward0", 4000,
                                                        TINY_US), median_ms=4.0)
    assert "called no torch op from Python" in cause.precheck(scopes, None)
    assert judge(cause, Facts(phases=["run"])) is None


def test_the_python_cause_leaves_the_time_outside_tiny_ops_to_them():
    # The item loop under the profiler: as much again outside the ops (their binding) as inside them.
    f = item_loop()
    inside_ms = sum(r.top_us for r in f.op_table) / 1e3
    loop = facts(*f.op_table, median_ms=f.median_ms["run"], wall_ms=inside_ms / (1 - python_time.OUTSIDE_SHARE) + 1)
    assert loop.outside_share() > python_time.OUTSIDE_SHARE
    said = python_time.PythonTime().precheck(loop, None)
    assert said and "(per-op overhead): the time outside the ops is their binding's, not Python's" in said
    found = judge(python_time.PythonTime(), loop)
    assert found.status is Status.NOT_CAUSE and "per-op overhead" in found.message
    assert judge(op_overhead.OpOverhead(), loop).status is Status.CAUSE
    # Without this machine's cost of an op (or with few tiny ops) the python cause judges as before.
    unknown = facts(*f.op_table, median_ms=f.median_ms["run"], wall_ms=loop.call_wall_us / 1e3, cost=None)
    assert python_time.PythonTime().precheck(unknown, None) is None
    as_before = judge(python_time.PythonTime(), unknown)
    assert as_before.status is not Status.NOT_CAUSE and "per-op overhead" not in as_before.message


def test_ops_taking_a_python_number_are_weighed_at_that_forms_cost():
    # x * 1.0001 + 0.1 on 16 floats, 300 times a call: each op wraps and converts its number (2 µs a call here,
    # against 0.5 µs with a tensor operand); at the tensor form's cost the loop read as 23% of its time.
    number_us = op_cost_us(batches=3, calls=200, number=True)
    assert math.isfinite(number_us) and 0 < number_us < 1_000
    found = PROBE.read(PROBE.record(ProbedCall(call=lambda: None)))
    assert found.number_us is not None and "with a Python number as its operand" in found.text
    assert PROBE.read({"op_cost_us": 0.5}) == OpCost(0.5)  # a results file from before: the one cost
    x = torch.ones(16)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        x * 1.0001 + 0.1
        x * x
    rows = [OpRow.from_json(row) for row in op_table.rows(prof.events())]
    by_op = {r.op: (r.top_calls, r.top_number_calls) for r in rows if r.top_calls}
    assert by_op["aten::mul"] == (2, 1) and by_op["aten::add"] == (1, 1)  # x * x took no number
    # Every operand 0-dim (an element times a number: tiny_ops_loop's w[i % 16] * 0.5): told by the number's dtype.
    w, w64 = torch.randn(16), torch.randn(16, dtype=torch.float64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        w[3] * 0.5, w[3] + 2, w[3] * w[4], w64[3] * w64[4], w64[3] * 0.5
    took = [op_table.scalar_operand_of(e) for e in prof.events() if e.name in ("aten::mul", "aten::add")]
    # The last is a float64 element times a number: both double, no different dtype beside it (not counted).
    assert took == [True, True, False, False, False], took
    cost = OpCost(0.5, 2.0)
    assert cost.of(OpRow("aten::mul", ("float",), 2, 4.0, 4.0, (), 2, 1).top) == 1.25  # one call of each form
    loop = (OpRow("aten::mul", ("float",), 300, 600.0, 1200.0, ((16,), ()), 300, 300),
            OpRow("aten::add", ("float",), 300, 600.0, 1200.0, ((16,), (), ()), 300, 300))
    f = facts(*loop, median_ms=1.3, cost=cost)
    found = op_overhead.overhead(f)
    assert found.us == 1200.0 and round(found.share, 2) == 0.92  # 600 calls at 2 µs of a 1.3 ms call
    assert judge(op_overhead.OpOverhead(), f).status is Status.CAUSE
    at_tensor_cost = facts(*loop, median_ms=1.3, cost=OpCost(0.5))
    assert op_overhead.overhead(at_tensor_cost).share < op_overhead.PART_SHARE  # what it read before


def test_ops_called_under_the_codes_scopes_are_counted_and_the_scopes_named():
    # torch.optim's step (foreach=False) over 400 tiny parameters: ~9 tiny ops a parameter, all beneath its scope.
    step = "Optimizer.step#Adam.step"
    rows = [_row(op, 0, TINY_US, scoped=((step, 400),)) for op in ("aten::lerp_", "aten::mul_", "aten::addcmul_")]
    f = facts(*rows, _row("aten::item", 1, TINY_US), median_ms=1201 * COST.us / 1e3)
    cause = op_overhead.OpOverhead()
    assert cause.precheck(f, None) is None
    found = judge(cause, f)
    assert found.status is Status.CAUSE, found.message
    assert (f"1,201 ops called from Python in each call (1,200 of them under the record_function scope {step}) do "
            "almost no work (400 aten::lerp_ on 4000 at") in found.message
    assert found.evidence["tiny_calls"] == 1201 and found.evidence["scoped_calls"] == 1200
    # The python-time rule weighs the ops at the top alone (a scope's event holds the binding of the ops beneath).
    assert op_overhead.overhead(f).calls == 1 and op_overhead.overhead(f, scoped=True).calls == 1201
    # Several scopes, and calls under scopes a row did not keep (op_table.SCOPES_KEPT): the first named, the rest too.
    mixed = facts(_row("aten::add", 0, TINY_US, scoped=(("my_step", 600), ("layer0", 300))),
                  replace(_row("aten::neg", 0, TINY_US, scoped=(("layer1", 100),)), py_calls=200, py_scoped=200,
                          py_us=200 * TINY_US), median_ms=1100 * COST.us / 1e3)
    said = judge(cause, mixed).message
    assert "(1,100 of them under record_function scopes my_step, layer0 and others)" in said, said


def test_the_ops_of_a_real_optimizer_step_are_counted_from_python():
    params = [torch.nn.Parameter(torch.randn(16)) for _ in range(50)]
    for p in params:
        p.grad = torch.randn(16)
    opt = torch.optim.Adam(params, lr=1e-3, foreach=False)
    opt.step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        opt.step()
    table = tuple(OpRow.from_json(row) for row in op_table.rows(prof.events()))
    cost = OpCost(1_000.0)  # every op of the step within its multiple: the count is what is checked, not the time
    f = facts(*table, median_ms=1.0, cost=cost)
    assert op_overhead.OpOverhead().precheck(f, None) is None
    assert judge(op_overhead.OpOverhead(), f).status is Status.CAUSE
    found = op_overhead.overhead(f, scoped=True)
    assert found.calls == found.scoped_calls >= 8 * 50 and found.calls == sum(r.py_calls for r in table)
    assert "of them under the record_function scope Optimizer.step#Adam.step)" in found.text
    assert op_overhead.overhead(f) is None  # none at the top: the count before the scopes
