"""Dependency bookkeeping of a simulated DAG: when a node's dependencies are done, a
compute node runs for its duration and a coflow is released (not before its
``release_s``).  Times of both are kept per iteration for ``iterations.csv``."""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from workload.dag import SETUP_ITERATION, Compute, Dag, node_id, node_iteration

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
        self.dag.validate()
        self.coflow_index = {c.coflow_id: i for i, c in enumerate(self.dag.coflows)}
        self.computes = {c.node_id: c for c in self.dag.computes}
        self.children: dict[str, list[str]] = {}
        self.waiting: dict[str, int] = {}
        self.iterations: dict[tuple[str, int], IterationSpan] = {}  # (job, iteration)
        self._heap: list[tuple[float, int, int, str]] = []
        self._seq = 0
        for n in self.dag.nodes():
            self.waiting[node_id(n)] = len(n.deps)
            for d in n.deps:
                self.children.setdefault(d, []).append(node_id(n))
            self._span(n).open_nodes += 1
        self.done_nodes = 0
        self.compute_start: dict[str, float] = {}  # compute node -> start (sim time)
        self.compute_end: dict[str, float] = {}

    def _span(self, n) -> IterationSpan:
        """The iteration span of node ``n`` (a throw-away one for setup nodes)."""
        key = node_iteration(n)
        if key[1] == SETUP_ITERATION:
            return IterationSpan()
        return self.iterations.setdefault(key, IterationSpan())

    def _node(self, nid: str):
        """The node called ``nid``."""
        return (
            self.computes[nid] if nid in self.computes else self.dag.coflows[self.coflow_index[nid]]
        )

    def start(self) -> None:
        """Schedule every node without dependencies at time 0."""
        for nid, k in list(self.waiting.items()):
            if k == 0:
                self._schedule(nid, 0.0)
        self.pop_due(0.0)

    def _schedule(self, nid: str, now: float) -> None:
        """All dependencies of ``nid`` are done at ``now``: run or release it."""
        n = self._node(nid)
        if isinstance(n, Compute):
            self._span(n).start_s = min(self._span(n).start_s, now)
            self.compute_start[nid] = now
            self._push(now + n.duration_s, _COMPUTE_END, nid)
        else:
            self._push(max(now, n.release_s), _RELEASE, nid)

    def _push(self, t: float, kind: int, nid: str) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, nid))

    def next_time(self) -> float:
        """Time of the next release or compute end (inf if none)."""
        return self._heap[0][0] if self._heap else math.inf

    def pop_due(self, now: float) -> None:
        """Handle every release and compute end at or before ``now``."""
        while self._heap and self._heap[0][0] <= now:
            t, _, kind, nid = heapq.heappop(self._heap)
            if kind == _RELEASE:
                c = self.coflow_index[nid]
                span = self._span(self.dag.coflows[c])
                span.start_s = min(span.start_s, t)
                self.ready.append(c)
            else:
                self.compute_end[nid] = t
                self.node_done(nid, t)

    def node_done(self, nid: str, now: float) -> None:
        """Mark ``nid`` finished at ``now`` and schedule children whose deps are done."""
        span = self._span(self._node(nid))
        span.finish_s = max(span.finish_s, now)
        span.open_nodes -= 1
        self.done_nodes += 1
        for child in self.children.get(nid, ()):
            self.waiting[child] -= 1
            if self.waiting[child] == 0:
                self._schedule(child, now)

    def all_done(self) -> bool:
        """Whether every node has finished."""
        return self.done_nodes == len(self.waiting)

    def iteration_spans(self) -> dict[tuple[str, int], tuple[float, float | None]]:
        """{(job, iteration): (start, finish or None if unfinished)} for
        ``iteration_records``."""
        out = {}
        for it, s in self.iterations.items():
            if s.start_s == math.inf:
                continue
            out[it] = (s.start_s, s.finish_s if s.open_nodes == 0 else None)
        return out
