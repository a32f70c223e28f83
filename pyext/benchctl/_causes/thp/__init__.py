"""Transparent huge pages for torch's large CPU buffers (setting ``thp``)."""

__all__: list[str] = []
