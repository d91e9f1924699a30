"""Integer index of a DAG's nodes and dependencies (computes first, then coflows, in
list order), as arrays: what validation and the simulator's bookkeeping walk instead of
dicts of string ids.  Children are in CSR form: node i's dependants are
``children[ptr[i]:ptr[i+1]]``, in the order the DAG lists them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workload.dag import Dag, node_id


@dataclass(frozen=True)
class DagIndex:
    """Node ids by index, their dependency counts and the CSR children lists."""

    ids: list[str]
    index: dict[str, int]  # node id -> index
    indeg: np.ndarray  # int64 [N]: dependencies of each node
    ptr: np.ndarray  # int64 [N+1]
    children: np.ndarray  # int64 [edges]


def index_dag(dag: Dag) -> DagIndex:
    """The index of ``dag``; ValueError on a duplicate id or an unknown dependency."""
    ids = [c.node_id for c in dag.computes] + [c.coflow_id for c in dag.coflows]
    index = dict(zip(ids, range(len(ids))))
    if len(index) != len(ids):
        raise ValueError(f"duplicate node id {_first_duplicate(ids)!r}")
    indeg = np.fromiter(map(len, (n.deps for n in dag.nodes())), np.int64, len(ids))
    deps = [d for n in dag.nodes() for d in n.deps]
    try:
        parents = np.fromiter(map(index.__getitem__, deps), np.int64, len(deps))
    except KeyError:
        raise ValueError(_unknown_dep(dag, index)) from None
    child = np.repeat(np.arange(len(ids), dtype=np.int64), indeg)
    order = np.argsort(parents, kind="stable")
    ptr = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(np.bincount(parents, minlength=len(ids)), out=ptr[1:])
    return DagIndex(ids, index, indeg, ptr, child[order])


def _first_duplicate(ids: list[str]) -> str:
    """The first id that appears twice."""
    seen: set[str] = set()
    for nid in ids:
        if nid in seen:
            return nid
        seen.add(nid)
    raise AssertionError("no duplicate")


def _unknown_dep(dag: Dag, index: dict[str, int]) -> str:
    """The message naming the first node that depends on an unknown node."""
    for n in dag.nodes():
        for d in n.deps:
            if d not in index:
                return f"node {node_id(n)!r} depends on unknown node {d!r}"
    raise AssertionError("no unknown dependency")


def check_acyclic(ix: DagIndex) -> None:
    """ValueError naming some nodes on or behind a cycle, if there is one (Kahn's
    algorithm a frontier at a time: every round retires all nodes left without
    dependencies)."""
    indeg = ix.indeg.copy()
    frontier = np.flatnonzero(indeg == 0)
    seen = 0
    while frontier.size:
        seen += frontier.size
        kids = _children_of(ix, frontier)
        np.subtract.at(indeg, kids, 1)
        kids = np.unique(kids)
        frontier = kids[indeg[kids] == 0]
    if seen != len(ix.ids):
        stuck = sorted(ix.ids[i] for i in np.flatnonzero(indeg > 0))[:5]
        raise ValueError(f"dependency cycle among nodes such as {stuck}")


def _children_of(ix: DagIndex, nodes: np.ndarray) -> np.ndarray:
    """All children (with repeats) of ``nodes``, gathered from the CSR lists."""
    lo, hi = ix.ptr[nodes], ix.ptr[nodes + 1]
    counts = hi - lo
    if not counts.sum():
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
    return ix.children[starts + np.arange(int(counts.sum()))]


def validate(dag: Dag) -> None:
    """Raise ValueError on duplicate ids, unknown dependencies or a cycle in ``dag``."""
    check_acyclic(index_dag(dag))
