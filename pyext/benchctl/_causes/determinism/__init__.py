"""torch's deterministic mode left on (setting ``deterministic``)."""

__all__: list[str] = []
