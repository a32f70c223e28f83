"""The first call of each op that takes most of the probe call's time, as it can be replayed.

The op table (:mod:`.op_table`) says how long each op took in which dtypes; to say what the same
op would cost in another dtype, the explain process replays it
(:mod:`benchctl._studies.dtype_profile`), and for that it needs every input of the call: each
input's type as the profiler names it (``"c10::Half"``, ``"Scalar"``, ``"ScalarList"``, ``""``
for None), its shape and strides (a transposed weight runs another kernel than a contiguous one), and
the profiler's concrete value for the inputs that are not tensors
(``alpha=1``, ``dim=-1``, ``padding=[1, 1]``).
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from .op_table import dtypes_of, in_census

__all__ = ["TOP_OPS", "first_calls"]

#: How many ops (by self time, each in one combination of input dtypes) keep their first call.
TOP_OPS = 8


def _jsonable(value: Any) -> Any:
    """The profiler's concrete value as JSON, or None where it is not plain data."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return None
    return value


def first_calls(events: Iterable[Any], top: int = TOP_OPS) -> list[dict]:
    """For the ``top`` (op name, input dtypes) keys with the most self time: ``op``, ``dtypes`` (as in
    the op table) and ``inputs`` of their first call, each ``{"type", "shape", "strides", "value"}``
    (``strides`` None where the profiler recorded none). The census's own ops are left out."""
    first: dict[tuple[str, tuple[str, ...]], Any] = {}
    self_us: dict[tuple[str, tuple[str, ...]], float] = {}
    for event in events:
        if in_census(event):
            continue
        key = (event.name, tuple(dtypes_of(event)))
        first.setdefault(key, event)
        self_us[key] = self_us.get(key, 0.0) + float(event.self_cpu_time_total)
    chosen = sorted(self_us, key=lambda k: -self_us[k])[:top]
    out = []
    for key in chosen:
        event = first[key]
        types = list(getattr(event, "input_dtypes", None) or [])
        shapes = list(getattr(event, "input_shapes", None) or [])
        values = list(getattr(event, "concrete_inputs", None) or [])
        strides = list(getattr(event, "structured_input_strides", None) or [])
        inputs = [{"type": str(types[i]) if i < len(types) else "",
                   "shape": list(shapes[i]) if i < len(shapes) else [],
                   "strides": _jsonable(strides[i]) if i < len(strides) else None,
                   "value": _jsonable(values[i]) if i < len(values) else None}
                  for i in range(max(len(types), len(shapes)))]
        out.append({"op": key[0], "dtypes": list(key[1]), "inputs": inputs})
    return out
