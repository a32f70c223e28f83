"""torch's mkldnn (oneDNN) kernels turned off (setting ``mkldnn``)."""

__all__: list[str] = []
