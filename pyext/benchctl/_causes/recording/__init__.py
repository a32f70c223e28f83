"""Autograd recording a graph where no gradient is needed (setting ``inference``)."""

__all__: list[str] = []
