"""Kernel ISA dispatch: torch's CPU kernels on narrower vector instructions than the CPU has (setting ``isa``)."""

__all__: list[str] = []
