"""Checking a marker on every collected test, for benchctl's marker and pytest-benchmark's alike.

A bad marker fails its own test, not the collection of its file: the message is kept on the test
(:data:`BAD_MARKER`) and the test fails as it is set up (:func:`.hooks.pytest_runtest_setup`), while the
file's other tests run."""

from __future__ import annotations

from typing import Any, Callable, Optional

import pytest

from ._markers import MarkerError

__all__ = ["BAD_MARKER", "stash_marker", "bad_marker"]

#: What is wrong with a test's markers, one message a marker (set at collection, read at setup).
BAD_MARKER = pytest.StashKey[list]()


def stash_marker(result: Any, marker: str, key: pytest.StashKey, parse: Callable[[pytest.Function], Any]):
    """Store ``parse(item)`` in each collected test's stash under ``key``; a bad marker is kept for the test
    to fail with (:func:`bad_marker`), naming the test and the marker. Returns ``result`` (what
    ``pytest_pycollect_makeitem`` made)."""
    for item in result if isinstance(result, list) else [result]:
        if isinstance(item, pytest.Function):
            try:
                item.stash[key] = parse(item)
            except MarkerError as e:
                item.stash.setdefault(BAD_MARKER, []).append(f"{item.nodeid}: @pytest.mark.{marker}: {e}")
    return result


def bad_marker(item: pytest.Item) -> Optional[str]:
    """What is wrong with ``item``'s markers, or None."""
    found = item.stash.get(BAD_MARKER, None)
    return "\n".join(found) if found else None
