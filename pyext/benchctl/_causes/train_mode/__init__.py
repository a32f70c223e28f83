"""Modules left in training mode in calls that compute no gradient (setting ``train_mode``)."""

__all__: list[str] = []
