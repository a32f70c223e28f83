"""The session's measurements as a benchctl results document (``--benchctl-json FILE``).

Workload ``pytest``; the matrix has one key, ``test``, whose values are the
node ids of the tests that measured something, in the order they ran; each
test is a cell ``{"test": nodeid}`` with one run (in-process) or one per
worker process (isolated), and each measured series is a phase (``call``).
A phase's ``ns`` are per-call times, one per round; its ``ticks`` are per
round, of ``calls_per_round`` calls. Settings are in each run's
``readback``; ``extra_info``, assertions and the test's outcome in its
``notes``. ``summary`` is filled by :func:`benchctl._results.analysis.analyse`;
``verdict`` stays empty: a test against another test is no comparison anyone asked for.
``metadata["session_reference"]`` holds the session reference when one was
measured (:mod:`._reference`).
"""

from __future__ import annotations

import dataclasses
import platform
import socket
import sys

from .. import clock
from .._version import __version__
from .._results import analysis, document
from . import _reference as reference
from ._session import Session, now

__all__ = ["WORKLOAD", "build", "is_plugin_document"]

WORKLOAD = "pytest"


def _metadata(config, session: Session, repeat: int) -> dict:
    import pytest

    from .._system import metadata

    return {
        "benchctl_version": __version__,
        "created": now(),
        "hostname": socket.gethostname(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "command": list(sys.argv),
        "clock": clock.info(),
        "runner": {"repeat": repeat, "shuffle_seed": None, "worker_timeout_s": session.options.worker_timeout_s},
        "system": metadata.collect(),
        "pytest": {"version": pytest.__version__, "rootdir": str(config.rootpath),
                   "args": [str(a) for a in config.invocation_params.args],
                   "options": dataclasses.asdict(session.options)},
    }


def build(config, session: Session, with_metadata: bool = True) -> dict:
    """The document of what ``session`` measured (metadata collection is the slow part: it can be left out)."""
    records = [r for r in session.records.values() if r.runs]
    repeat = max((len(r.runs) for r in records), default=1)
    meta = _metadata(config, session, repeat) if with_metadata else {"created": now()}
    # No test measured: an empty matrix (a key with no values would be a matrix with no cells, and
    # readers take a matrix key's first value as the baseline).
    matrix = {"test": [r.nodeid for r in records]} if records else {}
    if session.reference is not None:
        meta[reference.KEY] = session.reference
    doc = document.new_document(WORKLOAD, {"rootdir": str(config.rootpath)}, matrix, repeat, meta)
    for record in records:
        doc["runs"] += record.runs
    return analysis.analyse(doc, with_verdict=False)


def is_plugin_document(doc: dict) -> bool:
    return doc.get("workload") == WORKLOAD and set(doc.get("matrix", {})) <= {"test"}
