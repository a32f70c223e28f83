"""Several machines' results side by side: which findings each machine shows, and what differs between the machines.

A Slurm run (:mod:`benchctl._run.slurm`) leaves one results file per host in a
folder, beside a manifest (:mod:`.manifest`) of the hosts asked for and
their jobs. :func:`load` reads such a folder, or any list of results files.
Nothing is dropped: a host the manifest lists without a results file is
*missing* (with its job's error and stderr tail), a file that cannot be read is
*unreadable*, and a run that stopped before its last worker is *partial*.

:func:`format_machines` prints, for the machines with results:

* what differs in their metadata: CPU model and flags, CPUs the run could use,
  the penalty profile (``doc["evidence"]``), the allocator (glibc, preloads and
  what the ``alloc`` readbacks observed), the OpenMP runtime and the torch
  build;
* per finding (matched by rule, phase, setting and the two cells) the ratio and
  95% CI on each machine and which machines show it;
* the median of every (phase, cell) on each machine;
* the hosts without complete results and why.

Findings are read as :class:`~.findings.Finding` (any rule's, version-2 files' too), so new
rules need nothing here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from .. import settings as _settings
from ..omp import runtime_kind
from . import manifest, wording
from .document import ResultsError, cell_id, load as load_document, matrix_cells
from .findings import Finding
from .tables import format_table, time_unit

__all__ = ["Machine", "progress", "file_progress", "load", "facts", "format_machines"]

_TAIL_LINES = 12


@dataclass
class Machine:
    """One host's results: its document, or why there is none (or only part of one).

    ``host`` is the manifest's entry for it (its jobs, their errors and stderr
    tails) when the results came from a multi-host run.
    """

    label: str
    path: str | None
    doc: dict | None = None
    problem: str | None = None
    host: dict | None = None

    @property
    def complete(self) -> bool:
        return self.doc is not None and self.problem is None


def progress(doc: dict) -> tuple[int, int | None]:
    """(worker runs recorded, runs planned) of a results document; planned is None when the
    run decides its repetitions as it goes (``repeat: "auto"``)."""
    recorded = len({(cell_id(r["cell"]), r.get("arm"), r["repetition"]) for r in doc["runs"]})
    repeat = doc.get("repeat", 1)
    if not isinstance(repeat, int) or isinstance(repeat, bool):
        return recorded, None
    # An A/A control runs the baseline cell once more per repetition.
    slots = len(matrix_cells(doc["matrix"])) + (1 if doc.get("control") else 0)
    return recorded, slots * max(1, repeat)


def file_progress(path: str) -> tuple[int, int | None] | None:
    """:func:`progress` of the results file at ``path``; None when it is missing or unreadable."""
    try:
        return progress(load_document(path))
    except ResultsError:
        return None


def _load_file(path: str, label: str, host: dict | None = None) -> Machine:
    if not os.path.exists(path):
        return Machine(label, path, None, _missing_reason(host), host)
    try:
        doc = load_document(path)
    except ResultsError as e:
        return Machine(label, path, None, f"unreadable: {e}", host)
    recorded, expected = progress(doc)
    problem = None
    state = manifest.HostState.read(host.get("status")) if host is not None else None
    if state is manifest.HostState.SUBMITTED:
        problem = f"partial: its job may still be queued or running; {recorded} worker runs recorded so far"
    elif host is not None and state is not manifest.HostState.OK:  # its job did not finish its run
        problem = f"partial: {host.get('message') or host.get('status')}"
    elif expected is not None and recorded < expected:
        problem = f"partial: {recorded} of {expected} worker runs recorded"
    return Machine(label, path, doc, problem, host)


def _missing_reason(host: dict | None) -> str:
    if host is None:
        return "missing: no results file"
    jobs = host.get("jobs") or []
    status = host.get("status")
    if manifest.HostState.read(status) is manifest.HostState.SUBMITTED and jobs:
        return (f"missing: no results file yet (job {jobs[-1].get('job_id')} was submitted and may still be "
                f"queued or running)")
    reason = host.get("message") or status or "no results file"
    return f"missing: {reason}"


def _load_folder(folder: str) -> list[Machine]:
    manifest_path = os.path.join(folder, manifest.NAME)
    hosts = manifest.load(manifest_path)["hosts"] if os.path.exists(manifest_path) else []
    machines, seen = [], set()
    for host in hosts:
        path = os.path.join(folder, host["json"])
        seen.add(os.path.basename(path))
        machines.append(_load_file(path, host["label"], host))
    for name in sorted(os.listdir(folder)):
        # Results files the manifest does not list (or a folder without one) count too;
        # names starting with '.' are atomic-write temporaries.
        if name.endswith(".json") and name != manifest.NAME and not name.startswith(".") and name not in seen:
            machines.append(_load_file(os.path.join(folder, name), name[: -len(".json")]))
    if not machines:
        raise ResultsError(f"{folder}: no results files and no {manifest.NAME} in this folder")
    return machines


def load(paths: list[str]) -> list[Machine]:
    """The machines behind ``paths``: results files, and folders of them (with their manifest)."""
    machines: list[Machine] = []
    for path in paths:
        if os.path.isdir(path):
            machines += _load_folder(path)
        else:
            machines.append(_load_file(path, os.path.splitext(os.path.basename(path))[0]))
    labels = [m.label for m in machines]
    for m in machines:
        if labels.count(m.label) > 1 and m.path:  # same file name in two folders: say which
            m.label = os.path.relpath(m.path)
    seen: dict[str, int] = {}
    for m in machines:  # the same file given twice: still two columns
        seen[m.label] = seen.get(m.label, 0) + 1
        if seen[m.label] > 1:
            m.label = f"{m.label} ({seen[m.label]})"
    return machines


# ---- what differs between machines -------------------------------------------------------------------


def _section(system: dict, name: str) -> dict:
    value = system.get(name)
    return value if isinstance(value, dict) and "error" not in value else {}


def _cpus(system: dict) -> str | None:
    topo = _section(system, "topology")
    if not topo:
        return None
    allowed = topo.get("allowed_cpus")
    used = f"{len(allowed)} of " if isinstance(allowed, list) else ""
    return (f"{used}{topo.get('logical_cpus')} logical CPUs ({topo.get('cores')} cores, "
            f"{topo.get('sockets')} socket(s), SMT {'on' if topo.get('smt_active') else 'off'})")


def _openmp(system: dict) -> str | None:
    pools = system.get("threadpools")
    if not isinstance(pools, list):
        return None
    found = []
    for pool in pools:
        if isinstance(pool, dict) and pool.get("user_api") == "openmp":
            kind = runtime_kind(pool.get("filepath") or "") or pool.get("prefix") or "?"
            found.append(kind + (f" {pool['version']}" if pool.get("version") else ""))
    return ", ".join(found) or "none loaded"


def _torch_build(system: dict) -> str | None:
    packages = _section(system, "packages")
    if not packages:
        return None
    if packages.get("torch_import_error"):
        return f"torch {packages.get('torch')} (import failed: {packages['torch_import_error']})"
    parts = [f"torch {packages.get('torch_runtime_version') or packages.get('torch')}"]
    parts.append(f"CUDA {packages['torch_cuda']}" if packages.get("torch_cuda") else "CPU only")
    for line in (packages.get("torch_parallel_info") or "").splitlines():
        line = line.strip()
        if line.startswith("ATen parallel backend:"):
            parts.append(line.split(":", 1)[1].strip() + " backend")
        elif "Math Kernel Library Version" in line:
            parts.append("MKL " + line.split("Version", 1)[1].split("-", 1)[0].strip())
        elif line.startswith("Intel(R) MKL-DNN"):
            parts.append("oneDNN " + line.split()[2])
    return ", ".join(parts)


def _allocator(doc: dict, system: dict) -> str:
    """glibc, any preload the runner inherited, and what each ``alloc`` value was observed to do."""
    libc = _section(system, "libc").get("gnu_libc_version") or "libc ?"
    env = system.get("environment") if isinstance(system.get("environment"), dict) else {}
    parts = [libc + (f", LD_PRELOAD={env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else "")]
    observed: dict[str, set] = {}
    for run in doc["runs"]:
        back = (run.get("readback") or {}).get("alloc")
        if run.get("status") != "ok" or not isinstance(back, dict):
            continue
        seen = back.get("observed") if isinstance(back.get("observed"), dict) else {}
        what = str(seen.get("large_block_mapping") or "?")
        preload = seen.get("preload_mapped") or {}
        if preload:
            what += ", preload " + ("mapped" if all(preload.values()) else "NOT mapped")
        observed.setdefault(_settings.format_value(back.get("requested")), set()).add(what)
    if observed:
        parts.append("64 MiB malloc lands in: " + "; ".join(f"{req} {'/'.join(sorted(v))}"
                                                            for req, v in observed.items()))
    return ", ".join(parts)


def _penalty(doc: dict) -> dict[str, str]:
    evidence = doc.get("evidence") if isinstance(doc.get("evidence"), dict) else {}
    penalty = evidence.get("penalty")
    if not isinstance(penalty, dict):
        return {"penalty profile": evidence.get("penalty_unavailable") or "not measured"}
    out = {}
    for op, row in sorted(penalty.items()):
        if not isinstance(row, dict):
            continue
        ratios = ", ".join(f"{kind} {row[key]:.2f}×" for kind, key in (("subnormal", "subnormal_ratio"),
                                                                         ("zero", "zero_ratio"))
                           if isinstance(row.get(key), (int, float)))
        out[f"penalty {op}"] = f"{row.get('class', '?')} ({ratios})" if ratios else str(row.get("class", "?"))
    return out


def facts(doc: dict) -> dict[str, str]:
    """The metadata that can make one machine's answer differ from another's, as short text."""
    meta = doc.get("metadata") or {}
    system = meta.get("system") if isinstance(meta.get("system"), dict) else {}
    cpu = _section(system, "cpu")
    packages = _section(system, "packages")
    out = {
        "hostname": system.get("hostname") or meta.get("hostname"),
        "CPU model": cpu.get("model_name"),
        "CPU flags": " ".join(cpu.get("flags_of_interest") or []) or None,
        "CPUs": _cpus(system),
        "allocator": _allocator(doc, system),
        "OpenMP runtime": _openmp(system),
        "torch build": _torch_build(system),
        "python": meta.get("python") or _section(system, "python").get("version"),
        "numpy": packages.get("numpy"),
        "kernel": _section(system, "kernel").get("release"),
        "benchctl": meta.get("benchctl_version"),
    }
    out.update(_penalty(doc))
    return {k: "n/a" if v is None else str(v) for k, v in out.items()}


# ---- text ----------------------------------------------------------------------------------------------


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    return format_table(rows, header, text_columns=len(header))  # words in every column


def _finding_key(f: Finding) -> str:
    return json.dumps({"rule": f.rule, "phase": f.phase, "setting": f.setting, "a": f.a, "b": f.b},
                      sort_keys=True, default=str)


def _finding_label(f: Finding) -> str:
    a, b = f.a or {}, f.b or {}
    text = (f"[{f.phase}] " if f.phase else "") + f.rule
    if a or b:
        keys = list(dict.fromkeys(list(a) + list(b)))
        differ = [k for k in keys if a.get(k) != b.get(k)]
        common = {k: a[k] for k in keys if k in a and k in b and a[k] == b[k]}
        text += (f": {_settings.cell_label({k: a.get(k) for k in differ})} vs "
                 f"{_settings.cell_label({k: b.get(k) for k in differ})}")
        if common:
            text += f" at {_settings.cell_label(common)}"
    elif f.setting:
        text += f" {f.setting}"
    return text


def _shows(f: Finding) -> bool:
    """Whether a machine shows the finding: a called difference, or (no comparison) an explained effect."""
    return f.comparison.beyond_band if f.comparison is not None else f.explains


def _ratio_text(f: Finding | None) -> str:
    if f is None:
        return "-"
    cmp = f.comparison
    if cmp is None:
        return "n/a"
    # The comparison's own word for an uncalled difference (no effect, unresolved, one process).
    words = "*" if _shows(f) else f" ({cmp.outcome.words})"
    return (f"{cmp.ratio:.3f}" if cmp.ci95 is None else wording.table_ratio(cmp.ratio, cmp.ci95)) + words


def _findings(machines: list[Machine]) -> list[str]:
    by_key: dict[str, dict[str, Finding]] = {}
    first: dict[str, Finding] = {}
    for m in machines:
        for f in map(Finding.from_json, m.doc.get("verdict") or []):
            key = _finding_key(f)
            first.setdefault(key, f)
            by_key.setdefault(key, {})[m.label] = f
    if not by_key:
        return ["", "findings: none (no machine's verdict has a finding)"]
    labels = [m.label for m in machines]
    rows, worded = [], []
    for key, f in first.items():
        seen = by_key[key]
        shown = [label for label in labels if label in seen and _shows(seen[label])]
        where = ("all" if len(shown) == len(labels) else ", ".join(shown) or "none")
        if any(g.comparison is not None for g in seen.values()):
            rows.append([_finding_label(f)] + [_ratio_text(seen.get(label)) for label in labels] + [where])
        else:
            worded.append(f"  {_finding_label(f)} (shown on: {where})")
            worded += [f"    {label}: {seen[label].mark} {seen[label].message}" for label in labels if label in seen]
    lines = ["", "findings, ratio [95% CI] on each machine (* = called by that machine's verdict, (...) = "
             "not called and why, - = no such finding there):"]
    if rows:
        lines += ["  " + r for r in _table(rows, ["finding"] + labels + ["shown on"])]
    if worded:
        lines += ["", "findings without a ratio (marked as in the answer):"] + worded
    return lines


def _facts(machines: list[Machine]) -> list[str]:
    table = {m.label: facts(m.doc) for m in machines}
    # The hostname is in the machines table already.
    names = [n for n in dict.fromkeys(name for f in table.values() for name in f) if n != "hostname"]
    labels = list(table)
    differ, same = [], []
    for name in names:
        values = [table[label].get(name, "n/a") for label in labels]
        (differ if len(set(values)) > 1 else same).append([name] + values)
    if len(labels) == 1:
        return ["", f"machine {labels[0]}:"] + [f"  {r[0]}: {r[1]}" for r in same]
    lines = ["", "what differs between the machines:"]
    lines += ["  " + r for r in _table(differ, ["fact"] + labels)] if differ else ["  nothing recorded differs"]
    if same:
        lines += ["same on every machine:"] + [f"  {r[0]}: {r[1]}" for r in same]
    return lines


def _medians(machines: list[Machine]) -> list[str]:
    entries: dict[tuple[str, str], dict[str, Any]] = {}
    order: list[tuple[str, str, dict]] = []
    for m in machines:
        for e in m.doc.get("summary") or []:
            key = (e.get("phase"), cell_id(e.get("cell") or {}))
            if key not in entries:
                entries[key] = {}
                order.append((e.get("phase"), key[1], e.get("cell") or {}))
            entries[key][m.label] = e.get("median_ms")
    if not order:
        return []
    labels = [m.label for m in machines]
    # One unit per machine's column; a summary's times are in ms.
    seconds = {(phase, cid, label): None if ms is None else ms * 1e-3
               for (phase, cid), by_label in entries.items() for label, ms in by_label.items()}
    units = {label: time_unit(v for (_, _, m), v in seconds.items() if m == label) for label in labels}
    rows = [[str(phase), _settings.cell_label(cell)] + [units[label].text(seconds[(phase, cid, label)])
                                                         if label in entries[(phase, cid)] else "-"
                                                         for label in labels]
            for phase, cid, cell in order]
    header = ["phase", "cell"] + [units[label].header(label) for label in labels]
    return ["", "median per cell (ratios between two machines with their CI: python -m benchctl compare A.json "
            "B.json):"] + ["  " + r for r in format_table(rows, header, text_columns=2)]


def _warnings(machines: list[Machine]) -> list[str]:
    lines = []
    setups = {json.dumps([m.doc["workload"], m.doc["args"], m.doc["matrix"]], sort_keys=True, default=str)
              for m in machines}
    if len(setups) > 1:
        lines.append("warning: the machines ran different workloads, arguments or matrices: "
                     + "; ".join(f"{m.label}: {m.doc['workload']} {m.doc['args']} {m.doc['matrix']}"
                                 for m in machines))
    hostnames: dict[str, list[str]] = {}
    for m in machines:
        hostnames.setdefault(facts(m.doc)["hostname"], []).append(m.label)
    for name, labels in hostnames.items():
        if len(labels) > 1 and name != "n/a":
            lines.append(f"warning: {', '.join(labels)} ran on the same machine ({name}): they are one machine, "
                         f"measured {len(labels)} times")
    return lines


def _problems(machines: list[Machine]) -> list[str]:
    bad = [m for m in machines if not m.complete]
    if not bad:
        return []
    lines = ["", "hosts without complete results:"]
    for m in bad:
        lines.append(f"  {m.label}: {m.problem}")
        jobs = (m.host or {}).get("jobs") or []
        for job in jobs:
            said = ", ".join(f"{k} {job[k]}" for k in ("state", "exit_status", "hostname") if job.get(k) is not None)
            lines.append(f"    job {job.get('job_id')} ({job.get('why', 'submitted')})" + (f": {said}" if said else ""))
            if job.get("error"):
                lines.append(f"      error: {job['error']}")
        tail = next((j.get("stderr_tail") for j in reversed(jobs) if j.get("stderr_tail")), None)
        if tail:
            lines += [f"    | {t}" for t in tail.strip().splitlines()[-_TAIL_LINES:]]
    return lines


def format_machines(machines: list[Machine]) -> str:
    """The cross-machine view: machines, what differs, findings side by side, medians, hosts without results."""
    with_results = [m for m in machines if m.doc is not None]
    lines = [f"{len(machines)} machine(s), {len(with_results)} with results:"]
    rows = []
    for m in machines:
        if m.doc is None:
            rows.append([m.label, "-", (m.problem or "").split(":", 1)[0], "-"])
            continue
        recorded, expected = progress(m.doc)
        f = facts(m.doc)
        runs = f"{recorded}/{expected}" if expected is not None else f"{recorded}"
        rows.append([m.label, f["hostname"], f"{'complete' if m.complete else 'partial'}, {runs} runs",
                     f["CPU model"]])
    lines += ["  " + r for r in _table(rows, ["machine", "hostname", "results", "CPU model"])]
    if with_results:
        lines += _warnings(with_results)
        lines += _facts(with_results)
        lines += _findings(with_results)
        lines += _medians(with_results)
    lines += _problems(machines)
    return "\n".join(lines)
