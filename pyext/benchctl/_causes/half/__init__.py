"""Half / bfloat16 without native arithmetic on this CPU (no setting: the dtype profile is its evidence)."""

__all__: list[str] = []
