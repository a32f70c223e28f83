"""Time that grows with each call: state carried from one call to the next (no setting: evidence only)."""

__all__: list[str] = []
