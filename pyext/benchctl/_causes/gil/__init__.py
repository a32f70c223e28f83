"""Another Python thread of the process holding the GIL while the calls run (no setting: the probe's count of the
threads' CPU time is its evidence)."""

__all__: list[str] = []
