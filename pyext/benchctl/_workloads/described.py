"""The user's code described from a child process: what benchctl's own process needs of a workload named by a target
(its parameters, its help, whether benchctl checks its iteration count), without importing that code there.

Importing a module runs its top level, and what that starts stays in the importing process for the whole command: a
thread spinning in pure Python at import (a metrics loop) kept a CPU busy beside every worker of an explain run,
which the contention gate then read as another program's load ("the machine was too busy", 4 of 4 workers set
aside), and memory it allocates would be held twice. The workers import the code themselves; benchctl's own process
asks a child (``python -m benchctl._workloads.described TARGET FILE``), which imports it, runs every check that needs
it (the target's form, a callable's signature, an exit at import) and writes what it found, or the user's error, as
JSON to FILE. A built-in workload is benchctl's own code: :func:`describe` gives it as registered.
"""

from __future__ import annotations

import faulthandler
import functools
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from .._validate import ArgumentError
from . import TargetImportError, Workload, get
from . import user

__all__ = ["describe", "main"]

#: The user errors a child reports by name, raised again as such in benchctl's own process.
_ERRORS: dict[str, type[Exception]] = {"TargetImportError": TargetImportError, "ArgumentError": ArgumentError}


def _not_here(args: dict, rec: Any) -> None:
    raise RuntimeError("a described workload runs in the workers only: benchctl's own process does not import the "
                       "user's code")


def describe(target: str) -> Workload:
    """The workload ``target`` names, as benchctl's own process may hold it: a built-in one as registered; the user's
    code described by a child process (its ``fn`` runs in the workers only). The user's errors are raised as the
    child found them (:class:`~benchctl._workloads.TargetImportError`, ``ArgumentError``)."""
    if not user.is_target(target):
        return get(target)
    return _described(target, os.getcwd())


@functools.lru_cache(maxsize=None)
def _described(target: str, cwd: str) -> Workload:  # cwd: a relative target names another file elsewhere
    with tempfile.TemporaryDirectory(prefix="benchctl-describe-") as folder:
        path = os.path.join(folder, "described.json")
        status = subprocess.run([sys.executable, "-m", __name__, target, path], stdin=subprocess.DEVNULL).returncode
        if not os.path.exists(path):
            how = f"signal {-status}" if status < 0 else f"exit status {status}"
            raise TargetImportError(f"{target}: importing it ended its process ({how}) before benchctl could read it "
                                    "(its error, where it printed one, is above)")
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
    if "error" in found:
        raise _ERRORS[found["error"]](found["message"])
    return Workload(target, _not_here, params=found["params"], help=found["help"],
                    check=user.check_iterations if found["checks_iterations"] else None)


def _description(target: str) -> dict[str, Any]:
    try:
        workload = get(target)
    except (TargetImportError, ArgumentError) as e:
        return {"error": type(e).__name__, "message": str(e)}
    try:
        json.dumps(workload.params)
    except (TypeError, ValueError) as e:
        return {"error": "ArgumentError", "message": f"{target}: its parameters' defaults must be JSON values, as "
                                                    f"the workers receive them ({e})"}
    return {"params": workload.params, "help": workload.help, "checks_iterations": workload.check is not None}


def main(argv: list[str] | None = None) -> int:
    target, path = sys.argv[1:] if argv is None else argv
    faulthandler.enable()  # a native crash at import prints where it happened, the user's file and line among them
    found = _description(target)  # before the file exists: a process the import kills leaves none
    with open(path, "w", encoding="utf-8") as f:
        json.dump(found, f)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)  # the user's threads and finalisers end with this process, as in a worker


if __name__ == "__main__":
    main()
