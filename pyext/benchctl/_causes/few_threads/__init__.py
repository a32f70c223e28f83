"""Fewer torch threads than the usable CPUs: a count its environment set (setting ``clamp=all``)."""

__all__: list[str] = []
