"""cuDNN autotuning on every new shape (setting ``cudnn_benchmark``)."""

__all__: list[str] = []
