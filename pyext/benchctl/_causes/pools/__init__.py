"""Competing thread pools: another library's pool beside torch's (setting ``pools``)."""

__all__: list[str] = []
