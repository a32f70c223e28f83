"""Float32 matmuls without TF32 on the GPU (setting ``matmul_precision``)."""

__all__: list[str] = []
