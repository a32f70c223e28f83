"""Evidence of time spent outside torch's ops, gathered by the probe worker: the warnings the
workload raised, and its top Python-side functions by own time (a second, untimed call under
cProfile).

The profiler's op table says how much of a call is inside torch's ops called from Python
(:meth:`benchctl._results.facts.Facts.inside_ops_share`); what the rest is, these say: torch's own
warnings name slow conversions ("Creating a tensor from a list of numpy.ndarrays is extremely
slow"), and cProfile names the functions the time is spent in, the user's files first.
"""

from __future__ import annotations

import contextlib
import cProfile
import os
import pstats
import sys
import sysconfig
import warnings
from typing import Any, Callable, Iterator

__all__ = ["MAX_WARNINGS", "MAX_FRAMES", "FRAMES_FROM_OUTSIDE_SHARE", "recorded_warnings", "warning_rows",
           "top_frames"]

#: The most distinct warnings a probe note keeps.
MAX_WARNINGS = 5
#: The most Python-side functions a probe note keeps.
MAX_FRAMES = 5
#: The second (cProfile) call is made only when at least this share of the profiled call was outside
#: torch's ops: below it the Python frames explain little, and the call costs one more iteration.
FRAMES_FROM_OUTSIDE_SHARE = 0.25
_BENCHCTL = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Files that are not the user's: the standard library, installed packages, benchctl itself.
_NOT_USER = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")} | {_BENCHCTL})


@contextlib.contextmanager
def recorded_warnings() -> Iterator[list]:
    """Record the warnings raised inside (``warnings.WarningMessage`` objects, appended to the list it
    yields) instead of printing them; the filters as they were (each location warns once, as by
    default) and restored on exit, also after an exception."""
    with warnings.catch_warnings(record=True) as seen:
        yield seen


def warning_rows(seen: list) -> list[dict]:
    """The distinct warnings in ``seen`` (by category and message), in order of first appearance, with
    their ``count`` and where the first was raised (``file:line``); at most :data:`MAX_WARNINGS`."""
    rows: dict[tuple[str, str], dict] = {}
    for w in seen:
        key = (w.category.__name__, str(w.message))
        row = rows.setdefault(key, {"category": key[0], "message": key[1], "where": f"{w.filename}:{w.lineno}",
                                    "count": 0})
        row["count"] += 1
    return list(rows.values())[:MAX_WARNINGS]


def _is_user(path: str) -> bool:
    return not path.startswith("~") and not path.startswith("<") and not os.path.abspath(path).startswith(_NOT_USER)


def _where(func: tuple[str, int, str]) -> str:
    path, line, _ = func
    return "built-in" if path == "~" else f"{path}:{line}"


def _name(func: tuple[str, int, str]) -> str:
    name = func[2]
    # cProfile names a C function "<built-in method torch.tensor>": the name is what a reader knows.
    for prefix in ("<built-in method ", "<method "):
        if name.startswith(prefix):
            return name[len(prefix):].rstrip(">").split(" of ")[0].strip("'")
    return name


def _frames(stats: pstats.Stats) -> list[dict]:
    rows = []
    for func, (_, calls, own_s, total_s, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if _name(func) == "disable" or os.path.abspath(func[0]).startswith(_BENCHCTL):  # benchctl's own frames
            continue
        user_callers = [c for c in callers if _is_user(c[0])]
        rows.append({"function": _name(func), "where": _where(func), "calls": int(calls), "own_us": own_s * 1e6,
                     "total_us": total_s * 1e6, "user": _is_user(func[0]),
                     "called_from": (f"{_name(user_callers[0])} ({_where(user_callers[0])})" if user_callers
                                     else None)})
    return rows


def top_frames(call: Callable[[], Any]) -> list[dict]:
    """One more, untimed call under cProfile: its functions by own time (``own_us``), at most
    :data:`MAX_FRAMES`, each with ``where`` (``file:line``, or built-in), ``calls``, ``total_us`` (with what it
    called), ``user`` (in the user's files) and ``called_from`` (the user's function that called it). The user's
    functions and the functions they call directly come first, then the rest, each by own time; the function the
    user's code called that took the most with what it called is among them."""
    profiler = cProfile.Profile()
    if sys.getprofile() is not None:  # another profiler (a debugger, coverage) holds the hook: leave it be
        return []
    profiler.enable()
    try:
        call()
    finally:
        profiler.disable()
    rows = _frames(pstats.Stats(profiler))
    rows.sort(key=lambda r: (not (r["user"] or r["called_from"]), -r["own_us"]))
    kept = rows[:MAX_FRAMES]
    # The call from the user's code that took the most with what it called (torch.load, whose time is in the
    # unpickler beneath it) is kept too, in the last place if it is not among them.
    called = [r for r in rows if r["called_from"] and not r["user"]]
    heaviest = max(called, key=lambda r: r["total_us"]) if called else None
    if heaviest is not None and heaviest not in kept:
        kept[-1:] = [heaviest]
    return kept
