"""The executor's backend on the emulated fabric: schedules coflows through the
controller's API and sends their flows through the host agents."""
from __future__ import annotations

import logging
import queue
import time
from typing import Sequence

from coflowbed.executor import Event, FlowDone, FlowFailed, FlowStarted
from coflowbed.scheduling import Changes, LiveScheduler
from topo.plan import FabricPlan
from workload.dag import Coflow

log = logging.getLogger("emulation")

COUNTER_POLL_S = 0.1  # D-CLAS learns bytes sent from switch counters this often


class EmulationBackend:
    """Backend of ``DagExecutor`` for a running fabric (controller + agents)."""

    def __init__(self, scheduler: LiveScheduler, controller, agents, plan: FabricPlan,
                 data_port: int) -> None:
        self.scheduler, self.controller, self.agents = scheduler, controller, agents
        self.plan, self.data_port = plan, data_port
        self.ip = {h.name: h.ip for h in plan.hosts}
        self.flow_coflow: dict[str, str] = {}
        self.apply_latency_s: list[float] = []
        self.applied_writes = 0

    def release(self, coflow: Coflow, now: float) -> None:
        """Schedule ``coflow`` (controller write first), then start its flows."""
        self._apply(self.scheduler.arrive(coflow, now))
        tag = self.scheduler.tags[coflow.coflow_id]
        level = self.scheduler.level_of(coflow.coflow_id)
        for f in coflow.flows:
            self.flow_coflow[f.flow_id] = coflow.coflow_id
        # one write per sending agent, so a coflow's flows start together
        self.agents.send_many([(f.src, f.flow_id, self.ip[f.dst], self.data_port, f.bytes, tag, level)
                               for f in coflow.flows])

    def finished(self, coflow: Coflow, now: float) -> None:
        """Free the coflow's tag and re-decide the others."""
        self._apply(self.scheduler.finish(coflow, now))

    def wait_events(self, timeout: float) -> Sequence[Event]:
        """Translate agent events into executor events."""
        out: list[Event] = []
        for ev in self.agents.events(timeout):
            kind = ev.get("event")
            fid = ev.get("flow_id") or ""
            if kind == "flow_started":
                out.append(FlowStarted(fid, ev["t_ns"] / 1e9))
            elif kind == "flow_received":
                self.scheduler.flow_done(self.flow_coflow.get(fid, ""), fid)
                out.append(FlowDone(fid, ev["last_ns"] / 1e9, int(ev["bytes"])))
            elif kind == "flow_failed":
                out.append(FlowFailed(fid or "(unknown)", f"{ev.host}: {ev.get('error', 'unknown error')}"))
            elif kind == "agent_lost":
                out.append(FlowFailed("(agent)", f"agent of {ev.host} lost: {ev.get('error')}"))
        return out

    def tick(self, now: float) -> float | None:
        """Poll per-tag byte counters when the policy has byte thresholds (D-CLAS)."""
        if not getattr(self.scheduler.policy, "byte_thresholds", ()):
            return None
        sent = {t: int(v["bytes"]) for t, v in self.controller.tag_stats().items()}
        self._apply(self.scheduler.bytes_sent(sent, now))
        return now + COUNTER_POLL_S

    def _apply(self, changes: Changes) -> None:
        """Write changes: clear freed tags, set entries, update host socket priorities."""
        if not changes:
            return
        t = time.monotonic()
        if changes.clear_tags:
            self.controller.clear(changes.clear_tags)
        if changes.entries:
            reply = self.controller.set(changes.entries)
            self.applied_writes += int(reply.get("written", len(changes.entries)))
            self.apply_latency_s.append(float(reply.get("applied_s", time.monotonic() - t)))
            log.debug("set %d entries, applied in %.1f ms", len(changes.entries),
                      1e3 * self.apply_latency_s[-1])
        for host, tag, level in changes.host_levels:
            self.agents.set_level(host, tag, level)
