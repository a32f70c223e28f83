"""Saved-tensor hooks left on (setting ``saved_hooks``)."""

__all__: list[str] = []
