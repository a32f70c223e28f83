"""The autocast-cache cause: its control (autocast's cache kept across blocks that would clear it, the nesting count
given back, also after an exception; the clears counted), its setting (``autocast_cache=kept``, switched in a running
process, each timed call wrapped), its probe (through a results file) and its judgement on synthetic explaining runs.
No timing is asserted: the synthetic documents carry known factors."""

import dataclasses
import json
import textwrap

import pytest
import torch

from benchctl import _timed_call, settings
from benchctl._causes.autocast_cache import control
from benchctl._causes.autocast_cache.probe import PROBE, AutocastFacts, tallying_weights
from benchctl._causes.autocast_cache.rule import (CASTS, FIX, FIX_FROZEN, FIX_UNCACHED, FIX_WHERE_SLOWER,
                                                UNCACHED, AutocastRecast)
from benchctl._causes.half.rule import HALF
from benchctl._causes.autocast_cache.setting import AUTOCAST_CACHE
from benchctl._causes.recording.probe import PROBE as AUTOGRAD, AutogradFacts
from benchctl._probe import ProbedCall
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.dtype_profile import DtypeProfile, DtypeTiming
from benchctl._results.facts import Facts, OpRow
from benchctl._results.findings import Status
from benchctl._run import runner
from synthetic_results import make_doc

KEPT = {"autocast_cache": "kept"}
SEEN = AutocastFacts(clears=1)


@pytest.fixture(autouse=True)
def _restored():
    yield
    control.restore_calls()


def _nesting():
    """Autocast's nesting count now (read by moving it and back)."""
    level = torch.autocast_increment_nesting() - 1
    torch.autocast_decrement_nesting()
    return level


def _linear():
    torch.manual_seed(0)
    return torch.nn.Linear(16, 16), torch.randn(4, 16)


def _autocast_call(model, x):
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        return model(x)


def test_kept_holds_the_cache_across_blocks_and_gives_the_nesting_back():
    model, x = _linear()
    own = torch.clear_autocast_cache
    with control.counting_clears() as clears:
        _autocast_call(model, x)
        _autocast_call(model, x)
    assert clears.count == 2, "each outermost block clears the cache as it exits"
    assert torch.clear_autocast_cache is own and _nesting() == 0
    expected = _autocast_call(model, x)
    with control.kept() as kept:
        assert _nesting() == 1
        with control.counting_clears() as inner:
            first, second = _autocast_call(model, x), _autocast_call(model, x)
        assert inner.count == 0 and kept.count == 0, "the code's blocks no longer reach the outermost level"
        assert torch.equal(first, expected) and torch.equal(second, expected)
    assert _nesting() == 0 and torch.clear_autocast_cache is own
    with pytest.raises(RuntimeError, match="the block's"), control.kept():
        raise RuntimeError("the block's exception")
    assert _nesting() == 0 and torch.clear_autocast_cache is own
    with control.kept() as kept:
        torch.clear_autocast_cache()  # the code's own clear
    assert kept.count == 1


def test_the_setting_keeps_the_cache_from_the_first_timed_call_until_switched_back():
    model, x = _linear()
    own = torch.clear_autocast_cache
    assert AUTOCAST_CACHE.canonical(" KEPT ") == "kept" and AUTOCAST_CACHE.canonical("code") == "code"
    with pytest.raises(settings.SettingError, match="choose one of code, kept"):
        AUTOCAST_CACHE.canonical("on")
    assert settings.SETTINGS["autocast_cache"] is AUTOCAST_CACHE and AUTOCAST_CACHE.in_process
    assert AUTOCAST_CACHE.during("code") is None
    call = _timed_call.wrapped(lambda: _autocast_call(model, x))  # wrapped once, as the timed loop does
    assert AUTOCAST_CACHE.apply("kept") == {"keeping": True, "calls": 0, "held": 0}
    assert AUTOCAST_CACHE.during("kept") == "code", "no call wrapped yet"
    assert _nesting() == 0, "kept from the first call"
    call()
    assert AUTOCAST_CACHE.during("kept") == "kept" and _nesting() == 1, "kept between the calls too"
    assert AUTOCAST_CACHE.switch("code") == {"keeping": False, "calls": 0, "held": 0}
    assert _nesting() == 0
    with control.counting_clears() as clears:
        call()
    assert clears.count == 1, "switched back between two calls: the next clears the cache again"
    AUTOCAST_CACHE.switch("kept")

    def clears_itself():
        out = _autocast_call(model, x)
        torch.clear_autocast_cache()
        return out

    call()
    _timed_call.wrapped(clears_itself)()
    assert AUTOCAST_CACHE.readback("kept") == {"keeping": True, "calls": 2, "held": 1}
    assert AUTOCAST_CACHE.during("kept") == "code"
    with pytest.raises(ValueError):
        _timed_call.wrapped(lambda: (_ for _ in ()).throw(ValueError("the call's")))()
    assert AUTOCAST_CACHE.readback("kept")["calls"] == 2, "a call that raised is not counted"
    AUTOCAST_CACHE.switch("code")
    assert _nesting() == 0 and torch.clear_autocast_cache is own
    AUTOCAST_CACHE.switch("kept")
    call()
    assert (AUTOCAST_CACHE.facts_phrase(AUTOCAST_CACHE.facts(AUTOCAST_CACHE.readback("kept")))
            == "every timed call read back with the cache kept")


def test_the_probe_reads_its_count_back_through_a_results_file():
    model, x = _linear()
    with PROBE.watch_call() as (clears, tallied):
        _autocast_call(model, x)
    note = PROBE.record(ProbedCall(call=lambda: None, called={PROBE.key: (clears, tallied)}))
    found = PROBE.read(note)
    assert found == dataclasses.replace(SEEN, cached=16 * 16 + 16)  # the linear layer's weight and bias
    assert found.text() == ("in its profiled call autocast's cache of cast weights was cleared 1 time, as its "
                            "outermost autocast block exited")
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found
    assert PROBE.read({"autocast_cache_clears": 2}) == AutocastFacts(clears=2)  # a file from before the tally


def _casts_in_a_second_call(model, x, around):
    """The casts (aten::_to_copy) of a second call inside the same autocast block as the first: what its cache did
    not keep."""
    with around(), torch.autocast("cpu", dtype=torch.bfloat16):
        model(x)
        with torch.profiler.profile() as prof:
            model(x)
    return sum(e.count for e in prof.key_averages() if e.key == "aten::_to_copy")


@pytest.mark.parametrize("case", ["no_grad", "frozen", "inference_mode"])
def test_the_tally_says_which_weights_autocast_casts_anew_and_torch_agrees(case):
    """Two linear layers (4 float32 weights and biases): a second call in one autocast block casts only its input
    where the cache keeps them, and all five tensors where it cannot (frozen weights, or any under inference mode)."""
    torch.manual_seed(0)
    model, x = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)), torch.randn(4, 16)
    model.requires_grad_(case != "frozen")
    around = torch.inference_mode if case == "inference_mode" else torch.no_grad
    with tallying_weights() as tally:
        _casts_in_a_second_call(model, x, around)
        model(x)  # outside autocast: not counted
    elements = 2 * (16 * 16 + 16)
    expected = {"no_grad": {"cached": elements, "frozen": 0, "inference": 0},
                "frozen": {"cached": 0, "frozen": elements, "inference": 0},
                "inference_mode": {"cached": 0, "frozen": 0, "inference": elements}}[case]
    assert tally.note() == expected
    facts = AutocastFacts(clears=1, **tally.note())
    assert facts.mostly_uncached == (case != "no_grad")
    assert _casts_in_a_second_call(model, x, around) == (1 if case == "no_grad" else 5)
    if facts.mostly_uncached:
        reason = "they do not require grad" if case == "frozen" else "they were used under inference mode"
        assert facts.uncached_text() == (f"100% of the float32 weights its modules used under autocast (544 of 544 "
                                         f"elements) are ones its cache cannot keep: {reason}")
    assert torch.nn.Module._call_impl.__name__ == "_call_impl"  # torch's own back


def _facts(seen, autograd=None, copy_us=40.0):
    probed = {} if seen is None else {PROBE.key: seen}
    if autograd is not None:
        probed[AUTOGRAD.key] = autograd
    rows = (OpRow("aten::copy_", ("float", "c10::BFloat16"), 4, self_us=copy_us),
            OpRow("aten::addmm", ("c10::BFloat16",) * 3, 2, self_us=100.0 - copy_us))
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed=probed, op_table=rows)


def test_precheck_rules_it_out_without_a_clear_or_where_the_call_computes_gradients():
    cause = AutocastRecast()
    assert cause.probes(None) == [KEPT]
    assert cause.precheck(_facts(SEEN), None) is None
    assert cause.precheck(_facts(AutocastFacts(clears=0)), None).startswith("autocast's cache was not cleared")
    assert "times its own iterations" in cause.precheck(_facts(None), None)
    training = AutogradFacts(calls=10, recording=10, gradients=1)
    assert "training changes its weights between calls" in cause.precheck(_facts(SEEN, training), None)
    # One block around all the calls keeps nothing of frozen weights: not ruled out for want of a clear.
    assert cause.precheck(_facts(AutocastFacts(clears=0, frozen=100)), None) is None
    assert cause.precheck(_facts(AutocastFacts(clears=0, frozen=100, cached=300)), None) is not None


def _judge(factor, seen=SEEN, fail=False, empty=False):
    def readback(cell):
        if cell["with"] != KEPT:
            return {}
        observed = {"keeping": True, "calls": 16, "held": 16}
        return {"autocast_cache": {"requested": "kept", "applied": observed, "observed": observed}}

    doc = make_doc({"with": [{}, KEPT]}, factor=lambda c: factor if c["with"] == KEPT else 1.0,
                   readback=readback, phase="call", control=True)
    if fail:
        for run in doc["runs"]:
            if run["cell"]["with"] == KEPT:
                run.update(status="failed", phases={}, error="RuntimeError: out of memory\n...")
    if empty:  # ran and ended well, with no value of the phase (a paired worker that never reached its arm B)
        for run in doc["runs"]:
            if run["cell"]["with"] == KEPT:
                run["phases"] = {}
    doc = analyse(doc)
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=_facts(seen))
    found = AutocastRecast().judge(ctx)
    assert len(found) == 1
    return found[0]


def test_named_when_keeping_the_cache_makes_it_faster_and_not_when_it_changes_nothing():
    found = _judge(0.5)
    assert found.status == Status.CAUSE and found.mark == "*", found.message
    assert found.message.startswith("autocast casting the weights anew in every call: with autocast's cache kept "
                                    "across calls it is 2.00× faster")
    assert SEEN.text() + f", and casts ({', '.join(CASTS)}) took 40% of its op time" in found.message
    assert "every timed call read back with the cache kept" in found.message
    assert AUTOCAST_CACHE.mechanism in found.message and found.message.endswith(FIX)
    same = _judge(1.0)
    assert same.status == Status.NOT_CAUSE and "autocast's cache kept across calls changes nothing" in same.message
    unseen = _judge(0.5, seen=None)
    assert unseen.status == Status.UNCONFIRMED and "the mechanism is unconfirmed" in unseen.message
    failed = _judge(1.0, fail=True)
    assert failed.status == Status.UNRESOLVED and "its call fails" in failed.message
    # Processes that ran and gave nothing to compare: open, not left out of the answer (it was, before).
    empty = _judge(1.0, empty=True)
    assert empty.status == Status.UNRESOLVED and empty.comparison is None, empty.message
    assert empty.message == ("autocast casting the weights anew in every call: not measured: its autocast_cache=kept "
                             "cell ran 3 process(es), none of which gave a value to compare with the unchanged "
                             "workload in this phase")


def test_open_with_its_mechanism_where_the_weights_are_ones_autocast_does_not_cache():
    frozen = AutocastFacts(clears=1, frozen=300, cached=100)
    same = _judge(1.0, seen=frozen)
    assert same.status == Status.UNCONFIRMED and same.mark == "?", same.message  # was "not the cause"
    assert same.message.startswith("autocast casting the weights anew in every call: 75% of the float32 weights its "
                                   "modules used under autocast (300 of 400 elements) are ones its cache cannot keep: "
                                   "they do not require grad, and casts")
    assert UNCACHED in same.message and "kept across calls its time ratio is 1.000× [95% CI" in same.message
    assert same.message.endswith(FIX_UNCACHED) and "not measured" in same.message
    assert same.evidence["weights"] == {"cached": 100, "frozen": 300, "inference": 0}
    assert _judge(0.5, seen=frozen).status == Status.CAUSE  # faster all the same: what the cache kept paid
    assert _judge(1.0, seen=AutocastFacts(clears=1, frozen=100, cached=300)).status == Status.NOT_CAUSE


def test_in_training_frozen_weights_cast_at_every_step_are_open_on_that_evidence_alone():
    """A head fine-tuned on a frozen backbone under autocast: the backbone's weights do not change between steps, yet
    autocast casts them at every use. It was ruled out as training ("each call must cast them anew")."""
    cause = AutocastRecast()
    training = AutogradFacts(calls=10, recording=10, gradients=1)
    facts = _facts(AutocastFacts(clears=1, frozen=300, cached=100), training)
    assert cause.precheck(facts, None) is None
    assert cause.probes(facts) == []  # a cache kept across training steps would reuse stale casts: nothing to time
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="call", control=True))
    [found] = cause.judge(rules.Context(doc, "call", queries.Comparisons(doc), facts=facts))
    assert found.status == Status.UNCONFIRMED and found.mark == "?" and found.comparison is None
    assert found.message == (
        "autocast casting the weights anew in every call: 75% of the float32 weights its modules used under "
        "autocast (300 of 400 elements) are ones its cache cannot keep: they do not require grad, and casts "
        f"({', '.join(CASTS)}) took 40% of its op time: {UNCACHED}; it computes gradients (1 backward or "
        "autograd.grad call in its probe call): they are needed, and a cache kept across its steps would hand the "
        f"next step stale casts of the weights it trains, so no probe ran; the fix is not measured: {FIX_FROZEN}")
    assert found.evidence["weights"] == {"cached": 100, "frozen": 300, "inference": 0}
    # Fewer frozen weights than cached ones, or casts under 5% of the op time: ruled out as training, as before.
    for seen, copy_us in ((AutocastFacts(clears=1, frozen=100, cached=300), 40.0),
                          (AutocastFacts(clears=1, frozen=300, cached=100), 4.0)):
        reason = cause.precheck(_facts(seen, training, copy_us=copy_us), None)
        assert reason is not None and "training changes its weights between calls" in reason
    assert cause.probes(_facts(SEEN)) == [KEPT]


def test_where_this_cpu_runs_the_lower_precision_slower_the_fix_does_not_cast_the_model_to_it():
    # An AMD EPYC VM with AVX2 and no AVX-512: its bfloat16 addmm ran 7.5x slower than in float32, and "cast the
    # model once to bfloat16" would have kept that cost; the half cause says so, and this fix points there.
    def with_profile(ratio, share):
        timing = DtypeTiming("aten::addmm", "c10::BFloat16", share, dtype_us=ratio * 100.0, float32_us=100.0,
                             low=ratio * 0.9, high=ratio * 1.1, repeats=7)
        return dataclasses.replace(_facts(SEEN), dtype_profile=DtypeProfile((timing,), ("avx2",), threads=1,
                                                                            seconds=0.2))

    cause = AutocastRecast()
    assert cause.fix_for(_facts(SEEN)) == FIX and cause.fix_for(None) == FIX
    assert HALF.named(with_profile(7.5, 0.6)) and cause.fix_for(with_profile(7.5, 0.6)) == FIX_WHERE_SLOWER
    assert "see half" in FIX_WHERE_SLOWER and "model.to(" not in FIX_WHERE_SLOWER
    assert cause.fix_for(with_profile(1.0, 0.6)) == FIX  # as fast as float32: casting once is the fix
    assert cause.fix_for(with_profile(7.5, 0.3)) == FIX  # slower ops hold too little of the time for half's *


_AUTOCAST_FILE = """
    import torch

    model = torch.nn.Linear(8, 8)
    x = torch.randn(2, 8)


    def infer():
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            return model(x)
"""


@pytest.mark.slow  # real workers, seconds each: the slow tier keeps the README's tier under 3 min
def test_a_worker_keeps_the_cache_across_its_timed_calls_and_the_probe_worker_counts_the_clears(tmp_path):
    path = tmp_path / "autocast_each.py"
    path.write_text(textwrap.dedent(_AUTOCAST_FILE))
    doc = runner.run_matrix(f"{path}:infer", {"iterations": 3}, {"autocast_cache": ["kept"]}, progress=False,
                            control=False)
    (run,) = doc["runs"]
    assert run["status"] == "ok", run.get("error")
    assert run["readback"]["autocast_cache"]["observed"] == {"keeping": True, "calls": 3, "held": 3}
    doc = runner.run_matrix(f"{path}:infer", {"iterations": 2}, {}, progress=False, control=False, probe=True)
    assert Facts.from_probe(doc).of(PROBE).clears == 1
