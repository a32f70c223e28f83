"""Float64 where float32 was meant (no setting: the dtype profile is its evidence)."""

__all__: list[str] = []
