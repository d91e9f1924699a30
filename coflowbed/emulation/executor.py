"""The DAG executor: releases coflows when their dependencies, compute delays and
release times are done, and collects per-flow and per-coflow timings.

It knows nothing of Mininet: a ``Backend`` starts coflows and reports flow events, so the
same executor drives the emulated fabric and, in unit tests, a fake.  Waiting is always
for an event with a timeout (the next timer), never a blind sleep.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from coflowbed.results.records import (
    CoflowRecord,
    ComputeRecord,
    FlowRecord,
    IterationRecord,
    compute_records,
)
from workload import dagindex
from workload.dag import SETUP_ITERATION, Coflow, Compute, Dag, node_id, node_iteration

log = logging.getLogger("executor")


@dataclass(frozen=True)
class FlowStarted:
    """The sender began the flow (monotonic seconds)."""

    flow_id: str
    t: float


@dataclass(frozen=True)
class FlowDone:
    """The receiver got the flow's last byte (monotonic seconds)."""

    flow_id: str
    t: float
    bytes: int


@dataclass(frozen=True)
class FlowFailed:
    """The flow could not be delivered."""

    flow_id: str
    reason: str


Event = FlowStarted | FlowDone | FlowFailed


class Backend(Protocol):
    """What the executor needs from the fabric side."""

    def release(self, coflow: Coflow, now: float) -> None:
        """Start every flow of ``coflow`` (after scheduling it)."""

    def finished(self, coflow: Coflow, now: float) -> None:
        """``coflow`` has delivered every byte (free its tag, reschedule others)."""

    def wait_events(self, timeout: float) -> Sequence[Event]:
        """Events that arrived, waiting at most ``timeout`` seconds for the first."""

    def tick(self, now: float) -> float | None:
        """Periodic work (e.g. counter polling); returns the next time it wants a tick."""


class Timeline(Protocol):
    """Actions at times of the executor's clock (scenario faults): ``fire`` is called
    with the run's time whenever the loop turns, and the loop wakes up for ``next_s``."""

    def next_s(self) -> float | None:
        """Run time of the next action (None: nothing scheduled)."""

    def fire(self, now: float) -> None:
        """Start every action due at run time ``now`` (without blocking the loop)."""

    def coflow_done(self, coflow_id: str, t: float) -> None:
        """Coflow ``coflow_id`` finished at run time ``t`` (actions placed after it)."""


class RunFailed(Exception):
    """The run cannot go on (a flow failed, a deadline passed)."""


class DagExecutor:
    """Executes one DAG on a backend; ``run`` returns when every node finished."""

    def __init__(
        self,
        dag: Dag,
        backend: Backend,
        clock: Callable[[], float] = time.monotonic,
        on_coflow_done: Callable[[CoflowRecord, int, int], None] | None = None,
        timeline: Timeline | None = None,
    ) -> None:
        dagindex.validate(dag)
        self.dag, self.backend, self.clock = dag, backend, clock
        self.on_coflow_done, self.timeline = on_coflow_done, timeline
        self.t0: float | None = None
        self.coflow_records = {cf.coflow_id: CoflowRecord.of(cf) for cf in dag.coflows}
        self.flow_records = {
            f.flow_id: FlowRecord(f.flow_id, cf.coflow_id, f.src, f.dst, f.bytes)
            for cf in dag.coflows
            for f in cf.flows
        }
        self._nodes = {node_id(n): n for n in dag.nodes()}
        self._waiting = {nid: len(n.deps) for nid, n in self._nodes.items()}
        self._children: dict[str, list[str]] = {}
        for nid, n in self._nodes.items():
            for d in n.deps:
                self._children.setdefault(d, []).append(nid)
        self._flow_coflow = {fid: r.coflow_id for fid, r in self.flow_records.items()}
        self._open_flows = {cf.coflow_id: {f.flow_id for f in cf.flows} for cf in dag.coflows}
        self._timers: list[tuple[float, int, str, str]] = []
        self._seq = 0
        self._started: dict[str, float] = {}
        self._finished: dict[str, float] = {}

    # -- public ---------------------------------------------------------------------
    def run(self, deadline_s: float) -> None:
        """Execute until every node finished; RunFailed if ``deadline_s`` passes first."""
        self.t0 = self.clock()
        for nid, k in self._waiting.items():
            if k == 0:
                self._ready(nid, 0.0)
        next_tick: float | None = 0.0
        while len(self._finished) < len(self._nodes):
            now = self.now()
            if now >= deadline_s:
                raise RunFailed(
                    f"deadline of {deadline_s:.0f} s passed with "
                    f"{len(self._nodes) - len(self._finished)} nodes unfinished"
                )
            if next_tick is not None and now >= next_tick:
                next_tick = self._rel(self.backend.tick(self._abs(now)))
            self._fire_timers(now)
            if self.timeline is not None:
                self.timeline.fire(now)
            self._handle(self.backend.wait_events(self._wait_time(next_tick, deadline_s)))

    def now(self) -> float:
        """Seconds since the run's time zero."""
        assert self.t0 is not None
        return self.clock() - self.t0

    def iteration_records(self) -> list[IterationRecord]:
        """Start/finish of each iteration from its nodes' times (None if unfinished)."""
        spans: dict[tuple[str, int], list] = {}
        for nid, n in self._nodes.items():
            key = node_iteration(n)
            if key[1] == SETUP_ITERATION:
                continue
            s = spans.setdefault(key, [None, 0.0, True])
            if nid in self._started:
                s[0] = self._started[nid] if s[0] is None else min(s[0], self._started[nid])
            if nid in self._finished:
                s[1] = max(s[1], self._finished[nid])
            else:
                s[2] = False
        return [
            IterationRecord(i, s or 0.0, f if complete else None, job)
            for (job, i), (s, f, complete) in sorted(spans.items())
        ]

    def compute_records(self) -> list[ComputeRecord]:
        """Start and end (run time) of every compute node, None where it did not run."""
        return compute_records(self.dag, self._started, self._finished)

    def unfinished_flows(self, hosts: set[str]) -> tuple[list[str], list[str]]:
        """Flows sent from or to ``hosts`` that did not finish: (those of coflows already
        released, those of coflows not released yet), flow ids in DAG order."""
        released: list[str] = []
        waiting: list[str] = []
        for rec in self.flow_records.values():
            if rec.finish_s is None and (rec.src in hosts or rec.dst in hosts):
                (released if rec.coflow_id in self._started else waiting).append(rec.flow_id)
        return released, waiting

    # -- internals ------------------------------------------------------------------
    def _abs(self, rel: float) -> float:
        return rel + (self.t0 or 0.0)

    def _rel(self, t: float | None) -> float | None:
        return None if t is None else t - (self.t0 or 0.0)

    def _wait_time(self, next_tick: float | None, deadline_s: float) -> float:
        """How long to wait for events: until the next timer, tick or deadline."""
        action = None if self.timeline is None else self.timeline.next_s()
        horizon = min(
            deadline_s,
            self._timers[0][0] if self._timers else deadline_s,
            next_tick if next_tick is not None else deadline_s,
            action if action is not None else deadline_s,
        )
        return max(0.0, min(horizon - self.now(), 1.0))

    def _push(self, t: float, kind: str, nid: str) -> None:
        self._seq += 1
        heapq.heappush(self._timers, (t, self._seq, kind, nid))

    def _fire_timers(self, now: float) -> None:
        while self._timers and self._timers[0][0] <= now:
            t, _, kind, nid = heapq.heappop(self._timers)
            if kind == "compute_done":
                self._complete(nid, t)
            else:
                self._release(nid, now)

    def _ready(self, nid: str, now: float) -> None:
        """All dependencies of ``nid`` are done: start compute or release coflow."""
        n = self._nodes[nid]
        if isinstance(n, Compute):
            self._started[nid] = now
            self._push(now + n.duration_s, "compute_done", nid)
        elif n.release_s > now:
            self._push(n.release_s, "release", nid)
        else:
            self._release(nid, now)

    def _coflow(self, nid: str) -> Coflow:
        """The coflow node ``nid`` (never called for a compute node)."""
        node = self._nodes[nid]
        assert isinstance(node, Coflow), nid
        return node

    def _release(self, nid: str, now: float) -> None:
        cf = self._coflow(nid)
        self._started[nid] = now
        self.coflow_records[nid].arrival_s = now
        if not cf.flows:  # nothing crosses the fabric (e.g. all flows intra-host)
            self.coflow_records[nid].start_s = self.coflow_records[nid].finish_s = now
            self._complete(nid, now)
            return
        self.backend.release(cf, self._abs(now))

    def _complete(self, nid: str, t: float) -> None:
        self._finished[nid] = t
        for c in self._children.get(nid, ()):
            self._waiting[c] -= 1
            if self._waiting[c] == 0:
                self._ready(c, max(t, self.now()))

    def _handle(self, events: Sequence[Event]) -> None:
        for ev in events:
            if isinstance(ev, FlowFailed):
                raise RunFailed(f"flow {ev.flow_id} failed: {ev.reason}")
            rec = self.flow_records.get(ev.flow_id)
            if rec is None:
                log.warning("event for unknown flow %s ignored", ev.flow_id)
                continue
            if isinstance(ev, FlowStarted):
                rec.start_s = self._rel(ev.t)
            else:
                self._flow_done(rec, ev)

    def _flow_done(self, rec: FlowRecord, ev: FlowDone) -> None:
        rec.finish_s, rec.bytes_received = self._rel(ev.t), ev.bytes
        cid = self._flow_coflow[rec.flow_id]
        open_flows = self._open_flows[cid]
        open_flows.discard(rec.flow_id)
        crec = self.coflow_records[cid]
        if crec.start_s is None or (rec.start_s is not None and rec.start_s < crec.start_s):
            crec.start_s = rec.start_s
        if open_flows:
            return
        cf = self._coflow(cid)
        finish = max(self.flow_records[f.flow_id].finish_s or 0.0 for f in cf.flows)  # all set
        crec.finish_s = finish
        self.backend.finished(cf, ev.t)
        self._complete(cid, finish)
        if self.timeline is not None:
            self.timeline.coflow_done(cid, finish)
        if self.on_coflow_done:
            done = sum(1 for r in self.coflow_records.values() if r.finish_s is not None)
            self.on_coflow_done(crec, done, len(self.coflow_records))
