"""Stand-ins for the switches and the control API socket, for unit tests of the control
plane, its coflow scheduler and the orchestrator's backend (shared test helper)."""

from __future__ import annotations

import heapq
import json
import threading
from concurrent.futures import Future

from coflowbed.emulation.executor import FlowDone, FlowFailed, FlowStarted
from controller.client import ControllerClient, ControllerError
from controller.coflow_table import TagEntry
from controller.control_plane import ControlConfig, ControlPlane
from controller.scheduler import Changes
from controller.southbound.base import MeterCounter, RuleCounter, SouthboundError, SwitchDriver
from topo.plan import FabricPlan
from workload.dag import Coflow, CoflowIdentity, CoflowType, Flow
from workload.marking import TAG_ID_MAX

PLAN = FabricPlan(spines=1, leaves=2, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)


class FakeDriver(SwitchDriver):
    """Records what would be written; holds per-switch rule counters by cookie.  Takes
    every tag id, as the OpenFlow driver does (``max_tag``: 55 for a DSCP-only one)."""

    def __init__(self, plan: FabricPlan = PLAN, max_tag: int = TAG_ID_MAX):
        self.plan, self.max_tag = plan, max_tag
        self.base, self.applied, self.counters, self.fail = [], [], {}, None
        self.groups_set: list[dict] = []  # every set_groups call
        self.gate: threading.Event | None = None  # set: apply waits for it
        self.entered = threading.Event()

    def connected(self):
        return sorted(sw.name for sw in self.plan.switches)

    def install_base(self, switch, timeout):
        self.base.append(switch)

    def apply(self, diffs, timeout):
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(5)
        if self.fail:
            raise SouthboundError(self.fail)
        self.applied.append({k: d for k, d in diffs.items() if d.count()})
        return sum(d.count() for d in diffs.values())

    def set_groups(self, groups, timeout):
        if self.fail:
            raise SouthboundError(self.fail)
        self.groups_set.append({k: dict(v) for k, v in groups.items()})
        return sum(len(g) for g in groups.values())

    def rule_counters(self, switch, timeout):
        return [RuleCounter(c, b, p) for c, (b, p) in self.counters.get(switch, {}).items()]

    def port_counters(self, switch, timeout):
        return []

    def meter_counters(self, switch, timeout):
        return [MeterCounter(1, 10, 1000, 2, 200)]


def ready_plane(plan: FabricPlan = PLAN, levels: int = 4, **config):
    """A control plane over a FakeDriver with every switch installed (inline)."""
    drv = FakeDriver(plan)
    plane = ControlPlane(
        plan, drv, ControlConfig(levels=levels, **config), spawn=lambda fn, *a: fn(*a)
    )  # installs run inline
    for sw in plan.switches:
        plane.switch_connected(sw.name)
    return plane, drv


def hold_lane(plane, drv: FakeDriver, tag: int = 50) -> None:
    """Keep the open job's switch-writer lane busy: a write of ``tag`` (no coflow's)
    blocks in the fake switch until ``drv.gate`` is set, so a ``register`` meanwhile
    finds the lane busy and its own write queued behind."""
    drv.gate, drv.entered = threading.Event(), threading.Event()
    plane.scheduler.job.lane.put(Changes([TagEntry(tag, 3)]))
    assert drv.entered.wait(5)


class LoopbackClient(ControllerClient):
    """A ControllerClient whose requests go through JSON to ``plane.handle`` in this
    process instead of a socket (every message still crosses its wire form)."""

    def __init__(self, plane: ControlPlane) -> None:
        super().__init__("/nonexistent")
        self.plane = plane
        self.ops: list[str] = []

    def call(self, request: dict, timeout: float | None = None) -> dict:
        """One request through its JSON form; ControllerError when ``ok`` is false."""
        self.ops.append(request["op"])
        reply = json.loads(json.dumps(self.plane.handle(json.loads(json.dumps(request)))))
        if not reply.get("ok"):
            raise ControllerError(reply.get("error", "unknown error"))
        return reply

    def submit(self, request: dict) -> Future:
        """``PipelinedClient.submit``: answered at once, in order (the raw reply)."""
        done: Future = Future()
        try:
            done.set_result(self.call(request))
        except ControllerError as exc:
            done.set_exception(exc)
        return done


class FakeBackend:
    """The DAG executor's backend with a simulated clock (``clock``).  Every flow takes
    bytes / rate seconds, independently; time advances only when the executor waits for
    events."""

    def __init__(self, rate_bps: float = 8e6, fail: str | None = None) -> None:
        self.t = 1000.0
        self.rate = rate_bps
        self.fail = fail
        self.pending: list[tuple[float, str, int]] = []
        self.released: list[tuple[str, float]] = []
        self.finished_ids: list[str] = []

    def clock(self) -> float:
        return self.t

    def release(self, coflow, now):
        self.released.append((coflow.coflow_id, now - 1000.0))
        for f in coflow.flows:
            heapq.heappush(self.pending, (now + f.bytes * 8 / self.rate, f.flow_id, f.bytes))
        self.started = [FlowStarted(f.flow_id, now) for f in coflow.flows]

    def finished(self, coflow, now):
        self.finished_ids.append(coflow.coflow_id)

    def tick(self, now):
        return None

    def wait_events(self, timeout):
        horizon = self.t + timeout
        if not self.pending or self.pending[0][0] > horizon:
            self.t = horizon
            return []
        t, fid, nbytes = heapq.heappop(self.pending)
        self.t = t
        if fid == self.fail:
            return [FlowFailed(fid, "connection reset")]
        return [FlowDone(fid, t, nbytes)]


def cf(cid, flows, deps=(), release=0.0, it=0):
    return Coflow(
        cid,
        tuple(Flow(f"{cid}.{i}", s, d, b) for i, (s, d, b) in enumerate(flows)),
        CoflowIdentity(CoflowType.PP, iteration=it),
        tuple(deps),
        release,
    )
