"""Dependency bookkeeping of a simulated DAG: when a node's dependencies are done, a
compute node runs for its duration and a coflow is released (not before its
``release_s``), and handed to the engine once its level is installed (a control delay,
``install_after``; it counts as released at its release).  Times of both are kept per
(job, iteration) for ``iterations.csv``; nodes of ``SETUP_ITERATION`` (a job's start
delay) count in none.  Nodes are integers (``workload.dagindex``: computes first,
then coflows, so coflow c is node ``n_computes + c``); dependency counts and children
are plain lists and CSR arrays rather than dicts of string ids."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from workload.dag import SETUP_ITERATION, Coflow, Compute, Dag, node_iteration
from workload.dagindex import check_acyclic, index_dag

_RELEASE, _COMPUTE_END, _INSTALL = 0, 1, 2


@dataclass
class DagState:
    """Tracks dependencies; ``ready`` collects coflow indices released (and installed,
    ``install_after`` seconds later: per coflow, or None for none) and not yet taken by
    the engine."""

    dag: Dag
    ready: list[int] = field(default_factory=list)
    install_after: Sequence[float] | None = None

    def __post_init__(self) -> None:
        ix = index_dag(self.dag)
        check_acyclic(ix)
        self.ids, self.index = ix.ids, ix.index
        self.n_computes = len(self.dag.computes)
        self.waiting: list[int] = ix.indeg.tolist()
        self._ptr: list[int] = ix.ptr.tolist()
        self._children: list[int] = ix.children.tolist()
        self._duration = [c.duration_s for c in self.dag.computes]
        self._release_at = [c.release_s for c in self.dag.coflows]
        self._keys, self._iter = _iteration_keys(self.dag)
        n = len(self.ids)
        self._start = [math.nan] * n  # compute start / coflow release (sim time)
        self._end = [math.nan] * n  # compute end / coflow completion
        self._heap: list[tuple[float, int, int, int]] = []
        self._seq = 0
        self.done_nodes = 0

    def start(self) -> None:
        """Schedule every node without dependencies at time 0."""
        for i, k in enumerate(self.waiting):
            if k == 0:
                self._schedule(i, 0.0)
        self.pop_due(0.0)

    def _schedule(self, i: int, now: float) -> None:
        """All dependencies of node ``i`` are done at ``now``: run or release it."""
        self._seq += 1
        if i < self.n_computes:
            self._start[i] = now
            heapq.heappush(self._heap, (now + self._duration[i], self._seq, _COMPUTE_END, i))
        else:
            t = max(now, self._release_at[i - self.n_computes])
            heapq.heappush(self._heap, (t, self._seq, _RELEASE, i))

    def next_time(self) -> float:
        """Time of the next release or compute end (inf if none)."""
        return self._heap[0][0] if self._heap else math.inf

    def pop_due(self, now: float) -> None:
        """Handle every release and compute end at or before ``now``."""
        heap, nc = self._heap, self.n_computes
        while heap and heap[0][0] <= now:
            t, _, kind, i = heapq.heappop(heap)
            if kind == _RELEASE:
                self._start[i] = t
                wait = self.install_after[i - nc] if self.install_after is not None else 0.0
                if wait > 0:
                    self._seq += 1
                    heapq.heappush(heap, (t + wait, self._seq, _INSTALL, i))
                else:
                    self.ready.append(i - nc)
            elif kind == _INSTALL:
                self.ready.append(i - nc)
            else:
                self._done(i, t)

    def release_time(self, c: int) -> float:
        """When coflow ``c`` was released (its dependencies done, not before its
        ``release_s``); NaN if not yet."""
        return self._start[self.n_computes + c]

    def node_done(self, nid: str, now: float) -> None:
        """Mark ``nid`` finished at ``now`` and schedule children whose deps are done."""
        self._done(self.index[nid], now)

    def _done(self, i: int, now: float) -> None:
        """Node ``i`` finished at ``now``."""
        self._end[i] = now
        self.done_nodes += 1
        waiting = self.waiting
        for child in self._children[self._ptr[i] : self._ptr[i + 1]]:
            waiting[child] -= 1
            if waiting[child] == 0:
                self._schedule(child, now)

    def all_done(self) -> bool:
        """Whether every node has finished."""
        return self.done_nodes == len(self.waiting)

    @property
    def compute_start(self) -> dict[str, float]:
        """{compute node id: start} of the computes that started (sim time)."""
        return self._times(self._start)

    @property
    def compute_end(self) -> dict[str, float]:
        """{compute node id: end} of the computes that finished."""
        return self._times(self._end)

    def _times(self, times: list[float]) -> dict[str, float]:
        """{compute id: time} where ``times`` (per node) is set."""
        ids = self.ids
        return {ids[i]: t for i, t in enumerate(times[: self.n_computes]) if t == t}

    def iteration_spans(self) -> dict[tuple[str, int], tuple[float, float | None]]:
        """{(job, iteration): (start, finish or None if unfinished)} for
        ``iteration_records``: first start or release and last end of the iteration's
        nodes; iterations with nothing started are left out."""
        start, end = np.asarray(self._start), np.asarray(self._end)
        out = {}
        for k, key in enumerate(self._keys):
            mine = self._iter == k
            if key[1] == SETUP_ITERATION or np.isnan(start[mine]).all():
                continue
            ends = end[mine]
            out[key] = (
                float(np.nanmin(start[mine])),
                None if np.isnan(ends).any() else float(ends.max()),
            )
        return out


def _iteration_keys(dag: Dag) -> tuple[list[tuple[str, int]], np.ndarray]:
    """The distinct (job, iteration) keys of ``dag``'s nodes, and each node's key index
    (computes first, then coflows, as ``workload.dagindex`` numbers them)."""
    keys: dict[tuple[str, int], int] = {}
    nodes: list[Compute | Coflow] = [*dag.computes, *dag.coflows]
    per_node = [keys.setdefault(node_iteration(n), len(keys)) for n in nodes]
    return list(keys), np.asarray(per_node, dtype=np.int64)
