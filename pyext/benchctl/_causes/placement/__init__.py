"""Thread placement, threads migrating between CPUs (setting ``pin``)."""

__all__: list[str] = []
