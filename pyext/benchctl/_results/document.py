"""The results document: its schema, crash-safe writing and strict loading.

A results file is plain JSON (never pickle) with this shape (version 3)::

    {"schema": "benchctl.results", "version": 3,
     "metadata": {...}, "workload": str, "args": {...}, "matrix": {...},
     "repeat": int | "auto", "control": {"cell": {...}, "arms": ["A", "B"]} | null,
     "rounds": [...], "runs": [run, ...], "summary": [...], "verdict": [...]}

Each run is one worker process: one repetition of one matrix cell; with a
control, the baseline cell's runs carry ``"arm": "A"`` and its repeats as the
control's second arm ``"arm": "B"``. ``verdict`` holds the findings
(:meth:`benchctl._results.findings.Finding.to_json`: each with its ``status``
and typed ``comparison``) and ``evidence`` what the study that made the file
knew before it ran (``evidence["study"]`` names it). Version 1 and 2 files
(no control, no rounds; a flat verdict) load, and ``report`` answers them
again by this version's rules. The file
is rewritten whole after every finished worker, through a temporary file in
the same directory and an atomic rename, so at any instant (a worker killed,
the runner killed with -9, the machine losing power after the fsync) the
file on disk is a complete document holding every finished run.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import stat
import tempfile
from typing import Any

from ..errors import UnavailableError, UserError

__all__ = ["SCHEMA", "VERSION", "CONTROL_ARM", "PAIRED_ARM", "RUN_STATUSES", "ResultsError", "ResultsUnwritable",
           "new_document", "dumps", "atomic_write_text", "save", "validate", "load", "cell_id", "matrix_cells"]

SCHEMA = "benchctl.results"
VERSION = 3
#: The ``arm`` of the runs that repeat the baseline cell as the A/A control's second arm.
CONTROL_ARM = "B"
#: The ``arm`` of the runs of the paired A/A control: the baseline cell, timed by a paired worker that switches
#: nothing (:mod:`benchctl._run.paired`). A paired cell's runs carry a ``pair`` record; the document's
#: ``paired`` names the baseline and the paired cells.
PAIRED_ARM = "P"
RUN_STATUSES = ("ok", "failed")

# key -> type(s) the top level must have; checked on load.
_TOP_LEVEL = {
    "schema": str,
    "version": int,
    "metadata": dict,
    "workload": str,
    "args": dict,
    "matrix": dict,
    "runs": list,
    "summary": list,
    "verdict": list,
}
_RUN_KEYS = {"cell": dict, "repetition": int, "status": str, "phases": dict}


class ResultsError(UserError, ValueError):
    """A results file that cannot be read as a benchctl results document."""


class ResultsUnwritable(UnavailableError, ResultsError):
    """A results file this machine cannot write now (a full disk, a read-only or vanished folder): its previous
    complete version stays; another run or machine may succeed. (A path that cannot be written from the start
    is refused as the user's mistake before the command runs: :mod:`benchctl._cli.preflight`.)"""


def new_document(workload: str, args: dict, matrix: dict, repeat: int | str, metadata: dict,
                 control_cell: dict | None = None) -> dict:
    """An empty document for a run of ``workload`` over ``matrix`` (with an A/A control of
    ``control_cell`` when given)."""
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "metadata": metadata,
        "workload": workload,
        "args": args,
        "matrix": matrix,
        "repeat": repeat,
        "control": None if control_cell is None else {"cell": control_cell, "arms": ["A", CONTROL_ARM]},
        "rounds": [],
        "runs": [],
        "summary": [],
        "verdict": [],
    }


def _finite(value: Any) -> Any:
    """JSON has no NaN/Infinity: store them as null rather than write invalid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def dumps(doc: dict) -> str:
    """``doc`` as JSON text, NaN and infinities as null. Compact: the runner rewrites the file after every worker,
    and with a worker's every iteration in it (10^5 of a 10 us call), Python's indenting encoder and a walk of
    every value took seconds a save; the C encoder writes it in a tenth of that (``jq .`` shows it indented)."""
    try:
        return json.dumps(doc, allow_nan=False, separators=(",", ":"))
    except ValueError:  # a NaN or an infinity somewhere: the walk that nulls them, only then
        return json.dumps(_finite(doc), allow_nan=False, separators=(",", ":"))


def _umask() -> int:
    """This process's umask, read without changing it where the kernel says it (Linux >= 4.7)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: set it and restore it at once
    os.umask(mask)
    return mask


def _new_file_mode(path: str) -> int:
    """The mode ``path`` keeps (its own, when it exists) or gets as any new file would (0666 less the umask):
    mkstemp's private 0600 would hide a results file from the others sharing its folder."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def atomic_write_text(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see the old or the new file, never a mix."""
    directory = os.path.dirname(os.path.abspath(path))
    mode = _new_file_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    # The rename itself must reach the disk for the new file to survive a crash.
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def save(doc: dict, path: str) -> None:
    """Validate ``doc`` and write it atomically to ``path``.

    A write that fails (a full disk, a read-only or vanished directory)
    raises :class:`ResultsUnwritable` naming the file and the cause; the file on
    disk is then its previous complete version, untouched.
    """
    validate(doc, source="document to save")
    text = dumps(doc)
    existed = os.path.isfile(path)
    try:
        atomic_write_text(path, text)
    except OSError as e:
        kept = "it still holds its previous complete version" if existed else "no file was written"
        raise ResultsUnwritable(f"{path}: cannot write the results: {e.strerror or e}; {kept}") from None


def validate(doc: Any, source: str = "document") -> dict:
    """Check the schema; raise :class:`ResultsError` saying what is wrong and what to do."""
    if not isinstance(doc, dict):
        raise ResultsError(f"{source}: expected a JSON object at the top level, found {type(doc).__name__}")
    if doc.get("schema") != SCHEMA:
        raise ResultsError(
            f"{source}: not a benchctl results file (schema is {doc.get('schema')!r}, expected {SCHEMA!r})"
        )
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ResultsError(f"{source}: invalid schema version {version!r} (expected a positive integer)")
    if version > VERSION:
        raise ResultsError(
            f"{source}: written by a newer benchctl (results version {version}); this benchctl reads "
            f"version {VERSION} and older: upgrade benchctl to read it"
        )
    for key, kind in _TOP_LEVEL.items():
        if key not in doc:
            raise ResultsError(f"{source}: missing top-level key {key!r} (file truncated or hand-edited?)")
        if not isinstance(doc[key], kind) or isinstance(doc[key], bool):
            raise ResultsError(
                f"{source}: {key!r} must be a {kind.__name__}, found {type(doc[key]).__name__}"
            )
    paired = doc.get("paired")
    if paired is not None and not (isinstance(paired, dict) and isinstance(paired.get("baseline"), dict)
                                   and isinstance(paired.get("cells"), list)):
        raise ResultsError(f"{source}: 'paired' must be null or an object with a 'baseline' and its 'cells'")
    control = doc.get("control")
    if control is not None and not (isinstance(control, dict) and isinstance(control.get("cell"), dict)):
        raise ResultsError(f"{source}: 'control' must be null or an object with a 'cell'")
    for i, run in enumerate(doc["runs"]):
        where = f"{source}: runs[{i}]"
        if not isinstance(run, dict):
            raise ResultsError(f"{where} must be an object, found {type(run).__name__}")
        for key, kind in _RUN_KEYS.items():
            if not isinstance(run.get(key), kind) or isinstance(run.get(key), bool):
                raise ResultsError(f"{where}: {key!r} missing or not a {kind.__name__}")
        if run["status"] not in RUN_STATUSES:
            raise ResultsError(f"{where}: status {run['status']!r} is not one of {RUN_STATUSES}")
        if run.get("arm") not in (None, "A", CONTROL_ARM, PAIRED_ARM):
            raise ResultsError(f"{where}: arm {run['arm']!r} is not A, {CONTROL_ARM} or {PAIRED_ARM}")
        for phase, data in run["phases"].items():
            if not isinstance(data, dict) or not isinstance(data.get("ns"), list):
                raise ResultsError(f"{where}: phase {phase!r} has no 'ns' list")
    return doc


def load(path: str) -> dict:
    """Read and validate a results file.

    Raises :class:`ResultsError` (a ValueError) for a missing, empty, truncated
    or malformed file and for one written by a newer benchctl.
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such results file") from None
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not a text file (results files are UTF-8 JSON)") from None
    except OSError as e:
        raise ResultsError(f"{path}: cannot read: {e.strerror}") from None
    if not text.strip():
        raise ResultsError(f"{path}: empty file, not a results document")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        # An unterminated string runs to the end of the file, so it is truncation too.
        ends_early = e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string")
        hint = " (the file ends early: truncated?)" if ends_early else ""
        raise ResultsError(
            f"{path}: not valid JSON at line {e.lineno} column {e.colno}: {e.msg}{hint}"
        ) from None
    return validate(doc, source=path)


def cell_id(cell: dict) -> str:
    """A stable identity for a cell: its canonical JSON (keys sorted)."""
    return json.dumps(cell, sort_keys=True, separators=(",", ":"))


def matrix_cells(matrix: dict[str, list]) -> list[dict[str, Any]]:
    """Every combination of the matrix values, as cell dicts in matrix-key order.

    An empty matrix has one cell: ``{}`` (the workload with its arguments).
    """
    keys = list(matrix)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(matrix[k] for k in keys))]
