"""Scenario faults on a running fabric: scheduled off the DAG executor's clock (it is the
executor's ``Timeline``), applied on a lane of their own so the executor never waits
for them (by ``ovs.OvsFaults`` or ``bmv2.Bmv2Faults``, as the fabric's switches are),
and matched at the end with what the controller saw and did
(``controller.routing.LinkEvent``) into ``coflowbed.experiment.faults.FaultRecord``s.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from coflowbed.core.errors import UserError
from coflowbed.emulation.faults.ovs import MATCH_SLACK_S, OvsFaults, set_links
from coflowbed.experiment.faults import Fault, FaultRecord
from controller.lane import Lane
from controller.routing import FabricEvents, LinkEvent
from topo.plan import FabricPlan

log = logging.getLogger("faults")

SUPPORTED = {"ovs": ("link", "switch", "controller"), "bmv2": ("link", "switch", "controller")}


def check_supported(faults: Sequence[Fault], switch: str, source: str) -> None:
    """UserError (one line, before anything starts) for a fault kind this switch kind
    cannot run yet."""
    for f in faults:
        if f.kind not in SUPPORTED.get(switch, ()):
            raise UserError(
                source, f"faults[{f.index}]", f"a {f.kind} fault is not supported on {switch} yet"
            )


def faults_for(fabric) -> type[OvsFaults]:
    """The ``apply`` class of a fabric: BMv2's (``coflowbed.emulation.faults.bmv2``) for a
    fabric of P4Runtime switches, else OVS's."""
    if hasattr(fabric, "grpc_addrs"):
        # late: the P4Runtime stack (grpc, protobufs) is loaded for BMv2 fabrics only
        from coflowbed.emulation.faults.bmv2 import Bmv2Faults

        return Bmv2Faults
    return OvsFaults


@dataclass(frozen=True)
class _Action:
    fault: Fault
    up: bool  # False: take it down


class FaultInjector:
    """The executor's timeline of a scenario's faults.  Times in ``fire``/``coflow_done``
    are run seconds; what happened is kept in monotonic seconds until ``records``."""

    def __init__(
        self,
        faults: Sequence[Fault],
        plan: FabricPlan,
        apply: Callable[[FabricPlan, Fault, bool], str | None] = set_links,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``apply(plan, fault, up)`` takes the fault's element down or up; what it
        returns (a note, e.g. how a restarted switch's state compares) goes to the
        record."""
        self.plan, self._set, self.clock = plan, apply, clock
        self.notes: dict[int, list[str]] = {}
        self.faults = list(faults)
        self._heap: list[tuple[float, int, int, bool]] = []  # (run s, seq, fault, up)
        self._seq = 0
        self._after: dict[str, list[Fault]] = {}
        for f in faults:
            if f.after is None:
                self._push(f.at_s, f, up=False)
            else:
                self._after.setdefault(f.after, []).append(f)
        self.injected: dict[int, float] = {}  # fault -> monotonic s its down was issued
        self.restored: dict[int, float] = {}  # fault -> monotonic s its up was issued
        self.errors: dict[int, str] = {}
        self.fired: list[tuple[float, int, bool]] = []  # (run s, fault, up) as handed over
        self.lane: Lane[_Action] = Lane("faults", self._apply)

    def _push(self, t: float, f: Fault, up: bool) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, f.index, up))

    # --- Timeline ------------------------------------------------------------------------
    def next_s(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def fire(self, now: float) -> None:
        while self._heap and self._heap[0][0] <= now:
            t, _, index, up = heapq.heappop(self._heap)
            f = self.faults[index]
            log.info("fault %d: %s %s at %.3f s", index, f.target, "up" if up else "down", now)
            self.fired.append((now, index, up))
            self.lane.put(_Action(f, up))
            if not up and f.down_s is not None:
                self._push(t + f.down_s, f, up=True)  # off the scheduled time, not the lag

    def coflow_done(self, coflow_id: str, t: float) -> None:
        for f in self._after.pop(coflow_id, []):
            self._push(t + f.at_s, f, up=False)

    # --- the lane -------------------------------------------------------------------------
    def _apply(self, action: _Action) -> None:
        f, t = action.fault, self.clock()
        try:
            note = self._set(self.plan, f, action.up)
        except (RuntimeError, OSError, TimeoutError) as exc:
            self.errors[f.index] = f"{'up' if action.up else 'down'} failed: {exc}"
            log.error("fault %d (%s): %s", f.index, f.target, self.errors[f.index])
            return
        (self.restored if action.up else self.injected)[f.index] = t
        if note:
            self.notes.setdefault(f.index, []).append(note)

    def attach(self, fabric, controller=None, client=None) -> None:
        """Apply the faults on ``fabric`` (an OVS ``topo.net.Fabric`` or a
        ``topo.bmv2.BMv2Fabric``; a controller restart on ``controller`` and the
        scheduling connection ``client``), unless the injector was made with its own
        ``apply`` (tests)."""
        if self._set is set_links:
            self._set = faults_for(fabric)(fabric, controller, client)

    def close(self) -> None:
        """Let what is queued finish, then end what the faults' side started."""
        self.lane.close()
        if isinstance(self._set, OvsFaults):
            self._set.close()

    def error(self) -> str | None:
        """The first injection that failed, for the run's error (None: all went in)."""
        return next(iter(self.errors.values()), None)

    # --- records ------------------------------------------------------------------------
    def records(self, events: FabricEvents, t0: float) -> list[FaultRecord]:
        """One record per fault: the orchestrator's times and the controller's reaction,
        in run seconds (``t0``: the executor's time zero)."""
        return [self._record(f, events, t0) for f in self.faults]

    def _record(self, f: Fault, events: FabricEvents, t0: float) -> FaultRecord:
        rec = FaultRecord.of(f)
        rec.detail = "; ".join(
            [*filter(None, [self.errors.get(f.index)]), *self.notes.get(f.index, [])]
        )
        down_at = self.injected.get(f.index)
        if down_at is None:
            rec.detail = rec.detail or "not injected: the run ended first"
            return rec
        rec.injected_s = _rel(down_at, t0)
        rec.tables_equal = getattr(self._set, "equal", {}).get(f.index)
        if f.kind == "controller":
            restart = getattr(self._set, "restarts", {}).get(f.index)
            if restart is not None:
                rec.injected_s, rec.up_s = _rel(restart.killed, t0), _rel(restart.up, t0)
                rec.resync_ms = _ms(restart.up, restart.ready)
                rec.restored_s = _rel(restart.resumed, t0)
            return rec
        up_at = self.restored.get(f.index)
        rec.up_s = _rel(up_at, t0)
        if f.kind == "link":
            links = [f.target]
        elif self.plan.switch(f.target).role == "spine":  # its links go with its session
            links = [f"l{lf}-{f.target}" for lf in range(1, self.plan.leaves + 1)]
        else:  # a leaf: its hosts are cut off; no other path to reroute to
            links = []
        down = [e for e in (_first(events.links, lk, True, down_at) for lk in links) if e]
        if down:
            _reaction(rec, down, down_at, t0, "")
        if f.kind == "switch":
            gone = _switch_event(events, f.target, "disconnected", down_at)
            if gone is not None:  # detected: the session ended
                rec.detected_s = _rel(gone.t_s, t0)
                rec.detect_ms = _ms(down_at, gone.t_s)
        if up_at is not None:
            back = [e for e in (_first(events.links, lk, False, up_at) for lk in links) if e]
            if back:
                _reaction(rec, back, up_at, t0, "restore")
            if f.kind == "switch":
                ready = _switch_event(events, f.target, "ready", up_at)
                rec.resync_ms = None if ready is None else _ms(up_at, ready.t_s)
        return rec


def _rel(t: float | None, t0: float) -> float | None:
    return None if t is None else round(t - t0, 6)


def _ms(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round((b - a) * 1e3, 3)


def _switch_event(events: FabricEvents, switch: str, kind: str, after: float):
    """The first ``kind`` event of ``switch`` since ``after``."""
    return next(
        (
            e
            for e in events.switches
            if e.switch == switch and e.event == kind and e.t_s >= after - MATCH_SLACK_S
        ),
        None,
    )


def _first(events: Sequence[LinkEvent], link: str, down: bool, after: float) -> LinkEvent | None:
    """The first controller event of ``link`` going ``down`` (or up) since ``after``."""
    return next(
        (
            e
            for e in events
            if e.link == link and e.down == down and e.detected_s >= after - MATCH_SLACK_S
        ),
        None,
    )


def _reaction(
    rec: FaultRecord, evs: Sequence[LinkEvent], injected: float, t0: float, which: str
) -> None:
    """Fill the detected/rerouted (or restored) fields of ``rec`` from the link events
    of the fault (one for a link; one per link of a spine): detected at the first,
    rerouted when the last reroute was confirmed."""
    first = min(e.detected_s for e in evs)
    done = [e.rerouted_s for e in evs if e.rerouted_s is not None]
    last = max(done) if done else None
    if which == "restore":
        rec.restored_s = _rel(last, t0)
        rec.restore_ms = _ms(first, last)
    else:
        rec.detected_s = _rel(first, t0)
        rec.detect_ms = _ms(injected, first)
        rec.rerouted_s = _rel(last, t0)
        rec.reroute_ms = _ms(first, last)
        rec.leaves_rerouted = " ".join(sorted({lf for e in evs for lf in e.leaves}))
    for e in evs:
        if e.error:
            rec.detail = (rec.detail + "; " if rec.detail else "") + f"reroute failed: {e.error}"
