"""Scenario faults on an Open vSwitch fabric, applied one at a time by
``coflowbed.emulation.faults.injector``; the base that BMv2's (``bmv2``) extends.

A leaf-spine link goes down as a cable cut would: both veth ends of the link are set
administratively down in one ``ip -batch`` (each switch then reports its port down
over OpenFlow), and up again the same way after ``down_s``.
"""

from __future__ import annotations

import logging
import re
import subprocess
import time
from dataclasses import dataclass

from coflowbed.experiment.faults import Fault
from controller.client import ControllerClient
from topo.leafspine import intf_name
from topo.plan import FabricPlan
from topo.qos import run_batch

log = logging.getLogger("faults")

# Controller events this long before an injection was issued still count as its own
# (the clocks are one CLOCK_MONOTONIC; this only absorbs rounding).
MATCH_SLACK_S = 0.01


def link_devices(plan: FabricPlan, fault: Fault) -> list[str]:
    """Both root-namespace veth ends of a link fault's leaf-spine link."""
    leaf, spine = plan.switch(fault.leaf), plan.switch(fault.spine)
    return [intf_name(leaf.name, plan.uplink_port(spine.index)), intf_name(spine.name, leaf.index)]


def set_links(plan: FabricPlan, fault: Fault, up: bool) -> None:
    """Both ends of the fault's link administratively up or down (one ``ip -batch``)."""
    state = "up" if up else "down"
    run_batch(
        "ip",
        [f"link set dev {dev} {state}" for dev in link_devices(plan, fault)],
        f"{fault.target} {state}",
    )


RESYNC_TIMEOUT_S = 15.0  # a restarted switch must have its whole state back by then
RESYNC_POLL_S = 0.02
_COUNTERS = re.compile(r"\s*(duration|n_packets|n_bytes|idle_age|hard_age)=[^,\s]*,?")


def switch_tables(name: str) -> list[str]:
    """What switch ``name`` holds, counters left out: its flows, groups and meters as
    ``ovs-ofctl`` dumps them (sorted lines; the run's OVS from ``OVS_RUNDIR``)."""
    out = []
    for what in ("dump-flows", "dump-groups", "dump-meters"):
        res = subprocess.run(
            ["ovs-ofctl", "-O", "OpenFlow13", what, name],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if res.returncode != 0:
            raise RuntimeError(f"{name}: ovs-ofctl {what} failed: {res.stderr.strip()}")
        body = [ln for ln in res.stdout.splitlines()[1:] if ln.strip()]  # no reply header
        out += sorted(f"{what}: {_COUNTERS.sub('', ln).strip()}" for ln in body)
    return out


@dataclass
class Restart:
    """What a controller restart took (monotonic seconds)."""

    killed: float
    up: float  # the new controller printed READY
    ready: float  # every switch taken over
    resumed: float  # the scheduling connection resumed
    equal: bool  # every switch's tables after equal those before
    note: str


def base_tables(name: str) -> list[str]:
    """``switch_tables`` without the coflow rules (cookie != 0) and their meters: the
    static pipeline (defaults, routing, ECMP groups)."""
    return [
        ln
        for ln in switch_tables(name)
        if ln.startswith("dump-groups") or (ln.startswith("dump-flows") and "cookie=0x0," in ln)
    ]


class OvsFaults:
    """``apply`` of a FaultInjector on an OVS fabric: links down/up (``set_links``),
    spines stopped (bridge deleted, after a dump of its tables) and started again, then
    polled until its tables equal the dump (the note says how long it took), and the
    controller killed and started again (``restart_controller``)."""

    def __init__(self, fabric, controller=None, client=None) -> None:
        """On ``fabric``; a controller restart needs the run's ``ControllerService`` and
        its scheduling connection (a ``ResumableClient``)."""
        self.fabric, self.controller, self.client = fabric, controller, client
        self.before: dict[str, list[str]] = {}
        self.restarts: dict[int, Restart] = {}  # controller restarts, by fault
        self.equal: dict[int, bool] = {}  # restarts: tables after equal before, by fault

    def set_links(self, plan: FabricPlan, fault: Fault, up: bool) -> None:
        """Both ends of a link fault's link up or down (``set_links``)."""
        set_links(plan, fault, up)

    def tables(self, name: str) -> list[str]:
        """Everything switch ``name`` holds, counters left out (``switch_tables``)."""
        return switch_tables(name)

    def base(self, name: str) -> list[str]:
        """Its static pipeline only (``base_tables``)."""
        return base_tables(name)

    def controller_started(self) -> None:
        """Hook: the new controller of a restart listens (it has not taken over yet)."""

    def close(self) -> None:
        """Hook: the run's faults are over."""

    def __call__(self, plan: FabricPlan, fault: Fault, up: bool) -> str | None:
        if fault.kind == "link":
            self.set_links(plan, fault, up)
            return None
        if fault.kind == "controller":
            self.restarts[fault.index] = r = self.restart_controller(plan)
            self.equal[fault.index] = r.equal
            return r.note
        name = fault.target
        # A leaf's coflow rules follow the policy's decisions while it is away: only its
        # static pipeline must come back as it was (the controller's ready event says
        # when its whole current state was confirmed).
        spine = plan.switch(name).role == "spine"
        tables = self.tables if spine else self.base
        if not up:
            self.before[name] = tables(name)
            self.fabric.stop_switch(name)
            return None
        t0 = time.monotonic()
        self.fabric.start_switch(name)
        deadline, now = t0 + RESYNC_TIMEOUT_S, tables(name)
        while now != self.before[name] and time.monotonic() < deadline:
            time.sleep(RESYNC_POLL_S)  # polling the switch, with a deadline
            now = tables(name)
        self.equal[fault.index] = now == self.before[name]
        if now != self.before[name]:
            return f"{name} tables differ after {RESYNC_TIMEOUT_S:g} s: " + _differ(
                self.before[name], now
            )
        took = (time.monotonic() - t0) * 1e3
        what = "tables" if spine else "static pipeline"
        return f"{name} {what} equal to before the restart ({len(now)} entries, {took:.0f} ms)"

    def restart_controller(self, plan: FabricPlan) -> Restart:
        """Hold the scheduling connection; SIGKILL the controller; dump every switch's
        tables (as the crash left them: nothing writes them now); start it again with
        ``--resume``; once it reports every switch ready, dump the tables again (a
        take-over writes only what the old one left undone), then resume the scheduling
        connection (answers the old one decided, the rest resent)."""
        if self.controller is None or self.client is None:
            raise RuntimeError("a controller restart needs the run's controller")
        names = [sw.name for sw in plan.switches]
        self.client.hold()
        killed = time.monotonic()
        try:
            self.controller.kill()
            before = {n: self.tables(n) for n in names}  # nothing writes them now
            started = time.monotonic()
            self.controller.start(resume=True)
            up = time.monotonic()
            self.controller_started()
            with ControllerClient(self.controller.api, timeout=RESYNC_TIMEOUT_S) as c:
                c.wait_ready(RESYNC_TIMEOUT_S)
            ready = time.monotonic()
            after = {n: self.tables(n) for n in names}
            given, resent = self.client.resume()
        except (RuntimeError, OSError, TimeoutError) as exc:
            self.client.abandon(exc)  # the run's requests fail now, not at their timeout
            raise
        resumed = time.monotonic()
        differ = [f"{n}: {_differ(before[n], after[n])}" for n in names if before[n] != after[n]]
        entries = sum(len(v) for v in after.values())
        note = (
            f"controller back {(up - killed) * 1e3:.0f} ms after the kill (started in "
            f"{(up - started) * 1e3:.0f} ms), switches taken over in {(ready - up) * 1e3:.0f} ms; "
            + (
                "tables differ: " + "; ".join(differ)
                if differ
                else f"tables equal to before on all {len(names)} switches ({entries} entries)"
            )
            + f"; {given} answers given back, {resent} requests resent"
        )
        log.info("controller restart: %s", note)
        return Restart(killed, up, ready, resumed, not differ, note)


def _differ(before: list[str], after: list[str]) -> str:
    """How two table dumps differ."""
    return f"{len(set(before) - set(after))} missing, {len(set(after) - set(before))} extra"
