"""Asynchronous CUDA launches timed by a host clock (setting ``sync``)."""

__all__: list[str] = []
