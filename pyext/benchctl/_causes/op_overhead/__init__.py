"""Per-op overhead: many torch ops whose work is tiny, each paying one op's fixed cost (no setting: the
profiled call and this machine's cost of one op are its evidence)."""

__all__: list[str] = []
