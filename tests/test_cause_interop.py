"""The inter-op-pool-beyond-the-CPUs cause (evidence only): its probe (the pool's size and the worker's CPUs,
through a results file), the name the profiler gives TorchScript's forked work, and its judgement on
synthetic facts: open where a pool larger than the CPUs ran more forked tasks than them, ruled out otherwise."""

import json
import os
import warnings

import torch

from benchctl._probe import ProbedCall
from benchctl._causes.interop.probe import PROBE, InteropFacts
from benchctl._causes.interop.rule import FORKED, Interop, interop_work
from benchctl._results import queries, rules
from benchctl._results.facts import Facts, OpRow
from benchctl._results.findings import Status
from benchctl._workloads import op_table
from synthetic_results import make_doc


def _mm(x):
    return torch.mm(x, x)


def _forks(x):
    futures = [torch.jit.fork(_mm, x) for _ in range(3)]
    return [torch.jit.wait(f) for f in futures]


def test_the_profiler_names_torchscripts_forked_work_as_the_rule_reads_it():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit's deprecation
        scripted = torch.jit.script(_forks)
    x = torch.randn(8, 8)
    scripted(x)
    with torch.profiler.profile() as prof:
        scripted(x)
    rows = [OpRow.from_json(r) for r in op_table.rows(prof.events())]
    assert interop_work(Facts(op_table=tuple(rows))) == 3, [r.op for r in rows]


def test_the_probe_reads_the_pool_and_the_cpus_through_a_results_file():
    found = PROBE.read(PROBE.record(ProbedCall()))
    assert found == InteropFacts(torch.get_num_interop_threads(), len(os.sched_getaffinity(0)))
    assert PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={PROBE.key: found}).to_json())))
    assert again.of(PROBE) == found
    assert InteropFacts(8, 2).text() == "torch's inter-op pool has 8 threads on 2 CPUs"


def _facts(threads, cpus, forked):
    rows = (OpRow("aten::mm", calls=forked, self_us=10.0),) + ((OpRow(FORKED, calls=forked),) if forked else ())
    return Facts(phases=["run"], median_ms={"run": 10.0}, op_table=rows, torch_threads=2,
                 probed={PROBE.key: InteropFacts(threads, cpus)})


def test_precheck_rules_it_out_without_a_pool_beyond_the_cpus_and_work_beyond_them():
    cause = Interop()
    assert cause.probes(None) == []
    assert cause.precheck(_facts(8, 2, forked=4), None) is None
    assert "8 threads on 2 CPUs, but its profiled call forked no function" in cause.precheck(_facts(8, 2, 0), None)
    assert "2 threads on 2 CPUs: it fits them" in cause.precheck(_facts(2, 2, 4), None)
    assert "at most 2 at once, within them" in cause.precheck(_facts(8, 2, 2), None)
    assert "did not read" in cause.precheck(Facts(), None)


def test_open_where_the_evidence_shows_forked_work_beyond_the_cpus_never_a_cause():
    doc = make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="run")
    found = Interop().judge_phase(rules.Context(doc, "run", queries.Comparisons(doc), facts=_facts(8, 2, 4)))
    assert found.status == Status.UNCONFIRMED, found.message
    assert "8 threads on 2 CPUs and its profiled call forked 4 functions onto it" in found.message
    assert "torch.set_num_interop_threads(2)" in found.message
    fits = _facts(2, 2, 4)
    assert Interop().judge_phase(rules.Context(doc, "run", queries.Comparisons(doc), facts=fits)) is None
