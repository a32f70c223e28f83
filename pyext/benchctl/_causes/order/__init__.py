"""The state earlier phases leave in the process (probed with the ``only`` setting)."""

__all__: list[str] = []
