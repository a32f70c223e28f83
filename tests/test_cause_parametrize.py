"""The parametrized-tensors cause: its control (each timed call under ``parametrize.cached()``, switched on
and off; the census of the recomputes one call makes), its setting (``parametrize=cached``), its probe
(through a results file) and its judgement on synthetic explaining runs. No timing is asserted: the
synthetic documents carry known factors."""

import json
import textwrap

import pytest
import torch
from torch.nn.utils import parametrizations, parametrize

from benchctl import _timed_call, settings
from benchctl._causes.parametrize import control
from benchctl._causes.parametrize.probe import PROBE, ParametrizeFacts, census
from benchctl._causes.parametrize.rule import FIX, TIMING_ONLY, Recomputed
from benchctl._causes.parametrize.setting import PARAMETRIZE
from benchctl._probe import ProbedCall
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from benchctl._run import runner
from synthetic_results import judge_switched

CACHED = {"parametrize": "cached"}
SEEN = ParametrizeFacts(tensors=4, recomputed=4, recomputes=32, most=8, kinds={"orthogonal": 4})
ONCE = ParametrizeFacts(tensors=4, recomputed=4, recomputes=4, most=1, kinds={"weight_norm": 4})
NONE_SEEN = ParametrizeFacts()


@pytest.fixture(autouse=True)
def _uncached():
    yield
    control.uncache_calls()


def _steps():
    """A model of an orthogonal layer and a weight-normed one, stepped three times a call: each step reads
    both weights again."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(parametrizations.orthogonal(torch.nn.Linear(4, 4)),
                                parametrizations.weight_norm(torch.nn.Linear(4, 4)))
    x = torch.randn(2, 4)

    def call():
        with torch.no_grad():
            h = x
            for _ in range(3):
                h = model(h)
        return h

    return model, call


def _recomputes(call):
    return census(call, [])["recomputes"]


def test_census_counts_each_recompute_by_tensor_and_names_the_parametrizations():
    model, call = _steps()
    own = parametrize.ParametrizationList.forward
    note = census(call, [model])
    assert parametrize.ParametrizationList.forward is own
    assert note == {"tensors": 2, "recomputed": 2, "recomputes": 6, "most": 3,
                    "kinds": {"orthogonal": 1, "weight_norm": 1}}
    with parametrize.cached():  # the code's own cache: once each
        assert census(call, [model])["recomputes"] == 2
    # A module its state does not reach is counted as it recomputes; one of its state never read, as it is.
    idle = parametrizations.orthogonal(torch.nn.Linear(4, 4))
    assert census(call, [idle]) == {"tensors": 3, "recomputed": 2, "recomputes": 6, "most": 3,
                                            "kinds": {"orthogonal": 2, "weight_norm": 1}}

    def fails():
        raise ValueError("boom")

    assert census(fails, []) == {"error": "ValueError: boom"}
    assert parametrize.ParametrizationList.forward is own


def test_the_setting_runs_each_timed_call_cached_switches_and_reads_back():
    model, call = _steps()
    assert PARAMETRIZE.canonical(" CACHED ") == "cached" and PARAMETRIZE.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, cached"):
        PARAMETRIZE.canonical("on")
    assert settings.SETTINGS["parametrize"] is PARAMETRIZE and PARAMETRIZE.in_process
    assert PARAMETRIZE.during("code") is None
    timed = _timed_call.wrapped(call)  # wrapped once, as the timed loop does
    assert PARAMETRIZE.apply("cached") == {"cached": True, "calls": 0, "held": 0}
    assert PARAMETRIZE.during("cached") == "code", "no call wrapped yet"
    assert _recomputes(timed) == 2 and PARAMETRIZE.during("cached") == "cached"
    assert PARAMETRIZE.facts_phrase(PARAMETRIZE.facts(PARAMETRIZE.readback("cached"))) == \
        "every timed call read back under the cache"
    assert PARAMETRIZE.switch("code") == {"cached": False, "calls": 0, "held": 0}
    assert _recomputes(timed) == 6, "switched back between two calls: the next recomputes on every read"
    assert parametrize._cache_enabled == 0
    PARAMETRIZE.switch("cached")

    def fails():
        call()
        raise RuntimeError("the call's exception")

    with pytest.raises(RuntimeError, match="the call's exception"):
        _timed_call.wrapped(fails)()
    assert parametrize._cache_enabled == 0 and parametrize._cache == {}, "the cache left after an exception"


def test_the_probe_reads_its_census_back_through_a_results_file():
    model, call = _steps()
    found = PROBE.read(PROBE.record(ProbedCall(call=call, modules=(model,))))
    assert found == ParametrizeFacts(tensors=2, recomputed=2, recomputes=6, most=3,
                                     kinds={"orthogonal": 1, "weight_norm": 1})
    assert found.recomputed_again
    assert found.text() == ("its probe call recomputed 2 parametrized tensors 6 times (up to 3 times each; "
                            "1 orthogonal, 1 weight_norm)")
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found


def _facts(seen):
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed={} if seen is None else {PROBE.key: seen})


def test_precheck_rules_it_out_where_nothing_is_recomputed_twice():
    cause = Recomputed()
    assert cause.probes(None) == [CACHED]
    assert cause.precheck(_facts(SEEN), None) is None
    assert cause.precheck(_facts(NONE_SEEN), None) == \
        "no parametrized tensor in the modules of its state or recomputed in its probe call"
    assert cause.precheck(_facts(ONCE), None) == (
        "no parametrized tensor recomputed twice in its probe call (4 recomputes of 4 tensors): "
        "parametrize.cached() around the call would compute as many")
    assert "times its own iterations" in cause.precheck(_facts(None), None)
    assert cause.precheck(_facts(ParametrizeFacts(error="RuntimeError: x")), None) is None


def _judge(factor, seen=SEEN, fail=False):
    return judge_switched(Recomputed(), CACHED, {"cached": True, "calls": 16, "held": 16}, _facts(seen), factor,
                          failure=("RuntimeError: Trying to backward through the graph a second time\n..." if fail
                                   else None))


def test_named_when_the_cache_makes_it_faster_and_not_when_it_changes_nothing():
    found = _judge(0.25)
    assert found.status == Status.CAUSE and found.mark == "*", found.message
    assert found.message.startswith("parametrized tensors recomputed on every access: under parametrize.cached() "
                                    "it is 4.00× faster")
    assert TIMING_ONLY in found.message and SEEN.text() in found.message
    assert "every timed call read back under the cache" in found.message
    assert PARAMETRIZE.mechanism in found.message and found.message.endswith(FIX)
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE and "parametrize.cached() changes nothing" in same.message
    unseen = _judge(0.25, seen=None)
    assert unseen.status == Status.UNCONFIRMED and "no tensor was seen recomputed twice" in unseen.message


def test_a_call_that_fails_under_the_cache_is_open():
    found = _judge(1.0, fail=True)
    assert found.status == Status.UNRESOLVED and found.comparison is None, found.message
    assert found.message == ("parametrized tensors recomputed on every access: not measured: under "
                             "parametrize.cached() its call fails (RuntimeError: Trying to backward through the "
                             "graph a second time)")


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier under 3 min
def test_worker_runs_each_timed_call_cached_and_the_probe_worker_notes_the_census(tmp_path):
    path = tmp_path / "steps.py"
    path.write_text(textwrap.dedent("""
        import torch
        from torch.nn.utils import parametrizations, parametrize

        model = parametrizations.orthogonal(torch.nn.Linear(4, 4))

        def steps():
            with torch.no_grad():
                first = model.weight
                if parametrize._cache_enabled and model.weight is not first:
                    raise RuntimeError("recomputed under the cache")
                return model(model(torch.ones(1, 4)))
    """))
    doc = runner.run_matrix(f"{path}:steps", {"iterations": 3}, {"parametrize": ["cached"]}, progress=False,
                            control=False)
    [run] = doc["runs"]
    assert run["status"] == "ok", run.get("error")
    during = run["readback"]["parametrize"]["during"]
    assert (during["held"], during["seen"]) == (True, "cached") and 1 <= during["samples"] <= 3
    assert run["readback"]["parametrize"]["observed"] == {"cached": True, "calls": 3, "held": 3}
    doc = runner.run_matrix(f"{path}:steps", {"iterations": 2}, {}, progress=False, control=False, probe=True)
    seen = Facts.from_probe(doc).of(PROBE)
    assert seen == ParametrizeFacts(tensors=1, recomputed=1, recomputes=3, most=3, kinds={"orthogonal": 1}), seen
