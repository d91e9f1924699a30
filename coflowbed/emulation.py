"""The executor's backend on the emulated fabric: schedules coflows through the
controller's API and sends their flows through the host agents.

Controller writes go through one writer thread, in order, and host socket updates
through another.  A release waits only until its own coflow's entry is applied (its
packets must find their level); re-ranking of the other coflows and host priority and
rate updates are applied behind it without holding up the DAG executor.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Sequence

from coflowbed.agent_types import SendOrder
from coflowbed.calibrate import PREFIX as CALIBRATION_PREFIX
from coflowbed.results import percentile
from coflowbed.executor import Event, FlowDone, FlowFailed, FlowStarted
from coflowbed.scheduling import Changes, LiveScheduler
from controller.coflow_table import TagEntry
from topo.plan import FabricPlan
from workload.dag import Coflow

log = logging.getLogger("emulation")

COUNTER_POLL_S = 0.1  # D-CLAS learns bytes sent from switch counters this often
PROGRESS_POLL_S = 0.5  # clairvoyant policies learn bytes left from the agents this often
WRITE_TIMEOUT_S = 30.0


class _Lane:
    """One worker thread applying queued ``Changes`` in order; what queued up while it
    was busy is merged and applied as one."""

    def __init__(self, name: str, apply) -> None:
        self.apply, self.error = apply, None
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def put(self, changes: Changes) -> Future:
        """Queue ``changes``; the future settles once they are applied."""
        done: Future = Future()
        self._queue.put((changes, done))
        return done

    def close(self) -> None:
        """Finish what is queued and stop."""
        self._queue.put(None)
        self._thread.join(WRITE_TIMEOUT_S)

    def _loop(self) -> None:
        while (item := self._queue.get()) is not None:
            batch, stop = [item], False
            while not self._queue.empty():
                nxt = self._queue.get()
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            self._apply_batch(batch)
            if stop:
                return

    def _apply_batch(self, batch: list) -> None:
        try:
            self.apply(merge_changes([changes for changes, _ in batch]))
        except Exception as exc:  # reported to the executor thread via ``error``
            self.error = exc
            for _, done in batch:
                done.set_exception(exc)
            return
        for _, done in batch:
            done.set_result(None)


class ChangeWriter:
    """Applies ``Changes`` off the executor's thread: switch writes (clears, entries) in
    order on one lane with its own controller connection (the client is not
    thread-safe); host socket updates (priorities, paced rates) on a second lane, so a
    release never waits behind agent round trips."""

    def __init__(self, controller, agents, ip: dict[str, str] | None = None) -> None:
        self.controller, self.agents, self.ip = controller, agents, ip or {}
        self.latency_s: list[float] = []
        self._switches = _Lane("switch-writer", self._apply_switches)
        self._hosts = _Lane("host-writer", self._apply_hosts)

    @property
    def error(self) -> BaseException | None:
        """The first failure of either lane."""
        return self._switches.error or self._hosts.error

    def submit(self, changes: Changes, wait: bool) -> None:
        """Queue ``changes``; with ``wait``, return once their switch writes (and all
        switch writes before) are applied."""
        if self.error is not None:
            raise RuntimeError(f"controller write failed: {self.error}")
        if changes.host_levels or changes.host_rates:
            self._hosts.put(Changes(host_levels=changes.host_levels, host_rates=changes.host_rates))
        if changes.entries or changes.clear_tags:
            done = self._switches.put(Changes(entries=changes.entries, clear_tags=changes.clear_tags))
            if wait:
                done.result(WRITE_TIMEOUT_S)

    def close(self) -> None:
        """Finish queued writes and stop both lanes."""
        self._switches.close()
        self._hosts.close()

    def _apply_switches(self, changes: Changes) -> None:
        """Clear freed tags, then set entries (one request each)."""
        t = time.monotonic()
        if changes.clear_tags:
            self.controller.clear(changes.clear_tags)
        if changes.entries:
            reply = self.controller.set(changes.entries)
            self.latency_s.append(float(reply.get("applied_s", time.monotonic() - t)))

    def _apply_hosts(self, changes: Changes) -> None:
        """Socket priorities and paced rates on the sending hosts."""
        for host, tag, level in changes.host_levels:
            self.agents.set_level(host, tag, level)
        for src, tag, dst, rate in changes.host_rates:
            self.agents.set_rate(src, tag, self.ip[dst], rate)


@dataclass
class ReleaseTimes:
    """What releasing costs on the fabric: from a coflow's release to each of its flows'
    first payload byte at the receiver, and the controller writes a release waited for
    (dynamic policies write a new coflow's entry before its flows start)."""

    released: dict[str, float] = field(default_factory=dict)  # flow id -> monotonic s
    start_s: list[float] = field(default_factory=list)  # release -> sender's flow started
    first_byte_s: list[float] = field(default_factory=list)
    write_s: list[float] = field(default_factory=list)
    releases: int = 0
    new_connections: int = 0  # flows that found no idle pooled connection

    def started(self, flow_id: str, t_ns: int) -> None:
        """The sender started ``flow_id`` at ``t_ns`` (took a connection, marked it)."""
        t = self.released.get(flow_id)
        if t is not None:
            self.start_s.append(t_ns / 1e9 - t)

    def first_byte(self, flow_id: str, first_ns: int) -> None:
        """The receiver saw ``flow_id``'s first payload byte at ``first_ns``."""
        t = self.released.pop(flow_id, None)
        if t is not None and first_ns:
            self.first_byte_s.append(first_ns / 1e9 - t)

    def summary(self) -> dict:
        """Milliseconds (median, p95, max) for summary.json."""
        return {"releases": self.releases, "new_connections": self.new_connections,
                "start_ms": _ms_stats(self.start_s), "first_byte_ms": _ms_stats(self.first_byte_s),
                "writes_waited": len(self.write_s), "write_ms": _ms_stats(self.write_s)}


def _ms_stats(values: list[float]) -> dict | None:
    """count, median, p95 and max of ``values`` (seconds) in ms; None when empty."""
    if not values:
        return None
    return {"count": len(values), "median": round(percentile(values, 50) * 1e3, 3),
            "p95": round(percentile(values, 95) * 1e3, 3), "max": round(max(values) * 1e3, 3)}


class EmulationBackend:
    """Backend of ``DagExecutor`` for a running fabric (controller + agents)."""

    def __init__(self, scheduler: LiveScheduler, controller, agents, plan: FabricPlan,
                 data_port: int, writer_controller=None) -> None:
        self.scheduler, self.controller, self.agents = scheduler, controller, agents
        self.plan, self.data_port = plan, data_port
        self.ip = {h.name: h.ip for h in plan.hosts}
        self.flow_coflow: dict[str, str] = {}
        self.writer = ChangeWriter(writer_controller or controller, agents, self.ip)
        self.times = ReleaseTimes()

    def preinstall(self) -> None:
        """Before the iteration: write what the static levels need (nothing for dynamic
        policies), so that releases make no controller round trip."""
        self.writer.submit(self.scheduler.preinstall(), wait=True)

    @property
    def apply_latency_s(self) -> list[float]:
        """Time from each controller write request to its last barrier reply."""
        return self.writer.latency_s

    def release(self, coflow: Coflow, now: float) -> None:
        """Schedule ``coflow`` (its own entry applied first), then start its flows."""
        t_release = time.monotonic()
        changes = self.scheduler.arrive(coflow, now)
        tag = self.scheduler.tags[coflow.coflow_id]
        urgent, rest = _split(changes, tag)
        if urgent:
            self.writer.submit(urgent, wait=True)
            self.times.write_s.append(time.monotonic() - t_release)
        self.writer.submit(rest, wait=False)
        level = self.scheduler.level_of(coflow.coflow_id)
        self.times.releases += 1
        for f in coflow.flows:
            self.flow_coflow[f.flow_id] = coflow.coflow_id
            self.times.released[f.flow_id] = t_release
        # one write per sending agent, so a coflow's flows start together
        rate = self.scheduler.pair_rate
        self.agents.send_many([SendOrder(f.src, f.flow_id, self.ip[f.dst], self.data_port, f.bytes,
                                         tag, level, rate(coflow.coflow_id, f.src, f.dst))
                               for f in coflow.flows])

    def finished(self, coflow: Coflow, now: float) -> None:
        """Re-decide the others; applied behind, without waiting."""
        self.writer.submit(self.scheduler.finish(coflow, now), wait=False)

    def wait_events(self, timeout: float) -> Sequence[Event]:
        """Translate agent events into executor events."""
        if self.writer.error is not None:
            return [FlowFailed("(controller)", f"controller write failed: {self.writer.error}")]
        out: list[Event] = []
        for ev in self.agents.events(timeout):
            kind = ev.get("event")
            fid = ev.get("flow_id") or ""
            if fid.startswith(CALIBRATION_PREFIX):
                continue  # a late end of the bring-up's calibration burst, not a coflow's
            if kind == "flow_started":
                self.times.new_connections += bool(ev.get("new_connection"))
                self.times.started(fid, int(ev["t_ns"]))
                out.append(FlowStarted(fid, ev["t_ns"] / 1e9))
            elif kind == "flow_received":
                self.times.first_byte(fid, int(ev.get("first_ns") or 0))
                self.scheduler.flow_done(self.flow_coflow.get(fid, ""), fid)
                out.append(FlowDone(fid, ev["last_ns"] / 1e9, int(ev["bytes"])))
            elif kind == "flow_failed":
                out.append(FlowFailed(fid or "(unknown)", f"{ev.host}: {ev.get('error', 'unknown error')}"))
            elif kind == "agent_lost":
                out.append(FlowFailed("(agent)", f"agent of {ev.host} lost: {ev.get('error')}"))
        return out

    def tick(self, now: float) -> float | None:
        """Poll per-tag byte counters when the policy has byte thresholds (D-CLAS), or
        the agents' per-flow progress when a clairvoyant policy decides live (SEBF)."""
        if getattr(self.scheduler.policy, "byte_thresholds", ()):
            sent = {t: int(v["bytes"]) for t, v in self.controller.tag_stats().items()}
            self.writer.submit(self.scheduler.bytes_sent(sent, now), wait=False)
            return now + COUNTER_POLL_S
        if self.scheduler.wants_progress():
            acked: dict[str, int] = {}
            for host in self.scheduler.active_senders():
                acked.update(self.agents.stats(host).sent)
            self.writer.submit(self.scheduler.progress(acked, now), wait=False)
            return now + PROGRESS_POLL_S
        return None

    def close(self) -> None:
        """Let queued writes finish."""
        self.writer.close()


def merge_changes(items: list[Changes]) -> Changes:
    """Changes queued one after another as one: every clear first (a clear is only ever
    queued for tags about to be set again), then the last entry per tag, the last host
    priority per (host, tag) and the last paced rate per (sender, tag, receiver)."""
    clears: list[int] = []
    entries: dict[int, TagEntry] = {}
    levels: dict[tuple[str, int], int] = {}
    rates: dict[tuple[str, int, str], float | None] = {}
    for ch in items:
        clears.extend(t for t in ch.clear_tags if t not in clears)
        entries.update((e.tag, e) for e in ch.entries)
        levels.update(((h, t), lv) for h, t, lv in ch.host_levels)
        rates.update(((s, t, d), r) for s, t, d, r in ch.host_rates)
    return Changes(list(entries.values()), clears, [(h, t, lv) for (h, t), lv in levels.items()],
                   [(s, t, d, r) for (s, t, d), r in rates.items()])


def _split(changes: Changes, tag: int) -> tuple[Changes, Changes]:
    """(what the new coflow's packets need now: clears and its own entry; the rest)."""
    own = [e for e in changes.entries if e.tag == tag]
    others = [e for e in changes.entries if e.tag != tag]
    return (Changes(entries=own, clear_tags=changes.clear_tags),
            Changes(entries=others, host_levels=changes.host_levels, host_rates=changes.host_rates))
