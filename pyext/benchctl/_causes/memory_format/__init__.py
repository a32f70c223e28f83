"""Memory-format conversions between channels_last and contiguous (no setting: the profiled call is its evidence)."""

__all__: list[str] = []
