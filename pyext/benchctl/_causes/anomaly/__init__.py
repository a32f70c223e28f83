"""Autograd anomaly detection left on (setting ``anomaly``)."""

__all__: list[str] = []
