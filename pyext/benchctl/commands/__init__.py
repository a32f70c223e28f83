"""Subcommands of ``python -m benchctl`` (see :mod:`benchctl.cli`)."""
