"""What one pytest session measured: a record per test, in the order the tests ran.

Each record holds the test's runs in the results document's run format (one
for an in-process test, one per worker process for an isolated one), its
:class:`~.stats.Stats`, and its assertions. The session keeps them on the
pytest config (``config.stash[SESSION]``), so sessions run inside another
(pytester) never mix.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Optional

import pytest

from ._options import Options

if TYPE_CHECKING:  # numpy and the clock load only once a test uses benchctl
    from ._stats import Stats
    from ._timing import Series

__all__ = ["PHASE", "SESSION", "SPEC", "OUTCOME", "FIXTURE", "TestRecord", "Session", "now", "in_process_run",
           "skip_here", "serve"]

#: The phase a test's ``benchctl(fn)`` / ``benchctl.pedantic`` series is stored under.
PHASE = "call"


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class TestRecord:
    """One test that used benchctl: its runs (results-document format), stats and assertions."""

    nodeid: str
    runs: list = field(default_factory=list)
    stats: Optional[Stats] = None
    assertions: list = field(default_factory=list)
    isolated: bool = False


@dataclass
class Session:
    options: Options
    #: The document ``--benchctl-compare`` judges against (loaded at configure: a bad file fails early).
    saved: Optional[dict] = None
    records: dict = field(default_factory=dict)
    #: Filled at session finish: the document of this run and the comparison's judgements.
    document: Optional[dict] = None
    judgements: list = field(default_factory=list)
    #: The session reference (reference.measure) when one was run, and the comparison's reference.Drift.
    reference: Optional[dict] = None
    drift: Any = None
    #: In an isolated worker: the bridge to the worker's recorder (see workloads.pytest_node).
    bridge: Any = None
    #: The tests that failed (in setup or call), and those of them whose timings were left out (drop_failed).
    failed: list = field(default_factory=list)
    dropped: list = field(default_factory=list)
    #: Whether --benchctl-json was written (not when nothing was measured: it could replace a baseline).
    json_written: bool = False

    def record(self, nodeid: str) -> TestRecord:
        return self.records.setdefault(nodeid, TestRecord(nodeid))

    def drop_failed(self) -> None:
        """Leave the timings of failed tests out of the table, the results file and the comparison: a test
        that failed may have timed something else than it meant to. Its assertions stay (one that was not
        shown is the failure, and worth keeping), on a run without timings."""
        for nodeid in self.failed:
            record = self.records.get(nodeid)
            if record is None or not (record.runs or record.stats):
                continue
            record.stats = None
            record.runs = [dict(run, phases={}) for run in record.runs] if record.assertions else []
            if not record.runs:
                del self.records[nodeid]
            self.dropped.append(nodeid)


def in_process_run(nodeid: str, series: Optional[Series], warmup: int, readback: dict, notes: dict,
                   started_at: str, duration_s: float) -> dict:
    """A run record (results-document format) for a test measured in this process.

    The phase's ``ticks`` are per round, ``ns`` per call (the round over its
    ``calls_per_round``), so reports read per-call times; ``warmup`` is the
    number of leading rounds the stats set apart.
    """
    phases = {}
    if series is not None:
        phases[PHASE] = {"ticks": [int(t) for t in series.round_ticks], "ns": [float(v) for v in series.ns],
                         "counters": {}, "warmup": int(warmup), "calls_per_round": series.calls_per_round}
    return {"cell": {"test": nodeid}, "repetition": 0, "status": "ok", "phases": phases, "readback": readback,
            "notes": notes, "counters_info": None,
            "worker": {"pid": os.getpid(), "python": sys.executable, "in_process": True},
            "exit_status": 0, "signal": None, "error": None, "stderr_tail": None, "stdout_tail": None,
            "started_at": started_at, "duration_s": duration_s}


SESSION = pytest.StashKey[Session]()
#: The test's checked marker (markers.Spec), stored at collection.
SPEC = pytest.StashKey[Any]()
#: The test's outcome ("passed", "failed", "skipped"), stored when its call phase is reported.
OUTCOME = pytest.StashKey[str]()
#: The test's fixture object (fixture.BenchctlFixture), for the isolation hook to hand its stats to.
FIXTURE = pytest.StashKey[Any]()


def skip_here(reason: str) -> BaseException:
    """A skip reported at the test's own location (``-rs``), not at the plugin line that raised it."""
    return pytest.skip.Exception(reason, _use_item_location=True)


def serve(request, fixture) -> Iterator:
    """A fixture function's body: ``fixture`` for the test and, at teardown, what it measured to the session."""
    request.node.stash[FIXTURE] = fixture
    yield fixture
    fixture.finish(request.node.stash.get(OUTCOME, None))
