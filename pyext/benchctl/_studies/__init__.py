"""Studies: measurements and rules that answer a question, built on everything below.

* :mod:`.penalty`: what subnormal inputs cost per op on this CPU;
* :mod:`.flush_scopes`: which threads each denormal-flushing method reaches;
* :mod:`.pipeline`: one pipeline for every explaining run (facts, penalty profile, pre-checks,
  the matrix, the rules' findings), returning the results document and printing nothing;
* :mod:`.causes`: the cause library ``benchctl explain`` probes; :mod:`.seed_rules`: what only
  the two seed questions ask; :mod:`.catalog`: each study's rules, by name;
* :mod:`.explain`: ``benchctl explain``'s study.

May import every layer below it (the controls at the package root,
``system``, ``results``, ``workloads``, ``run``); only ``cli`` imports it.
"""

__all__: list[str] = []
