"""Warm-up and lazy initialisation (no setting: every process already shows it)."""

__all__: list[str] = []
