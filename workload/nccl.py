"""NCCL's all-reduce algorithms as rank arithmetic: the double binary tree (ported from
NCCL ``src/graph/trees.cc``: ``ncclGetBtree`` / ``ncclGetDtree``), the bytes a rank
sends under ring and tree, and the ``auto`` choice between them (a reduced form of
NCCL's cost model, ``src/graph/tuning.cc``, Simple protocol; see docs/workloads.md).

Ranks here are the tree's nodes (hosts: NCCL builds trees between nodes and chains the
GPUs inside a node), numbered 0..n-1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ALGORITHMS = ("ring", "tree", "auto")
# tuning.cc defaults, Simple protocol (µs): base latency of tree and ring, and the
# network hop latency both use with one GPU per NIC (hwLatencies[NET][TREE][SIMPLE]).
BASE_LAT_US = 8.4
NET_LAT_US = 14.0
RING_PLATEAU = 1.4  # ring Simple all-reduce latency factor across nodes (sm80+)
TREE_BUS_FACTOR = 0.92  # tree all-reduce bus bandwidth x .92, then algo bw = bus bw x .5
# treeCorrectionFactor[SIMPLE][log2(bytes/64)], 64 B .. 256 MiB (1.0 beyond)
TREE_CORRECTION = (
    0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5,
    0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9,
)  # fmt: skip
DEFAULT_LINK_GBPS = 100.0


@dataclass(frozen=True, slots=True)
class TreeNode:
    """One rank's place in a binary tree: parent (-1 at the root) and children."""

    parent: int
    children: tuple[int, ...]


def btree(n: int, rank: int) -> TreeNode:
    """NCCL's binary tree over n ranks rooted at 0 (ncclGetBtree): the parent flips the
    lowest set bit up one place, the children sit half that bit below and above."""
    bit = 1
    while bit < n and not bit & rank:
        bit <<= 1
    if rank == 0:
        return TreeNode(-1, (bit >> 1,) if n > 1 else ())
    up = (rank ^ bit) | (bit << 1)
    if up >= n:
        up = rank ^ bit
    low = bit >> 1
    kids = [] if low == 0 else [rank - low]
    while low and rank + low >= n:
        low >>= 1
    if low:
        kids.append(rank + low)
    return TreeNode(up, tuple(kids))


def dtree(n: int) -> tuple[tuple[TreeNode, ...], tuple[TreeNode, ...]]:
    """NCCL's double binary tree (ncclGetDtree): the btree, and a mirrored (n even) or
    shifted-by-one (n odd) copy, so that a rank inner in one tree is a leaf in the other."""
    first = tuple(btree(n, r) for r in range(n))
    if n % 2:
        move = lambda r: (r + 1) % n  # noqa: E731
        src = [btree(n, (r - 1) % n) for r in range(n)]
    else:
        move = lambda r: n - 1 - r  # noqa: E731
        src = [btree(n, n - 1 - r) for r in range(n)]
    second = tuple(
        TreeNode(-1 if t.parent < 0 else move(t.parent), tuple(move(c) for c in t.children))
        for t in src
    )
    return first, second


def tree_edges(n: int) -> list[tuple[int, int]]:
    """(child, parent) of every edge of both trees; each tree carries half the data."""
    return [(r, t.parent) for tree in dtree(n) for r, t in enumerate(tree) if t.parent >= 0]


def tree_send_bytes(n: int, size: float) -> list[float]:
    """Bytes each rank sends in a tree all-reduce of ``size``: per tree S/2 up to its
    parent (reduce) and S/2 down to each child (broadcast); 2S for a rank with two
    children in one tree and a parent in both."""
    out = [0.0] * n
    for tree in dtree(n):
        for r, t in enumerate(tree):
            out[r] += size / 2 * ((t.parent >= 0) + len(t.children))
    return out


def ring_send_bytes(n: int, size: float) -> float:
    """Bytes each rank sends in a ring all-reduce of ``size``: 2(n-1)/n·S."""
    return 2 * (n - 1) / n * size


def _tree_correction(nbytes: float) -> float:
    """NCCL's empirical tree bandwidth correction for medium sizes."""
    log = int(math.log2(nbytes / 64)) if nbytes >= 64 else -1
    return TREE_CORRECTION[log] if 0 <= log < len(TREE_CORRECTION) else 1.0


def ring_time_us(n: int, nbytes: float, link_gbps: float) -> float:
    """NCCL's ring all-reduce estimate: latency of 2(n-1) network steps (x1.4 plateau)
    plus S over the algorithm bandwidth bus_bw·n/(2(n-1))."""
    bus = link_gbps / 8 * 1e3  # bytes per µs
    lat = (BASE_LAT_US + 2 * (n - 1) * NET_LAT_US) * RING_PLATEAU
    return lat + nbytes / (bus * n / (2 * (n - 1)))


def tree_time_us(n: int, nbytes: float, link_gbps: float) -> float:
    """NCCL's tree all-reduce estimate: latency of 2·log2(n) network hops plus S over
    the algorithm bandwidth 0.5·0.92·bus_bw (times the medium-size correction)."""
    bus = link_gbps / 8 * 1e3
    lat = BASE_LAT_US + 2 * int(math.log2(n)) * NET_LAT_US
    return lat + nbytes / (0.5 * TREE_BUS_FACTOR * bus * _tree_correction(nbytes))


def pick_algorithm(algorithm: str, n: int, nbytes: float, link_gbps: float) -> str:
    """``ring`` or ``tree`` for an all-reduce of ``nbytes`` (unscaled) over n nodes:
    as given, or for ``auto`` the one with the smaller NCCL time estimate (tree for
    small messages and many nodes; ring below 3 nodes, where trees gain nothing)."""
    if algorithm != "auto":
        return algorithm
    if n < 3:
        return "ring"
    return (
        "tree"
        if tree_time_us(n, nbytes, link_gbps) < ring_time_us(n, nbytes, link_gbps)
        else "ring"
    )
