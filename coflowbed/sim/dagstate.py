"""Dependency bookkeeping of a simulated DAG: when a node's dependencies are done, a
compute node runs for its duration and a coflow is released (not before its
``release_s``).  Times of both are kept per iteration for ``iterations.csv``.

Nodes are integers (``workload.dagindex``: computes first, then coflows, so coflow c
is node ``n_computes + c``); dependency counts and children are plain lists and CSR
arrays rather than dicts of string ids."""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from workload.dag import Dag
from workload.dagindex import check_acyclic, index_dag

_RELEASE, _COMPUTE_END = 0, 1


@dataclass
class IterationSpan:
    """First start, last end and open node count of one iteration."""

    start_s: float = math.inf
    finish_s: float = -math.inf
    open_nodes: int = 0


@dataclass
class DagState:
    """Tracks dependencies; ``ready`` collects coflow indices released and not yet
    taken by the engine."""

    dag: Dag
    ready: list[int] = field(default_factory=list)

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
        self._iter = [c.iteration for c in self.dag.computes]
        self._iter += [c.identity.iteration for c in self.dag.coflows]
        self.iterations: dict[int, IterationSpan] = {}
        for it, n in zip(*np.unique(np.asarray(self._iter, dtype=np.int64), return_counts=True)):
            self.iterations[int(it)] = IterationSpan(open_nodes=int(n))
        self._heap: list[tuple[float, int, int, int]] = []
        self._seq = 0
        self.done_nodes = 0
        self.compute_start: dict[str, float] = {}  # compute node -> start (sim time)
        self.compute_end: dict[str, float] = {}

    def start(self) -> None:
        """Schedule every node without dependencies at time 0."""
        for i, k in enumerate(self.waiting):
            if k == 0:
                self._schedule(i, 0.0)
        self.pop_due(0.0)

    def _schedule(self, i: int, now: float) -> None:
        """All dependencies of node ``i`` are done at ``now``: run or release it."""
        if i < self.n_computes:
            span = self.iterations[self._iter[i]]
            span.start_s = min(span.start_s, now)
            self.compute_start[self.ids[i]] = now
            self._push(now + self._duration[i], _COMPUTE_END, i)
        else:
            self._push(max(now, self._release_at[i - self.n_computes]), _RELEASE, i)

    def _push(self, t: float, kind: int, i: int) -> None:
        """Queue an event of ``kind`` for node ``i`` at ``t`` (FIFO among equal times)."""
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, i))

    def next_time(self) -> float:
        """Time of the next release or compute end (inf if none)."""
        return self._heap[0][0] if self._heap else math.inf

    def pop_due(self, now: float) -> None:
        """Handle every release and compute end at or before ``now``."""
        while self._heap and self._heap[0][0] <= now:
            t, _, kind, i = heapq.heappop(self._heap)
            if kind == _RELEASE:
                span = self.iterations[self._iter[i]]
                span.start_s = min(span.start_s, t)
                self.ready.append(i - self.n_computes)
            else:
                self.compute_end[self.ids[i]] = t
                self._done(i, t)

    def node_done(self, nid: str, now: float) -> None:
        """Mark ``nid`` finished at ``now`` and schedule children whose deps are done."""
        self._done(self.index[nid], now)

    def _done(self, i: int, now: float) -> None:
        """Node ``i`` finished at ``now``."""
        span = self.iterations[self._iter[i]]
        span.finish_s = max(span.finish_s, now)
        span.open_nodes -= 1
        self.done_nodes += 1
        waiting = self.waiting
        for child in self._children[self._ptr[i] : self._ptr[i + 1]]:
            waiting[child] -= 1
            if waiting[child] == 0:
                self._schedule(child, now)

    def all_done(self) -> bool:
        """Whether every node has finished."""
        return self.done_nodes == len(self.waiting)

    def iteration_spans(self) -> dict[int, tuple[float, float | None]]:
        """{iteration: (start, finish or None if unfinished)} for ``iteration_records``."""
        out = {}
        for it, s in self.iterations.items():
            if s.start_s == math.inf:
                continue
            out[it] = (s.start_s, s.finish_s if s.open_nodes == 0 else None)
        return out
