"""Weights initialised in each call: modules built, or their parameters reset, inside the timed call (no setting:
the probe's count is its evidence)."""

__all__: list[str] = []
