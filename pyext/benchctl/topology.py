"""The CPUs this process may run on, and how they are built.

Everything comes from sysfs (never from parsing ``lscpu``):

* allowed CPUs: the calling thread's affinity mask (``os.sched_getaffinity(0)``),
  which is what a container's restricted cpuset or ``taskset`` leaves us
  (while :func:`benchctl.threads.pin` holds the thread to one CPU, that one
  CPU; the threads module passes the masks from before pinning instead);
* SMT siblings and physical cores: ``cpu/cpuN/topology/thread_siblings_list``
  (a core *is* its set of sibling hardware threads, which stays unique where
  ``core_id`` repeats across packages), with ``core_id`` and
  ``physical_package_id`` (the socket);
* NUMA nodes: ``node/nodeN/cpulist``.

Where sysfs lacks a file (some VMs and sandboxes), each CPU counts as its own
core on socket 0 / node 0, and ``source`` says so.
"""

from __future__ import annotations

import os
import re

from ._procfs import read_text

__all__ = [
    "parse_cpu_list", "format_cpu_list", "cpu_topology",
]


def parse_cpu_list(text: str) -> list[int]:
    """``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]`` (the kernel's list format)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"not a CPU list: {text!r}")
        cpus.update(range(int(lo), int(hi) + 1) if sep else (int(lo),))
    return sorted(cpus)


def format_cpu_list(cpus) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``."""
    ordered = sorted(set(cpus))
    runs: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(runs)


def _listed_ids(directory: str, prefix: str) -> list[int]:
    """Ids of the ``<prefix>N`` entries of a sysfs directory."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)$")
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(int(m.group(1)) for m in map(pattern.match, names) if m)


def _online_cpus(cpu_dir: str) -> list[int]:
    online = read_text(os.path.join(cpu_dir, "online"))
    return parse_cpu_list(online) if online else _listed_ids(cpu_dir, "cpu")


def _cpu_records(cpu_dir: str, cpus: list[int]) -> tuple[dict[int, dict], str]:
    """Per CPU: socket, core_id and sibling set; plus where that came from."""
    records: dict[int, dict] = {}
    missing = []
    for cpu in cpus:
        topo = os.path.join(cpu_dir, f"cpu{cpu}", "topology")
        siblings = read_text(os.path.join(topo, "thread_siblings_list"))
        package = read_text(os.path.join(topo, "physical_package_id"))
        core_id = read_text(os.path.join(topo, "core_id"))
        if siblings is None or package is None or core_id is None:
            missing.append(cpu)
            records[cpu] = {"socket": 0, "core_id": cpu, "siblings": (cpu,)}
            continue
        records[cpu] = {
            "socket": int(package),
            "core_id": int(core_id),
            "siblings": tuple(parse_cpu_list(siblings)),
        }
    if not missing:
        return records, "sysfs"
    return records, f"sysfs lacks topology for CPUs {format_cpu_list(missing)}: each taken as its own core on socket 0"


def _numa_nodes(node_dir: str) -> dict[int, list[int]]:
    nodes = {}
    for node in _listed_ids(node_dir, "node"):
        cpulist = read_text(os.path.join(node_dir, f"node{node}", "cpulist"))
        if cpulist is not None:
            nodes[node] = parse_cpu_list(cpulist)
    return nodes


def _cores(allowed_cpus: list[int], records: dict[int, dict], node_of: dict[int, int]) -> list[dict]:
    """Physical cores with at least one allowed CPU, ordered by socket then lowest CPU id."""
    by_core: dict[tuple, dict] = {}
    for cpu in allowed_cpus:
        rec = records[cpu]
        core = by_core.setdefault(
            (rec["socket"], rec["siblings"]),
            {
                "socket": rec["socket"],
                "core_id": rec["core_id"],
                "node": node_of.get(cpu, 0),
                "cpus": [],
                "siblings": list(rec["siblings"]),
            },
        )
        core["cpus"].append(cpu)
    return sorted(by_core.values(), key=lambda c: (c["socket"], c["cpus"][0]))


def _sockets(cores: list[dict]) -> list[dict]:
    sockets = []
    for socket in sorted({c["socket"] for c in cores}):
        mine = [c for c in cores if c["socket"] == socket]
        sockets.append({"socket": socket, "cpus": sorted(x for c in mine for x in c["cpus"]), "cores": len(mine)})
    return sockets


def _allowed_per_node(allowed_cpus: list[int], node_of: dict[int, int]) -> list[dict]:
    nodes: dict[int, list[int]] = {}
    for cpu in allowed_cpus:
        nodes.setdefault(node_of.get(cpu, 0), []).append(cpu)
    return [{"node": n, "cpus": cpus} for n, cpus in sorted(nodes.items())]


def cpu_topology(sysfs_root: str = "/sys", allowed=None) -> dict:
    """Describe the CPUs this process may use.

    ``allowed`` defaults to ``os.sched_getaffinity(0)``; ``sysfs_root`` lets
    tests point at a fake tree. Returns a JSON-ready dict:

    * ``allowed_cpus``: sorted ids this process may run on (and that are online);
    * ``online_cpus``: every online CPU of the machine;
    * ``cores``: physical cores with at least one allowed CPU, ordered by
      socket then lowest CPU id, each ``{"socket", "core_id", "node", "cpus",
      "siblings"}`` (``cpus``: its allowed hardware threads; ``siblings``: all);
    * ``sockets``: ``[{"socket", "cpus", "cores"}]`` over allowed CPUs;
    * ``numa_nodes``: ``[{"node", "cpus"}]`` over allowed CPUs;
    * ``smt``: whether any core offers this process more than one thread;
    * ``source``: where the core and NUMA facts came from.
    """
    cpu_dir = os.path.join(sysfs_root, "devices", "system", "cpu")
    node_dir = os.path.join(sysfs_root, "devices", "system", "node")
    online = _online_cpus(cpu_dir)
    allowed_set = set(os.sched_getaffinity(0) if allowed is None else allowed)
    allowed_cpus = sorted(allowed_set & set(online)) if online else sorted(allowed_set)

    records, topology_source = _cpu_records(cpu_dir, allowed_cpus)
    node_cpus = _numa_nodes(node_dir)
    node_of = {cpu: node for node, cpus in node_cpus.items() for cpu in cpus}
    numa_source = "sysfs" if node_cpus else "sysfs has no NUMA nodes: one node 0 assumed"
    cores = _cores(allowed_cpus, records, node_of)
    return {
        "allowed_cpus": allowed_cpus,
        "online_cpus": online,
        "cores": cores,
        "sockets": _sockets(cores),
        "numa_nodes": _allowed_per_node(allowed_cpus, node_of),
        "smt": any(len(c["cpus"]) > 1 for c in cores),
        "source": {"cores": topology_source, "numa": numa_source},
    }
