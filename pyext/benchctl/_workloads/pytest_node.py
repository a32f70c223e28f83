"""Workload ``pytest_node``: one pytest test, run by pytest inside a fresh worker process.

benchctl's pytest plugin measures an isolated test (``@pytest.mark.benchctl(isolate=True)``)
by running this workload through the runner, once per repetition, each in a
fresh process with the cell's settings applied. Here ``pytest.main`` runs
exactly that test (node id) with the same rootdir and ini file as the parent
session, so fixtures, parametrization and conftest files work as they do
there. A :class:`RecorderBridge`, registered as a plugin of that session,
tells the benchctl fixture to time its rounds with ``rec.iteration(phase)``
(counters come along) and to leave settings alone; it also keeps the test's
outcome. A test that fails makes the run fail with pytest's report; a
skipped one is noted (``pytest_outcome``) and measures nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from . import register

__all__ = ["RecorderBridge", "pytest_node_workload"]


class RecorderBridge:
    """The worker's recorder, handed to the benchctl fixture in the worker's pytest session,
    and the outcome of the test that ran there."""

    def __init__(self, rec, nodeid: str) -> None:
        self.rec = rec
        self.nodeid = nodeid
        self.ran = 0
        self.failures: list[str] = []
        self.skipped: str | None = None

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.failures.append(f"collecting {report.nodeid or 'the test'} failed:\n{report.longreprtext}")

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "setup":
            self.ran += 1
        if report.failed:
            self.failures.append(f"{report.when} of {report.nodeid} failed:\n{report.longreprtext}")
        elif report.skipped and self.skipped is None:
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
            self.skipped = reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason


def _check(args: dict) -> None:
    if not args["nodeid"]:
        raise ValueError("nodeid is empty: name the test to run")
    for key in ("rootdir", "invocation_dir"):
        if not os.path.isdir(args[key]):
            raise ValueError(f"{key}={args[key]!r} is not a directory")
    if not isinstance(args["options"], list) or not all(isinstance(o, str) for o in args["options"]):
        raise ValueError("options must be a list of strings")


@register(
    "pytest_node",
    params={"nodeid": "", "path": "", "rootdir": "", "invocation_dir": "", "inifile": "", "options": []},
    help="one pytest test in this process (the benchctl plugin's isolate=True); nodeid: the test, path: its "
         "file's absolute path, rootdir/inifile: the parent session's, options: extra pytest arguments",
    check=_check,
)
def pytest_node_workload(args: dict, rec) -> None:
    import pytest

    nodeid = args["nodeid"]
    # The file's absolute path, so the node id resolves whatever the working directory.
    target = args["path"] + nodeid[nodeid.index("::"):] if args["path"] and "::" in nodeid else nodeid
    os.chdir(args["invocation_dir"])
    # A private basetemp: the parent's numbered temporary directories are left alone.
    basetemp = tempfile.mkdtemp(prefix="benchctl-pytest-")
    argv = [target, f"--rootdir={args['rootdir']}", f"--basetemp={basetemp}", "-p", "no:cacheprovider",
            "-p", "no:xdist", "-q", *args["options"]]
    if args["inifile"]:
        argv += ["-c", args["inifile"]]
    bridge = RecorderBridge(rec, nodeid)
    try:
        status = pytest.main(argv, plugins=[bridge])
    finally:
        shutil.rmtree(basetemp, ignore_errors=True)
    if bridge.failures:
        raise RuntimeError("\n".join(bridge.failures))
    if bridge.ran == 0:
        raise RuntimeError(f"pytest ran no test for {nodeid!r} in the worker (exit status {int(status)})")
    rec.note("pytest_outcome", {"outcome": "skipped" if bridge.skipped is not None else "passed",
                                "reason": bridge.skipped, "exit_status": int(status)})
