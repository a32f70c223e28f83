"""A trace or profile function left on (setting ``tracing``)."""

__all__: list[str] = []
