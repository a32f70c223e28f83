"""The thread count and oversubscription (setting ``threads``)."""

__all__: list[str] = []
