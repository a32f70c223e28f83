"""The probe call's op table: ops by input dtype with their times, and what Facts reads from it."""

import json
from types import SimpleNamespace

import torch

from benchctl._results.facts import Facts, OpRow
from benchctl._workloads import op_table


def _profiled(call):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        call()
    return op_table.rows(prof.events())


def test_rows_keep_each_dtype_of_an_op_apart_with_its_calls_and_shapes():
    a = torch.randn(32, 48)
    rows = _profiled(lambda: (a @ a.T, a.double() @ a.double().T, a.double() @ a.double().T))
    json.dumps(rows)  # the probe note must be JSON
    mm = {tuple(r["dtypes"]): r for r in rows if r["op"] == "aten::mm"}
    assert mm[("float",)]["calls"] == 1 and mm[("double",)]["calls"] == 2
    assert mm[("float",)]["shapes"] == [[32, 48], [48, 32]]
    assert all(r["self_us"] >= 0 for r in rows)
    assert [r["self_us"] for r in rows] == sorted((r["self_us"] for r in rows), reverse=True)


def test_a_scalar_argument_does_not_give_an_op_its_dtype():
    # x * 1.0001 on float32 reaches aten::mul with 1.0001 as a 0-dim double, converted by a scalar-only _to_copy.
    x = torch.ones(16)
    w = torch.ones(3, dtype=torch.float64)
    rows = _profiled(lambda: (x * 1.0001 + 0.1, w * 2))
    by_op = {}
    for r in rows:
        by_op.setdefault(r["op"], set()).add(tuple(r["dtypes"]))
    assert by_op["aten::mul"] == {("float",), ("double",)} and by_op["aten::add"] == {("float",)}
    assert by_op["aten::_to_copy"] == {()}  # the scalar's conversion alone: no arithmetic in its dtype


def test_top_level_time_counts_only_calls_made_from_python():
    a = torch.randn(64, 64)
    rows = _profiled(lambda: a @ a)
    by_op = {r["op"]: r for r in rows}
    assert by_op["aten::matmul"]["top_us"] > 0  # called from Python
    assert by_op["aten::mm"]["top_us"] == 0  # called by matmul, inside it


def test_facts_shares_and_their_json_round_trip():
    table = (OpRow("aten::mm", ("double",), 2, 300.0, 0.0), OpRow("aten::mm", ("float",), 1, 100.0, 0.0),
             OpRow("aten::matmul", ("double",), 3, 0.0, 400.0))
    facts = Facts(op_table=table, call_wall_us=1000.0)
    assert facts.op_share(lambda r: "double" in r.dtypes) == 0.75
    assert facts.inside_ops_share() == 0.4
    assert Facts.from_json(json.loads(json.dumps(facts.to_json()))) == facts
    assert Facts().op_share(lambda r: True) is None and Facts().inside_ops_share() is None


def _adam(params=20, foreach=False):
    """torch.optim's Adam over ``params`` tiny parameters, its state made by a first step (the next steps' ops)."""
    ps = [torch.nn.Parameter(torch.randn(16)) for _ in range(params)]
    for p in ps:
        p.grad = torch.randn(16)
    opt = torch.optim.Adam(ps, lr=1e-3, foreach=foreach)
    opt.step()
    return opt


def test_ops_called_under_the_codes_scopes_count_as_called_from_python_apart_from_the_top_level():
    x = torch.randn(16)
    opt = _adam()

    def call():
        with torch.autograd.profiler.record_function("my_step"):
            x * 2
            with torch.autograd.profiler.record_function("inner"):
                x.sin()
        opt.step()
        x + 1

    by_op = {(r["op"], tuple(r["dtypes"])): r for r in _profiled(call)}
    mul, sin, add = by_op[("aten::mul", ("float",))], by_op[("aten::sin", ("float",))], by_op[("aten::add", ("float",))]
    assert (mul["top_calls"], mul["py_calls"], mul["py_scoped"], mul["py_scopes"]) == (0, 1, 1, [["my_step", 1]])
    assert mul["top_us"] == 0 < mul["py_us"]
    assert sin["py_scopes"] == [["inner", 1]]  # the innermost scope
    assert (add["top_calls"], add["py_calls"], add["py_scoped"]) == (1, 1, 0)  # at the top: in both counts
    assert add["py_us"] == add["top_us"] > 0
    # torch.optim's step: a range of its own, each parameter's ~9 ops beneath it, none at the top.
    step = [r for r in _profiled(opt.step) if r["py_calls"]]
    assert sum(r["py_calls"] for r in step) == sum(r["py_scoped"] for r in step) >= 8 * 20
    assert all(r["top_calls"] == 0 and r["py_scopes"] == [["Optimizer.step#Adam.step", r["py_calls"]]]
               for r in step)
    assert {"aten::lerp_", "aten::addcdiv_"} <= {r["op"] for r in step}
    # The scopes themselves and the ops that ops call are no ops called from Python.
    scopes = {r["op"]: r for r in _profiled(call) if r["op"] in ("my_step", "inner", "Optimizer.step#Adam.step")}
    assert len(scopes) == 3 and all(r["py_calls"] == 0 for r in scopes.values())
    assert scopes["my_step"]["top_calls"] == 1 and scopes["inner"]["top_calls"] == 0


def test_ops_the_autograd_engine_or_compiled_code_calls_are_not_called_from_python():
    w = torch.randn(16, requires_grad=True)
    compiled = torch.compile(lambda a: (a * 3).cos(), backend="eager")
    compiled(torch.randn(8))

    def call():
        with torch.autograd.profiler.record_function("train_step"):
            (w * 2).sum().backward()  # the backward's ops are the engine's, even under the code's scope
            compiled(torch.randn(8))  # its ops beneath its "Torch-Compiled Region", which is no scope

    rows = _profiled(call)
    counted = {r["op"] for r in rows if r["py_calls"]}
    assert "aten::mul" in counted and "aten::sum" in counted  # the forward, called from Python
    assert "aten::cos" not in counted and "aten::ones_like" in counted  # backward() makes its seed from Python
    backward = [r for r in rows if r["op"].startswith("autograd::engine::evaluate_function")]
    assert backward and all(r["py_calls"] == 0 for r in backward)  # an op of the engine's, not Python's
    mul = next(r for r in rows if r["op"] == "aten::mul")
    assert mul["calls"] > mul["py_calls"] == 1  # MulBackward0's mul is the engine's
    # A compiled graph's scope is a user annotation the profiler records, not the code's.
    graph = SimpleNamespace(name="## Call CompiledFxGraph fabc123 ##", is_user_annotation=True, cpu_parent=None)
    op = SimpleNamespace(name="aten::mm", is_user_annotation=False, cpu_parent=graph)
    assert op_table.python_scope(op) is None and not op_table.is_scope(graph)
    scoped = SimpleNamespace(name="aten::mm", is_user_annotation=False,
                             cpu_parent=SimpleNamespace(name="mine", is_user_annotation=True, cpu_parent=None))
    assert op_table.python_scope(scoped) == "mine"


def test_a_row_keeps_its_most_called_scopes_and_counts_all():
    x = torch.randn(4)

    def call():
        for i in range(op_table.SCOPES_KEPT + 2):
            for _ in range(i + 1):
                with torch.autograd.profiler.record_function(f"layer{i}"):
                    x.neg()

    neg = next(r for r in _profiled(call) if r["op"] == "aten::neg")
    kept = op_table.SCOPES_KEPT
    assert neg["py_scoped"] == neg["py_calls"] == sum(range(1, kept + 3))
    assert [name for name, _ in neg["py_scopes"]] == [f"layer{i}" for i in range(kept + 1, 1, -1)][:kept]


def test_a_results_file_from_before_the_scopes_were_counted_reads_its_top_level_calls():
    old = {"op": "aten::add", "dtypes": ["float"], "calls": 5, "self_us": 4.0, "top_us": 6.0, "top_calls": 3,
           "top_number_calls": 1}
    row = OpRow.from_json(old)
    assert (row.py_calls, row.py_us, row.py_number_calls, row.py_scoped, row.py_scopes) == (3, 6.0, 1, 0, ())
    assert row.py == row.top and row.py.us_per_call == 2.0
    new = OpRow.from_json({**old, "py_calls": 4, "py_us": 8.0, "py_number_calls": 1, "py_scoped": 1,
                           "py_scopes": [["Optimizer.step#Adam.step", 1]]})
    assert new.py_scopes == (("Optimizer.step#Adam.step", 1),) and new.top == row.top
    facts = Facts(op_table=(new,), call_wall_us=100.0)
    assert Facts.from_json(json.loads(json.dumps(facts.to_json()))) == facts
    assert facts.inside_ops_share() == 0.06  # the top-level time only, as before
