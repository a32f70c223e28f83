"""The weight-initialisation cause: its watch (modules built and torch.nn.init's functions timed over a block,
torch's own functions given back), its probe (through a results file) and its judgement on the shares of the timed
iterations."""

import json

import pytest
import torch

from benchctl._causes.weight_init.probe import PROBE, InitFacts, watching_init
from benchctl._causes.weight_init.rule import FIX, WeightInit
from benchctl._probe import ProbedCall
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from synthetic_results import make_doc


def _own():
    return torch.nn.Module.__init__, {n: getattr(torch.nn.init, n) for n in ("kaiming_uniform_", "uniform_",
                                                                             "orthogonal_", "uniform")}


def test_the_watch_counts_the_modules_built_and_times_their_initialisation():
    before = _own()
    x = torch.randn(4, 64)
    with watching_init() as tally:
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
        torch.nn.init.orthogonal_(model[0].weight)
        model(x)
    assert tally.modules == 4  # the Sequential, two Linear, the ReLU
    # Each Linear: kaiming_uniform_ for its weight, uniform_ for its bias; then the orthogonal draw.
    assert tally.init_calls == 5 and 0 < tally.init_s < tally.wall_s
    assert _own() == before
    kept = torch.nn.Linear(64, 64)
    with watching_init() as tally:
        kept(x)
        kept.reset_parameters()  # a reset inside the block counts, without a module built
    assert (tally.modules, tally.init_calls) == (0, 2)


def test_nested_init_functions_count_once_and_an_error_gives_torchs_functions_back():
    before = _own()
    w = torch.empty(8, 8)
    with pytest.warns(FutureWarning), watching_init() as tally:
        torch.nn.init.uniform(w)  # the deprecated alias calls uniform_
    assert tally.init_calls == 1
    with watching_init() as tally:
        torch.nn.init.calculate_gain("relu")  # a number, no weight drawn
    assert tally.init_calls == 0
    with pytest.raises(ValueError), watching_init():
        raise ValueError("boom")
    assert _own() == before


def test_the_probe_reads_its_count_back_through_a_results_file():
    with watching_init() as tally:
        torch.nn.Linear(32, 32)
    found = PROBE.read(PROBE.record(ProbedCall(call=lambda: None, watched={PROBE.key: tally})))
    assert found.modules == 1 and found.init_calls == 2 and 0 < found.share <= 1
    assert found.text().startswith("over its timed iterations it built 1 module and called torch.nn.init's "
                                   "functions 2 times: ")
    assert PROBE.record(ProbedCall(call=lambda: None, called={PROBE.key: tally})) == {}  # the timed iterations'
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found


def _facts(seen):
    return Facts(phases=["call"], median_ms={"call": 2.5}, call_wall_us=2_500.0,
                 probed={} if seen is None else {PROBE.key: seen})


def _judge(seen):
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="call", control=True))
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=_facts(seen))
    return WeightInit().judge_phase(ctx)


def _seen(init_ms, wall_ms=78.0):
    return InitFacts(modules=120, init_calls=180, init_ms=init_ms, wall_ms=wall_ms)


def test_precheck_rules_it_out_without_initialisation_or_where_it_costs_next_to_nothing():
    cause = WeightInit()
    assert cause.probes(None) == []
    assert cause.precheck(_facts(_seen(64.0)), None) is None
    assert cause.precheck(_facts(InitFacts(modules=3, wall_ms=78.0)), None) == (
        "no weight was initialised over its timed iterations (3 modules built, no torch.nn.init call)")
    assert cause.precheck(_facts(_seen(2.0)), None).endswith(": under 5%")
    assert "times its own iterations" in cause.precheck(_facts(None), None)


def test_named_by_the_share_of_the_time_spent_initialising_weights():
    found = _judge(_seen(64.2, 78.2))
    assert found.status is Status.CAUSE and found.mark == "*", found.message
    assert ("over its timed iterations it built 120 modules and called torch.nn.init's functions 180 times: 64.2 ms "
            "initialising weights, 82% of their 78.2 ms") in found.message
    assert FIX in found.message and "evidence only" in found.message
    part = _judge(_seen(25.0))  # 32%
    assert part.status is Status.UNCONFIRMED and "explains part of the time at most" in part.message
    small = _judge(_seen(10.0))  # 13%
    assert small.status is Status.NOT_CAUSE and small.message.endswith("under 20%")
    assert _judge(InitFacts(modules=2, wall_ms=78.0)) is None
