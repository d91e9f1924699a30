"""Collectives at host level: which host pairs a ring crosses, the EP all-to-all
traffic matrix (with a seeded, skewed gate) and Hermod's matching decomposition.

Hosts are indices within one pipeline stage.  Traffic between ranks on the same host
(NVLink) never reaches the fabric and is dropped here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

Edge = tuple[int, int]


def ring_edge_weights(rings: Iterable[Sequence[int]]) -> Counter[Edge]:
    """Count, over all rings (host index of each rank, in ring order), the ring links
    that go from one host to another (rank r sends to rank r+1, the last to the first)."""
    edges: Counter[Edge] = Counter()
    for ring in rings:
        n = len(ring)
        if n < 2:
            continue
        for a, b in zip(ring, list(ring[1:]) + [ring[0]]):
            if a != b:
                edges[(a, b)] += 1
    return edges


def dense_dp_rings(dp: int, k: int) -> list[list[int]]:
    """The DP ring of one TP rank: DP ranks 0..dp−1, k consecutive ranks per host."""
    return [[r // k for r in range(dp)]]


def expert_dp_rings(dp: int, ep: int, k: int) -> list[list[int]]:
    """Expert-DP rings: ranks at the same position of every EP group (stride ep)."""
    return [[(g + ep * q) // k for q in range(dp // ep)] for g in range(ep)]


def gate_popularity(experts: int, skew: float, rng: np.random.Generator) -> np.ndarray:
    """Share of routed tokens per expert: Zipf weights 1/rank**skew over a seeded random
    permutation of the experts (skew 0 = uniform); sums to 1."""
    w = 1.0 / np.arange(1, experts + 1, dtype=float) ** skew
    w = w[rng.permutation(experts)] if skew > 0 else w
    return w / w.sum()


def a2a_rank_matrix(per_rank_bytes: float, ep: int, popularity: np.ndarray) -> np.ndarray:
    """Dispatch matrix of one EP group (ep x ep, bytes): rank i sends to rank j the
    share of its tokens routed to j's experts (experts split evenly, in order)."""
    per_rank_load = popularity.reshape(ep, -1).sum(axis=1)
    return np.outer(np.full(ep, float(per_rank_bytes)), per_rank_load)


def host_matrix(rank_matrix: np.ndarray, k: int) -> np.ndarray:
    """Aggregate a rank matrix to hosts of k consecutive ranks; intra-host traffic
    (the diagonal blocks) is dropped."""
    n = rank_matrix.shape[0] // k
    m = rank_matrix.reshape(n, k, n, k).sum(axis=(1, 3))
    np.fill_diagonal(m, 0.0)
    return m


def scale_bytes(matrix: np.ndarray, scale: float) -> np.ndarray:
    """Scaled integer bytes; a positive entry never rounds down to zero."""
    out = np.rint(matrix * scale).astype(np.int64)
    out[(matrix > 0) & (out == 0)] = 1
    return out


def decompose_matchings(matrix: np.ndarray) -> list[list[tuple[int, int, int]]]:
    """Hermod's sub-phases of an all-to-all: repeatedly take a maximum-weight matching
    of the remaining matrix (Hungarian algorithm on −T), send every matched positive
    entry for the smallest matched positive amount, subtract, until nothing is left.
    Each phase is a list of (src, dst, bytes); together they send exactly ``matrix``."""
    rest = np.array(matrix, dtype=np.int64, copy=True)
    if (rest < 0).any():
        raise ValueError("decompose_matchings: negative entry in the traffic matrix")
    phases: list[list[tuple[int, int, int]]] = []
    while rest.any():
        rows, cols = linear_sum_assignment(-rest)
        vals = rest[rows, cols]
        keep = vals > 0
        rows, cols = rows[keep], cols[keep]
        amount = int(vals[keep].min())
        rest[rows, cols] -= amount
        phases.append([(int(i), int(j), amount) for i, j in zip(rows, cols)])
    return phases
