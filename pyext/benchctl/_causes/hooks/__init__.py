"""Module hooks run on every call (setting ``hooks``)."""

__all__: list[str] = []
