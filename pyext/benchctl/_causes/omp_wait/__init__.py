"""The OpenMP wait policy: idle team threads spinning (setting ``omp_wait``)."""

__all__: list[str] = []
