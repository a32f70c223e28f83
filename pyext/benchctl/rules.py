"""What a cause's rule is made of: the names a package that adds its own cause imports
(``rule.py`` of a ``benchctl.causes`` entry point's package; ``docs/causes.md`` shows one).

A rule is a :class:`Cause`: it declares the probes it needs (``probe_of(SETTING)``), rules
itself out before any cell runs (``precheck``), and judges each phase (``judge_phase``) from the
:class:`Context`'s comparisons (:class:`Comparison`) into one :class:`Finding` with its
:class:`Status`. A cause probed by switching one of the code's settings for its timed calls, confirmed by
what the probe worker saw, is a :class:`SwitchedCause` (or a :class:`KeptCause`, where the probe refuses the
code's every attempt to move a process-wide switch): it gives the words, and the three sentences are written once.
"""

from ._results.comparison import Comparison, Outcome
from ._results.facts import Facts
from ._results.findings import Finding, Status
from ._results.rules import Context
from ._cause import (EVIDENCE_ONLY, NEGLIGIBLE_SHARE, Cause, faults_negligible, mechanism, probe_of,
                             probe_phase, probe_text)
from ._switched_cause import KeptCause, SwitchedCause

__all__ = ["Cause", "SwitchedCause", "KeptCause", "Context", "Comparison", "Outcome", "Facts", "Finding", "Status",
           "mechanism", "probe_of", "probe_text", "probe_phase", "faults_negligible", "EVIDENCE_ONLY",
           "NEGLIGIBLE_SHARE"]
