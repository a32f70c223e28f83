"""torch.compile recompiling (no setting: dynamo's counters are its evidence)."""

__all__: list[str] = []
