"""The DataLoader-workers cause: its watch (the worker processes a block starts and stops, counted and timed, with
each new team's wait for its first batch; torch's methods given back), its probe (through a results file) and its
judgement on the shares of the timed iterations."""

import json
import time

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data import dataloader

from benchctl._causes.loader_workers.probe import PROBE, LoaderFacts, LoaderTally, watching_loaders
from benchctl._causes.loader_workers.rule import FIX, LoaderWorkers
from benchctl._probe import ProbedCall
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from synthetic_results import make_doc

DATA = TensorDataset(torch.arange(64.0).reshape(32, 2))


def _epoch(loader):
    return sum(float(x.sum()) for (x,) in loader)


def test_the_watch_counts_and_times_the_workers_a_block_starts_and_stops():
    iterator = dataloader._MultiProcessingDataLoaderIter
    own = iterator.__init__, iterator._next_data, iterator._shutdown_workers
    with watching_loaders() as tally:
        total = _epoch(DataLoader(DATA, batch_size=8, num_workers=2))
    assert total == sum(range(64))
    assert (tally.iterators, tally.workers) == (1, 2) and tally.start_s > 0 and tally.stop_s > 0
    assert tally.wall_s >= tally.start_s + tally.stop_s
    assert (iterator.__init__, iterator._next_data, iterator._shutdown_workers) == own
    persistent = DataLoader(DATA, batch_size=8, num_workers=1, persistent_workers=True)
    _epoch(persistent)  # its workers start here, outside the block
    with watching_loaders() as tally:
        _epoch(persistent)
        _epoch(DataLoader(DATA, batch_size=8))  # no workers: the main process makes the batches
    assert (tally.iterators, tally.workers, tally.stop_s, tally.first_batch_s) == (0, 0, 0.0, 0.0)
    with pytest.raises(ValueError), watching_loaders():
        raise ValueError("boom")
    assert iterator.__init__ is own[0]


def _slow_start(worker_id):
    time.sleep(0.3)  # a worker that takes long to start: its team's first batch waits for it


def test_a_new_teams_wait_for_its_first_batch_counts_as_starting_it():
    with watching_loaders() as tally:
        _epoch(DataLoader(DATA, batch_size=4, num_workers=1, worker_init_fn=_slow_start))
    assert 0.25 < tally.first_batch_s < tally.start_s < tally.wall_s, tally
    later = LoaderTally()
    seen = object()
    later.started(seen)
    for seconds in (0.5, 0.1, 0.3, 0.1):
        later.waited(seen, seconds)
    later.waited(object(), 9.0)  # an iterator started before: not counted
    later.settle()
    assert later.first_batch_s == pytest.approx(0.4)  # beyond the median of the later waits
    alone = LoaderTally()
    alone.started(seen)
    alone.waited(seen, 0.5)  # one batch: starting cannot be told from making it
    alone.settle()
    assert alone.first_batch_s == 0.0


def test_the_probe_reads_its_count_back_through_a_results_file():
    with watching_loaders() as tally:
        _epoch(DataLoader(DATA, batch_size=8, num_workers=2))
    found = PROBE.read(PROBE.record(ProbedCall(call=lambda: None, watched={PROBE.key: tally})))
    assert found.iterators == 1 and found.workers == 2 and 0 < found.share <= 1
    assert found.first_batch_ms == pytest.approx(tally.first_batch_s * 1e3)
    assert found.text().startswith("over its timed iterations it started 2 DataLoader worker processes (1 iterator) "
                                   "and stopped them: ")
    assert PROBE.record(ProbedCall(call=lambda: None, called={PROBE.key: tally})) == {}  # the timed iterations'
    assert PROBE.record(ProbedCall()) == {} and PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found


def _facts(seen):
    return Facts(phases=["call"], median_ms={"call": 45.0}, call_wall_us=45_000.0,
                 probed={} if seen is None else {PROBE.key: seen})


def _judge(seen):
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="call", control=True))
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=_facts(seen))
    return LoaderWorkers().judge_phase(ctx)


def _seen(start_ms, stop_ms, wall_ms=45.0):
    return LoaderFacts(iterators=1, workers=2, start_ms=start_ms, stop_ms=stop_ms, wall_ms=wall_ms)


def test_precheck_rules_it_out_without_workers_or_where_they_cost_next_to_nothing():
    cause = LoaderWorkers()
    assert cause.probes(None) == []
    assert cause.precheck(_facts(_seen(16.0, 10.0)), None) is None
    assert cause.precheck(_facts(LoaderFacts(wall_ms=45.0)), None) == (
        "no DataLoader started worker processes over its timed iterations")
    assert cause.precheck(_facts(_seen(1.0, 0.5, wall_ms=400.0)), None).endswith(": under 5%")
    assert "times its own iterations" in cause.precheck(_facts(None), None)


def test_named_by_the_share_of_the_call_starting_and_stopping_workers():
    found = _judge(_seen(16.2, 10.5))  # 59% of a 45 ms call
    assert found.status is Status.CAUSE and found.mark == "*", found.message
    assert ("over its timed iterations it started 2 DataLoader worker processes (1 iterator) and stopped them: 16.2 ms "
            "starting them and 10.5 ms stopping them, 59% of their 45 ms") in found.message
    first = _judge(LoaderFacts(iterators=30, workers=60, start_ms=1420.0, first_batch_ms=457.0, stop_ms=482.0,
                               wall_ms=2180.0))
    assert ("1.42 s starting them (457 ms of it waiting for their first batches beyond a later batch's wait) and "
            "482 ms stopping them, 87% of their 2.18 s") in first.message and first.status is Status.CAUSE
    assert FIX in found.message and "evidence only" in found.message
    part = _judge(_seen(9.0, 4.5))  # 30%
    assert part.status is Status.UNCONFIRMED and "explain part of the time at most" in part.message
    small = _judge(_seen(4.0, 1.0))  # 11%
    assert small.status is Status.NOT_CAUSE and small.message.endswith("under 20%")
    assert _judge(LoaderFacts(wall_ms=45.0)) is None
