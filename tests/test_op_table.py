"""The probe call's op table: ops by input dtype with their times, and what Facts reads from it."""

import json

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
