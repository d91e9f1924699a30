"""Ring edges, gate skew, host aggregation and Hermod's matching decomposition."""

from __future__ import annotations

import numpy as np
import pytest

from workload import collectives as coll


def test_ring_edges_skip_intra_host_links():
    # 4 ranks, 2 per host: only 0->1 (rank1 -> rank2) and 1->0 (rank3 -> rank0) cross
    assert coll.ring_edge_weights(coll.dense_dp_rings(4, 2)) == {(0, 1): 1, (1, 0): 1}
    assert coll.ring_edge_weights(coll.dense_dp_rings(3, 1)) == {(0, 1): 1, (1, 2): 1, (2, 0): 1}
    assert coll.ring_edge_weights(coll.dense_dp_rings(4, 4)) == {}


def test_expert_dp_rings_stride_ep():
    assert coll.expert_dp_rings(8, 4, 1) == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_gate_uniform_without_skew_and_seeded_with_skew():
    pop = coll.gate_popularity(8, 0.0, np.random.default_rng(1))
    assert np.allclose(pop, 1 / 8)
    a = coll.gate_popularity(8, 1.0, np.random.default_rng(7))
    b = coll.gate_popularity(8, 1.0, np.random.default_rng(7))
    assert np.array_equal(a, b) and a.sum() == pytest.approx(1.0)
    assert a.max() / a.min() == pytest.approx(8.0)  # Zipf(1) over 8 experts


def test_rank_and_host_matrix():
    pop = np.full(8, 1 / 8)
    ranks = coll.a2a_rank_matrix(800.0, 4, pop)
    assert np.allclose(ranks, 200.0)
    hosts = coll.host_matrix(ranks, 2)
    assert np.allclose(hosts, [[0, 800], [800, 0]])  # 2x2 blocks of 200, diagonal dropped


def _check_decomposition(matrix):
    phases = coll.decompose_matchings(matrix)
    total = np.zeros_like(matrix)
    for phase in phases:
        srcs = [a for a, _, _ in phase]
        dsts = [b for _, b, _ in phase]
        assert len(set(srcs)) == len(srcs) and len(set(dsts)) == len(dsts)  # a matching
        assert len({n for _, _, n in phase}) == 1 and phase[0][2] > 0
        for a, b, n in phase:
            total[a, b] += n
    assert np.array_equal(total, matrix)
    return phases


@pytest.mark.parametrize("seed", range(6))
def test_decomposition_sends_exactly_the_matrix(seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 1000, size=(6, 6))
    np.fill_diagonal(m, 0)
    m[rng.random((6, 6)) < 0.2] = 0
    _check_decomposition(m)


def test_decomposition_takes_max_weight_matching_first():
    m = np.array([[0, 9, 1], [1, 0, 9], [9, 1, 0]])
    phases = _check_decomposition(m)
    assert sorted((a, b) for a, b, _ in phases[0]) == [(0, 1), (1, 2), (2, 0)]
    assert phases[0][0][2] == 9


def test_decomposition_rejects_negative():
    with pytest.raises(ValueError):
        coll.decompose_matchings(np.array([[0, -1], [1, 0]]))
