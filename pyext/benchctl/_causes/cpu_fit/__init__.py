"""Threads beyond the usable CPUs: the CPU mask or the cgroup quota (setting ``clamp``)."""

__all__: list[str] = []
