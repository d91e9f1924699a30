"""The control plane behind the control API: validates requests, keeps the desired tag
table, computes per-leaf diffs and has a SwitchDriver write them; the scheduling ops
(``controller.messages``) go to its coflow scheduler (``controller.scheduler_service``),
which writes through the same table.  Backend-neutral: the same object serves the
OpenFlow (os-ken) and a P4Runtime driver.

Threads: API requests come from server threads, switch (re)connections from the
driver's event thread (which must never block: installs run in their own thread).
Writes are serialised by one lock, so a reconnect re-install and a ``set`` never
interleave.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from controller.coflow_table import (
    DEFAULT_BURST_S,
    LeafTable,
    TagEntry,
    cookie_epoch,
    cookie_tag,
    leaf_state,
    parse_entries,
    parse_tags,
)
from controller.messages import REQUESTS, Resume, Resumed
from controller.routing import (
    FabricEvents,
    Groups,
    Link,
    LinkEvent,
    SwitchEvent,
    changed_groups,
    leaf_groups,
    link_name,
    link_of_port,
)
from controller.scheduler import PolicyError
from controller.scheduler_service import EventLog, SchedulerService, read_events
from controller.southbound.base import SouthboundError, SwitchDriver, SwitchState
from controller.southbound.wire import check_wire
from controller.stats import (
    MeterRow,
    PortCount,
    Status,
    TagCount,
    meters_to_wire,
    ports_to_wire,
    tags_to_wire,
)
from controller.takeover import adopted_epochs, adopted_table, groups_complete
from topo.plan import FabricPlan
from workload.marking import MAX_LEVELS

log = logging.getLogger("controller.control")
OPS = (
    "status",
    "wait_ready",
    "set",
    "clear",
    "tag_stats",
    "port_stats",
    "meter_stats",
    "fabric_events",
    "resume",
    "port_status",
)
# The keys each op takes beside "op".
OP_KEYS = {
    "set": ("entries",),
    "clear": ("tags",),
    "wait_ready": ("timeout_s",),
    "resume": ("answered",),
    "port_status": ("switch", "port", "down", "t_s"),
}
SCHEDULER_OPS = tuple(REQUESTS)  # open_job, register, unregister, progress, close_job
FABRIC_EVENTS_FILE = "fabric-events.jsonl"  # beside the scheduler's event log


@dataclass(frozen=True)
class ControlConfig:
    """Knobs of the control plane."""

    levels: int = MAX_LEVELS
    burst_s: float = DEFAULT_BURST_S
    op_timeout_s: float = 10.0
    events_path: Path | None = None  # the scheduler's event log (JSON lines)
    resume: bool = False  # a restart: rebuild from the event log, take the switches over


def _spawn_thread(fn: Callable, *args) -> None:
    """Default spawner: a daemon thread."""
    threading.Thread(target=fn, args=args, daemon=True).start()


class ControlPlane:
    """Desired state + diffs + driver calls; ``handle`` answers one API request."""

    def __init__(
        self,
        plan: FabricPlan,
        driver: SwitchDriver,
        config: ControlConfig,
        spawn: Callable = _spawn_thread,
    ) -> None:
        """Control plane of ``plan`` writing through ``driver``."""
        self.plan, self.driver, self.cfg, self.spawn = plan, driver, config, spawn
        self.leaves = [sw.name for sw in plan.switches if sw.role == "leaf"]
        self.entries: dict[int, TagEntry] = {}
        self.epochs: dict[int, int] = {}
        self._next_epoch = 1
        self.tables = {name: LeafTable() for name in self.leaves}
        self.ready: set[str] = set()
        self._installed: set[str] = set()  # ready at least once
        self.retired: dict[int, list[int]] = {}  # cookie -> [bytes, packets]
        self.retired_meters: list[MeterRow] = []  # last counters of meters removed by clear
        self._write = threading.Lock()
        self._stats = threading.Lock()
        self._ready_changed = threading.Condition()
        # leaf-spine links: which ends report them down, the installed ECMP groups
        self._links = threading.Lock()
        self._ends_down: dict[Link, set[str]] = {}
        self.down_links: set[Link] = set()
        self.groups: dict[str, Groups] = {}  # leaf -> groups installed on it
        self.link_events: list[LinkEvent] = []
        self.switch_events: list[SwitchEvent] = []
        self._adopting: set[str] = set()  # taken over, not wiped, at their next connection
        self._unknown: set[str] = set()  # leaves whose coflow table is not read back yet
        events = self._events_before() if config.resume else []
        self._fabric_log: EventLog | None = None
        if config.events_path is not None:  # what the fabric did, kept across restarts
            fabric_path = config.events_path.with_name(FABRIC_EVENTS_FILE)
            if config.resume:
                self._load_fabric_events(fabric_path)
            self._fabric_log = EventLog(fabric_path)
        record = None if config.events_path is None else EventLog(config.events_path)
        self.scheduler = SchedulerService(plan, config.levels, self, record, tag_max=driver.max_tag)
        if config.resume:
            self._restore(events)

    def _events_before(self) -> list[dict]:
        """The old controller's event log (a restart)."""
        if self.cfg.events_path is None:
            raise ValueError("resume: needs the old controller's event log")
        return read_events(self.cfg.events_path)

    def _load_fabric_events(self, path: Path) -> None:
        """A restart: the link and switch events the old controller saw."""
        for ev in read_events(path):
            if "link" in ev:
                self.link_events.append(LinkEvent.from_wire(ev["link"]))
            else:
                self.switch_events.append(SwitchEvent.from_wire(ev["switch"]))

    def _restore(self, events: list[dict]) -> None:
        """A restart: the scheduler and the desired entries from the old controller's
        events; every switch is taken over at its first connection."""
        self.entries = self.scheduler.restore(events)
        self._adopting = {sw.name for sw in self.plan.switches}
        self._unknown = set(self.leaves)
        log.info("restart: %d events replayed, %d entries wanted", len(events), len(self.entries))

    # --- switch lifecycle ------------------------------------------------------------
    def switch_connected(self, name: str) -> None:
        """(Re)install ``name`` completely in a thread of its own (after a controller
        restart: take it over)."""
        self._set_ready(name, False)
        self._switch_event(name, "connected")
        adopt = name in self._adopting
        self._adopting.discard(name)
        self.spawn(self._adopt if adopt else self._install, name)

    def switch_disconnected(self, name: str) -> None:
        """``name`` is gone; it is reinstalled when it comes back.  A spine's links are
        down meanwhile: the leaves reroute around it."""
        t = time.monotonic()
        self._set_ready(name, False)
        self._switch_event(name, "disconnected", t)
        sw = self.plan.switch(name)
        if sw.role == "spine":
            for leaf in range(1, self.plan.leaves + 1):
                self._link_end((leaf, sw.index), f"{name}:session", True, t, f"{name} disconnected")

    def _switch_event(self, name: str, event: str, t: float | None = None) -> None:
        """Record a switch (re)connection or readiness."""
        ev = SwitchEvent(name, event, time.monotonic() if t is None else t)
        with self._links:
            self.switch_events.append(ev)
            if self._fabric_log is not None:
                self._fabric_log({"switch": ev.to_wire()})

    def _set_ready(self, name: str, ready: bool) -> None:
        """Record readiness of ``name`` and wake ``wait_ready`` requests."""
        with self._ready_changed:
            (self.ready.add if ready else self.ready.discard)(name)
            if ready:
                self._installed.add(name)
            self._ready_changed.notify_all()

    def all_ready(self) -> bool:
        """Every switch of the plan connected and installed."""
        return {sw.name for sw in self.plan.switches} <= self.ready

    def _install(self, name: str) -> None:
        """Base pipeline, then the current tag table (leaves); marks ``name`` ready."""
        t0 = time.monotonic()
        with self._write:
            try:
                ready = self._bring_up(name, None)
            except SouthboundError as e:
                log.error("%s: install failed: %s", name, e)
                return
        self._now_ready(ready, t0)

    def _adopt(self, name: str) -> None:
        """First connection after a controller restart: take over what ``name`` holds
        (coflow rules, meters, groups) instead of wiping it; a switch whose static
        pipeline is not intact is installed afresh."""
        t0 = time.monotonic()
        with self._write:
            state: SwitchState | None = None
            try:
                state = self.driver.read_state(name, self.cfg.op_timeout_s)
                why = "" if state.base_ok else state.foreign
            except SouthboundError as e:
                why = f"not read back ({e})"
            try:
                sw = self.plan.switch(name)
                if not why and sw.role == "leaf" and state is not None:
                    if not groups_complete(self.plan, sw.index, state.groups):
                        why = "ECMP groups missing"
                if why:
                    log.warning("%s: %s: installed afresh", name, why)
                    state = None
                ready = self._bring_up(name, state)
            except SouthboundError as e:
                log.error("%s: take-over failed: %s", name, e)
                return
        log.info("%s: taken over (%s)", name, "as it was" if state else "reinstalled")
        self._now_ready(ready, t0)

    def _bring_up(self, name: str, state: SwitchState | None) -> list[str]:
        """(Write lock held.)  Install ``name`` (``state`` None) or take over what it
        holds; the switches ready now (after a restart, the leaves only once every
        leaf's table is known)."""
        if state is None:
            self.driver.install_base(name, self.cfg.op_timeout_s)
        if name not in self.tables:  # a spine
            return [name]
        if state is None:
            self.tables[name] = LeafTable()  # the wipe emptied it
            self._install_groups(name)
        else:
            self.tables[name] = adopted_table(self.plan, name, state)
            self.groups[name] = dict(state.groups)
            self._reroute_groups([name])
        if self._unknown:
            return self._known(name)
        self._apply_leaves([name], resync=False)
        return [name]

    def _known(self, name: str) -> list[str]:
        """Leaf ``name``'s table is known after a restart; once every leaf's is, the
        epochs come from the rules' cookies and every leaf gets what differs from the
        desired state.  The leaves ready now."""
        self._unknown.discard(name)
        if self._unknown:
            return []
        self.epochs, self._next_epoch = adopted_epochs(
            self.tables.values(), self.entries, self._next_epoch
        )
        written = self._apply_leaves(self.leaves, resync=False)
        log.info("restart: every leaf taken over, %d writes to reach the desired state", written)
        return list(self.leaves)

    def _now_ready(self, names: list[str], t0: float) -> None:
        """Mark ``names`` ready; a spine's links may carry traffic again."""
        for name in names:
            self._set_ready(name, True)
        t = time.monotonic()
        for name in names:
            self._switch_event(name, "ready", t)
            log.info("%s: ready after %.3f s", name, t - t0)
            sw = self.plan.switch(name)
            if sw.role == "spine":  # routes installed: the leaves may use it again
                for leaf in range(1, self.plan.leaves + 1):
                    self._link_end((leaf, sw.index), f"{name}:session", False, t, f"{name} ready")

    def _install_groups(self, name: str) -> None:
        """After a base install (every group over every spine): the groups of leaf
        ``name`` around the links down now.  The caller holds the write lock."""
        self.groups[name] = leaf_groups(self.plan, self.plan.switch(name).index)
        self._reroute_groups([name])

    def _reroute_groups(self, names: list[str]) -> None:
        """Rewrite the groups of leaves ``names`` (as ``self.groups`` has them) that
        differ from those around the links down now.  The caller holds the write lock."""
        with self._links:
            down = set(self.down_links)
        for name in names:
            leaf = self.plan.switch(name).index
            diff = changed_groups(self.plan, {leaf: self.groups[name]}, down).get(leaf)
            if diff:
                self.driver.set_groups({name: diff}, self.cfg.op_timeout_s)
                self.groups[name].update(diff)

    # --- leaf-spine links ----------------------------------------------------------------
    def port_status(self, switch: str, port: int, down: bool, t: float | None = None) -> None:
        """Event thread: ``port`` of ``switch`` went down or up (OpenFlow port status);
        a link whose state changes is rerouted around in a thread of its own."""
        link = link_of_port(self.plan, switch, port)
        if link is not None:
            t = time.monotonic() if t is None else t
            self._link_end(link, switch, down, t, f"{switch} port {port}")

    def _link_end(self, link: Link, end: str, down: bool, t: float, by: str) -> None:
        """One reason for ``link`` to be down (a port's end, a spine's lost session)
        appeared or went; a change of the link's state is rerouted around."""
        with self._links:
            ends = self._ends_down.setdefault(link, set())
            (ends.add if down else ends.discard)(end)
            was, now = link in self.down_links, bool(ends)
            if was == now:
                return
            (self.down_links.add if now else self.down_links.discard)(link)
        log.warning("link %s %s (%s)", link_name(link), "down" if now else "up", by)
        self.spawn(self._reroute, link, now, t, by)

    def op_port_status(self, req: dict, _received: float) -> dict:
        """A port's operational state seen from outside the switch (BMv2 has no
        OpenFlow port status: the orchestrator watches its interfaces, ``topo.bmv2_ports``):
        ``switch``, ``port``, ``down`` and ``t_s``, the CLOCK_MONOTONIC time it was seen."""
        switch, port, down, t = req.get("switch"), req.get("port"), req.get("down"), req.get("t_s")
        if switch not in {sw.name for sw in self.plan.switches}:
            raise ValueError(f"switch: unknown switch {switch!r}")
        if isinstance(port, bool) or not isinstance(port, int) or port < 1:
            raise ValueError(f"port: must be a port number >= 1, got {port!r}")
        if not isinstance(down, bool):
            raise ValueError(f"down: must be true or false, got {down!r}")
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise ValueError(f"t_s: must be a monotonic time in s, got {t!r}")
        self.port_status(switch, port, down, float(t))
        return {}

    def port_states(self, switch: str, down_ports: dict[int, bool]) -> None:
        """The ports of a (re)connecting switch as it reports them (``port_status`` each)."""
        for port, down in sorted(down_ports.items()):
            self.port_status(switch, port, down)

    def _reroute(self, link: Link, down: bool, detected: float, by: str) -> None:
        """Rewrite the ECMP groups of every installed leaf that the link change concerns;
        record the event with the time every one of them confirmed."""
        with self._write:
            with self._links:
                dead = set(self.down_links)
            installed = {
                self.plan.switch(n).index: g for n, g in self.groups.items() if n in self.ready
            }
            diff = changed_groups(self.plan, installed, dead)
            by_name = {f"l{leaf}": g for leaf, g in diff.items()}
            error, writes = None, 0
            try:
                if by_name:
                    writes = self.driver.set_groups(by_name, self.cfg.op_timeout_s)
                for name, g in by_name.items():
                    self.groups[name].update(g)
            except SouthboundError as e:
                error = str(e)
                log.error("reroute around %s failed: %s", link_name(link), e)
            done = time.monotonic()
            event = LinkEvent(
                link_name(link), down, detected, by, done, tuple(sorted(by_name)), writes, error
            )
            with self._links:
                self.link_events.append(event)
                if self._fabric_log is not None:
                    self._fabric_log({"link": event.to_wire()})
        log.info(
            "link %s %s: %d leaves rerouted in %.1f ms (%d writes)",
            event.link,
            "down" if down else "up",
            len(event.leaves),
            (done - detected) * 1e3,
            writes,
        )

    def op_fabric_events(self, _req: dict, _received: float) -> dict:
        """Every link change seen and its reroute, every switch (re)connection
        (``FabricEvents``)."""
        with self._links:
            events = FabricEvents(tuple(self.link_events), tuple(self.switch_events))
        return events.to_wire()

    def op_resume(self, req: dict, _received: float) -> dict:
        """After a restart: the answers the old controller decided beyond the
        requester's ``answered`` (``Resumed``)."""
        msg = Resume.from_wire(req)
        return Resumed(tuple(self.scheduler.replayed[msg.answered :])).to_wire()

    def _apply_leaves(self, leaves: list[str], resync: bool = True) -> int:
        """Bring ``leaves`` to the desired state of ``self.entries``; writes done.  On a
        failed write the switches' state is unknown: ``resync`` reinstalls them."""
        plans, diffs = {}, {}
        for name in leaves:
            leaf = self.plan.switch(name).index
            rules, meters = leaf_state(
                self.plan, leaf, self.entries.values(), self.epochs, self.cfg.burst_s
            )
            diffs[name], ids = self.tables[name].diff(rules, meters)
            plans[name] = (rules, meters, ids)
        try:
            written = self.driver.apply(diffs, self.cfg.op_timeout_s)
        except SouthboundError as e:
            connected = set(self.driver.connected())
            for name in leaves if resync else ():
                if name in connected:  # one that went away is reinstalled when it is back
                    self.switch_connected(name)
            gone = sorted(set(leaves) - connected)
            if resync and gone:  # a leaf went away mid-write: all get it on reinstall
                log.warning("write failed as %s went away (%s): reinstalling", gone, e)
                return 0
            raise
        for name, (rules, meters, ids) in plans.items():
            self.tables[name].commit(rules, meters, ids)
        return written

    # --- requests ----------------------------------------------------------------------
    def handle(self, request, received: float | None = None) -> dict:
        """Answer one decoded API request; errors become ``{"ok": false, ...}``."""
        received = time.monotonic() if received is None else received
        try:
            if not isinstance(request, dict) or request.get("op") not in OPS + SCHEDULER_OPS:
                raise ValueError(f"op: must be one of {list(OPS + SCHEDULER_OPS)}")
            op = request["op"]
            if op in SCHEDULER_OPS:
                return {"ok": True, **self.scheduler.handle(op, request)}
            allowed = {"op", *OP_KEYS.get(op, ())}
            unknown = sorted(set(request) - allowed)
            if unknown:
                raise ValueError(f"{unknown[0]}: unknown key for op {op!r}")
            return {"ok": True, **getattr(self, f"op_{op}")(request, received)}
        except PolicyError as e:  # the user's policy failed: say so, the run stops
            log.error("policy failed: %s", e)
            return {"ok": False, "error": f"PolicyError: {e}"}
        except (ValueError, SouthboundError, RuntimeError) as e:
            log.warning("request failed: %s", e)
            return {"ok": False, "error": str(e)}

    def op_status(self, _req: dict, _received: float) -> dict:
        """Connected switches and readiness."""
        return Status(tuple(self.driver.connected()), self.all_ready(), self.cfg.levels).to_wire()

    def op_wait_ready(self, req: dict, received: float) -> dict:
        """Block until ready or ``timeout_s`` passed; then the status."""
        timeout = req.get("timeout_s", 0)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not 0 <= timeout <= 3600
        ):
            raise ValueError(f"timeout_s: must be a number in 0..3600, got {timeout!r}")
        with self._ready_changed:
            self._ready_changed.wait_for(self.all_ready, timeout)
        return self.op_status(req, received)

    def _live_leaves(self) -> list[str]:
        """The leaves a write goes to now.  SouthboundError naming the first leaf never
        installed yet; a leaf away since (a restart) is left out: its reinstall brings
        it the desired state."""
        for name in self.leaves:
            if name not in self._installed:
                raise SouthboundError(f"{name}: not connected/installed yet")
        return [name for name in self.leaves if name in self.ready]

    def op_set(self, req: dict, received: float) -> dict:
        """Replace the entries of the given tags; reply after every barrier."""
        written = self.set_entries(parse_entries(req.get("entries"), self.plan, self.cfg.levels))
        return {"applied_s": time.monotonic() - received, "written": written}

    def set_entries(self, entries: Sequence[TagEntry]) -> int:
        """Replace the entries of their tags on every leaf; the number of writes."""
        with self._write:
            leaves = self._live_leaves()
            check_wire(
                {**self.entries, **{e.tag: e for e in entries}}, entries, self.plan, self.driver
            )
            old = dict(self.entries), dict(self.epochs), self._next_epoch
            for e in entries:
                if e.tag not in self.epochs:
                    self.epochs[e.tag], self._next_epoch = self._next_epoch, self._next_epoch + 1
                self.entries[e.tag] = e
            try:
                return self._apply_leaves(leaves)
            except SouthboundError:
                self.entries, self.epochs, self._next_epoch = old
                raise

    def op_clear(self, req: dict, received: float) -> dict:
        """Remove the entries (and meters) of the given tags."""
        written = self.clear_tags(parse_tags(req.get("tags")))
        return {"applied_s": time.monotonic() - received, "written": written}

    def clear_tags(self, tags: Sequence[int]) -> int:
        """Remove the entries (and meters) of ``tags``; the number of writes."""
        with self._write:
            leaves = self._live_leaves()
            last_counters = self._meter_rows(set(tags))  # meters vanish with their rules
            for t in tags:
                self.entries.pop(t, None)
                self.epochs.pop(t, None)
            written = self._apply_leaves(leaves)
        with self._stats:
            for cookie in [c for c in self.retired if cookie_tag(c) in tags]:
                del self.retired[cookie]
            self.retired_meters.extend(replace(row, retired=True) for row in last_counters)
        return written

    def on_removed(self, switch: str, cookie: int, nbytes: int, packets: int) -> None:
        """Keep the counters of a removed rule if its tag incarnation is still active."""
        tag, epoch = cookie_tag(cookie), cookie_epoch(cookie)
        if self.epochs.get(tag) != epoch:
            return
        with self._stats:
            acc = self.retired.setdefault(cookie, [0, 0])
            acc[0] += nbytes
            acc[1] += packets

    def op_tag_stats(self, _req: dict, _received: float) -> dict:
        """Bytes/packets per active tag, summed over leaves (removed rules included)."""
        return tags_to_wire({t: TagCount(b, p) for t, (b, p) in self._tag_totals().items()})

    def tag_bytes(self) -> dict[int, int]:
        """Bytes per active tag (what byte-threshold policies read)."""
        return {t: b for t, (b, _p) in self._tag_totals().items()}

    def _tag_totals(self) -> dict[int, list[int]]:
        """[bytes, packets] per active tag, summed over leaves and removed rules."""
        epochs = dict(self.epochs)
        totals = {t: [0, 0] for t in epochs}
        for name in self._live_leaves():  # a restarting leaf's counters are gone
            for c in self.driver.rule_counters(name, self.cfg.op_timeout_s):
                self._credit(totals, epochs, c.cookie, c.bytes, c.packets)
        with self._stats:
            for cookie, (nbytes, packets) in self.retired.items():
                self._credit(totals, epochs, cookie, nbytes, packets)
        return totals

    @staticmethod
    def _credit(totals: dict, epochs: dict, cookie: int, nbytes: int, packets: int) -> None:
        """Add counters to the tag of ``cookie`` if that incarnation is the current one."""
        tag = cookie_tag(cookie)
        if epochs.get(tag) == cookie_epoch(cookie):
            totals[tag][0] += nbytes
            totals[tag][1] += packets

    def op_port_stats(self, _req: dict, _received: float) -> dict:
        """Per switch, per port counters."""
        return ports_to_wire(self.port_counts())

    def port_counts(self) -> dict[str, dict[int, PortCount]]:
        """Counters of every port of every connected switch."""
        return {
            name: {
                c.port: PortCount(c.rx_bytes, c.tx_bytes, c.rx_packets, c.tx_packets)
                for c in self.driver.port_counters(name, self.cfg.op_timeout_s)
            }
            for name in self.driver.connected()
        }

    def op_meter_stats(self, _req: dict, _received: float) -> dict:
        """Per leaf meter counters, labelled with the meter's tag and host(s); meters
        removed by ``clear`` are listed with their last counters and ``retired: true``."""
        with self._stats:
            retired = list(self.retired_meters)
        return meters_to_wire(self._meter_rows() + retired)

    def _meter_rows(self, only_tags: set[int] | None = None) -> list[MeterRow]:
        """Current counters of the leaves' meters (of ``only_tags`` if given)."""
        meters = []
        for name in self.leaves:
            if name not in self.driver.connected():
                continue
            keys = {
                mid: key
                for key, mid in self.tables[name].meter_ids.items()
                if only_tags is None or key[1] in only_tags
            }
            if not keys:
                continue
            for c in self.driver.meter_counters(name, self.cfg.op_timeout_s):
                if c.meter_id not in keys and only_tags is not None:
                    continue
                key = keys.get(c.meter_id, ("?", None, None))
                dst = key[3] if len(key) > 3 else None
                meters.append(
                    MeterRow(
                        name,
                        c.meter_id,
                        key[1],
                        key[2],
                        dst,
                        c.packets_in,
                        c.bytes_in,
                        c.drop_packets,
                        c.drop_bytes,
                    )
                )
        return meters
