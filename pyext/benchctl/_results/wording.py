"""How numbers are written in benchctl's sentences and tables: ratios, intervals, counts, times.

Every sentence and table builds its text from these parts; nothing parses
text back into numbers. A table's time columns are :mod:`.tables`'.
"""

from __future__ import annotations

__all__ = ["READABLE_BOUND", "factor", "ratio_ci", "slower_or_faster", "table_ratio", "count", "duration"]


def factor(x: float) -> str:
    """A ratio as a factor: three decimals near 1 (where two would read 1.00), else two."""
    return f"{x:.3f}" if abs(x - 1.0) < 0.05 else f"{x:.2f}"


#: An interval's bound past this factor either way is written as a bound (">1000", "<0.001"): two processes beside a
#: wide A/A band give bounds like 0.00 and 98970471588.23, whose digits say nothing more.
READABLE_BOUND = 1000.0


def _bound(x: float) -> str:
    if x > READABLE_BOUND:
        return f">{READABLE_BOUND:g}"
    if x < 1 / READABLE_BOUND:
        return f"<{1 / READABLE_BOUND:g}"
    return factor(x)


def _interval(lo: float, hi: float, confidence: float = 0.95) -> str:
    return f"[{confidence * 100:g}% CI {_bound(lo)}, {_bound(hi)}]"


def ratio_ci(ratio: float, ci, confidence: float = 0.95) -> str:
    """``"1.45× [95% CI 1.38, 1.52]"``."""
    lo, hi = ci
    return f"{factor(ratio)}× {_interval(lo, hi, confidence)}"


def slower_or_faster(ratio: float, ci, confidence: float = 0.95) -> tuple[str, str]:
    """(``"1.45× slower"`` or ``"1.30× faster"``, its interval written the same way round).

    ``ratio`` is time(a) / time(b); a faster ``a`` is said as b/a, with the
    interval inverted to match.
    """
    lo, hi = ci
    if ratio >= 1:
        return f"{factor(ratio)}× slower", _interval(lo, hi, confidence)
    return f"{factor(1 / ratio)}× faster", _interval(1 / hi, 1 / lo, confidence)


def table_ratio(ratio: float, ci) -> str:
    """``"1.450 [1.380, 1.520]"``: a ratio and its interval in a table column."""
    lo, hi = ci
    return f"{ratio:.3f} [{lo:.3f}, {hi:.3f}]"


def count(x: float | None) -> str:
    """An event count: ``"n/a"``, ``"2.5"``, ``"512"``, ``"3,131"``, ``"20k"``, ``"1.2M"``."""
    if x is None:
        return "n/a"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.1f}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.0f}k"
    if abs(x) >= 10 or x == int(x):
        return f"{x:,.0f}"
    return f"{x:.2g}"


def duration(seconds: float) -> str:
    """``"45 s"`` or ``"5.9 min"``."""
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"
