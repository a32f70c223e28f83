"""A few calls taking most of the time: stalls the medians do not weigh (no setting: evidence only)."""

__all__: list[str] = []
