"""The base of the causes probed by a setting switched for the timed calls (``benchctl.rules.SwitchedCause``,
``KeptCause``): a subclass gives only its words and what its watch confirms, and the base says the three sentences
(the cause, the unconfirmed mechanism, not found), the probe not measured, and the rule-out before any cell runs.
Toy subclasses over the gc and profiler settings, judged on synthetic documents of known factors."""

import pytest

from benchctl import rules as public
from benchctl._causes.gc_pauses.probe import PROBE as GC_WATCH, GcFacts
from benchctl._causes.gc_pauses.setting import GC
from benchctl._causes.profiler.probe import PROBE as PROFILER_WATCH, ProfilerFacts
from benchctl._causes.profiler.setting import PROFILER
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from synthetic_results import make_doc

OFF = {"gc": "off"}
SEEN = GcFacts(passes={"0": 120}, seconds=0.8, window_s=1.0, tracked=500_000)


class Toy(public.SwitchedCause):
    name = "toy"
    title = "a toy cause"
    setting = GC
    watch = GC_WATCH
    under = "with the toy switch"
    switched = "the toy switch"
    unseen = "the watch saw no toy"
    unwatched = "no toy to switch"
    fix = "remove the toy"
    timing_only = "a toy probe"

    def rule_out(self, facts, seen):
        return None if seen.share > 0.5 else "too few toys"

    def evidence(self, facts):
        seen = self.seen(facts)
        return None if seen is None else f"{seen.tracked} toys"


def _facts(seen, key=GC_WATCH.key):
    return Facts(phases=["call"], median_ms={"call": 10.0}, probed={} if seen is None else {key: seen})


def _ctx(factor, seen, probe=OFF, readback=None, key=GC_WATCH.key, fail=False):
    doc = make_doc({"with": [{}, probe]}, factor=lambda c: factor if c["with"] == probe else 1.0,
                   readback=lambda cell: (readback or {}) if cell["with"] == probe else {}, phase="call", control=True)
    if fail:
        for run in doc["runs"]:
            if run["cell"]["with"] == probe:
                run.update(status="failed", phases={}, error="RuntimeError: needs the toy\n...")
    doc = analyse(doc)
    return rules.Context(doc, "call", queries.Comparisons(doc), facts=_facts(seen, key))


def test_the_probe_is_the_settings_own_and_the_rule_out_comes_after_the_watch():
    toy = Toy()
    assert Toy.probe == {"gc": "off"} and toy.probes(None) == [OFF]
    assert toy.precheck(_facts(SEEN), None) is None
    assert toy.precheck(_facts(GcFacts(passes={"0": 1}, seconds=0.01, window_s=1.0)), None) == "too few toys"
    assert toy.precheck(_facts(None), None).endswith("times its own iterations): no toy to switch")


def test_the_three_sentences_are_the_bases_in_the_subclasss_words():
    cause = Toy().judge_phase(_ctx(0.5, SEEN))
    assert cause.status == Status.CAUSE
    head, tail = cause.message.split(" [95% CI", 1)
    assert head == "a toy cause: with the toy switch it is 2.00× faster"
    assert tail.endswith(f" (a toy probe); {SEEN.tracked} toys: {GC.mechanism}; the fix: remove the toy")
    assert cause.evidence == {GC_WATCH.key: _facts(SEEN).to_json()["probed"][GC_WATCH.key],
                              "readback": {}}

    unseen = Toy().judge_phase(_ctx(0.5, None))
    assert unseen.status == Status.UNCONFIRMED
    assert unseen.message.endswith(" (a toy probe), yet the watch saw no toy: the mechanism is unconfirmed")

    same = Toy().judge_phase(_ctx(1.0, SEEN))
    assert same.status == Status.NOT_CAUSE and "the toy switch changes nothing" in same.message
    assert same.message.endswith(f"; {SEEN.tracked} toys")

    failed = Toy().judge_phase(_ctx(1.0, SEEN, fail=True))
    assert failed.status == Status.UNRESOLVED
    assert failed.message == ("a toy cause: not measured: with the toy switch its call fails (RuntimeError: needs "
                              "the toy)")


class KeptToy(public.KeptCause):
    name = "kept_toy"
    title = "a kept toy"
    setting = PROFILER
    watch = PROFILER_WATCH
    under = "with the toy kept off"
    switched = "the toy kept off"
    unseen = "no toy was seen on"
    fix = "leave the toy off"

    def rule_out(self, facts, seen):
        return None if seen.seen_on else "no toy on"

    def evidence(self, facts):
        seen = self.seen(facts)
        return seen.text() if seen is not None and seen.seen_on else None


@pytest.mark.parametrize("refused", [0, 5])
def test_a_kept_switchs_refusals_read_back_are_its_evidence_where_the_watch_saw_nothing(refused):
    observed = {"enabled": False, "kept_off": True, "refused": refused}
    readback = {"profiler": {"requested": "off", "applied": observed, "observed": observed}}
    found = KeptToy().judge_phase(_ctx(0.5, None, probe={"profiler": "off"}, readback=readback,
                                       key=PROFILER_WATCH.key))
    phrase = PROFILER.facts_phrase(observed)
    if refused:
        assert found.status == Status.CAUSE and phrase
        assert found.message.endswith(f"; {phrase}: {PROFILER.mechanism}; the fix: leave the toy off")
    else:
        assert found.status == Status.UNCONFIRMED
        assert found.message.endswith("yet no toy was seen on: the mechanism is unconfirmed")
    assert KeptToy().precheck(_facts(None, PROFILER_WATCH.key), None) is None  # not watched: nothing rules it out
    assert KeptToy().precheck(_facts(ProfilerFacts(), PROFILER_WATCH.key), None) == "no toy on"
