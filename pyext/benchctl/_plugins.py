"""The cause packages: benchctl's own (``benchctl._causes.<name>``, found by their folders) and those other
installed packages declare (the ``benchctl.causes`` entry-point group).

A package adds a cause without forking benchctl, as threadpoolctl lets a library register its own
controller: it declares an entry point in the group :data:`GROUP` whose value names a package laid
out as benchctl's own causes are: ``setting.py`` with ``SETTINGS``, ``probe.py`` with ``PROBES``,
``rule.py`` with ``CAUSES``, each optional. Each registry (settings, probes, the explain rules) imports
only its own role's module of each package, so a registry never loads a layer above its own, and a new
cause folder needs no line in any registry.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import warnings
from importlib.metadata import entry_points

__all__ = ["GROUP", "BUILT_IN", "built_in", "installed", "gathered"]

GROUP = "benchctl.causes"
#: The package whose sub-packages are benchctl's own causes.
BUILT_IN = "benchctl._causes"


def built_in() -> list[str]:
    """benchctl's own cause packages, by folder name."""
    root = importlib.import_module(BUILT_IN)
    return [f"{BUILT_IN}.{m.name}" for m in sorted(pkgutil.iter_modules(root.__path__), key=lambda m: m.name)
            if m.ispkg]


def installed() -> list[str]:
    """The cause packages other installed packages declare, by entry-point name order."""
    try:
        found = entry_points(group=GROUP)
    except TypeError:  # Python 3.9: a dict of groups
        found = entry_points().get(GROUP, ())
    return [ep.value for ep in sorted(found, key=lambda ep: ep.name)]


def _role_module(package: str, role: str):
    name = f"{package}.{role}"
    return importlib.import_module(name) if importlib.util.find_spec(name) is not None else None


def gathered(role: str, attribute: str) -> tuple:
    """The ``attribute`` tuple of every cause package's ``role`` module (``"setting"``, ``"probe"``,
    ``"rule"``): benchctl's own first, then the installed ones; a package without that module adds nothing.
    An installed package that fails to import is left out with a warning that names it (a broken plugin
    must not stop benchctl); one of benchctl's own that fails raises, as any bug of benchctl's does."""
    out: list = []
    for package in built_in():
        module = _role_module(package, role)
        out.extend(getattr(module, attribute, ()) if module is not None else ())
    for package in installed():
        try:
            module = _role_module(package, role)
            out.extend(getattr(module, attribute, ()) if module is not None else ())
        except Exception as e:  # someone else's code: say what failed, go on without it
            warnings.warn(f"benchctl: the cause package {package!r} ({GROUP} entry point) failed to load its "
                          f"{role}: {type(e).__name__}: {e}", RuntimeWarning, stacklevel=2)
    return tuple(out)
