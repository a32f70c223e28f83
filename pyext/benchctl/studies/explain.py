"""``benchctl explain TARGET``: why the user's own code takes the time it takes.

1. One probe worker runs the workload unchanged in a fresh process: its
   phases, iteration times, counters, the torch ops it runs and the
   subnormal census of what it computes (:class:`.causes.Facts`).
2. The penalty profile of those ops is measured here, when the census found
   subnormals (otherwise the denormal cause is already out).
3. Each cause of :data:`.causes.CAUSES` may rule itself out on that evidence;
   the others give the settings that probe them.
4. One matrix runs the workload unchanged and under each probe (a star of
   single changes, ``with=[...]``), with the A/A control and ``--repeat
   auto``, within the budget.
5. Each cause judges its probe against the unchanged workload, with its
   evidence; the answer lists them: ``*`` a cause measured, ``-`` ruled out
   and why, ``?`` unresolved.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict

from .. import _validate, settings, workloads
from ..results import document, report, wording
from ..run import rounds, runner
from . import causes
from .causes.denormals import ops_of, penalty_evidence
from .penalty import profile

__all__ = ["DEFAULT_BUDGET_S", "check_target", "explain", "format_answer"]

DEFAULT_BUDGET_S = 120.0


def _probe(target: str, args: dict, out) -> causes.Facts:
    print(f"probe: {target} once, unchanged, in a fresh process", file=out, flush=True)
    doc = runner.run_matrix(target, args, {}, repeat=1, control=False, progress=False, probe=True)
    run = doc["runs"][0]
    if run["status"] != "ok":
        tail = (run.get("traceback") or run.get("stderr_tail") or "").strip()
        raise workloads.WorkloadFailed(f"the workload failed in its probe worker: {run.get('error')}\n{tail}")
    return causes.Facts.from_probe(doc)


def _penalty(facts: causes.Facts, out) -> dict:
    """The penalty profile of the ops the workload runs, unless the census already rules denormals out."""
    if facts.subnormals() == 0:
        return {"penalty": None, "penalty_unavailable": "not measured: no subnormal values in what it computes"}
    ops = ops_of(facts.ops)
    print(f"penalty profile of {', '.join(ops)} on this CPU", file=out, flush=True)
    started = time.perf_counter()
    try:
        measured = profile(ops=list(ops))
    except RuntimeError as exc:  # no FP control on this CPU
        return {"penalty": None, "penalty_unavailable": str(exc)}
    return {"penalty": penalty_evidence(measured), "penalty_profile": measured,
            "penalty_seconds": time.perf_counter() - started}


def _plan(facts: causes.Facts, penalty: dict | None) -> tuple[list, list[dict], list[dict]]:
    """(causes still to judge, their probes, findings of those ruled out before running)."""
    active, probes, ruled = [], [], []
    for cause in causes.CAUSES:
        reason = cause.precheck(facts, penalty)
        if reason is not None:
            ruled.append(cause.ruled_out(reason).to_json())
            continue
        active.append(cause)
        probes += [p for p in cause.probes(facts) if p not in probes]
    return active, probes, ruled


def _mark(finding: dict) -> str:
    return causes.MARKS[finding["evidence"]["status"]]


def format_answer(doc: dict, target: str, phases: list[str]) -> str:
    """The answer, phase by phase: every cause's finding, marked."""
    lines = []
    ruled = [f for f in doc["verdict"] if f["rule"].startswith("cause_") and f["phase"] is None]
    for phase in phases:
        judged = [f for f in doc["verdict"] if f["rule"].startswith("cause_") and f["phase"] == phase]
        found = judged + ruled
        head = f"Answer for {target}, phase {phase} (* a cause measured, - ruled out and why, ? unresolved):"
        if not any(f.get("explains") for f in found):
            band = max((f.get("band") or 0.0 for f in judged), default=0.0)
            head += (f"\n none of the probed causes explains the time of {target} in phase {phase}: each is "
                     f"ruled out, shows no effect beyond ±{max(band, 0.05):.0%}, or is unresolved")
        lines += [head] + [f" {_mark(f)} {f['message']}" for f in found]
    return "\n".join(lines)


def check_target(target: str, args: dict | None) -> dict:
    """The workload's arguments, typed like its defaults; user code loads here first, so a broken
    import fails before any worker starts."""
    workload = workloads.get(target)
    given = {k: settings.canonical_value(k, v, workload.params) for k, v in (args or {}).items()}
    resolved = workload.resolve_args(given)
    workload.check_args(resolved)
    return resolved


def explain(target: str, args: dict | None = None, phase: str | None = None, budget_s: float = DEFAULT_BUDGET_S,
            json_path: str | None = None, progress: bool = True, control: bool = True, out=sys.stdout) -> dict:
    """Explain ``target``'s time; print the report and the answer; return the results document."""
    started = time.perf_counter()
    budget_s = _validate.seconds("budget_s", budget_s)
    args = check_target(target, args)
    facts = _probe(target, args, out)
    if phase is not None and phase not in facts.phases:
        raise _validate.ArgumentError(f"phase {phase!r}: {target} runs {', '.join(facts.phases) or 'no phase'}")
    phases = [phase] if phase else facts.phases
    evidence = _penalty(facts, out)
    active, probes, ruled = _plan(facts, evidence["penalty"])
    for f in ruled:
        print(f["message"], file=out)  # "<cause>: ruled out before running: <why>"
    matrix = {"with": [{}] + probes}
    left = budget_s - (time.perf_counter() - started)
    print(f"explain: {target}, {len(matrix['with'])} cells (the workload unchanged"
          + (f" and with {', '.join(settings.format_value(p) for p in probes)}" if probes else "")
          + f"), 3 processes each and more where unresolved, plus the A/A control; {left:.0f} s left of the "
            f"{budget_s:.0f} s budget", file=out, flush=True)
    if json_path:
        os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    doc = runner.run_matrix(target, args, matrix, repeat=rounds.AUTO, json_path=json_path, progress=progress,
                            control=control, budget_s=max(1.0, left))
    ctx = causes.Context.of(doc, facts, evidence["penalty"])
    judged = [cause.judge(ctx, p) for cause in active for p in phases]
    doc["evidence"] = {**evidence, "facts": asdict(facts), "ruled_out": ruled, "target": target}
    doc["verdict"] = list(doc["verdict"]) + ruled + [f.to_json() for f in judged if f is not None]
    if json_path:
        document.save(doc, json_path)
    print(report.format_report(doc), file=out)
    print(format_answer(doc, target, phases), file=out)
    print(f"took {wording.duration(time.perf_counter() - started)}" + (f"; results in {json_path}" if json_path
                                                                        else ""), file=out)
    return doc
