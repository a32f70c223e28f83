"""One pipeline for every explaining run: ``benchctl explain`` and both seed scripts.

:func:`run_study` takes a :class:`Study` (a workload, its rules, its matrix or none) through the
same steps and returns the results document; it prints nothing (``say`` receives its progress
lines, and ``cli/`` or ``bench/`` prints them, the report and the answer):

1. the facts from before any cell runs: a probe worker that runs the workload unchanged in a
   fresh process (explain), or the census of the model's values taken here (the seeds);
2. the penalty profile of the ops that matter, and the dtype profile of the ops in a costly dtype
   (:mod:`.dtype_profile`, kept in the facts), in this process, before any worker runs (so they
   never compete with a cell);
3. each rule's pre-check on that evidence: a rule ruled out is said so and its probes are not
   run (a matrix axis the user chose stays as given);
4. the matrix (the seeds' own, or the unchanged workload and each active rule's probes as a star
   of ``with=[...]`` cells), with ``--repeat auto`` guided by the same rules and the A/A control,
   within the budget: a user workload that runs a count of iterations (``iterations``, ``seconds``:
   :mod:`benchctl._workloads.user`) gets its probe worker a time target of :data:`PROBE_SHARE` of the
   budget (and stops once its timed calls took the whole budget: a budget that cannot hold the workers is
   refused, with the budget they need), and each matrix worker the iterations that fit the budget left over
   the planned workers, from the probe's time per iteration and per start
   (:func:`benchctl._run.rounds.iterations_for`);
5. the rules' findings, saved with the evidence in the document.

:func:`reanswer` judges a saved document again by this version's rules.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from .. import _validate, settings, _workloads as workloads
from .._results import document, rules, verdict, wording
from .._results.facts import Facts
from .._results.findings import Finding
from .._results.rules import Rule
from .._run import rounds, runner
from .._workloads import described, user
from . import dtype_profile, penalty
from .._causes.denormals.rule import ops_of, penalty_evidence

__all__ = ["PROBE_SHARE", "STUCK_MULTIPLE", "PROBE_STUCK_FLOOR_S", "Study", "probe_timeout_s", "worker_timeout_s",
           "run_study", "measure_penalty", "measure_dtype_profile", "took_text", "reanswer"]

#: The share of the budget the probe worker's timed iterations aim at (it still runs the fewest steady ones).
PROBE_SHARE = 0.05
#: A matrix worker still running after the whole budget left and after this many times the probe worker's whole
#: run is stuck, and is stopped (its run failed, with why): a fork-based DataLoader built in each call deadlocked
#: in a worker beside the busy-pool probe's thread and held explain minutes past its 60 s budget.
STUCK_MULTIPLE = 10
#: The probe worker, which no earlier worker sizes, is stuck once it has run this many times the whole budget and
#: at least :data:`PROBE_STUCK_FLOOR_S` (its start, torch's import and a slow first call are not a budget's share).
PROBE_STUCK_FLOOR_S = 300.0


@dataclass(frozen=True)
class Study:
    """What one explaining run measures, and the rules that judge it.

    ``matrix``: the cells to run (the seeds'); None: the unchanged workload and each active rule's
    probes (explain). ``census``: a function taking the values' census in this process (the
    seeds'); None: a probe worker measures the facts. ``penalty_ops``: the ops whose penalty
    profile is always measured; None: those the probe saw, when what it computes holds
    subnormals. ``fixed_keys``: matrix axes the user chose, which no pre-check drops. ``fork``, ``paired``
    (each cell that differs from the baseline only in settings a running process can switch is timed paired
    with it, in the baseline's processes): see :func:`benchctl._run.runner.run_matrix`.
    """

    name: str
    workload: str
    args: dict
    rules: tuple[Rule, ...]
    matrix: dict[str, list] | None = None
    focus: str | None = None
    census: Callable[[], dict] | None = None
    penalty_ops: tuple[str, ...] | None = None
    measure_penalty: bool = True
    fixed_keys: tuple[str, ...] = ()
    phase: str | None = None
    repeat: int | str = rounds.AUTO
    budget_s: float | None = None
    control: bool = True
    json_path: str | None = None
    resume: bool = False
    progress: bool = True
    fork: bool = True
    paired: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


def _quiet(_: str) -> None:
    pass


def _sized(study: Study) -> bool:
    """Whether the budget sizes this workload's iterations: a budget, and a workload that takes a count and a
    time target (the user's callables and setup/run objects)."""
    params = described.describe(study.workload).params
    return study.budget_s is not None and {"iterations", "seconds"} <= set(params)


def _probe(study: Study, say: Callable[[str], None]) -> tuple[Facts, dict]:
    """(the facts, the probe worker's run record)."""
    say(f"probe: {study.workload} once, unchanged, in a fresh process")
    sized = _sized(study)
    args = {**study.args, "seconds": PROBE_SHARE * study.budget_s} if sized else study.args
    # Timed calls that take the whole budget leave no worker time: the probe stops there, not after its probing.
    doc = runner.run_matrix(study.workload, args, {}, repeat=1, control=False, progress=False, probe=True,
                            worker_timeout_s=probe_timeout_s(study.budget_s),
                            probe_limit_s=study.budget_s if sized else None)
    run = doc["runs"][0]
    if run["status"] != "ok":
        tail = (run.get("traceback") or run.get("stderr_tail") or "").strip()
        raise workloads.WorkloadFailed(f"the workload failed in its probe worker: {run.get('error')}\n{tail}")
    cut = (run.get("notes") or {}).get(user.PROBE_CUT)
    if cut is not None:
        _refuse_cut_probe(study, run, cut)
    return Facts.from_probe(doc), run


def probe_timeout_s(budget_s: float | None) -> float | None:
    """How long the probe worker may run before it is taken as stuck; None without a budget."""
    return None if budget_s is None else max(PROBE_STUCK_FLOOR_S, STUCK_MULTIPLE * budget_s)


def worker_timeout_s(probe: dict | None, left: float | None) -> float | None:
    """How long a matrix worker may run before it is taken as stuck (:data:`STUCK_MULTIPLE`); None without a
    budget (nothing bounds the run) or a probe worker's record."""
    if left is None or probe is None or not probe.get("duration_s"):
        return None
    return max(left, STUCK_MULTIPLE * float(probe["duration_s"]))


def _sizing(study: Study, probe: dict, matrix: dict[str, list], left: float) -> dict[str, Any]:
    """The iterations per matrix worker that fit ``left`` seconds, from the probe worker's ``probe`` record:
    its mean time per timed iteration, and the rest of its duration less its untimed probing (start,
    import) as each worker's overhead."""
    samples = [ns for phase in probe["phases"].values() for ns in phase["ns"]]
    iteration_s = float(sum(samples)) / len(samples) / 1e9
    probing_s = (probe.get("notes", {}).get("probe") or {}).get("probe_s")
    if probing_s is None:  # a record without it: its probe calls counted as iterations
        probing_s = user.PROBE_CALLS * iteration_s
    start_s = max(0.0, probe["duration_s"] - len(samples) * iteration_s - probing_s)
    cells = 1
    for values in matrix.values():
        cells *= len(values)
    # The paired A/A control rides in a paired probe's workers; no fresh-process control where every probe is paired.
    plan = runner.plan_matrix(study.workload, study.args, matrix, paired=study.paired)
    control = study.control and not plan.every_cell_paired

    def fit(first: int) -> tuple[int, int, float]:
        processes = rounds.planned_processes(cells, study.repeat, control, len(plan.pairs), first)
        shares = rounds.planned_timed_shares(cells, study.repeat, control, len(plan.pairs), first)
        return (rounds.iterations_for(left, processes, iteration_s, start_s, study.args["iterations"], shares),
                processes, shares)

    first = rounds.AUTO_START
    iterations, processes, shares = fit(first)
    # Where the budget, not the workload's iteration count, sizes the workers, a paired run's first rounds take
    # the same time as more, shorter workers (rounds.first_rounds), as long as each still gets more than the floor.
    more = rounds.first_rounds(plan.every_cell_paired and study.repeat == rounds.AUTO,
                               iterations < study.args["iterations"])
    if more != first and (wider := fit(more))[0] > user.MIN_ITERATIONS:
        first, (iterations, processes, shares) = more, wider
    return {"iterations": iterations, "iteration_s": iteration_s, "start_s": start_s, "processes": processes,
            "timed_shares": shares, "left_s": left, "first_rounds": first}


def _check_budget_left(study: Study, sizing: dict[str, Any], spent_s: float) -> None:
    """Refuse to go on where the budget left after the probe cannot hold one worker of the fewest iterations (a
    workload whose call takes a large share of the budget): the runner would still start its first round, and run
    minutes past the budget. The message gives the budget the planned workers need."""
    one_worker_s = sizing["start_s"] + user.MIN_ITERATIONS * sizing["iteration_s"]
    if sizing["left_s"] >= one_worker_s:
        return
    needed_s = spent_s + sizing["processes"] * one_worker_s
    raise _validate.ArgumentError(
        f"--budget {study.budget_s:g}: the probe worker alone took {wording.duration(spent_s)} (one call of "
        f"{study.workload} takes {sizing['iteration_s']:.3g} s), which leaves no time for a worker of "
        f"{user.MIN_ITERATIONS} iterations; its {sizing['processes']} planned workers need a budget of about "
        f"{math.ceil(needed_s / 60)} min (--budget {math.ceil(needed_s)})")


def _refuse_cut_probe(study: Study, run: dict, cut: dict) -> None:
    """Refuse a budget that the probe worker's timed calls alone used up (it stopped there: the limit its recorder
    was given); the message gives the budget the baseline and its A/A control alone would need, from its steady
    calls' time (its first call's where it ran one)."""
    samples = [ns / 1e9 for phase in run["phases"].values() for ns in phase["ns"]]
    steady = samples[1:] or samples
    iteration_s = sum(steady) / len(steady)
    start_s = max(0.0, float(run.get("duration_s") or 0.0) - cut["timed_s"])
    fewest = rounds.planned_processes(1, study.repeat, study.control)
    needed_s = fewest * (start_s + user.MIN_ITERATIONS * iteration_s)
    raise _validate.ArgumentError(
        f"--budget {study.budget_s:g}: {cut['calls']} call(s) of {study.workload} took "
        f"{wording.duration(cut['timed_s'])} in the probe worker (about {iteration_s:.3g} s a call), the whole "
        f"budget, so it stopped there; each worker runs at least {user.MIN_ITERATIONS} calls after its start, and the "
        f"{fewest} workers of the unchanged workload{' and its A/A control' if study.control else ''} alone, before "
        f"any cause is probed, need about {math.ceil(needed_s / 60)} min "
        f"(--budget {math.ceil(needed_s)}); give several times that, or make one call shorter (fewer steps or a "
        f"smaller input)")


def measure_penalty(ops: tuple[str, ...], say: Callable[[str], None] = _quiet) -> dict[str, Any]:
    """The CPU's penalty profile for ``ops``, raw and as the rules read it, or why it is missing."""
    say(f"penalty profile of {', '.join(ops)} on this CPU")
    started = time.perf_counter()
    try:
        measured = penalty.profile(ops=list(ops))
    except RuntimeError as exc:  # no FP control on this CPU: the profile cannot compare FTZ off/on
        return {"penalty": None, "penalty_unavailable": str(exc)}
    return {"penalty": penalty_evidence(measured), "penalty_profile": measured,
            "penalty_seconds": time.perf_counter() - started}


def _penalty(study: Study, facts: Facts, say: Callable[[str], None]) -> dict[str, Any]:
    if not study.measure_penalty:
        return {"penalty": None, "penalty_unavailable": "skipped (--skip-penalty)"}
    if study.penalty_ops is not None:
        return measure_penalty(study.penalty_ops, say)
    if facts.subnormals() == 0:
        return {"penalty": None, "penalty_unavailable": "not measured: no subnormal values in what it computes"}
    return measure_penalty(ops_of(facts.ops), say)


def measure_dtype_profile(facts: Facts, say: Callable[[str], None] = _quiet) -> Facts:
    """``facts`` with the dtype profile of the ops the dtype causes would judge (unchanged when none)."""
    calls = dtype_profile.calls_to_profile(facts)
    if not calls:
        return facts
    say(f"dtype profile of {', '.join(f'{c.op} ({d})' for c, d, _ in calls)} against float32 on this CPU")
    return replace(facts, dtype_profile=dtype_profile.measure(calls))


def _axes(rule: Rule, facts: Facts) -> set[str]:
    return {k for probe in rule.probes(facts) for k in probe}


def _plan(study: Study, facts: Facts, pen: dict | None) -> tuple[list[Rule], list[Finding], dict[str, list]]:
    """(the rules still to judge, findings of those ruled out, the matrix to run)."""
    active, ruled = [], []
    for rule in study.rules:
        reason = rule.precheck(facts, pen)
        if reason is None or _axes(rule, facts) & set(study.fixed_keys):
            active.append(rule)
        else:
            ruled.append((rule, reason))
    if study.matrix is None:
        probes: list[dict] = []
        for rule in active:
            probes += [p for p in rule.probes(facts) if p not in probes]
        return active, [rule.ruled_out(reason) for rule, reason in ruled], {"with": [{}] + probes}
    matrix = {k: list(v) for k, v in study.matrix.items()}
    findings = []
    for rule, reason in ruled:
        dropped: dict[str, list] = {}
        for key, value in ((k, v) for probe in rule.probes(facts) for k, v in probe.items()):
            if value in matrix.get(key, []) and len(matrix[key]) > 1:  # an axis keeps at least one value
                matrix[key].remove(value)
                dropped.setdefault(key, []).append(value)
        found = rule.ruled_out(reason)
        if dropped:
            cells = ", ".join(f"{k}={settings.format_value(v)}" for k, values in dropped.items() for v in values)
            again = " ".join(f"--set {k}={','.join(map(settings.format_value, study.matrix[k]))}" for k in dropped)
            found = Finding(found.rule, None, found.status,
                            f"{found.message}; so the {cells} cells were not run ({again} runs them anyway)",
                            evidence={**found.evidence, "dropped": dropped})
        findings.append(found)
    return active, findings, matrix


def _judge(study: Study, active: list[Rule], facts: Facts, pen: dict | None) -> Callable[[dict], list[Finding]]:
    phases = None if study.phase is None else [study.phase]
    return lambda doc: rules.judge(doc, active, focus=study.focus, facts=facts, penalty=pen, phases=phases)


def _control_text(study: Study, every_cell_paired: bool) -> str:
    """What the run does for its A/A control and the baseline's own processes, for the header."""
    if not study.control:
        return "no A/A control"
    if not every_cell_paired:
        return "plus the baseline again as an A/A control"
    if study.repeat != rounds.AUTO:
        return "no fresh-process A/A control (every probe is paired)"
    return "no fresh-process A/A control and no process of the baseline's own (every probe is paired)"


def _header(study: Study, matrix: dict[str, list], left: float | None, first: int = rounds.AUTO_START) -> str:
    cells = 1
    for values in matrix.values():
        cells *= len(values)
    repeat = (f"{first} processes per cell, then more for unresolved comparisons"
              if study.repeat == rounds.AUTO else f"{study.repeat} process(es) per cell")
    plan = runner.plan_matrix(study.workload, study.args, matrix, paired=study.paired)
    pairs = (f"; {len(plan.pairs)} of them timed paired with the baseline in its processes (switched between "
             "blocks of iterations), a paired A/A control as a third arm of one paired worker a round"
             if plan.pairs else "")
    control = _control_text(study, plan.every_cell_paired)
    axes = ", ".join(f"{k}={{{','.join(settings.format_value(v) for v in values)}}}" for k, values in matrix.items())
    budget = "" if left is None else f"; {left:.0f} s left of the {study.budget_s:.0f} s budget"
    return (f"{study.workload}: {cells} cells, {repeat}, each in a fresh process, {control}{pairs}; "
            f"matrix {axes}{budget}")


def run_study(study: Study, say: Callable[[str], None] = _quiet) -> dict:
    """Run ``study`` through every step and return its results document (saved when it has a path)."""
    started = time.perf_counter()
    budget_s = None if study.budget_s is None else _validate.seconds("budget_s", study.budget_s)
    probe = None  # the probe worker's record, when one ran
    first = None  # the rounds before --repeat auto first judges: a resumed file's, the sizing's, or three
    if study.resume and not study.json_path:
        raise _validate.ArgumentError("--resume needs --json FILE: the results file to continue")
    if study.resume:
        saved = document.load(study.json_path)
        evidence = saved.get("evidence") or {}
        facts = Facts.from_json(evidence.get("facts")) or Facts()
        ruled = [Finding.from_json(f) for f in evidence.get("ruled_out", [])]
        out = {f.rule for f in ruled}
        active, matrix, args = [r for r in study.rules if r.rule_name not in out], saved["matrix"], saved["args"]
        first = saved["metadata"].get("runner", {}).get("first_rounds")
    else:
        if study.census is not None:
            facts = Facts.from_census(study.census())
        else:
            facts, probe = _probe(study, say)
            facts = measure_dtype_profile(facts, say)
        if study.phase is not None and study.phase not in facts.phases and study.census is None:
            raise _validate.ArgumentError(
                f"phase {study.phase!r}: {study.workload} runs {', '.join(facts.phases) or 'no phase'}")
        evidence = _penalty(study, facts, say)
        active, ruled, matrix = _plan(study, facts, evidence["penalty"])
        for f in ruled:
            say(f.message)
        args = study.args
    left = None if budget_s is None else budget_s - (time.perf_counter() - started)
    if probe is not None and left is not None and _sized(study):
        evidence["sizing"] = _sizing(study, probe, matrix, left)
        _check_budget_left(study, evidence["sizing"], time.perf_counter() - started)
        args = {**args, "iterations": evidence["sizing"]["iterations"]}
        sizing = evidence["sizing"]
        first = sizing["first_rounds"]
        say(f"{sizing['iterations']} iterations per worker: {sizing['iteration_s']:.3g} s an iteration in the "
            f"probe, {sizing['processes']} workers planned in {left:.0f} s")
    say(_header(study, matrix, left, first or rounds.AUTO_START))
    if study.json_path:
        os.makedirs(os.path.dirname(os.path.abspath(study.json_path)), exist_ok=True)
        say(f"results: {study.json_path} (rewritten after every worker; after an interruption "
            f"--resume --json {study.json_path} continues it)")
    judge = _judge(study, active, facts, evidence["penalty"])
    doc = runner.run_matrix(study.workload, args, matrix, repeat=study.repeat, json_path=study.json_path,
                            focus=study.focus, resume=study.resume, control=study.control,
                            budget_s=None if left is None else max(1.0, left), progress=study.progress, judge=judge,
                            fork=study.fork, paired=study.paired, first_rounds=first,
                            worker_timeout_s=worker_timeout_s(probe, left))
    doc["evidence"] = {**evidence, "study": study.name, "facts": facts.to_json(),
                       "ruled_out": [f.to_json() for f in ruled], **study.extra}
    doc["verdict"] = [f.to_json() for f in ruled] + doc["verdict"]
    doc["metadata"]["took_s"] = time.perf_counter() - started
    if study.json_path:
        document.save(doc, study.json_path)
    return doc


def took_text(doc: dict, json_path: str | None) -> str:
    """``"took 4.9 min; results in results/x.json"``."""
    took = doc["metadata"].get("took_s")
    return (f"took {wording.duration(took)}" if took is not None else "done") + \
        (f"; results in {json_path}" if json_path else "")


def reanswer(doc: dict, rules_of: Callable[[str], tuple[Rule, ...] | None]) -> list[Finding]:
    """``doc``'s findings judged again by this version's rules: ``rules_of(study name)`` gives them
    (None: the generic verdict). The pre-checks are not redone: what the file ruled out stays out."""
    evidence = doc.get("evidence") or {}
    study = evidence.get("study") or ("explain" if "facts" in evidence else doc["workload"] if evidence else None)
    rule_list = None if study is None else rules_of(study)
    ruled = [Finding.from_json(f) for f in evidence.get("ruled_out", [])]
    if rule_list is None:
        return ruled + verdict.findings(doc, focus=doc["metadata"].get("runner", {}).get("focus"))
    out = {f.rule for f in ruled} | {"cause_denormals" for f in ruled if f.rule == "ftz_ruled_out"}
    facts = Facts.from_json(evidence.get("facts"))
    active = [r for r in rule_list if r.rule_name not in out]
    focus = doc["metadata"].get("runner", {}).get("focus")
    return ruled + rules.judge(doc, active, focus=focus, facts=facts, penalty=evidence.get("penalty"))
