"""The controller as coflow scheduler: the control API's scheduling ops (see
``controller.messages``) run the policy here, in the controller process, through a
``LiveScheduler``; its switch writes go through one ordered lane.

A ``register`` is answered once its coflow's own entry (and any clear before it) is in
the switches, so its packets find their level, except when that entry has per-pair
meters (SEBF's MADD) and no coflow-wide one: that write is not waited for.  The answer
then marks the coflow's packets with its level's code (which every switch queues by,
and the leaves pass on unchanged) and paces its pairs at their meters' rates, and once
the entry is written a later answer moves its senders to the tag's DSCP, unpaced
(``HostMark``), so the switches' entry, and the re-ranks written to it, take over.
Re-ranking of the other coflows is written behind the coflow's own entry; the host
updates go back in the answers for the orchestrator to forward to the agents.  Every
request and what it changed is appended to an event log (JSON lines) that ``replay``
feeds back through a fresh scheduler.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from controller import policies
from controller.coflow_table import FlowRate, TagEntry, parse_entry
from controller.lane import Lane
from controller.messages import (
    POLL_COUNTERS,
    POLL_PROGRESS,
    REQUESTS,
    Assignment,
    CloseJob,
    HostMark,
    HostUpdates,
    JobOpened,
    JobReport,
    OpenJob,
    Progress,
    Register,
    Registered,
    Unregister,
)
from controller.policies.base import FabricView, Policy
from controller.policies.interjob import InterJobPolicy
from controller.policies.plugins import import_plugin
from controller.policies.static import StaticPolicy
from controller.scheduler import Changes, LiveScheduler
from topo.plan import FabricPlan
from workload.marking import TAG_ID_MAX, TAG_MIN, level_dscp

log = logging.getLogger("controller.scheduler")
WRITE_TIMEOUT_S = 30.0


class SwitchWriter(Protocol):
    """What the scheduler needs of the control plane."""

    def clear_tags(self, tags: Sequence[int]) -> int: ...
    def set_entries(self, entries: Sequence[TagEntry]) -> int: ...
    def tag_bytes(self) -> dict[int, int]: ...


def build_policy(spec, levels: int) -> Policy:
    """The policy object of ``spec`` (plugins imported first); ValueError on a bad name,
    parameter or plugin."""
    for path in spec.plugins:
        try:
            import_plugin(Path(path))
        except Exception as exc:  # user code: report it as bad input
            raise ValueError(f"plugin {path}: {type(exc).__name__}: {exc}") from None
    if spec.name == "static":
        return StaticPolicy(
            spec.static_levels, levels - 1, {k: v * 1e6 for k, v in spec.static_rates_mbps.items()}
        )
    policy = policies.get(spec.name, **spec.params)
    return policy if spec.inter_job is None else InterJobPolicy(policy, spec.inter_job)


def merge_changes(items: Sequence[Changes]) -> Changes:
    """Changes queued one after another as one: every clear first (a clear is only ever
    queued for tags about to be set again), then the last entry per tag, the last host
    priority per (host, tag) and the last paced rate per (sender, tag, receiver)."""
    clears: list[int] = []
    entries: dict[int, TagEntry] = {}
    levels: dict[tuple[str, int], Any] = {}
    rates: dict[tuple[str, int, str], Any] = {}
    for ch in items:
        clears.extend(t for t in ch.clear_tags if t not in clears)
        entries.update((e.tag, e) for e in ch.entries)
        levels.update(((u.host, u.tag), u) for u in ch.host_levels)
        rates.update(((u.src, u.tag, u.dst), u) for u in ch.host_rates)
    return Changes(list(entries.values()), clears, list(levels.values()), list(rates.values()))


def split_own(changes: Changes, tag: int) -> tuple[Changes, Changes]:
    """(what a new coflow's packets need now: clears and its own entry; the rest)."""
    own = [e for e in changes.entries if e.tag == tag]
    others = [e for e in changes.entries if e.tag != tag]
    return (
        Changes(entries=own, clear_tags=changes.clear_tags),
        Changes(entries=others, host_levels=changes.host_levels, host_rates=changes.host_rates),
    )


@dataclass
class _Job:
    """One open job: its scheduler, its write lane, what it polls and whether a poll
    reads the tag counters; the coflows whose own entry is on its way (by tag: the entry
    and its senders) and the entries written since the last answer (appended by the
    lane's thread, under ``lock``)."""

    scheduler: LiveScheduler
    lane: Lane
    poll: str | None
    counters: bool = False  # each poll reads the tag counters (the policy reads bytes_sent)
    write_s: list[float] = field(default_factory=list)
    pending: dict[int, tuple[TagEntry, tuple[str, ...]]] = field(default_factory=dict)
    landed: list[TagEntry] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def deferrable(entry: TagEntry) -> bool:
    """Whether a coflow's packets go before its entry is written: when the entry has
    per-pair meters (``flow_rates``: SEBF's MADD) and no meter over the whole coflow
    (``rate_mbps``, which its senders could not keep).  Marked with its level's code the
    packets queue at their level everywhere, and the senders pace the pairs' rates
    meanwhile.  A write with meters takes twice as long as one of rules alone, and only
    there did not waiting measure better (docs/emulation.md, "What the release path
    costs"); an entry of rules alone is waited for."""
    return entry.rate_mbps is None and bool(entry.flow_rates)


def _poll_kind(sched: LiveScheduler) -> str | None:
    """What the orchestrator polls for this job: counters for byte thresholds (D-CLAS),
    the agents' progress for a clairvoyant policy deciding live (SEBF), else counters
    for a policy that reads ``bytes_sent``; None: no poll."""
    if sched.wants_counters() and sched.policy.byte_thresholds:
        return POLL_COUNTERS
    if sched.wants_progress():
        return POLL_PROGRESS
    return POLL_COUNTERS if sched.wants_counters() else None


def provisional(level: int, senders: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """Each sender marks with the level's code until the coflow's entry is written."""
    return tuple((h, level_dscp(level)) for h in senders)


class SchedulerService:
    """Answers open_job / register / unregister / progress / close_job."""

    def __init__(
        self,
        plan: FabricPlan,
        levels: int,
        writer: SwitchWriter,
        record: Callable[[dict], None] | None = None,
        tag_max: int = TAG_ID_MAX,
    ) -> None:
        """Scheduler for ``plan`` with ``levels`` levels, writing through ``writer``;
        ``record`` receives every event (request and resulting changes); ``tag_max``:
        the largest tag the switch driver takes."""
        self.plan, self.levels, self.writer, self.record = plan, levels, writer, record
        self.tag_max = tag_max
        self.job: _Job | None = None
        self._lock = threading.Lock()
        self.replayed: list[dict] = []  # the answers ``restore`` rebuilt, in request order

    def handle(self, op: str, request: dict) -> dict:
        """Decode ``request`` for ``op``, answer it, encode the answer."""
        msg = REQUESTS[op].from_wire(request, op)
        return getattr(self, op)(msg).to_wire()

    # --- ops ---------------------------------------------------------------------------
    def open_job(self, msg: OpenJob) -> JobOpened:
        """Build the policy and scheduler; identity-ranked policies get their levels for
        the whole DAG now and their entries written before the answer."""
        with self._lock:
            if self.job is not None:
                raise ValueError("open_job: a job is already open (close_job first)")
            policy = build_policy(msg.policy, self.levels)
            view = FabricView.uniform(
                self.plan.host_names(), self.plan.host_bw_mbps * 1e6, self.levels
            )
            sched = LiveScheduler(
                policy,
                view,
                self.levels,
                all_coflows=list(msg.coflows),
                pacing=msg.pacing,
                tag_max=self.tag_max,
            )
            poll = _poll_kind(sched)
            write_s: list[float] = []
            lane = Lane("switch-writer", lambda ch: self._write(write_s, ch), merge_changes)
            job = _Job(sched, lane, poll, sched.wants_counters(), write_s)
            pre = sched.preinstall()
            self._log("open_job", msg, pre, {"fixed": sched.fixed})
            if pre:
                job.lane.put(pre).result(WRITE_TIMEOUT_S)
            self.job = job
        fixed = (
            None
            if sched.fixed is None
            else {cid: Assignment(TAG_MIN + lv, lv) for cid, lv in sched.fixed.items()}
        )
        return JobOpened(fixed, poll)

    def register(self, msg: Register) -> Registered:
        """Decide with ``msg.coflow`` active; answer once its own entry is written."""
        with self._lock:
            job = self._open()
            sched = job.scheduler
            self._done(sched, msg.done_flows)
            changes = sched.arrive(msg.coflow, msg.now)
            cid = msg.coflow.coflow_id
            tag = sched.tags[cid]
            own, rest = split_own(changes, tag)
            assigned = Assignment(tag, sched.level_of(cid), sched.dscps_of(cid))
            pairs, own_done = self._pair_rates(sched, msg.coflow), None
            if own.entries and deferrable(own.entries[0]):
                senders = tuple(sorted({f.src for f in msg.coflow.flows}))
                self._defer(job, own, senders)
                assigned = replace(assigned, dscps=provisional(assigned.level, senders))
                pairs = own.entries[0].flow_rates  # paced at its pair meters' rates
            elif own and not job.lane.apply_if_idle(own)[0]:  # idle: written here, now
                own_done = job.lane.put(own, last=True)  # not merged with the re-ranks after
            if rest.entries or rest.clear_tags:
                job.lane.put(rest)
            reply = Registered(assigned, pairs, self._hosts(job, rest), tag not in job.pending)
            self._log("register", msg, changes)
        if own_done is not None:
            own_done.result(WRITE_TIMEOUT_S)
        return reply

    def unregister(self, msg: Unregister) -> HostUpdates:
        """Decide without the completed coflow; its writes go behind the answer."""
        with self._lock:
            job = self._open()
            self._done(job.scheduler, msg.done_flows)
            tag = job.scheduler.tags.get(msg.coflow_id, -1)
            changes = job.scheduler.finish(msg.coflow_id, msg.now)
            job.pending.pop(tag, None)  # its flows are done: nothing left to mark
            return self._queue(job, "unregister", msg, changes)

    def progress(self, msg: Progress) -> HostUpdates:
        """A poll: the controller's own tag counters become ``bytes_sent`` (policies that
        read it), the agents' acknowledged bytes the bytes left (clairvoyant policies
        with a progress poll); re-decide if the policy wants to.  The counters are read
        here only, outside the lock, never on a release's path (each read waits for every
        leaf's reply): a decision sees them as of the last poll."""
        job = self._open()
        sent = self.writer.tag_bytes() if job.counters else None
        with self._lock:
            job = self._open()
            self._done(job.scheduler, msg.done_flows)
            changes = Changes()
            if sent is not None:
                changes = job.scheduler.bytes_sent(sent, msg.now)
            if job.poll == POLL_PROGRESS:  # no thresholds then: bytes_sent changed nothing
                changes = job.scheduler.progress(msg.acked, msg.now)
            return self._queue(job, "progress", msg, changes, {"tag_bytes": sent})

    def close_job(self, msg: CloseJob) -> JobReport:
        """Finish queued writes; report the levels and ranks the coflows ran at."""
        with self._lock:
            job = self._open(check_writes=False)
            self.job = None
        job.lane.close()
        sched = job.scheduler
        self._log("close_job", msg, Changes())
        return JobReport(
            sched.is_static,
            dict(sched.last_level),
            {cid: str(r) for cid, r in sched.last_rank.items()},
            tuple(job.write_s),
            sched.moved_up,
            sched.moved_down,
        )

    def restore(self, events: Sequence[dict]) -> dict[int, TagEntry]:
        """After a controller restart: feed the old controller's event log through this
        fresh service, writing nothing and logging nothing, and keep each answer (with
        its ``ok``) in ``replayed``.  Returns the entries the old controller had asked
        the switches to hold (the logged changes folded in order)."""
        writer, record, quiet = self.writer, self.record, _NoSwitches()
        self.writer, self.record = quiet, None
        entries: dict[int, TagEntry] = {}
        try:
            for i, ev in enumerate(events):
                if ev.get("tag_bytes") is not None:
                    quiet.tag_counts = {int(k): v for k, v in ev["tag_bytes"].items()}
                self.replayed.append({"ok": True, **self.handle(ev["op"], ev["request"])})
                for tag in ev["changes"]["clear_tags"]:
                    entries.pop(tag, None)
                for j, d in enumerate(ev["changes"]["entries"]):
                    e = parse_entry(d, self.plan, self.levels, f"event {i + 1}.entries[{j}]")
                    entries[e.tag] = e
            if self.job is not None:  # its lane has applied every replayed change
                self.job.lane.put(Changes()).result(WRITE_TIMEOUT_S)
                self.job.write_s.clear()
        finally:
            self.writer, self.record = writer, record
        return entries

    # --- helpers -----------------------------------------------------------------------
    def _open(self, check_writes: bool = True) -> _Job:
        """The open job; ValueError when none is, RuntimeError after a failed write."""
        job = self.job
        if job is None:
            raise ValueError("no job is open (open_job first)")
        if check_writes and job.lane.error is not None:
            raise RuntimeError(f"an earlier scheduled switch write failed: {job.lane.error}")
        return job

    @staticmethod
    def _done(sched: LiveScheduler, flows: Sequence[str]) -> None:
        """Flows that delivered everything: 0 bytes left."""
        for fid in flows:
            sched.flow_done(fid)

    def _queue(
        self, job: _Job, op: str, msg: Any, changes: Changes, extra: dict | None = None
    ) -> HostUpdates:
        """Queue the switch part of ``changes``; the host part is the answer."""
        if changes.entries or changes.clear_tags:
            job.lane.put(changes)
        self._log(op, msg, changes, extra)
        return self._hosts(job, changes)

    @staticmethod
    def _defer(job: _Job, own: Changes, senders: tuple[str, ...]) -> None:
        """Queue a coflow's own entry without waiting for it; once written it is noted
        in ``landed`` for the next answer (unless it failed: the lane keeps the error)."""
        entry = own.entries[0]
        job.pending[entry.tag] = (entry, senders)

        def written(done: Future) -> None:
            if done.exception() is None:
                with job.lock:
                    job.landed.append(entry)

        job.lane.put(own, last=True).add_done_callback(written)

    @staticmethod
    def _hosts(job: _Job, changes: Changes) -> HostUpdates:
        """The host part of ``changes`` and the marks due for the coflows whose entry
        was on its way: the level's code for those re-ranked meanwhile; for those written
        since (if the tag still belongs to them) the tag's DSCP, unpaced (the switches'
        per-pair meters took the pacing over).  Marks depend on when writes
        end: the event log leaves them out (``changes_to_wire``)."""
        marks = [
            HostMark(u.host, u.tag, level_dscp(u.level))
            for u in changes.host_levels
            if u.tag in job.pending
        ]
        with job.lock:
            landed, job.landed = job.landed, []
        for entry in landed:
            if job.pending.get(entry.tag, (None,))[0] is entry:
                _, senders = job.pending.pop(entry.tag)
                marks.extend(HostMark(h, entry.tag, entry.dscp_of(h), True) for h in senders)
        return replace(changes.hosts(), marks=tuple(marks))

    @staticmethod
    def _pair_rates(sched: LiveScheduler, coflow) -> tuple[FlowRate, ...]:
        """Pacing mode: the rate each (src, dst) pair of ``coflow`` starts at."""
        pairs = sorted({(f.src, f.dst) for f in coflow.flows})
        rates = ((s, d, sched.pair_rate(coflow.coflow_id, s, d)) for s, d in pairs)
        return tuple(FlowRate(s, d, r) for s, d, r in rates if r is not None)

    def _write(self, write_s: list[float], changes: Changes) -> None:
        """Apply the switch part of (merged) ``changes``: clears, then entries."""
        if changes.clear_tags:
            self.writer.clear_tags(changes.clear_tags)
        if changes.entries:
            t = time.monotonic()
            self.writer.set_entries(changes.entries)
            write_s.append(time.monotonic() - t)

    def _log(self, op: str, msg: Any, changes: Changes, extra: dict | None = None) -> None:
        """Hand one event (request and resulting changes) to ``record``."""
        if self.record is not None:
            self.record(
                {
                    "op": op,
                    "request": msg.to_wire(),
                    "changes": changes_to_wire(changes),
                    **(extra or {}),
                }
            )


class EventLog:
    """Appends events to a JSON-lines file (one line each, keys sorted), kept open and
    line-buffered: every event is on disk once logged, at one write each."""

    def __init__(self, path: Path) -> None:
        """Log to ``path`` (appended to)."""
        self.path = Path(path)
        self._file = self.path.open("a", buffering=1)

    def __call__(self, event: dict) -> None:
        """Append ``event``."""
        self._file.write(json.dumps(event, separators=(",", ":"), sort_keys=True) + "\n")


def read_events(path: Path) -> list[dict]:
    """The events of a log, for a restarted controller.  A last line that a crash cut
    short is dropped, from the file too (the new controller appends after it)."""
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        log.warning("%s: dropping a last event cut short (%d bytes)", path, len(data) - keep)
        with path.open("r+b") as f:
            f.truncate(keep)
        data = data[:keep]
    events = []
    for no, line in enumerate(data.decode().splitlines(), 1):
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{no}: not an event: {exc}") from None
    return events


def changes_to_wire(changes: Changes) -> dict:
    """``changes`` as JSON (the event log's form; compared by ``replay``)."""
    hosts = changes.hosts().to_wire()
    del hosts["marks"]  # not a decision's: when an entry was written, which is no replay's
    return {
        "entries": [e.to_wire() for e in changes.entries],
        "clear_tags": list(changes.clear_tags),
        **hosts,
    }


class _NoSwitches:
    """A writer that writes nothing (replay): counters come from the log."""

    def __init__(self) -> None:
        self.tag_counts: dict[int, int] = {}

    def clear_tags(self, tags: Sequence[int]) -> int:
        """Nothing to clear."""
        return 0

    def set_entries(self, entries: Sequence[TagEntry]) -> int:
        """Nothing to write."""
        return 0

    def tag_bytes(self) -> dict[int, int]:
        """The counters the log recorded for this poll."""
        return dict(self.tag_counts)


def replay(
    plan: FabricPlan, levels: int, events: Sequence[dict], on_event: Callable[[dict, dict], None]
) -> None:
    """Feed a recorded event log through a fresh scheduler (no switches; counter polls
    read the counters the log recorded), calling ``on_event(recorded, replayed)`` with
    each recorded event and the one the replay produced (both in their JSON form)."""
    writer = _NoSwitches()
    seen: list[dict] = []
    service = SchedulerService(plan, levels, writer, seen.append)
    for ev in events:
        if ev.get("tag_bytes") is not None:
            writer.tag_counts = {int(k): v for k, v in ev["tag_bytes"].items()}
        seen.clear()
        service.handle(ev["op"], ev["request"])
        on_event(ev, json.loads(json.dumps(seen[-1])))
