"""NCCL's double binary tree (trees.cc) and the ring/tree cost model (tuning.cc)."""

from __future__ import annotations

import pytest

from workload import nccl


def parents(tree):
    """Parent of each rank."""
    return [t.parent for t in tree]


def test_btree_is_ncclGetBtree_illustration():
    # trees.cc draws the 14-rank btree: 0-8; 8: 4, 12; 4: 2, 6; 12: 10, 13; 2: 1, 3;
    # 6: 5, 7; 10: 9, 11.  Parent of each rank read off that picture:
    assert parents(nccl.btree(14, r) for r in range(14)) == [
        -1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12,
    ]  # fmt: skip
    assert nccl.btree(14, 8).children == (4, 12)
    assert nccl.btree(14, 0).children == (8,)


def test_dtree_mirrors_for_even_and_shifts_for_odd():
    # trees.cc, 12 ranks: the second tree is the mirror r -> 11 - r (root 11, 11: 3;
    # 3: 1, 7; ...); 13 ranks: shifted by one, r -> r + 1 (root 1, 1: 9).
    first, second = nccl.dtree(12)
    assert parents(second) == [11 - p if p >= 0 else -1 for p in parents(reversed(first))]
    assert second[11].children == (3,) and set(second[3].children) == {1, 7}
    first, second = nccl.dtree(13)
    assert parents(second)[1] == -1 and second[1].children == (9,)
    assert set(second[9].children) == {5, 0}


@pytest.mark.parametrize("n", [3, 4, 5, 8, 13, 16])
def test_each_tree_spans_all_ranks(n):
    # n-1 edges per tree, 2(n-1) in all, and every rank but the root has a parent.
    edges = nccl.tree_edges(n)
    assert len(edges) == 2 * (n - 1)
    for tree in nccl.dtree(n):
        assert sorted(r for r, t in enumerate(tree) if t.parent < 0) != []
        assert sum(t.parent >= 0 for t in tree) == n - 1


def test_tree_bytes_per_rank_2S_ring_2n1_over_n():
    # S = 1 MB, n = 8.  Tree: an inner rank (two children in one tree, a parent in both)
    # sends S/2 up in each tree plus S/2 to each of two children: 2S; the two roots'
    # ranks (0 and 7: one child, parent in one tree only) send S/2 + S/2 = S.
    # Ring: every rank sends 2(n-1)/n·S = 1.75 S.  Totals agree: 2(n-1)·S = 14 S.
    s = 1e6
    sent = nccl.tree_send_bytes(8, s)
    assert sent == [s, 2 * s, 2 * s, 2 * s, 2 * s, 2 * s, 2 * s, s]
    assert nccl.ring_send_bytes(8, s) == 1.75 * s
    assert sum(sent) == pytest.approx(8 * nccl.ring_send_bytes(8, s)) == 14 * s


def test_cost_model_latency_terms():
    # Zero bytes: ring (8.4 + 2(n-1)·14)·1.4 µs, tree 8.4 + 2·floor(log2 n)·14 µs.
    # n = 16: ring (8.4 + 420)·1.4 = 599.76, tree 8.4 + 112 = 120.4.
    assert nccl.ring_time_us(16, 0, 100) == pytest.approx(599.76)
    assert nccl.tree_time_us(16, 0, 100) == pytest.approx(120.4)


def test_cost_model_bandwidth_terms():
    # 1 GiB (correction 1.0 beyond 256 MiB) at 100 Gbit/s = 12500 B/µs.  Ring algo bw
    # 12500·16/30, tree 12500·0.5·0.92 = 5750 B/µs.
    s = 2**30
    assert nccl.ring_time_us(16, s, 100) == pytest.approx(599.76 + s * 30 / 16 / 12500)
    assert nccl.tree_time_us(16, s, 100) == pytest.approx(120.4 + s / 5750)


def test_auto_picks_tree_for_small_messages_and_many_nodes():
    # 16 nodes: 1 MiB -> tree (latency dominates), 1 GiB -> ring (tree's 0.46 bus
    # bandwidth loses to ring's 16/30).  1 MiB over 4 nodes -> ring (3 ring hops only).
    assert nccl.pick_algorithm("auto", 16, 2**20, 100) == "tree"
    assert nccl.pick_algorithm("auto", 16, 2**30, 100) == "ring"
    assert nccl.pick_algorithm("auto", 4, 2**20, 100) == "ring"
    assert nccl.pick_algorithm("auto", 2, 1, 100) == "ring"
    assert nccl.pick_algorithm("tree", 2, 2**30, 100) == "tree"
