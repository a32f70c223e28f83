"""DataLoader worker processes started and stopped in each call (no setting: the probe's count is its evidence)."""

__all__: list[str] = []
