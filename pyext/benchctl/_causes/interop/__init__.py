"""torch's inter-op pool beyond the CPUs (evidence only: no setting)."""

__all__: list[str] = []
