"""The autograd profiler left on around the work (setting ``profiler``)."""

__all__: list[str] = []
