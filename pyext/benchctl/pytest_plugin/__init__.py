"""benchctl's pytest plugin (entry point ``pytest11: benchctl``): benchctl's clock, settings and
statistics in a user's own tests.

* the ``benchctl`` fixture (:mod:`._fixture`): ``benchctl(fn, *args)``,
  ``benchctl.pedantic(...)``, ``benchctl.stats``, ``benchctl.extra_info``,
  ``benchctl.assert_faster(a, b, by=1.1)``, ``benchctl.assert_not_slower(a, b, tolerance=0.05)``;
* ``@pytest.mark.benchctl(ftz=..., threads=N, pin=..., alloc=..., env=..., isolate=True, repeat=N)``
  (:mod:`._markers`, applied in-process by :mod:`._inprocess`, in fresh workers by :mod:`._isolation`);
* ``--benchctl-as-benchmark``: the same fixture served as pytest-benchmark's ``benchmark``, its
  ``@pytest.mark.benchmark`` and ``--benchmark-json`` (:mod:`._takeover`, :mod:`._as_benchmark`);
* the terminal table, ``--benchctl-json`` (:mod:`._results_file`) and ``--benchctl-compare``
  (:mod:`._compare`).

Timing is :mod:`._timing` (calibrated rounds), statistics :mod:`._stats` and
:mod:`._assertions` (t intervals from :mod:`benchctl._results.processes`).
Loading the plugin imports no torch, numpy or native code (:mod:`._hooks`
imports them once a test uses benchctl): a session whose tests do not use
benchctl only gets its options and marker.
"""

from ._hooks import (benchctl, pytest_addoption, pytest_configure, pytest_load_initial_conftests,
                     pytest_pycollect_makeitem, pytest_pyfunc_call, pytest_runtest_makereport, pytest_runtest_setup,
                     pytest_sessionfinish, pytest_terminal_summary)

__all__ = ["benchctl", "pytest_addoption", "pytest_configure", "pytest_load_initial_conftests",
           "pytest_pycollect_makeitem", "pytest_pyfunc_call", "pytest_runtest_makereport", "pytest_runtest_setup",
           "pytest_sessionfinish", "pytest_terminal_summary"]
