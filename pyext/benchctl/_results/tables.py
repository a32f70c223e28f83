"""How every benchctl table is laid out, and how its time columns are written.

A time column is written in one unit, named in its header (``median µs``): the
largest of s, ms, µs and ns in which the middle of the column's range (the
geometric mean of its smallest and largest time) is at least 1, so a column of
tests from 200 ns to 200 µs reads ``0.2122`` to ``209.2482`` µs, not 209248.2 ns.
Every value of the column has the same number of decimals, enough for
:data:`TIME_DIGITS` significant digits of the smallest (at most
:data:`MAX_DECIMALS`), so the decimal points align and trailing zeros are kept
(``2.110`` beside ``1.101``). The report, ``compare`` (two files or several machines)
and the pytest plugin's terminal table all write their times here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

__all__ = ["TIME_DIGITS", "MAX_DECIMALS", "TimeUnit", "time_unit", "format_table"]

#: Significant digits of a column's smallest time; the larger ones get as many decimals, so more.
#: Four: a cell's interval is rarely narrower than 0.1%, so a fifth digit would be noise.
TIME_DIGITS = 4
#: The most decimals a column gets, however small its smallest time against the others.
MAX_DECIMALS = 6
#: The units a time column can be written in, largest first: (name, seconds).
_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


@dataclass(frozen=True)
class TimeUnit:
    """A time column's unit (``name``, worth ``seconds``) and the decimals each of its values is written with."""

    name: str
    seconds: float
    decimals: int

    def text(self, seconds: Optional[float]) -> str:
        """``seconds`` in this unit, ``"n/a"`` when not measured."""
        if seconds is None or not math.isfinite(seconds):
            return "n/a"
        return f"{seconds / self.seconds:.{self.decimals}f}"

    def interval(self, ci: Optional[Sequence[Optional[float]]]) -> str:
        """``"[lo, hi]"`` in this unit."""
        return "n/a" if ci is None else f"[{self.text(ci[0])}, {self.text(ci[1])}]"

    def header(self, title: str) -> str:
        """The column's header: its title and this unit (``"median µs"``)."""
        return f"{title} {self.name}"


def time_unit(seconds: Iterable[Optional[float]]) -> TimeUnit:
    """The unit and decimals of a column holding these times in seconds (None: not measured)."""
    sizes = [abs(v) for v in seconds if v is not None and math.isfinite(v) and v != 0]
    if not sizes:  # nothing measured, or only zeros: the finest unit says 0 exactly
        name, scale = _UNITS[-1]
        return TimeUnit(name, scale, 0)
    smallest, middle = min(sizes), math.sqrt(min(sizes) * max(sizes))
    name, scale = next((u for u in _UNITS if middle >= u[1]), _UNITS[-1])
    integer_digits = math.floor(math.log10(smallest / scale)) + 1
    return TimeUnit(name, scale, min(max(TIME_DIGITS - integer_digits, 0), MAX_DECIMALS))


def format_table(rows: list[list[str]], header: list[str], text_columns: int = 1) -> list[str]:
    """The lines of an aligned table: the first ``text_columns`` columns left-aligned, the others (numbers)
    right-aligned, a rule under the header."""
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < text_columns else c.rjust(w)
                         for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    return [line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
