"""pytest-benchmark's ``--benchmark-*`` options under ``--benchctl-as-benchmark``: the ones benchctl serves, and
the ones it refuses.

benchctl serves :data:`SERVED_OPTIONS` under pytest-benchmark's own names and
dests: it adds them itself where pytest-benchmark is not registered, and reads
pytest-benchmark's where it is (and was taken over). Every other option of
pytest-benchmark's, given at other than its default, is refused at configure
(:func:`unserved_options`, kept in ``config.stash[UNSERVED]``); where
pytest-benchmark is not registered they do not exist, and pytest refuses them.
"""

from __future__ import annotations

import pytest

__all__ = ["SERVED_OPTIONS", "UNSERVED", "unserved_options"]

#: pytest-benchmark's options that benchctl serves: (option, argparse keywords). Same names and dests.
SERVED_OPTIONS = (
    ("--benchmark-json", dict(metavar="PATH", default=None,
                              help="write the benchmarks as pytest-benchmark's JSON report, with benchctl's figures "
                                   "(served by benchctl under --benchctl-as-benchmark)")),
    ("--benchmark-disable", dict(action="store_true", default=False,
                                 help="call each benchmarked function once, untimed; no stats (as pytest-benchmark)")),
    ("--benchmark-enable", dict(action="store_true", default=False, help="override --benchmark-disable")),
    ("--benchmark-skip", dict(action="store_true", default=False, help="skip the tests that use benchmark")),
    ("--benchmark-only", dict(action="store_true", default=False,
                              help="skip the tests that do not use benchmark (overrides --benchmark-skip)")),
)
#: config.stash key: pytest-benchmark's options given on this command line that benchctl does not serve.
UNSERVED = pytest.StashKey[list]()


def unserved_options(parser, given) -> list[str]:
    """pytest-benchmark's options (``--benchmark-*``, registered by it) given other than at their defaults and
    not among :data:`SERVED_OPTIONS`."""
    served = {option for option, _ in SERVED_OPTIONS}
    defaults = parser.parse_known_args([])
    out = []
    for option in parser.getgroup("benchmark").options:
        names = [n for n in option.names() if n.startswith("--benchmark-")]
        if not names or names[0] in served:
            continue
        now, default = getattr(given, option.dest, None), getattr(defaults, option.dest, None)
        # repr too: some of its parsed values (timer wrappers) do not compare equal to themselves.
        if now != default and repr(now) != repr(default):
            out.append(names[0])
    return out
