"""CUDA's lazy start in the first iteration (setting ``cuda_init``)."""

__all__: list[str] = []
