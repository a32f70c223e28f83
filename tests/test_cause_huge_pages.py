"""The transparent-huge-pages cause: its evidence (the kernel's mode, torch's variable, a buffer's mapping
read back from smaps), its setting (``thp``: THP_MEM_ALLOC_ENABLE=1 at start) and its judgement on
synthetic explaining runs."""

import json
import os
import subprocess
import sys

import pytest

from benchctl import settings
from benchctl._causes.thp import control as huge_pages
from benchctl._causes.thp.probe import PROBE as THP_PROBE, HugePageFacts
from benchctl._causes.thp.rule import HugePages
from benchctl._causes.allocator.rule import Allocator
from benchctl._results import queries, rules
from benchctl._probe import ProbedCall
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts
from benchctl._results.findings import Status
from synthetic_results import make_doc

PROBE = {"thp": "on"}
RETAIN = {"alloc": "retain"}
MADVISE = HugePageFacts("madvise")
FAULTY = dict(phases=["call"], median_ms={"call": 100.0}, counters={"call": {"minor_faults_per_iter": 48_000.0}})


def _readback(huge_bytes):
    def readback(cell):
        if cell["with"] != PROBE:
            return {}
        observed = {"kernel_mode": "madvise", "THP_MEM_ALLOC_ENABLE": "1", "probe_bytes": 4 << 20,
                    "huge_bytes": huge_bytes}
        return {"thp": {"requested": "on", "applied": None, "observed": observed}}
    return readback


def _run(factor, faults_on=400.0, huge_bytes=2 << 20, retain=None):
    probes = [{}, PROBE] + ([RETAIN] if retain is not None else [])
    factors = {json.dumps(PROBE): factor, json.dumps(RETAIN): retain}

    def counters(cell):
        return {"minor_faults": 48_000.0 if cell["with"] == {} else faults_on if cell["with"] == PROBE else 50.0}
    doc = make_doc({"with": probes}, factor=lambda c: factors.get(json.dumps(c["with"])) or 1.0,
                   counters=counters, readback=_readback(huge_bytes), phase="call", control=True)
    return analyse(doc)


def _judge(doc):
    ctx = rules.Context(doc, "call", queries.Comparisons(doc), facts=Facts(**FAULTY, probed={THP_PROBE.key: MADVISE}))
    return HugePages().judge_phase(ctx)


def test_precheck_rules_it_out_without_huge_pages_with_them_already_on_or_with_faults_that_cost_nothing():
    cause = HugePages()
    assert cause.precheck(Facts(**FAULTY, probed={THP_PROBE.key: MADVISE}), None) is None
    assert cause.probes(None) == [PROBE]
    assert "was not read in the probe worker" in cause.precheck(Facts(**FAULTY, probed={}), None)
    assert "off (never)" in cause.precheck(Facts(**FAULTY, probed={THP_PROBE.key: HugePageFacts("never")}), None)
    assert "already puts its buffers of 2 MiB or more on huge pages (THP_MEM_ALLOC_ENABLE=1)" in \
        cause.precheck(Facts(**FAULTY, probed={THP_PROBE.key: HugePageFacts("madvise", "1")}), None)
    # torch takes "1" alone as on: another value leaves the cause to probe.
    assert cause.precheck(Facts(**FAULTY, probed={THP_PROBE.key: HugePageFacts("always", "yes")}), None) is None
    few = Facts(phases=["call"], median_ms={"call": 100.0}, counters={"call": {"minor_faults_per_iter": 30.0}},
                probed={THP_PROBE.key: MADVISE})
    assert "under 1%" in cause.precheck(few, None)
    # The allocator's pre-check is the same fault-cost test.
    assert cause.precheck(few, None) == Allocator().precheck(few, None)


def test_named_when_huge_pages_make_it_faster_with_fewer_faults_and_a_buffer_read_back_on_them():
    found = _judge(_run(0.25, retain=0.2))
    assert found.status == Status.CAUSE and found.explains, found.message
    assert "with thp=on it is 4.00× faster" in found.message
    assert "minor page faults/iter go from 48k to 400" in found.message
    assert "a 4 MiB torch buffer read back on 2 MiB of huge pages" in found.message
    assert settings.SETTINGS["thp"].mechanism in found.message and "THP_MEM_ALLOC_ENABLE=1" in found.message
    assert "alloc=retain, which keeps freed memory instead of faulting it in again, measured 5.00× faster" \
        in found.message
    without_retain = _judge(_run(0.25))
    assert without_retain.status == Status.CAUSE and "alloc=retain" not in without_retain.message


def test_unconfirmed_when_faster_without_huge_pages_read_back_or_without_fewer_faults():
    unmapped = _judge(_run(0.25, huge_bytes=0))
    assert unmapped.status == Status.UNCONFIRMED and "no buffer was read back on huge pages" in unmapped.message
    same_faults = _judge(_run(0.25, faults_on=48_000.0))
    assert same_faults.status == Status.UNCONFIRMED and "TLB misses" in same_faults.message


def test_not_named_when_huge_pages_change_nothing():
    found = _judge(_run(1.0))
    assert found.status == Status.NOT_CAUSE and "changes nothing beyond" in found.message


def test_the_setting_owns_torchs_variable_and_refuses_a_kernel_without_huge_pages(monkeypatch):
    thp = settings.SETTINGS["thp"]
    assert thp.canonical(" ON ") == "on" and thp.canonical("default") == "default"
    with pytest.raises(settings.SettingError, match="choose one of default, on"):
        thp.canonical("always")
    assert settings.cell_environment({"thp": "on"}, {"PATH": "/bin"}) == {"PATH": "/bin", "THP_MEM_ALLOC_ENABLE": "1"}
    assert settings.cell_environment({"thp": "default"}, {"THP_MEM_ALLOC_ENABLE": "0"}) == {"THP_MEM_ALLOC_ENABLE": "0"}
    with pytest.raises(settings.SettingError, match="both set THP_MEM_ALLOC_ENABLE"):
        settings.cell_environment({"thp": "on", "env": {"THP_MEM_ALLOC_ENABLE": "0"}}, {})
    monkeypatch.setattr(huge_pages, "kernel_mode", lambda text=None: "never")
    with pytest.raises(settings.SettingUnavailable, match="reads never"):
        thp.check_available()
    assert thp.facts_phrase({"huge_bytes": 4 << 20, "probe_bytes": 4 << 20}) == \
        "a 4 MiB torch buffer read back on 4 MiB of huge pages"
    assert thp.facts_phrase({"huge_bytes": None, "probe_bytes": 4 << 20}) == ""


def test_the_kernel_mode_and_a_mappings_huge_pages_are_read_from_their_files():
    assert huge_pages.kernel_mode("always [madvise] never") == "madvise"
    assert huge_pages.kernel_mode("[always] madvise never") == "always"
    assert huge_pages.kernel_mode("") is None
    smaps = ("7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \nSize:               4096 kB\n"
             "AnonHugePages:      2048 kB\nVmFlags: rd wr mr mw me ac hg\n"
             "7f0000400000-7f0000500000 rw-p 00000000 00:00 0 [heap]\nAnonHugePages:         0 kB\n")
    assert huge_pages.huge_bytes_at(0x7F0000200000, smaps) == 2 << 20
    assert huge_pages.huge_bytes_at(0x7F0000480000, smaps) == 0
    assert huge_pages.huge_bytes_at(0x1000, smaps) is None
    assert huge_pages.torch_enabled("1")
    assert not huge_pages.torch_enabled("true") and not huge_pages.torch_enabled(None)


_READBACK = """
import json
from benchctl import settings
print(json.dumps(settings.SETTINGS["thp"].readback("on")))
"""


@pytest.mark.skipif(huge_pages.kernel_mode() not in ("always", "madvise"), reason="no transparent huge pages here")
def test_in_a_fresh_process_the_variable_puts_a_large_buffer_on_huge_pages_and_its_absence_does_not():
    seen = {}
    for value in ("on", "default"):
        env = settings.cell_environment({"thp": value}, {k: v for k, v in os.environ.items()
                                                         if k != huge_pages.TORCH_ENV})
        out = subprocess.run([sys.executable, "-c", _READBACK], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        seen[value] = json.loads(out.stdout)
    assert seen["on"]["THP_MEM_ALLOC_ENABLE"] == "1" and seen["default"]["THP_MEM_ALLOC_ENABLE"] is None
    assert seen["on"]["huge_bytes"] >= 2 << 20, seen  # one aligned 2 MiB page at least
    if huge_pages.kernel_mode() == "madvise":  # only advised memory gets huge pages
        assert seen["default"]["huge_bytes"] == 0, seen


def test_the_probe_note_carries_the_mode_and_the_variable_through_a_results_file(monkeypatch):
    monkeypatch.setenv("THP_MEM_ALLOC_ENABLE", "1")
    note = THP_PROBE.record(ProbedCall())
    assert note == {"thp_kernel_mode": huge_pages.kernel_mode(), "thp_env": "1"}
    found = THP_PROBE.read(note)
    assert found.torch_on and THP_PROBE.read({}) is None
    again = Facts.from_json(json.loads(json.dumps(Facts(probed={THP_PROBE.key: found}).to_json())))
    assert again.of(THP_PROBE) == found
    # A document saved before probes had their own entry kept the fact at the top level: it still reads.
    legacy = {k: v for k, v in Facts().to_json().items() if k != "probed"}
    assert Facts.from_json({**legacy, "huge_pages": {"mode": "madvise", "torch_env": "1"}}).of(THP_PROBE) == found
