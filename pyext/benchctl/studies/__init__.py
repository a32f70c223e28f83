"""Studies: measurements and rules that answer a question, built on everything below.

* :mod:`.penalty`: what subnormal inputs cost per op on this CPU;
* :mod:`.flush_scopes`: which threads each denormal-flushing method reaches;
* :mod:`.seed_rules`, :mod:`.seed_runs`: the two seed questions answered
  from a settings matrix.

May import every layer below it (the controls at the package root,
``system``, ``results``, ``workloads``, ``run``); only ``cli`` imports it.
"""

__all__: list[str] = []
