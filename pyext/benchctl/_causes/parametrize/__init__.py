"""Parametrized weights recomputed on every access (setting ``parametrize``)."""

__all__: list[str] = []
