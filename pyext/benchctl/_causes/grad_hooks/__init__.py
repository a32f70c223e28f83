"""Gradient hooks on tensors run on every backward (setting ``grad_hooks``)."""

__all__: list[str] = []
