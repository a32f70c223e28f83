"""Half / bfloat16 slower than float32 on this CPU (no setting: the dtype profile is its evidence)."""

__all__: list[str] = []
