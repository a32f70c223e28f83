"""Time outside torch's ops: Python and conversions (no setting: the profiled call is its evidence)."""

__all__: list[str] = []
