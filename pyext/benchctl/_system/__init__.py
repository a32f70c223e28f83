"""The machine behind a result: what it is (:mod:`.metadata`) and what on it distorts timings (:mod:`.doctor`).

May import the controls at the package root and nothing above
(``results``, ``run``, ``workloads``, ``studies``, ``cli``).
"""

__all__: list[str] = []
