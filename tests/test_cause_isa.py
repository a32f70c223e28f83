"""The kernel ISA dispatch cause: its evidence (torch's capability, this CPU's flags), its setting
(``isa``: ATEN_CPU_CAPABILITY, read back from torch) and its judgement on synthetic explaining runs."""

import json
import os
import subprocess
import sys

import pytest

from benchctl import settings
from benchctl._causes.isa import probe as probe_isa, rule as isa_rule
from benchctl._causes.isa.probe import PROBE as ISA, Dispatch
from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from synthetic_results import make_doc

FORCED = Dispatch("default", forced="default", best="avx512", flags=("avx2", "avx512f", "fma"))
BEST = Dispatch("avx512", best="avx512", flags=("avx2", "avx512f", "fma"))
PROBE = {"isa": "avx512"}


def _readback(seen, held=True):
    def readback(cell):
        if cell["with"] != PROBE:
            return {}
        during = {"held": held, "seen": "avx512" if held else seen, "samples": 16}
        return {"isa": {"requested": "avx512", "applied": None, "observed": {"capability": seen}, "during": during}}
    return readback


def _run(factor, seen="avx512", held=True):
    doc = make_doc({"with": [{}, PROBE]}, factor=lambda c: factor if c["with"] == PROBE else 1.0,
                   readback=_readback(seen, held), phase="run", control=True)
    return analyse(doc)


def _context(doc, isa=FORCED):
    return rules.Context(doc, "run", queries.Comparisons(doc), facts=Facts(phases=["run"], probed={ISA.key: isa}))


def test_precheck_rules_it_out_where_torch_already_uses_the_best_kernels_or_nothing_is_known():
    cause = isa_rule.Isa()
    assert "torch dispatches to avx512 kernels (torch's own choice), the best this CPU offers" in \
        cause.precheck(Facts(probed={ISA.key: BEST}), None)
    forced_best = Dispatch("avx512", forced="avx512", best="avx512")
    assert "(ATEN_CPU_CAPABILITY=avx512), the best" in cause.precheck(Facts(probed={ISA.key: forced_best}), None)
    assert "were not read" in cause.precheck(Facts(probed={}), None)
    assert "were not read" in cause.precheck(Facts(probed={ISA.key: Dispatch("default", best=None)}), None)
    assert cause.probes(Facts(probed={ISA.key: BEST})) == [] and cause.probes(None) == []
    assert cause.precheck(Facts(probed={ISA.key: FORCED}), None) is None
    assert cause.probes(Facts(probed={ISA.key: FORCED})) == [PROBE]
    assert cause.probes(Facts(probed={ISA.key: Dispatch("avx2", forced="avx2", best="avx512")})) == [PROBE]


def test_named_when_the_best_kernels_are_faster_and_torch_read_them_back():
    found = isa_rule.Isa().judge_phase(_context(_run(0.1)))
    assert found.status == Status.CAUSE and found.explains, found.message
    assert "with isa=avx512 it is 10.00× faster" in found.message
    assert "unchanged it runs default kernels (ATEN_CPU_CAPABILITY=default), with isa=avx512 torch read back " \
           "avx512" in found.message
    assert settings.SETTINGS["isa"].mechanism in found.message
    assert found.evidence["forced"] == "default" and found.evidence["probe"] == "avx512"


def test_not_named_when_the_kernels_change_nothing_or_torch_did_not_switch():
    same = isa_rule.Isa().judge_phase(_context(_run(1.0)))
    assert same.status == Status.NOT_CAUSE and "changes nothing beyond" in same.message
    unswitched = isa_rule.Isa().judge_phase(_context(_run(0.5, seen="default")))
    assert unswitched.status == Status.UNCONFIRMED and "torch read back default" in unswitched.message


def test_a_probe_the_workload_undid_is_reported_not_judged():
    ctx = _context(_run(0.1, seen="default", held=False))
    [found] = isa_rule.Isa().judge(ctx)
    assert found.status == Status.UNRESOLVED
    assert "the workload's own code set isa=default during the timed iterations" in found.message


def test_the_setting_takes_capabilities_and_owns_the_variable():
    isa = settings.SETTINGS["isa"]
    assert isa.canonical("AVX2") == "avx2" and isa.canonical(" default ") == "default"
    with pytest.raises(settings.SettingError, match="choose one of default, avx2, avx512"):
        isa.canonical("sse4")
    env = settings.cell_environment({"isa": "avx2"}, {"PATH": "/bin"})
    assert env == {"PATH": "/bin", "ATEN_CPU_CAPABILITY": "avx2"}
    with pytest.raises(settings.SettingError, match="both set ATEN_CPU_CAPABILITY"):
        settings.cell_environment({"isa": "avx2", "env": {"ATEN_CPU_CAPABILITY": "default"}}, {})
    assert isa.facts_phrase({"capability": "avx2"}) == "torch read back dispatching to avx2 kernels"


_READBACK = """
import json, os
from benchctl import settings
isa = settings.SETTINGS["isa"]
print(json.dumps({"during": isa.during("default"), "readback": isa.readback("default")}))
"""


def test_readback_and_during_say_what_torch_dispatches_to_in_a_fresh_process():
    env = {**os.environ, **settings.SETTINGS["isa"].environment("default", {}, {})}
    out = subprocess.run([sys.executable, "-c", _READBACK], env=env, capture_output=True, text=True, timeout=120)
    seen = json.loads(out.stdout)
    assert seen == {"during": "default", "readback": {"capability": "default", "ATEN_CPU_CAPABILITY": "default"}}


def test_the_best_capability_follows_torchs_flag_checks():
    assert probe_isa.best_capability(frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl", "fma", "avx2"})) \
        == "avx512"
    assert probe_isa.best_capability(frozenset({"avx512f", "avx2", "fma"})) == "avx2"  # no avx512bw/dq/vl
    assert probe_isa.best_capability(frozenset({"avx2"})) == "default"  # AVX2 kernels need FMA too
    assert probe_isa.best_capability(None) is None
    cpuinfo = "processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\nbugs\t\t: none\nflags\t: other\n"
    assert probe_isa.cpu_flags(cpuinfo) == frozenset({"fpu", "sse2", "avx2", "fma"})
    assert probe_isa.cpu_flags("Features\t: fp asimd sve\n") is None  # an ARM CPU: not x86 flags


def test_the_collector_reports_torchs_choice_and_the_facts_carry_it_through_a_results_file():
    import torch

    evidence = probe_isa.isa_evidence()
    assert evidence["cpu_capability"] == torch.backends.cpu.get_cpu_capability().lower()
    assert evidence["capability_env"] == os.environ.get("ATEN_CPU_CAPABILITY")
    assert evidence["best_capability"] == probe_isa.best_capability(probe_isa.cpu_flags())
    isa = Dispatch.from_probe(evidence)
    assert isa.used == evidence["cpu_capability"] and isa.flags == tuple(evidence["vector_flags"])
    assert Dispatch.from_probe({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={ISA.key: FORCED}).to_json())))
    assert again.of(ISA) == FORCED and again.of(ISA).below_best
