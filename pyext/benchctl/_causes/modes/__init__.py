"""Torch function and dispatch modes left on around every call (setting ``modes``)."""

__all__: list[str] = []
