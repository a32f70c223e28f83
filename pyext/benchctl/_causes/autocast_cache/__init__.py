"""Autocast casting the weights anew in every call (setting ``autocast_cache``)."""

__all__: list[str] = []
