"""What a command checks before any work: the files it names, and the clock its workers will use.

Each file option a command has is declared with its role (:class:`FileOption`), and
:func:`check` (called by :func:`benchctl._cli.main` and the seed scripts once the arguments are
parsed, before anything runs) holds every output to the same rules:

* a results file a command measures into (``--json FILE`` of run, explain, penalty and the seed
  scripts) that exists already is continued (``--resume``) or replaced (``--force``) only when the
  user says so: nothing measured is lost by a command;
* any output is a file (not a folder) in a folder that exists and can be written, is named once,
  is not one of the command's inputs, and never replaces a results file unasked;
* a figure's name ends with a format matplotlib writes; ``-`` as a summary ``--json`` is stdout.

A mistake is a :class:`benchctl.errors.UserError` naming the flag and the fix (exit status 2).
"""

from __future__ import annotations

import argparse
import enum
import json
import os
import tempfile
from dataclasses import dataclass
from typing import Any

from ..errors import UserError, require_package

__all__ = ["STDOUT", "Role", "FileOption", "add_file_option", "add_results_file", "add_summary_json", "add_plot",
           "check", "check_output", "writes_stdout", "write_json"]

#: A summary ``--json`` written to stdout instead of a file.
STDOUT = "-"

# How many bytes of a file are read to tell a benchctl results file (its schema is its first key).
_HEAD_BYTES = 256


class Role(enum.Enum):
    """What a file option names, and so which rules hold it."""

    MEASURED = "measured"  # results the command measures into: kept unless --resume or --force
    SUMMARY = "summary"    # JSON derived from what the command printed ("-": stdout)
    OUTPUT = "output"      # another derived file (an export)
    PLOT = "plot"          # a matplotlib figure
    INPUT = "input"        # a file the command reads (never written)


@dataclass(frozen=True)
class FileOption:
    """One option of a command that names a file: its ``dest`` in the parsed arguments, its flag as the
    user types it, and its role."""

    dest: str
    flag: str
    role: Role


def add_file_option(parser: argparse.ArgumentParser, option: FileOption) -> None:
    """Declare ``option`` (already added to ``parser``) so that :func:`check` holds it to its role's rules."""
    parser.set_defaults(_files=tuple(parser.get_default("_files") or ()) + (option,))


def add_results_file(parser: argparse.ArgumentParser, help: str, resume_help: str | None = None) -> None:
    """``--json FILE`` (the results a command measures), ``--force``, and ``--resume`` with ``resume_help``
    where the command can continue a file."""
    parser.add_argument("--json", dest="json_path", metavar="FILE", help=help)
    if resume_help is not None:
        parser.add_argument("--resume", action="store_true", help=resume_help)
    parser.add_argument("--force", action="store_true",
                        help="replace an existing --json FILE (without it an existing file is refused"
                             + (", or continued with --resume" if resume_help is not None else "")
                             + ": nothing measured is lost by a command)")
    add_file_option(parser, FileOption("json_path", "--json", Role.MEASURED))


def add_summary_json(parser: argparse.ArgumentParser, what: str) -> None:
    """``--json FILE``: ``what`` as JSON in FILE; ``--json -`` prints it instead of the text."""
    parser.add_argument("--json", dest="json_path", metavar="FILE",
                        help=f"also write {what} as JSON to FILE; '{STDOUT}': print the JSON instead of the text")
    add_file_option(parser, FileOption("json_path", "--json", Role.SUMMARY))


def add_plot(parser: argparse.ArgumentParser, help: str) -> None:
    """``--plot FILE``: a figure, in the format its name ends with."""
    parser.add_argument("--plot", metavar="FILE", help=f"{help} (any format matplotlib writes: .png, .pdf, .svg, ...)")
    add_file_option(parser, FileOption("plot", "--plot", Role.PLOT))


def writes_stdout(args: argparse.Namespace) -> bool:
    """Whether the command's ``--json`` is stdout: its text is then not printed, so that stdout is JSON."""
    return getattr(args, "json_path", None) == STDOUT


def write_json(path: str, data: Any) -> None:
    """``data`` as JSON in ``path`` (written whole or not at all), or on stdout for ``-``."""
    from .._results.document import atomic_write_text, dumps

    if path == STDOUT:
        print(dumps(data))
    else:
        atomic_write_text(path, dumps(data) + "\n")


def _holds_results(path: str) -> bool:
    """Whether ``path`` is a benchctl results file (its first bytes name the schema)."""
    from .._results.document import SCHEMA

    try:
        with open(path, "rb") as f:
            return json.dumps(SCHEMA).encode() in f.read(_HEAD_BYTES)
    except OSError:
        return False


def _writable(flag: str, path: str) -> None:
    """Refuse ``path`` unless a file can be written there: not a folder, in a folder that exists and takes a
    new file (tried: permissions, a read-only or pseudo file system all answer)."""
    if os.path.isdir(path):
        raise UserError(f"{flag} {path} is a folder: name a file (in it, or elsewhere)")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UserError(f"{flag} {path}: the folder {folder} does not exist: create it, or name a file in a "
                        f"folder that exists")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".check", dir=folder)
    except OSError as e:
        raise UserError(f"{flag} {path}: cannot write in {folder} ({e.strerror}): name a file in a folder you "
                        f"can write") from None
    os.close(fd)
    os.unlink(probe)


def _check_measured(args: argparse.Namespace, option: FileOption, path: str | None) -> None:
    """The results file the command measures into: kept unless ``--resume`` continues it or ``--force``
    replaces it."""
    can_resume = hasattr(args, "resume")
    resume, force = bool(getattr(args, "resume", False)), bool(getattr(args, "force", False))
    if resume and force:
        raise UserError(f"--resume continues {option.flag} FILE and --force replaces it: give one of them")
    if path is None:
        if resume or force:
            flag, verb = ("--resume", "continue") if resume else ("--force", "replace")
            raise UserError(f"{flag} needs {option.flag} FILE: the results file to {verb}")
        return
    if path == STDOUT:
        raise UserError(f"{option.flag} {STDOUT}: results are written to a file as the command runs: name a file")
    _writable(option.flag, path)
    exists = os.path.exists(path)
    if resume and not exists:
        raise UserError(f"--resume: {path} does not exist: leave out --resume to start it")
    if exists and not (resume or force):
        choices = (["continue it with --resume"] if can_resume else []) + ["replace it with --force"]
        raise UserError(f"{option.flag} {path} already exists: {', '.join(choices)}, or name another file "
                        f"(nothing measured is replaced unasked)")


def check_output(option: FileOption, path: str) -> None:
    """An output derived from what the command read (``option`` says which): a file that can be written, never a
    results file, and a figure in a format matplotlib writes; raise UserError otherwise."""
    if path == STDOUT:
        if option.role is not Role.SUMMARY:
            raise UserError(f"{option.flag} {STDOUT}: name a file")
        return
    _writable(option.flag, path)
    if os.path.isfile(path) and _holds_results(path):
        raise UserError(f"{option.flag} {path} holds benchctl results: writing there would replace them: name "
                        f"another file")
    if option.role is Role.PLOT:
        _check_plot_format(option.flag, path)


def _check_plot_format(flag: str, path: str) -> None:
    """A figure's extension is a format matplotlib writes (no extension: its default, png)."""
    extension = os.path.splitext(path)[1][1:].lower()
    require_package("matplotlib", "plot", flag, load=False)
    if not extension:
        return
    # The formats of matplotlib's own canvases, asked without importing pyplot (or any backend).
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if extension not in formats:
        raise UserError(f"{flag} {path}: matplotlib cannot write .{extension} files: end the name with one of "
                        f"{', '.join('.' + f for f in sorted(formats))}")


def _inputs(args: argparse.Namespace, options: tuple[FileOption, ...]) -> set[str]:
    found: set[str] = set()
    for option in options:
        if option.role is Role.INPUT:
            value = getattr(args, option.dest, None)
            for path in ([] if value is None else value if isinstance(value, list) else [value]):
                found.add(os.path.realpath(path))
    return found


def _check_clock(options: tuple[FileOption, ...]) -> None:
    """A command that measures: the clock its workers will use must be usable before the first one starts
    (a bad $BENCHCTL_CLOCK is said once, here, not by every worker)."""
    if any(option.role is Role.MEASURED for option in options):
        from .. import clock

        clock.check()


def check(args: argparse.Namespace) -> None:
    """Check every file option of the parsed ``args`` against its role, before the command does any work;
    raise UserError naming the flag and the fix."""
    options: tuple[FileOption, ...] = getattr(args, "_files", None) or ()
    # With --executor slurm, --json names the folder of the hosts' files and --plot only asks each host for
    # one: the Slurm plan checks them (benchctl._run.slurm).
    on_slurm = getattr(args, "executor", None) == "slurm"
    if on_slurm and getattr(args, "force", False):
        raise UserError("--force with --executor slurm: a host job continues its file when one exists; name a "
                        "new --json folder instead")
    inputs, named = _inputs(args, options), {}
    for option in options:
        path = getattr(args, option.dest, None)
        if option.role is Role.INPUT or (on_slurm and option.role in (Role.MEASURED, Role.PLOT)):
            continue
        if option.role is Role.MEASURED:
            _check_measured(args, option, path)
        elif path is not None:
            check_output(option, path)
        if path is None or path == STDOUT:
            continue
        real = os.path.realpath(path)
        if real in inputs:
            raise UserError(f"{option.flag} {path} is a file this command reads: name another file")
        if real in named:
            raise UserError(f"{named[real]} and {option.flag} both name {path}: name two files")
        named[real] = option.flag
    _check_clock(options)

