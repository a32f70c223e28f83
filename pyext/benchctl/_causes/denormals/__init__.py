"""Arithmetic on subnormal (denormal) numbers, which FTZ/DAZ removes (setting ``ftz``)."""

__all__: list[str] = []
