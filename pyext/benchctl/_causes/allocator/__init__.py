"""Memory returned to the OS and faulted back in: the allocator (setting ``alloc``)."""

__all__: list[str] = []
