"""Which CPU each thread of a team gets under a pinning policy.

Pure functions over :func:`benchctl.topology.cpu_topology`'s dict, so the
policies can be checked against any machine's layout without that machine.

Policies (thread ``i`` takes the ``i``-th CPU of the order):

* ``"compact"``: one thread per physical core first, cores in socket order,
  then the cores' second hardware threads, and so on (SMT siblings last);
* ``"scatter"``: like compact, but consecutive threads alternate between
  sockets, and between NUMA nodes within a socket;
* a list of CPU ids: thread ``i`` runs on ``cpus[i]``.
"""

from __future__ import annotations

import warnings

from . import _validate
from .topology import format_cpu_list

__all__ = [
    "POLICIES", "cpu_order", "placement",
]

POLICIES = ("compact", "scatter")


def _interleave(groups: list[list]) -> list:
    """Round-robin: first of each group, then second of each, ..."""
    out = []
    for depth in range(max((len(g) for g in groups), default=0)):
        out.extend(g[depth] for g in groups if depth < len(g))
    return out


def _core_order(policy: str, cores: list[dict]) -> list[dict]:
    if policy == "compact":
        return cores
    per_socket = []
    for socket in sorted({c["socket"] for c in cores}):
        mine = [c for c in cores if c["socket"] == socket]
        per_node = [[c for c in mine if c["node"] == node] for node in sorted({c["node"] for c in mine})]
        per_socket.append(_interleave(per_node))
    return _interleave(per_socket)


def cpu_order(policy: str, topology: dict) -> list[int]:
    """Every allowed CPU, in the order a ``policy`` team takes them."""
    if policy not in POLICIES:
        raise ValueError(f"unknown pinning policy {policy!r}: use one of {POLICIES} or a list of CPU ids")
    cores = _core_order(policy, topology["cores"])
    # Each core's first allowed thread, then its second, ...: siblings last.
    return _interleave([c["cpus"] for c in cores])


def _explicit_cpus(policy, allowed: list[int]) -> list[int]:
    try:
        cpus = list(policy)
    except TypeError:
        raise ValueError(
            f"pinning policy must be one of {POLICIES} or a list of CPU ids, got {policy!r}"
        ) from None
    cpus = [_validate.count(f"the CPU id at position {i}", c, 0) for i, c in enumerate(cpus)]
    outside = [c for c in cpus if c not in set(allowed)]
    if outside:
        raise ValueError(
            f"CPU ids {outside} are outside this process's allowed CPUs "
            f"({format_cpu_list(allowed)}); see benchctl.topology.cpu_topology()"
        )
    return cpus


def placement(policy, num_threads: int, topology: dict, oversubscribe: bool = False) -> list[int]:
    """One CPU per thread (``num_threads`` of them) for ``policy``.

    Raises :class:`benchctl.ArgumentError` (a TypeError and a ValueError) for
    a count or CPU id that is not an integer (or is below 1 / 0), and
    ValueError for an unknown policy, ids outside the allowed CPUs, an
    explicit list whose length is not ``num_threads``, or more threads than
    allowed CPUs / a CPU given twice unless ``oversubscribe=True`` (then a
    RuntimeWarning says which CPUs are shared).
    """
    num_threads = _validate.count("num_threads", num_threads, 1)
    allowed = topology["allowed_cpus"]
    if isinstance(policy, str):
        order = cpu_order(policy, topology)
        if num_threads > len(order) and not oversubscribe:
            raise ValueError(
                f"{num_threads} threads but only {len(order)} allowed CPUs ({format_cpu_list(allowed)}): "
                f"lower the thread count (benchctl.threads.set_num_threads({len(order)})) "
                f"or pass oversubscribe=True to share CPUs"
            )
        cpus = [order[i % len(order)] for i in range(num_threads)]
    else:
        cpus = _explicit_cpus(policy, allowed)
        if not cpus:
            raise ValueError("no CPU ids given: give one CPU per thread of the team, or a policy "
                             "('compact', 'scatter')")
        if len(cpus) != num_threads:
            raise ValueError(
                f"{len(cpus)} CPU ids for a team of {num_threads} threads: give one CPU per thread "
                f"(or set_num_threads({len(cpus)}) first)"
            )
    shared = sorted({c for c in cpus if cpus.count(c) > 1})
    if shared:
        if not oversubscribe:
            raise ValueError(
                f"CPUs {shared} would each run several threads; pass oversubscribe=True if that is intended"
            )
        warnings.warn(f"oversubscribed: CPUs {shared} each run several team threads", RuntimeWarning, stacklevel=3)
    return cpus
