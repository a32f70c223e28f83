"""The GIL cause: its watch (the CPU time of the process's other Python threads and of the calling thread over the
timed iterations, each other thread named by where it was), its probe (through a results file) and its judgement."""

import json
import threading
import time

from benchctl._causes.gil.probe import PROBE, PythonThreads, PythonThreadsWatch
from benchctl._causes.gil.rule import FIX, MECHANISM, GilHolders
from benchctl._causes.python_time.probe import PROBE as SPLIT
from benchctl._libsplit import Kind, KindSamples, LibrarySplit
from benchctl._probe import ProbedCall
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from synthetic_results import make_doc


def _spin(running: list) -> None:
    n = 0
    while running[0]:  # no call inside: where the watch finds it is this loop
        n += 1


def _sleeper(stop: threading.Event) -> None:
    stop.wait()


def test_the_watch_counts_the_other_python_threads_and_names_the_busy_one():
    stop, running = threading.Event(), [True]
    spinner = threading.Thread(target=_spin, args=(running,), name="metrics", daemon=True)
    idle = threading.Thread(target=_sleeper, args=(stop,), name="idle", daemon=True)
    spinner.start(), idle.start()
    try:
        with PythonThreadsWatch() as watch:
            ended = time.perf_counter() + 0.3
            while time.perf_counter() < ended:  # the calling thread's own Python, beside the spinner
                sum(range(1000))
    finally:
        running[0] = False
        stop.set()
        spinner.join(), idle.join()
    seen = PROBE.read(PROBE.record(ProbedCall(call=lambda: None, watched={PROBE.key: watch})))
    assert seen.others == 1 and [t["name"] for t in seen.busiest] == ["metrics"]  # the sleeper took no CPU
    assert seen.busiest[0]["at"].startswith("_spin (test_cause_gil.py:")
    # Python's two threads share the GIL: between them about one CPU, the spinner a good part of it.
    assert 0.1 < seen.others_cpus < 1.05 and 0 < seen.caller_on_cpu < 1
    assert seen.wall_ms >= 300
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: seen}).to_json())))
    assert again.of(PROBE) == seen


def _facts(seen, split=None):
    probed = {} if seen is None else {PROBE.key: seen}
    if split is not None:
        probed[SPLIT.key] = split
    return Facts(phases=["call"], median_ms={"call": 200.0}, call_wall_us=200_000.0, probed=probed)


def _split(python: int, native: int, cpu_ms: float = 2100.0) -> LibrarySplit:
    """A library split of the timed calls: ``python`` samples in the interpreter, ``native`` in zlib (another
    library), the process's CPU ``cpu_ms``."""
    kinds = (KindSamples(Kind.INTERPRETER, python), KindSamples(Kind.OTHER, native))
    return LibrarySplit(kinds=kinds, samples=python + native, cpu_ns=int(cpu_ms * 1e6), kernel_ns=0,
                        wall_ns=2_000_000_000, period_ns=1_000_000)


def _seen(others_ms, caller_ms, wall_ms=2000.0):
    return PythonThreads(wall_ms=wall_ms, caller_ms=caller_ms, others_ms=others_ms, others=1,
                         busiest=[{"name": "Thread-1 (_metrics)", "cpu_ms": others_ms, "at": "_metrics (job.py:11)"}])


def _judge(seen, split=None):
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="call", control=True))
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=_facts(seen, split))
    return GilHolders().judge_phase(ctx)


def test_precheck_rules_it_out_without_a_busy_python_thread_beside_the_calls():
    cause = GilHolders()
    assert cause.probes(None) == []
    assert cause.precheck(_facts(_seen(1900.0, 100.0)), None) is None
    assert cause.precheck(_facts(_seen(20.0, 1900.0)), None) == (
        "no other Python thread ran beside its timed calls (they took 20 ms of CPU over its 2,000 ms of timed calls: "
        "under 0.05 CPUs)")
    assert "times its own iterations" in cause.precheck(_facts(None), None)


def test_open_where_a_busy_python_thread_ran_while_the_calling_thread_waited():
    found = _judge(_seen(1960.0, 100.0))
    assert found.status is Status.UNCONFIRMED and found.mark == "?" and found.comparison is None, found.message
    assert found.message == (
        "another Python thread holding the GIL beside the calls: 1 other Python thread kept 0.98 CPUs busy beside its "
        "timed calls (Thread-1 (_metrics) 1,960 ms, at _metrics (job.py:11)), while its calling thread ran on a CPU "
        f"for 5% of their time: {MECHANISM}; no setting here stops a thread of its own, so this is not measured "
        f"(their CPU time counts native work that lets the GIL go, too); the fix: {FIX}")
    # A busy thread beside a calling thread that did not wait, or a thread that ran little: not the cause.
    assert _judge(_seen(1960.0, 1900.0)).status is Status.NOT_CAUSE
    assert _judge(_seen(300.0, 100.0)).status is Status.NOT_CAUSE
    assert _judge(_seen(20.0, 100.0)) is None and _judge(None) is None


def test_not_the_cause_where_the_library_split_puts_their_cpu_in_native_code():
    """A pool compressing with zlib (which lets the GIL go) while the step waits for its results: busy Python
    threads and a waiting calling thread, but their CPU went to native code (spinning_team.py's pool was named open
    before this check)."""
    native = _judge(_seen(1960.0, 100.0), split=_split(python=5, native=95))
    assert native.status is Status.NOT_CAUSE, native.message
    assert ", yet Python's side took 105 ms of the process's CPU over its timed calls, under 50% of theirs: they ran " \
           "native code that lets the GIL go (" in native.message
    python = _judge(_seen(1960.0, 100.0), split=_split(python=90, native=10))
    assert python.status is Status.UNCONFIRMED  # their CPU went to the interpreter: open, as without a split
