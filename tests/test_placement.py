"""Which CPU each thread gets under compact, scatter and explicit lists, on fake layouts."""

import warnings

import pytest

from benchctl.placement import cpu_order, placement
from benchctl.topology import cpu_topology

from test_topology import make_sysfs, two_socket_smt


def adjacent_siblings(root):
    """2 sockets x 2 cores x 2 threads numbered so that siblings are adjacent (0,1 one core)."""
    cpus = {cpu: (cpu // 4, (cpu % 4) // 2, [cpu - cpu % 2, cpu - cpu % 2 + 1]) for cpu in range(8)}
    return make_sysfs(root, cpus, numa={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]})


def four_nodes_two_sockets(root):
    """2 sockets x 2 NUMA nodes x 1 core, no SMT: cpus 0,1 socket 0 (nodes 0,1); 2,3 socket 1 (nodes 2,3)."""
    cpus = {cpu: (cpu // 2, cpu % 2, [cpu]) for cpu in range(4)}
    return make_sysfs(root, cpus, numa={n: [n] for n in range(4)})


def test_compact_fills_physical_cores_before_siblings(tmp_path):
    two_sockets = cpu_topology(two_socket_smt(tmp_path / "a"), allowed=range(8))
    adjacent = cpu_topology(adjacent_siblings(tmp_path / "b"), allowed=range(8))
    assert cpu_order("compact", two_sockets) == [0, 1, 2, 3, 4, 5, 6, 7]
    assert cpu_order("compact", adjacent) == [0, 2, 4, 6, 1, 3, 5, 7]


def test_scatter_alternates_sockets_then_nodes(tmp_path):
    two_sockets = cpu_topology(two_socket_smt(tmp_path / "a"), allowed=range(8))
    adjacent = cpu_topology(adjacent_siblings(tmp_path / "b"), allowed=range(8))
    assert cpu_order("scatter", two_sockets) == [0, 2, 1, 3, 4, 6, 5, 7]
    assert cpu_order("scatter", adjacent) == [0, 4, 2, 6, 1, 5, 3, 7]
    # Sockets first: threads 0 and 1 land on different sockets, not on nodes 0 and 1 of socket 0.
    assert cpu_order("scatter", cpu_topology(four_nodes_two_sockets(tmp_path / "c"), allowed=range(4))) == [0, 2, 1, 3]


def test_policies_use_only_allowed_cpus(tmp_path):
    topo = cpu_topology(two_socket_smt(tmp_path), allowed={1, 2, 5, 6})
    assert placement("compact", 2, topo) == [1, 2]
    assert placement("scatter", 4, topo) == [1, 2, 5, 6]


def test_explicit_list_keeps_its_order(tmp_path):
    topo = cpu_topology(two_socket_smt(tmp_path), allowed=range(8))
    assert placement([7, 0, 3], 3, topo) == [7, 0, 3]


def test_bad_input_raises_clearly(tmp_path):
    topo = cpu_topology(two_socket_smt(tmp_path), allowed={0, 1, 4, 5})
    with pytest.raises(ValueError, match="unknown pinning policy 'tight'"):
        placement("tight", 2, topo)
    with pytest.raises(ValueError, match=r"outside this process's allowed CPUs \(0-1,4-5\)"):
        placement([0, 2], 2, topo)
    with pytest.raises(TypeError, match="the CPU id at position 1 must be an integer, got str"):
        placement([0, "1"], 2, topo)
    with pytest.raises(ValueError, match="a list of CPU ids"):
        placement(3, 1, topo)
    with pytest.raises(ValueError, match="one CPU per thread"):
        placement([0, 1, 4], 2, topo)
    with pytest.raises(ValueError, match="no CPU ids given: give one CPU per thread of the team, or a policy"):
        placement([], 2, topo)  # its hint was set_num_threads(0), which is refused
    with pytest.raises(ValueError, match="num_threads must be >= 1"):
        placement("compact", 0, topo)
    with pytest.raises(TypeError, match="num_threads must be an integer"):
        placement("compact", 2.0, topo)
    with pytest.raises(ValueError, match="5 threads but only 4 allowed CPUs"):
        placement("compact", 5, topo)
    with pytest.raises(ValueError, match="several threads"):
        placement([0, 0], 2, topo)


def test_oversubscription_is_a_warning_when_asked_for(tmp_path):
    topo = cpu_topology(two_socket_smt(tmp_path), allowed={0, 1})
    with pytest.warns(RuntimeWarning, match=r"oversubscribed: CPUs \[0\]"):
        assert placement("compact", 3, topo, oversubscribe=True) == [0, 1, 0]
    with pytest.warns(RuntimeWarning, match="oversubscribed"):
        assert placement([1, 1], 2, topo, oversubscribe=True) == [1, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert placement("compact", 2, topo, oversubscribe=True) == [0, 1]
