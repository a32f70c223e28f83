"""Python's cyclic garbage collector pausing the calls (setting ``gc``)."""

__all__: list[str] = []
