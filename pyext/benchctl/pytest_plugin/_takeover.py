"""``--benchctl-as-benchmark``: one plugin serves ``benchmark`` for the session, and it is benchctl.

Called from ``pytest_load_initial_conftests`` (:mod:`._hooks`): by then the
command line (with the ini file's ``addopts``) has been parsed once and every
plugin from entry points, ``-p`` and ``$PYTEST_PLUGINS`` is registered, while
no plugin has been configured and no conftest loaded. With the flag:

* pytest-benchmark's plugin, if registered, is unregistered and its names
  blocked (a conftest's ``pytest_plugins`` cannot bring it back); its
  ``--benchmark-*`` options stay parsed, and the ones benchctl does not serve
  are refused when given (:mod:`._benchmark_options`, raised at configure);
* where pytest-benchmark is not registered (not installed, ``-p no:benchmark``),
  benchctl adds the options it serves (:data:`.benchmark_options.SERVED_OPTIONS`) under the same
  names, so one command line works in both situations;
* :mod:`._as_benchmark` (the fixture, the marker, the JSON) is registered.

Without the flag nothing happens: pytest-benchmark, if installed, serves ``benchmark`` as usual.
"""

from __future__ import annotations

from ._benchmark_options import SERVED_OPTIONS, UNSERVED, unserved_options

__all__ = ["PLUGIN_NAME", "PYTEST_BENCHMARK_NAMES", "take_over"]

PLUGIN_NAME = "benchctl-as-benchmark"
#: The names pytest-benchmark's plugin is registered or requested under (entry point, module, ``-p``).
PYTEST_BENCHMARK_NAMES = ("benchmark", "pytest_benchmark", "pytest_benchmark.plugin")
_MODULE = "pytest_benchmark.plugin"


def _registered(pluginmanager):
    """pytest-benchmark's plugin module and the name it is registered under, or (None, None)."""
    for name, plugin in pluginmanager.list_name_plugin():
        if getattr(plugin, "__name__", None) == _MODULE:
            return plugin, name
    return None, None


def take_over(early_config, parser) -> None:
    if not getattr(early_config.known_args_namespace, "benchctl_as_benchmark", False):
        return
    pm = early_config.pluginmanager
    plugin, name = _registered(pm)
    early_config.stash[UNSERVED] = (unserved_options(parser, early_config.known_args_namespace)
                                    if plugin is not None else [])
    for blocked in PYTEST_BENCHMARK_NAMES + ((name,) if name else ()):
        pm.set_blocked(blocked)
    if plugin is not None and pm.is_registered(plugin):
        pm.unregister(plugin)
    if plugin is None:
        group = parser.getgroup("benchctl")
        for option, attrs in SERVED_OPTIONS:
            group.addoption(option, **attrs)
    from . import _as_benchmark as as_benchmark

    pm.register(as_benchmark, PLUGIN_NAME)
