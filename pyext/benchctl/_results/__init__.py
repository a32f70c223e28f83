"""Results: the document a run writes, and everything read from it.

* :mod:`.document`: the schema, crash-safe writing, strict loading;
* :mod:`.stats`: warm-up detection, robust summaries, comparisons;
* :mod:`.queries`: the questions every reader asks of a document (the
  baseline cell, a cell's successful runs, steady samples, a cached
  comparison of two cells);
* :mod:`.summary`, :mod:`.verdict`, :mod:`.analysis`: the ``summary`` and
  ``verdict`` sections;
* :mod:`.wording`: how ratios, intervals and counts are written; :mod:`.tables`: how
  tables are laid out and their time columns written (one unit a column);
* :mod:`.processes`, :mod:`.tdist`: comparisons with the process as the unit;
* :mod:`.report`, :mod:`.plot`, :mod:`.machines`, :mod:`.pyperf_export`:
  views (one run, a figure, several machines side by side) and exports.

May import the controls at the package root (``benchctl.clock``,
``benchctl.settings``, ...) and nothing above this package (``run``,
``studies``, ``cli``).
"""

from .document import ResultsError, load, save

__all__ = ["ResultsError", "load", "save"]
