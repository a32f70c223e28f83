"""The copies of one profiled call that change a tensor's memory layout (channels_last <-> contiguous).

A copy whose source and destination have the same shape but different strides moves every element
to a new place (a source that repeats its values, stride 0, is a fill instead: ``addmm`` copies its bias into
its output so): ``x.contiguous()`` of a channels_last tensor, a convolution converting its input to
its weight's format, ``.to(memory_format=...)``. Each such ``aten::copy_`` event of the profiler
(``record_shapes`` records the strides) becomes a row keyed by shape, the two layouts and the op
from Python that asked for it; causes read them through
:class:`benchctl._results.facts.Facts` (``layout_copies``).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Sequence

from . import op_table
from .op_table import workload_events

__all__ = ["CONTIGUOUS", "CHANNELS_LAST", "STRIDED", "MORE_CALLS", "MORE_CALLS_S", "layout", "rows", "share_of",
           "share", "shares_over_calls"]

#: At most this many more profiled calls, and at least two: with the first, a median of three or more.
MORE_CALLS = 6
#: No more profiled calls once they took this long (after the two that always run): a long call gets two.
MORE_CALLS_S = 2.0
_AT_LEAST = 2

CONTIGUOUS = "contiguous"
CHANNELS_LAST = "channels_last"
#: Any other strides (a transpose, a slice with steps).
STRIDED = "strided"
_COPY = "aten::copy_"


def _dense_strides(shape: Sequence[int], order: Sequence[int]) -> list[int]:
    """The strides of a dense tensor of ``shape`` whose dimensions, innermost first, are ``order``."""
    strides = [0] * len(shape)
    step = 1
    for dim in order:
        strides[dim] = step
        step *= max(1, shape[dim])
    return strides


def _same(shape: Sequence[int], strides: Sequence[int], expected: Sequence[int]) -> bool:
    # A dimension of size 1 may have any stride.
    return all(size == 1 or s == e for size, s, e in zip(shape, strides, expected))


def layout(shape: Sequence[int], strides: Sequence[int]) -> str:
    """:data:`CONTIGUOUS`, :data:`CHANNELS_LAST` (4-d, channels innermost) or :data:`STRIDED`."""
    n = len(shape)
    if _same(shape, strides, _dense_strides(shape, list(range(n - 1, -1, -1)))):
        return CONTIGUOUS
    if n == 4 and _same(shape, strides, _dense_strides(shape, [1, 3, 2, 0])):
        return CHANNELS_LAST
    return STRIDED


def _broadcast(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a tensor repeats its values along a dimension (stride 0: ``expand``): copying it fills its
    destination, it moves no layout."""
    return any(size > 1 and stride == 0 for size, stride in zip(shape, strides))


def _asked_by(event: Any) -> str:
    """The op called from Python that this event runs inside (itself when it has no parent)."""
    while getattr(event, "cpu_parent", None) is not None:
        event = event.cpu_parent
    return event.name


def rows(events: Iterable[Any]) -> list[dict]:
    """One row per (shape, source layout, destination layout, op from Python) of the layout-changing
    copies: ``calls`` and ``self_us`` (the copies' own time); sorted by ``self_us``, largest first. The
    census hooks' copies are left out."""
    table: dict[tuple, dict] = {}
    for event in workload_events(events):
        if event.name != _COPY:
            continue
        shapes = list(getattr(event, "input_shapes", None) or [])
        strides = list(getattr(event, "structured_input_strides", None) or [])
        if len(shapes) < 2 or len(strides) < 2 or not shapes[0] or shapes[0] != shapes[1]:
            continue
        if _broadcast(shapes[1], strides[1]):  # an expanded source (addmm copies its bias into the output): a fill
            continue
        to, source = layout(shapes[0], strides[0]), layout(shapes[1], strides[1])  # copy_(self=dst, src)
        if to == source:
            continue
        key = (tuple(shapes[0]), source, to, _asked_by(event))
        row = table.setdefault(key, {"shape": list(shapes[0]), "source": source, "to": to, "via": key[3],
                                     "calls": 0, "self_us": 0.0})
        row["calls"] += 1
        row["self_us"] += float(event.self_cpu_time_total)
    return sorted(table.values(), key=lambda r: -r["self_us"])


def share_of(table: Iterable[dict], copies: Iterable[dict]) -> float | None:
    """The share of one profiled call's own op time (its :func:`.op_table.rows`) in copies that change a layout
    (its :func:`rows`); None when it had no op time."""
    total = sum(r["self_us"] for r in table)
    return None if total <= 0 else min(1.0, sum(r["self_us"] for r in copies) / total)


def share(events: Iterable[Any]) -> float | None:
    """:func:`share_of` one profiled call's events."""
    events = list(events)
    return share_of(op_table.rows(events), rows(events))


def shares_over_calls(call: Callable[[], Any], first: float | None) -> list[float]:
    """``first``, the layout-copy share of the profiled call (:func:`share_of`), then the :func:`share` of up to
    :data:`MORE_CALLS` more calls of ``call`` (see the module's docstring); ``[]`` where the first had no
    such copy (nothing to weigh again)."""
    import torch

    if not first:
        return []
    shares, spent = [first], 0.0
    for done in range(MORE_CALLS):
        if done >= _AT_LEAST and spent >= MORE_CALLS_S:
            break
        started = time.perf_counter()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
            call()
            with torch.profiler.record_function(op_table.INTACT_MARK):
                pass
        spent += time.perf_counter() - started
        events = prof.events()
        # A profiler the code starts inside its call takes the session over: that call's share is unknown.
        if op_table.intact(events) and (more := share(events)) is not None:
            shares.append(more)
    return shares
