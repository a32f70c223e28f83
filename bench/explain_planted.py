"""`benchctl explain` on workloads that each plant one cause (tests/planted/), at its defaults.

Prints each answer as explain gives it and how long it took, then one table:
the planted cause, what explain marked it, any other cause it marked `*`.
The target is the planted cause marked `*`, none invented (a cause the plant declares in its
``"also"`` is expected beside it), each under 2 minutes.

    python bench/explain_planted.py [--budget SECONDS] [--only NAME ...] [--log FILE] [--json-dir DIR] [--unpaired]

``--unpaired`` runs every probe in fresh processes of its own (explain's ``--unpaired``): the time
and marks beside the default's, where the probes a running process can switch are timed paired.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from benchctl._cli.render import render
from benchctl._results.findings import Finding
from benchctl._studies import explain

PLANTED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "planted")
sys.path.insert(0, PLANTED_DIR)
from plants import declaration, plants  # noqa: E402 - (file:name, the cause it plants; None: nothing), from each file

PLANTED = plants()


def _marks(doc: dict) -> dict[str, str]:
    """{cause name: its mark}; a cause judged in several phases shows the strongest mark."""
    rank = {"*": 2, "?": 1, "-": 0}
    marks: dict[str, str] = {}
    for f in map(Finding.from_json, doc["verdict"]):
        if f.rule.startswith("cause_"):
            name, mark = f.rule.removeprefix("cause_"), f.mark
            if rank[mark] >= rank.get(marks.get(name, "-"), 0):
                marks[name] = mark
    return marks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=explain.DEFAULT_BUDGET_S, metavar="SECONDS",
                        help=f"explain's budget per workload (default {explain.DEFAULT_BUDGET_S:.0f}, explain's own)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only this planted workload (file name without .py; repeatable)")
    parser.add_argument("--log", metavar="FILE", help="also write every explain's full output here")
    parser.add_argument("--json-dir", metavar="DIR",
                        help="also keep each explain's results document here, as NAME.json (to re-answer it later)")
    parser.add_argument("--unpaired", dest="paired", action="store_false",
                        help="no probe timed paired with the baseline (explain --unpaired)")
    opts = parser.parse_args(argv)
    chosen = [(t, c) for t, c in PLANTED if not opts.only or t.split(".py")[0] in opts.only]
    if opts.json_dir and not os.path.isdir(opts.json_dir):
        parser.error(f"--json-dir {opts.json_dir}: no such folder: create it first")
    if not chosen:
        parser.error(f"--only: none of {', '.join(t.split('.py')[0] for t, _ in PLANTED)}")
    rows, log = [], open(opts.log, "w") if opts.log else None
    try:
        for target, planted in chosen:
            print(f"== {target} (planted: {planted or 'nothing'})", flush=True)
            said: list[str] = []
            started = time.perf_counter()
            path = os.path.join(PLANTED_DIR, target)
            environ = dict(os.environ)
            try:
                json_path = os.path.join(opts.json_dir, target.split(".py")[0] + ".json") if opts.json_dir else None
                doc = explain.explain(path, budget_s=opts.budget, progress=False, say=said.append, json_path=json_path,
                                      paired=opts.paired)
            finally:  # a plant that sets a variable at import (scalar_kernels.py) must not reach the next ones
                os.environ.clear()
                os.environ.update(environ)
            took = time.perf_counter() - started
            text = "\n".join(said + [render(doc, path)])
            print(text[text.index("Answer for"):].rstrip() if "Answer for" in text else text, flush=True)
            if log:
                log.write(f"== {target}\n{text}\n")
            marks = _marks(doc)
            # probes timed paired, of all probes run (the star's cells but the unchanged workload)
            paired = f"{len((doc.get('paired') or {}).get('cells', []))}/{len(doc['matrix'].get('with', [{}])) - 1}"
            also = set(declaration(target).get("also", ()))  # causes the plant declares named beside it
            invented = sorted(n for n, m in marks.items() if m == "*" and n != planted and n not in also)
            rows.append((target, planted or "-", marks.get(planted, "") if planted else "", ",".join(invented) or "-",
                         paired, took))
    finally:
        if log:
            log.close()
    print(f"\n{'workload':<26} {'planted':<10} {'its mark':>8}  {'other * marks':<14} {'paired':>6} {'took':>7}")
    for target, planted, mark, invented, paired, took in rows:
        print(f"{target:<26} {planted:<10} {mark or '':>8}  {invented:<14} {paired:>6} {took:>6.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
