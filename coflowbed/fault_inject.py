"""Scenario faults on a running fabric: scheduled off the DAG executor's clock (it is the
executor's ``Timeline``), applied on a lane of their own so the executor never waits
for them, and matched at the end with what the controller saw and did
(``controller.routing.LinkEvent``) into ``coflowbed.faults.FaultRecord``s.

A leaf-spine link goes down as a cable cut would: both veth ends of the link are set
administratively down in one ``ip -batch`` (each switch then reports its port down
over OpenFlow), and up again the same way after ``down_s``.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from coflowbed.errors import UserError
from coflowbed.faults import Fault, FaultRecord
from controller.lane import Lane
from controller.routing import LinkEvent
from topo.leafspine import intf_name
from topo.plan import FabricPlan

log = logging.getLogger("faults")

# Controller events this long before an injection was issued still count as its own
# (the clocks are one CLOCK_MONOTONIC; this only absorbs rounding).
MATCH_SLACK_S = 0.01
SUPPORTED = {"ovs": ("link",), "bmv2": ()}


def check_supported(faults: Sequence[Fault], switch: str, source: str) -> None:
    """UserError (one line, before anything starts) for a fault kind this switch kind
    cannot run yet."""
    for f in faults:
        if f.kind not in SUPPORTED.get(switch, ()):
            raise UserError(
                source, f"faults[{f.index}]", f"a {f.kind} fault is not supported on {switch} yet"
            )


def link_devices(plan: FabricPlan, fault: Fault) -> list[str]:
    """Both root-namespace veth ends of a link fault's leaf-spine link."""
    leaf, spine = plan.switch(fault.leaf), plan.switch(fault.spine)
    return [intf_name(leaf.name, plan.uplink_port(spine.index)), intf_name(spine.name, leaf.index)]


def set_links(plan: FabricPlan, fault: Fault, up: bool) -> None:
    """Both ends of the fault's link administratively up or down (one ``ip -batch``)."""
    from topo.qos import run_batch

    state = "up" if up else "down"
    run_batch(
        "ip",
        [f"link set dev {dev} {state}" for dev in link_devices(plan, fault)],
        f"{fault.target} {state}",
    )


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
        apply: Callable[[FabricPlan, Fault, bool], None] = set_links,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.plan, self._set, self.clock = plan, apply, clock
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
            self._set(self.plan, f, action.up)
        except (RuntimeError, OSError) as exc:
            self.errors[f.index] = f"{'up' if action.up else 'down'} failed: {exc}"
            log.error("fault %d (%s): %s", f.index, f.target, self.errors[f.index])
            return
        (self.restored if action.up else self.injected)[f.index] = t

    def close(self) -> None:
        """Let what is queued finish."""
        self.lane.close()

    def error(self) -> str | None:
        """The first injection that failed, for the run's error (None: all went in)."""
        return next(iter(self.errors.values()), None)

    # --- records ------------------------------------------------------------------------
    def records(self, events: Sequence[LinkEvent], t0: float) -> list[FaultRecord]:
        """One record per fault: the orchestrator's times and the controller's reaction,
        in run seconds (``t0``: the executor's time zero)."""
        return [self._record(f, events, t0) for f in self.faults]

    def _record(self, f: Fault, events: Sequence[LinkEvent], t0: float) -> FaultRecord:
        rec = FaultRecord.of(f)
        rec.detail = self.errors.get(f.index, "")
        down_at = self.injected.get(f.index)
        if down_at is None:
            rec.detail = rec.detail or "not injected: the run ended first"
            return rec
        rec.injected_s = _rel(down_at, t0)
        ev = _first(events, f.target, True, down_at)
        if ev is not None:
            _reaction(rec, ev, down_at, t0, "")
        up_at = self.restored.get(f.index)
        if up_at is not None:
            rec.up_s = _rel(up_at, t0)
            ev = _first(events, f.target, False, up_at)
            if ev is not None:
                _reaction(rec, ev, up_at, t0, "restore")
        return rec


def _rel(t: float | None, t0: float) -> float | None:
    return None if t is None else round(t - t0, 6)


def _ms(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round((b - a) * 1e3, 3)


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


def _reaction(rec: FaultRecord, ev: LinkEvent, injected: float, t0: float, which: str) -> None:
    """Fill the detected/rerouted (or restored) fields of ``rec`` from ``ev``."""
    if which == "restore":
        rec.restored_s = _rel(ev.rerouted_s, t0)
        rec.restore_ms = _ms(ev.detected_s, ev.rerouted_s)
    else:
        rec.detected_s = _rel(ev.detected_s, t0)
        rec.detect_ms = _ms(injected, ev.detected_s)
        rec.rerouted_s = _rel(ev.rerouted_s, t0)
        rec.reroute_ms = _ms(ev.detected_s, ev.rerouted_s)
        rec.leaves_rerouted = " ".join(ev.leaves)
    if ev.error:
        rec.detail = (rec.detail + "; " if rec.detail else "") + f"reroute failed: {ev.error}"
