"""The hosts manifest of a multi-host run: its format, written by the Slurm controller and read back here.

A Slurm run (:mod:`benchctl._run.slurm`) writes :data:`NAME` into its results
folder beside one results file per host: the command, the sbatch parameters,
and per host its state (:class:`HostState`), message, requeues and jobs (id,
why it was submitted, exit status, error, stderr tail). The format lives on the
results layer because both the writer (``run``) and the reader
(:mod:`benchctl._results.machines`, ``compare``) need it.
"""

from __future__ import annotations

import enum
import json

from .document import ResultsError, atomic_write_text

__all__ = ["NAME", "SCHEMA", "VERSION", "HostState", "save", "load"]

#: The manifest a multi-host run writes into its results folder.
NAME = "hosts.json"
SCHEMA = "benchctl.hosts"
VERSION = 1


class HostState(str, enum.Enum):
    """Where a host's job stands, as the manifest's ``status`` writes it."""

    PENDING = "pending"              # planned, not yet submitted
    SUBMITTED = "submitted"          # queued or running: its results file may still grow
    OK = "ok"                        # its command finished and left a readable results file
    FAILED = "failed"                # its job ended without finishing, and is not retried (again)
    NOT_SUBMITTED = "not submitted"  # sbatch refused it: it never ran

    @classmethod
    def read(cls, text: object) -> "HostState | None":
        """The state a manifest entry's ``status`` names; None for a missing or unknown one."""
        try:
            return cls(text)
        except ValueError:
            return None


def save(path: str, manifest: dict) -> None:
    """Write ``manifest`` (its ``schema`` and ``version`` are set here) atomically to ``path``."""
    data = {"schema": SCHEMA, "version": VERSION, **manifest}
    atomic_write_text(path, json.dumps(data, indent=1, default=str))


def load(path: str) -> dict:
    """Read a hosts manifest; :class:`ResultsError` says what is wrong with a bad one."""
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except OSError as e:
        raise ResultsError(f"{path}: cannot read the hosts manifest: {e.strerror}") from None
    except ValueError as e:
        raise ResultsError(f"{path}: the hosts manifest is not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: not a benchctl hosts manifest (schema {SCHEMA!r} expected)")
    version = manifest.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version > VERSION:
        raise ResultsError(f"{path}: hosts manifest version {version!r}: this benchctl reads version "
                           f"{VERSION} and older (upgrade benchctl to read it)")
    hosts = manifest.get("hosts")
    if not isinstance(hosts, list) or not all(isinstance(h, dict) and isinstance(h.get("label"), str)
                                              and isinstance(h.get("json"), str) for h in hosts):
        raise ResultsError(f"{path}: 'hosts' must be a list of objects with 'label' and 'json'")
    return manifest
