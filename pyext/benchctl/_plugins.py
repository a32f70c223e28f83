"""Causes from other packages: the ``benchctl.causes`` entry-point group.

A package adds a cause without forking benchctl, as threadpoolctl lets a library register its own
controller: it declares an entry point in the group :data:`GROUP` whose value names a package laid
out as benchctl's own causes are (``benchctl._causes.<name>``): ``setting.py`` with ``SETTINGS``,
``probe.py`` with ``PROBES``, ``rule.py`` with ``CAUSES``, each optional. Each registry (settings,
probes, the explain rules) imports only its own role's module, so a registry never loads a layer
above its own.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from importlib.metadata import entry_points

__all__ = ["GROUP", "packages", "gathered"]

GROUP = "benchctl.causes"


def packages() -> list[str]:
    """The cause packages installed packages declare, by entry-point name order."""
    try:
        found = entry_points(group=GROUP)
    except TypeError:  # Python 3.9: a dict of groups
        found = entry_points().get(GROUP, ())
    return [ep.value for ep in sorted(found, key=lambda ep: ep.name)]


def gathered(role: str, attribute: str) -> tuple:
    """The ``attribute`` tuple of every installed cause package's ``role`` module (``"setting"``,
    ``"probe"``, ``"rule"``); a package without that module adds nothing. A package that fails to import
    is left out with a warning that names it: a broken plugin must not stop benchctl."""
    out: list = []
    for package in packages():
        name = f"{package}.{role}"
        try:
            if importlib.util.find_spec(name) is None:
                continue
            out.extend(getattr(importlib.import_module(name), attribute, ()))
        except Exception as e:  # someone else's code: say what failed, go on without it
            warnings.warn(f"benchctl: the cause package {package!r} ({GROUP} entry point) failed to load its "
                          f"{role}: {type(e).__name__}: {e}", RuntimeWarning, stacklevel=2)
    return tuple(out)
