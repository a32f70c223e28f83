"""Checking a marker on every collected test, for benchctl's marker and pytest-benchmark's alike."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from .markers import MarkerError

__all__ = ["stash_marker"]


def stash_marker(collector, result: Any, marker: str, key: pytest.StashKey, parse: Callable[[pytest.Function], Any]):
    """Store ``parse(item)`` in each collected test's stash under ``key``; a bad marker is a collection
    error naming the test and the marker. Returns ``result`` (what ``pytest_pycollect_makeitem`` made)."""
    for item in result if isinstance(result, list) else [result]:
        if isinstance(item, pytest.Function):
            try:
                item.stash[key] = parse(item)
            except MarkerError as e:
                raise collector.CollectError(f"{item.nodeid}: @pytest.mark.{marker}: {e}") from None
    return result
