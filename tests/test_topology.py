"""CPU topology from sysfs, checked on fake sysfs trees and on this machine."""

import os

import pytest

from benchctl.topology import cpu_topology, format_cpu_list, parse_cpu_list


def make_sysfs(root, cpus, numa=None, online=None):
    """Write a fake /sys: ``cpus`` maps cpu -> (socket, core_id, siblings list); ``numa`` node -> cpus."""
    cpu_dir = root / "devices" / "system" / "cpu"
    cpu_dir.mkdir(parents=True)
    (cpu_dir / "online").write_text((online or format_cpu_list(cpus)) + "\n")
    for cpu, (socket, core_id, siblings) in cpus.items():
        topo = cpu_dir / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text(f"{socket}\n")
        (topo / "core_id").write_text(f"{core_id}\n")
        (topo / "thread_siblings_list").write_text(format_cpu_list(siblings) + "\n")
    for node, node_cpus in (numa or {}).items():
        node_dir = root / "devices" / "system" / "node" / f"node{node}"
        node_dir.mkdir(parents=True)
        (node_dir / "cpulist").write_text(format_cpu_list(node_cpus) + "\n")
    return str(root)


def two_socket_smt(root):
    """2 sockets x 2 cores x 2 threads, Linux numbering: cpu i and i+4 are siblings.

    core_id repeats across sockets (0, 1 on each), as on real machines.
    """
    cpus = {}
    for first in range(4):
        socket, core_id = divmod(first, 2)
        for cpu in (first, first + 4):
            cpus[cpu] = (socket, core_id, [first, first + 4])
    return make_sysfs(root, cpus, numa={0: [0, 1, 4, 5], 1: [2, 3, 6, 7]})


def test_cpu_list_format_round_trips():
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpu_list("") == []
    assert format_cpu_list([5, 0, 1, 2, 7]) == "0-2,5,7"
    for bad in ("0-", "a", "1-b"):
        with pytest.raises(ValueError, match="not a CPU list"):
            parse_cpu_list(bad)


def test_two_socket_smt_layout(tmp_path):
    topo = cpu_topology(two_socket_smt(tmp_path), allowed=range(8))
    assert topo["allowed_cpus"] == list(range(8))
    assert topo["online_cpus"] == list(range(8))
    # Four physical cores although core_id only takes the values 0 and 1.
    assert [(c["socket"], c["core_id"], c["cpus"], c["node"]) for c in topo["cores"]] == [
        (0, 0, [0, 4], 0),
        (0, 1, [1, 5], 0),
        (1, 0, [2, 6], 1),
        (1, 1, [3, 7], 1),
    ]
    assert topo["sockets"] == [
        {"socket": 0, "cpus": [0, 1, 4, 5], "cores": 2},
        {"socket": 1, "cpus": [2, 3, 6, 7], "cores": 2},
    ]
    assert topo["numa_nodes"] == [{"node": 0, "cpus": [0, 1, 4, 5]}, {"node": 1, "cpus": [2, 3, 6, 7]}]
    assert topo["smt"] is True
    assert topo["source"] == {"cores": "sysfs", "numa": "sysfs"}


def test_restricted_cpuset_keeps_only_allowed_cpus(tmp_path):
    # As in a container given cpuset 1,2,5,6: one core per socket, both of its threads.
    topo = cpu_topology(two_socket_smt(tmp_path), allowed={1, 2, 5, 6, 42})
    assert topo["allowed_cpus"] == [1, 2, 5, 6], "CPUs that are not online are not usable"
    assert [(c["cpus"], c["siblings"]) for c in topo["cores"]] == [([1, 5], [1, 5]), ([2, 6], [2, 6])]
    assert [s["cpus"] for s in topo["sockets"]] == [[1, 5], [2, 6]]
    # One thread of a core allowed: the core is listed, without SMT for us.
    topo = cpu_topology(str(tmp_path), allowed={0, 1})
    assert [(c["cpus"], c["siblings"]) for c in topo["cores"]] == [([0], [0, 4]), ([1], [1, 5])]
    assert topo["smt"] is False


def test_missing_topology_files_fall_back_and_say_so(tmp_path):
    cpu_dir = tmp_path / "devices" / "system" / "cpu"
    for cpu in range(3):
        (cpu_dir / f"cpu{cpu}").mkdir(parents=True)  # no online file, no topology/
    topo = cpu_topology(str(tmp_path), allowed={0, 2})
    assert topo["allowed_cpus"] == [0, 2]
    assert [c["cpus"] for c in topo["cores"]] == [[0], [2]]
    assert topo["numa_nodes"] == [{"node": 0, "cpus": [0, 2]}]
    assert "each taken as its own core" in topo["source"]["cores"]
    assert "no NUMA nodes" in topo["source"]["numa"]


def test_this_machine_matches_the_affinity_mask():
    topo = cpu_topology()
    assert topo["allowed_cpus"] == sorted(os.sched_getaffinity(0))
    in_cores = [cpu for core in topo["cores"] for cpu in core["cpus"]]
    assert sorted(in_cores) == topo["allowed_cpus"], "each allowed CPU belongs to exactly one core"
    assert sorted(c for s in topo["sockets"] for c in s["cpus"]) == topo["allowed_cpus"]
    assert sorted(c for n in topo["numa_nodes"] for c in n["cpus"]) == topo["allowed_cpus"]
    for core in topo["cores"]:
        assert set(core["cpus"]) <= set(core["siblings"])
