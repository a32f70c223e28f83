"""benchctl's version, read from the installed distribution (its one source is pyproject.toml)."""

from importlib.metadata import version as _distribution_version

__all__ = ["__version__"]

__version__ = _distribution_version("benchctl")
