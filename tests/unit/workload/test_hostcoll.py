"""Host-level collective phases: ring, NCCL tree, all-to-all, merging, coflows."""

from __future__ import annotations

import pytest

from workload import hostcoll
from workload.dag import CoflowIdentity, CoflowType


def pairs(phase):
    """The phase's (src, dst) -> bytes."""
    return dict(phase.pairs)


def test_ring_all_reduce_collapsed():
    # 4 ranks on 4 hosts, S = 400: 2(n-1) = 6 steps of S/n = 100 on each ring link.
    p = hostcoll.ring_phase("all_reduce", [0, 1, 2, 3], 400)
    assert pairs(p) == {(0, 1): 600, (1, 2): 600, (2, 3): 600, (3, 0): 600}


def test_ring_all_gather_drops_intra_host_links():
    # 4 ranks on hosts [0, 0, 1, 1], S = 400: n-1 = 3 steps of 100; links 0->0 and 1->1
    # stay inside a host, 0->1 and 1->0 carry 300 each.
    p = hostcoll.ring_phase("all_gather", [0, 0, 1, 1], 400)
    assert pairs(p) == {(0, 1): 300, (1, 0): 300}


def test_tree_up_and_down():
    # 4 nodes, S = 200: trees 0<-2<-{1,3} and (mirror) 3<-1<-{2,0}; every edge carries
    # S/2 = 100 up (child -> parent) and the same down.
    up, down = hostcoll.tree_phases([0, 1, 2, 3], 200)
    assert pairs(up) == {
        (2, 0): 100,
        (1, 2): 100,
        (3, 2): 100,
        (1, 3): 100,
        (0, 1): 100,
        (2, 1): 100,
    }
    assert pairs(down) == {(b, a): v for (a, b), v in pairs(up).items()}
    assert (up.tag, down.tag) == ("up", "down")


def test_tree_nodes_are_named_hosts():
    # nodes [5, 7] (2-node trees: 5<-7 and 7<-5): S/2 each way in each phase.
    up, down = hostcoll.tree_phases([5, 7], 10)
    assert pairs(up) == {(7, 5): 5, (5, 7): 5} == pairs(down)


def test_all_reduce_phases_follow_the_algorithm():
    assert [p.tag for p in hostcoll.all_reduce_phases("ring", [0, 1, 2], 9, 100)] == [""]
    assert [p.tag for p in hostcoll.all_reduce_phases("tree", [0, 1, 2], 9, 100)] == ["up", "down"]


def test_a2a_sends_s_over_n_to_each_other_rank():
    # 3 ranks on hosts [0, 0, 1], S = 300: each rank sends 100 to each other rank; host 0's
    # two ranks send 100 each to host 1 (200), host 1's rank sends 100 to each of host 0's.
    assert pairs(hostcoll.a2a_phase([0, 0, 1], 300)) == {(0, 1): 200, (1, 0): 200}


def test_merge_adds_parallel_groups_phase_by_phase():
    a = hostcoll.tree_phases([0, 1], 10)
    b = hostcoll.tree_phases([0, 1], 30)
    up, down = hostcoll.merge([list(a), list(b)])
    assert pairs(up) == {(1, 0): 20, (0, 1): 20} == pairs(down)


def test_merge_drops_empty_phases():
    assert hostcoll.merge([[hostcoll.ring_phase("all_gather", [0, 0], 4)]]) == []


def test_chain_coflows_ids_steps_deps_scale():
    up, down = hostcoll.tree_phases([0, 1], 10)
    ident = CoflowIdentity(CoflowType.DP, "j", collective="all_reduce")
    made = hostcoll.chain_coflows("x", [up, down], ["a", "b"], ident, ["c0"], 0.25)
    assert [c.coflow_id for c in made] == ["x.up", "x.down"]
    assert [c.deps for c in made] == [("c0",), ("x.up",)]
    assert [c.identity.step for c in made] == [0, 1]
    # 5 bytes x 0.25 = 1.25 -> 1 per flow
    assert [f.bytes for f in made[0].flows] == [1, 1]
    assert {(f.src, f.dst) for f in made[1].flows} == {("a", "b"), ("b", "a")}


def test_unknown_ring_collective():
    with pytest.raises(ValueError, match="unknown collective"):
        hostcoll.ring_phase("all_to_all", [0, 1], 1)
