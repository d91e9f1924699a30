"""The executor's backend on the emulated fabric: coflows are scheduled by the
controller (its coflow scheduler, ``controller.scheduler_service``) and their flows sent
through the host agents.

Scheduling requests go to the controller in order on one pipelined connection of their
own: a release waits for its ``register`` answer (its level is then known, and its own
entry in the switches or, without a meter, on its way while its packets carry the
level's code), completions and polls do not wait, and nothing waits for the answer to
an earlier request before sending.  Host socket priorities, marks and paced rates the
answers carry are applied on a second lane, so a release never waits behind agent round
trips; a mark for a coflow whose send orders are still on their way waits for them
(``OrderGate``).  With an identity-ranked policy the controller answered the whole
DAG's levels at ``open_job``, and releases make no round trip at all.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial

from coflowbed.emulation.agents.types import SendOrder
from coflowbed.emulation.calibrate import PREFIX as CALIBRATION_PREFIX
from coflowbed.emulation.connections import flow_slots
from coflowbed.emulation.executor import Event, FlowDone, FlowFailed, FlowStarted
from coflowbed.results.records import FlowRecord, percentile
from controller.lane import Lane
from controller.messages import (
    POLL_COUNTERS,
    POLL_PROGRESS,
    Assignment,
    CloseJob,
    HostUpdates,
    JobOpened,
    JobReport,
    OpenJob,
    Progress,
    Register,
    Registered,
    Reply,
    Request,
    Unregister,
    parse_reply,
    request_wire,
)
from topo.plan import FabricPlan
from workload import ecmp
from workload.dag import Coflow

log = logging.getLogger("emulation")

COUNTER_POLL_S = 0.1  # policies reading bytes sent (D-CLAS, reads_bytes_sent) poll the counters
PROGRESS_POLL_S = 0.5  # clairvoyant policies learn bytes left from the agents this often
REQUEST_TIMEOUT_S = 30.0
SENT_WAIT_S = 2.0  # after the run, the senders' last acknowledgements arrive within this


def merge_host_updates(items: Sequence[HostUpdates]) -> HostUpdates:
    """Host updates queued one after another as one: the last priority and the last
    mark per (host, tag), the last paced rate per (sender, tag, receiver)."""
    levels = {(u.host, u.tag): u for h in items for u in h.levels}
    rates = {(u.src, u.tag, u.dst): u for h in items for u in h.rates}
    marks = {(u.host, u.tag): u for h in items for u in h.marks}
    return HostUpdates(tuple(levels.values()), tuple(rates.values()), tuple(marks.values()))


class OrderGate:
    """The tags whose send orders are on their way to the agents (from the moment their
    ``register`` answer arrives until the release has sent them): an agent re-marks only
    the flows it has, so a mark for such a tag waits."""

    def __init__(self) -> None:
        """No tag on its way."""
        self._cond = threading.Condition()
        self._open: set[int] = set()

    def begin(self, tag: int) -> None:
        """``tag``'s orders are on their way."""
        with self._cond:
            self._open.add(tag)

    def end(self, tag: int) -> None:
        """``tag``'s orders reached the agents (or will not be sent)."""
        with self._cond:
            self._open.discard(tag)
            self._cond.notify_all()

    def wait(self, tag: int, timeout: float = REQUEST_TIMEOUT_S) -> None:
        """Until ``tag``'s orders are sent; RuntimeError after ``timeout``."""
        with self._cond:
            if not self._cond.wait_for(lambda: tag not in self._open, timeout):
                raise RuntimeError(f"tag {tag}: its send orders were not sent in {timeout} s")


class HostWriter:
    """Applies host updates (socket priorities, paced rates, marks) on the sending
    agents, on a lane of its own; what queued up while it was busy is merged."""

    def __init__(self, agents, ip: dict[str, str], gate: OrderGate | None = None) -> None:
        """Writer to ``agents``; ``ip`` maps host names to addresses (paced pairs);
        marks wait at ``gate`` for their tag's send orders."""
        self.agents, self.ip, self.gate = agents, ip, gate or OrderGate()
        self.lane: Lane[HostUpdates] = Lane("host-writer", self._apply, merge_host_updates)

    def put(self, updates: HostUpdates) -> None:
        """Queue ``updates`` (nothing when empty)."""
        if updates:
            self.lane.put(updates)

    def _apply(self, updates: HostUpdates) -> None:
        """Socket priorities and paced rates on the sending hosts."""
        for u in updates.levels:
            self.agents.set_level(u.host, u.tag, u.level)
        for r in updates.rates:
            self.agents.set_rate(r.src, r.tag, self.ip[r.dst], r.rate_mbps)
        for m in updates.marks:  # after the priorities: a mark sets the priority again
            self.gate.wait(m.tag)
            self.agents.set_dscp(m.host, m.tag, m.dscp, m.unpace)


class SchedulerLink:
    """The orchestrator's end of the coflow scheduler: requests go out in order on one
    pipelined connection (a completion's ``unregister`` never holds the next release's
    ``register`` back by a round trip); the host updates of every answer go to
    ``hosts``."""

    def __init__(self, client, hosts: HostWriter) -> None:
        """Link over ``client`` (a ``PipelinedClient``: ``submit(request) -> Future``)."""
        self.client, self.hosts = client, hosts
        self.error: BaseException | None = None

    def send(self, msg: Request) -> Future:
        """Send ``msg``; the future settles with the controller's typed answer."""
        if self.error is not None or self.hosts.lane.error is not None:
            raise RuntimeError(f"controller request failed: {self.error or self.hosts.lane.error}")
        answer: Future = Future()
        self.client.submit(request_wire(msg)).add_done_callback(
            partial(self._answered, msg, answer)
        )
        return answer

    def ask(self, msg: Request, timeout: float = REQUEST_TIMEOUT_S) -> Reply:
        """The controller's answer to ``msg`` (in order after everything sent before)."""
        return self.send(msg).result(timeout)

    def open_job(self, msg: OpenJob) -> JobOpened:
        """The answer to ``open_job``."""
        reply = self.ask(msg)
        assert isinstance(reply, JobOpened)
        return reply

    def register(self, msg: Register) -> Registered:
        """The answer to ``register``: sent once the coflow's own entry is written."""
        reply = self.ask(msg)
        assert isinstance(reply, Registered)
        return reply

    def _answered(self, msg: Request, answer: Future, raw: Future) -> None:
        """Parse the reply, forward its host updates, settle ``answer``."""
        try:
            reply = parse_reply(msg, raw.result())
        except Exception as exc:  # handed to the waiter, and kept for the executor
            self.error = self.error or exc
            answer.set_exception(exc)
            return
        if isinstance(reply, Registered):
            if not reply.written:  # before anyone can see the answer
                self.hosts.gate.begin(reply.assignment.tag)
            self.hosts.put(reply.hosts)
        elif isinstance(reply, HostUpdates):
            self.hosts.put(reply)
        answer.set_result(reply)

    def close(self) -> JobReport:
        """Close the job (after everything sent before): its report; then stop."""
        try:
            report = self.ask(CloseJob())
        finally:
            self.client.close()
            self.hosts.lane.close()
        assert isinstance(report, JobReport)
        return report


@dataclass
class ReleaseTimes:
    """What releasing costs on the fabric: from a coflow's release to each of its flows'
    first payload byte at the receiver, and the ``register`` round trips a release
    waited for (dynamic policies), with how many went before their entry was written
    (``level_marked``: marked with the level's code meanwhile)."""

    released: dict[str, float] = field(default_factory=dict)  # flow id -> monotonic s
    start_s: list[float] = field(default_factory=list)  # release -> sender's flow started
    first_byte_s: list[float] = field(default_factory=list)
    write_s: list[float] = field(default_factory=list)
    releases: int = 0
    new_connections: int = 0  # flows that found no idle pooled connection
    level_marked: int = 0  # releases whose flows started before their entry was written

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
        return {
            "releases": self.releases,
            "new_connections": self.new_connections,
            "start_ms": _ms_stats(self.start_s),
            "first_byte_ms": _ms_stats(self.first_byte_s),
            "writes_waited": len(self.write_s) - self.level_marked,
            "level_marked": self.level_marked,
            "write_ms": _ms_stats(self.write_s),
        }


def _remapped(assigned: Assignment, host: str) -> int | None:
    """The DSCP ``host`` marks the coflow with when the controller remapped it (None:
    the tag's own; ``controller.tags``)."""
    return dict(assigned.dscps).get(host)


def _ms_stats(values: list[float]) -> dict | None:
    """count, median, p95 and max of ``values`` (seconds) in ms; None when empty."""
    median, p95 = percentile(values, 50), percentile(values, 95)
    if median is None or p95 is None:  # no values
        return None
    return {
        "count": len(values),
        "median": round(median * 1e3, 3),
        "p95": round(p95 * 1e3, 3),
        "max": round(max(values) * 1e3, 3),
    }


class EmulationBackend:
    """Backend of ``DagExecutor`` for a running fabric (controller + agents)."""

    def __init__(
        self, job: OpenJob, controller, agents, plan: FabricPlan, data_port: int, scheduler_client
    ) -> None:
        """Backend for ``job``; ``scheduler_client`` is a second controller connection,
        used only by the scheduling lane."""
        self.job, self.controller, self.agents = job, controller, agents
        self.plan, self.data_port = plan, data_port
        self.ip = {h.name: h.ip for h in plan.hosts}
        self.slots = flow_slots(job.coflows, plan)  # flow id -> ECMP slot
        self.n_slots = ecmp.slot_count(plan.spines)
        self.link = SchedulerLink(scheduler_client, HostWriter(agents, self.ip))
        self.opened: JobOpened | None = None
        self.report: JobReport | None = None
        self.active: dict[str, Coflow] = {}
        self.levels: dict[str, int] = {}  # level each coflow was released at
        self._done_flows: list[str] = []
        self.times = ReleaseTimes()
        self.retrans: dict[str, int] = {}  # flow id -> bytes its sender's TCP sent again
        self.sent: set[str] = set()  # flows whose sender saw the receiver's acknowledgement

    def preinstall(self) -> None:
        """Before the iteration: open the job (identity-ranked policies' entries are
        written now, so that releases make no controller round trip)."""
        self.opened = self.link.open_job(self.job)

    @property
    def fixed(self) -> Mapping[str, Assignment] | None:
        """Every coflow's assignment when the controller fixed them for the DAG."""
        return None if self.opened is None else self.opened.fixed

    def release(self, coflow: Coflow, now: float) -> None:
        """Have ``coflow`` scheduled (its own entry applied or on its way first), then
        start its flows."""
        t_release = time.monotonic()
        fixed = self.fixed
        if fixed is not None:
            assigned, reply = fixed[coflow.coflow_id], None
        else:
            reply = self.link.register(Register(coflow, now, self._drain()))
            assigned = reply.assignment
            self.times.write_s.append(time.monotonic() - t_release)
            self.times.level_marked += not reply.written
        try:
            self._send(coflow, assigned, reply, t_release)
        finally:
            if reply is not None and not reply.written:
                self.link.hosts.gate.end(assigned.tag)

    def _send(
        self, coflow: Coflow, assigned: Assignment, reply: Registered | None, t_release: float
    ) -> None:
        """Note the release and send the coflow's flows at its assignment."""
        self.active[coflow.coflow_id] = coflow
        self.levels[coflow.coflow_id] = assigned.level
        self.times.releases += 1
        for f in coflow.flows:
            self.times.released[f.flow_id] = t_release
        # one write per sending agent, so a coflow's flows start together
        self.agents.send_many(
            [
                SendOrder(
                    f.src,
                    f.flow_id,
                    self.ip[f.dst],
                    self.data_port,
                    f.bytes,
                    assigned.tag,
                    assigned.level,
                    None if reply is None else reply.pair_rate(f.src, f.dst),
                    _remapped(assigned, f.src),
                    *self._slot(f.flow_id),
                )
                for f in coflow.flows
            ]
        )

    def _slot(self, flow_id: str) -> tuple[int | None, int | None]:
        """(slot, slots) of a flow's connection (None, None: both ends on one leaf)."""
        slot = self.slots.get(flow_id)
        return (None, None) if slot is None else (slot, self.n_slots)

    def finished(self, coflow: Coflow, now: float) -> None:
        """Tell the scheduler; the re-decision is applied behind, without waiting."""
        self.active.pop(coflow.coflow_id, None)
        if self.fixed is None:
            self.link.send(Unregister(coflow.coflow_id, now, self._drain()))

    def _drain(self) -> tuple[str, ...]:
        """Flows that delivered everything since the last request."""
        done, self._done_flows = tuple(self._done_flows), []
        return done

    def wait_events(self, timeout: float) -> Sequence[Event]:
        """Translate agent events into executor events."""
        if self.link.error is not None:
            return [FlowFailed("(controller)", f"controller request failed: {self.link.error}")]
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
            elif kind == "flow_sent":
                self._sent(fid, ev.get("retrans_bytes"))
            elif kind == "flow_received":
                self.times.first_byte(fid, int(ev.get("first_ns") or 0))
                if self.fixed is None:  # dynamic: the scheduler hears of it next request
                    self._done_flows.append(fid)
                out.append(FlowDone(fid, ev["last_ns"] / 1e9, int(ev["bytes"])))
            elif kind == "flow_failed":
                out.append(
                    FlowFailed(fid or "(unknown)", f"{ev.host}: {ev.get('error', 'unknown error')}")
                )
            elif kind == "agent_lost":
                out.append(FlowFailed("(agent)", f"agent of {ev.host} lost: {ev.get('error')}"))
        return out

    def _sent(self, flow_id: str, retrans_bytes: int | None) -> None:
        """The sender of ``flow_id`` saw it acknowledged; what its TCP sent again."""
        self.sent.add(flow_id)
        if retrans_bytes is not None:
            self.retrans[flow_id] = int(retrans_bytes)

    def collect_sent(self, flow_ids: Collection[str], timeout_s: float = SENT_WAIT_S) -> None:
        """Wait (at most ``timeout_s``) for the senders' ``flow_sent`` of ``flow_ids``: the
        last ones come a moment after the receivers' last ``flow_received`` ended the run."""
        deadline = time.monotonic() + timeout_s
        missing = set(flow_ids) - self.sent
        while missing and (left := deadline - time.monotonic()) > 0:
            self.wait_events(left)  # a late event of a finished run: only flow_sent counts
            missing -= self.sent
        if missing:
            log.warning(
                "%d senders did not confirm their flows within %g s", len(missing), timeout_s
            )

    def tick(self, now: float) -> float | None:
        """Poll for policies that decide on progress: the controller reads its own tag
        counters (byte thresholds, D-CLAS; ``reads_bytes_sent``), or gets the active
        senders' acknowledged bytes from their agents (clairvoyant policies deciding
        live, SEBF)."""
        poll = None if self.opened is None else self.opened.poll
        if poll == POLL_COUNTERS:
            self.link.send(Progress(now, {}, self._drain()))
            return now + COUNTER_POLL_S
        if poll == POLL_PROGRESS:
            acked: dict[str, int] = {}
            for host in sorted({f.src for cf in self.active.values() for f in cf.flows}):
                acked.update(self.agents.stats(host).sent)
            self.link.send(Progress(now, acked, self._drain()))
            return now + PROGRESS_POLL_S
        return None

    def close(self) -> None:
        """Let queued requests finish and close the job (its report, or None when the
        controller could not give it)."""
        try:
            self.report = self.link.close()
        except Exception as exc:  # the run's own error, if any, is reported already
            log.warning("scheduler report unavailable: %s", exc)


def retransmitted(flows: Sequence[FlowRecord]) -> dict | None:
    """summary.json's ``retransmitted``: the bytes TCP sent again (segments dropped at a
    queue, or reordered), in all and as a share of the flows' bytes; None: not measured."""
    measured = [f for f in flows if f.retrans_bytes is not None]
    if not measured:
        return None
    again = sum(f.retrans_bytes or 0 for f in measured)
    total = sum(f.bytes for f in measured)
    return {
        "bytes": again,
        "share": round(again / total, 6) if total else 0.0,
        "flows": sum(1 for f in measured if f.retrans_bytes),
        "flows_measured": len(measured),
    }


LOSS_WAIT_S = 2.0  # a failed flow's peer agent may be seen lost a moment after the failure
MAX_NAMED_FLOWS = 20


def name_losses(agents, executor, error: str, wait: bool) -> tuple[str, dict | None]:
    """When agents were lost during the run (killed, crashed): the run's error line
    naming each such host and the flows lost with it, and the ``lost`` block of
    summary.json; else ``error`` unchanged and None.  ``wait``: the run failed on a flow
    or an agent, so wait up to LOSS_WAIT_S for an agent loss not seen yet."""
    lost = agents.wait_lost(LOSS_WAIT_S if wait else 0.0)
    if not lost:
        return error, None
    in_flight, not_released = (
        executor.unfinished_flows(set(lost)) if executor is not None else ([], [])
    )
    hosts = ", ".join(f"{h} ({why})" for h, why in sorted(lost.items()))
    named = ", ".join(in_flight[:MAX_NAMED_FLOWS]) or "none in flight"
    if len(in_flight) > MAX_NAMED_FLOWS:
        named += f" (+{len(in_flight) - MAX_NAMED_FLOWS} more)"
    line = (
        f"agent lost: {hosts}; flows lost: {named}; {len(not_released)} flows of coflows "
        f"not released yet; first failure: {error}"
    )
    block = {"hosts": dict(sorted(lost.items())), "flows": in_flight, "not_released": not_released}
    return line, block
