"""The causes benchctl can name, one package each: ``benchctl._causes.<name>``.

Each holds the same roles, each file of its own layer (``tests/test_layers.py`` checks them by role):

* ``control.py`` (optional): what changes or reads the process state the cause is about;
* ``setting.py`` (optional): its matrix setting(s), ``SETTINGS``: the one place its name is written;
* ``probe.py`` (optional): what the probe worker records for it and the typed fact that reads it,
  ``PROBES`` (:class:`benchctl.probes.Probe`);
* ``rule.py``: the cause itself, ``CAUSES`` (:class:`benchctl._cause.Cause`; its ``order`` places it in
  the answer).

The registries gather them (:mod:`benchctl.settings`, :mod:`benchctl.probes`,
:mod:`benchctl._studies.causes`) through :mod:`benchctl._plugins`, which finds these folders and
those other installed packages declare (``benchctl.causes`` entry points): a new folder here needs no
line in any registry.
These package files import nothing, so importing one role never loads another.
"""

__all__: list[str] = []
