"""Scenario faults on a BMv2 fabric: ``coflowbed.emulation.faults.ovs.OvsFaults`` with the
three things that differ on P4Runtime switches.

- A link goes down as on OVS (both veth ends administratively down), but the ends live
  in their switches' namespaces, so each is set there (``mnexec -a <pid> ip -batch``).
- Nothing in BMv2 reports a port down, so a ``topo.bmv2_ports.PortWatcher`` watches the
  switch ends' carrier in every switch namespace and sends each change to the
  controller (control API op ``port_status``, with the time it was seen); the
  controller reroutes exactly as on an OpenFlow port status.  After a controller
  restart the new controller gets every port's state again.
- While a link is down, what its two switches still sent into it once the controller
  had rerouted (their ``port_tx`` egress counters, read when the reroute is confirmed
  and again just before the link comes back) goes to the fault's record.  A weak
  check: BMv2's port_tx stayed at +0 also with the reroute broken on purpose
  (docs/bmv2.md, "Faults"); the group writes are what show the reroute.
- A switch's state is read over P4Runtime (``controller.p4runtime.reader``): every
  table entry, ECMP member and group, configured meter cell, and the installed P4Info's
  digest; a leaf's static pipeline leaves out the coflow table and meters.
"""

from __future__ import annotations

import logging
import threading
import time

from coflowbed.emulation.faults.ovs import MATCH_SLACK_S, RESYNC_POLL_S, OvsFaults, link_devices
from coflowbed.experiment.faults import Fault
from controller.client import ControllerClient, ControllerError
from controller.p4runtime.readback import is_coflow_state
from controller.p4runtime.reader import SwitchReader
from topo.bmv2_ports import PortEvent, PortWatcher
from topo.net import run_ip_batch
from topo.plan import FabricPlan

log = logging.getLogger("faults")
READ_TIMEOUT_S = 10.0
REROUTE_WAIT_S = 5.0  # the controller must have rerouted around a dead link by then


class Bmv2Faults(OvsFaults):
    """``apply`` of a FaultInjector on a ``topo.bmv2.BMv2Fabric`` (see module docstring);
    its port watcher runs from construction to :meth:`close`."""

    def __init__(self, fabric, controller=None, client=None) -> None:
        """On ``fabric``; port changes go to ``controller``'s control API."""
        super().__init__(fabric, controller, client)
        self.readers = {
            sw.name: SwitchReader(fabric.grpc_addrs[sw.name], sw.dpid)
            for sw in fabric.plan.switches
        }
        self._api_lock = threading.Lock()
        self._api = None if controller is None else ControllerClient(controller.api)
        self.unsent: list[PortEvent] = []  # the controller was away: sent after its restart
        self.egress: dict[int, dict[str, int]] = {}  # link fault -> end -> packets at reroute
        self.watcher = PortWatcher(fabric.namespaces(), self.report)
        self.watcher.start()

    def report(self, ev: PortEvent) -> None:
        """Tell the controller a port changed (watcher threads); while it is away (a
        restart) the change waits for ``controller_started``."""
        if self._api is None:
            return
        req = {"op": "port_status", "switch": ev.switch, "port": ev.port}
        with self._api_lock:
            try:
                self._api.call({**req, "down": ev.down, "t_s": ev.t_s})
            except (OSError, ControllerError) as exc:
                log.warning("port %s/%d: not reported (%s); resent later", ev.switch, ev.port, exc)
                self.unsent.append(ev)

    def controller_started(self) -> None:
        """The restarted controller gets every port's state (stamped now: it did not
        see them change)."""
        with self._api_lock:
            self.unsent.clear()
        for ev in self.watcher.snapshot():
            self.report(ev)

    def __call__(self, plan: FabricPlan, fault: Fault, up: bool) -> str | None:
        """A link: down, then the dead link's egress counters once rerouted; before it
        comes back, what was sent into it since (the note).  Restarts: as on OVS."""
        if fault.kind != "link":
            return super().__call__(plan, fault, up)
        if up:
            note = self.quiet_note(plan, fault)
            self.set_links(plan, fault, up)
            return note
        t = time.monotonic()
        self.set_links(plan, fault, up)
        self.await_reroute(fault.target, t)
        self.egress[fault.index] = self.egress_counts(plan, fault)
        return None

    def egress_counts(self, plan: FabricPlan, fault: Fault) -> dict[str, int]:
        """Each end's egress packets into the fault's link (``<switch>-eth<port>``)."""
        out = {}
        for dev in link_devices(plan, fault):
            sw, port = dev.rsplit("-eth", 1)
            out[dev] = self.readers[sw].egress_packets(int(port), READ_TIMEOUT_S)
        return out

    def await_reroute(self, link: str, since: float) -> None:
        """Poll the controller (with a deadline) until it confirmed its reroute around
        ``link`` going down since ``since``; RuntimeError when it did not in time."""
        if self._api is None:
            return
        deadline = since + REROUTE_WAIT_S
        while time.monotonic() < deadline:
            with self._api_lock:
                events = self._api.fabric_events().links
            if any(
                e.link == link
                and e.down
                and e.detected_s >= since - MATCH_SLACK_S
                and e.rerouted_s is not None
                for e in events
            ):
                return
            time.sleep(RESYNC_POLL_S)  # polling the controller, with a deadline
        raise RuntimeError(f"{link}: no reroute confirmed within {REROUTE_WAIT_S:g} s")

    def quiet_note(self, plan: FabricPlan, fault: Fault) -> str | None:
        """'sent into the dead link after the reroute: l1-eth3 +0, s1-eth1 +0 packets'."""
        before = self.egress.get(fault.index)
        if before is None:
            return None
        now = self.egress_counts(plan, fault)
        sent = ", ".join(f"{dev} +{now[dev] - n}" for dev, n in before.items())
        return f"sent into the dead link after the reroute: {sent} packets"

    def set_links(self, plan: FabricPlan, fault: Fault, up: bool) -> None:
        """Each veth end of the fault's link up or down, in its switch's namespace."""
        state = "up" if up else "down"
        pids = self.fabric.namespaces()
        for dev in link_devices(plan, fault):
            sw = dev.rsplit("-eth", 1)[0]
            run_ip_batch([f"link set dev {dev} {state}"], f"{fault.target} {state}", pids[sw])

    def tables(self, name: str) -> list[str]:
        """Everything switch ``name`` holds, read over P4Runtime."""
        return self.readers[name].dump(READ_TIMEOUT_S)

    def base(self, name: str) -> list[str]:
        """Its static pipeline: the dump without coflow rules and meters."""
        b = self.readers[name].build
        return [ln for ln in self.tables(name) if not is_coflow_state(b, ln)]

    def close(self) -> None:
        """Stop the port watcher and the API connection."""
        self.watcher.stop()
        if self._api is not None:
            self._api.close()
