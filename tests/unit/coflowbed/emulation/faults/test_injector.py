"""Faults on the executor's clock (simulated here): when each fault is applied, faults
placed after a coflow, and the records merged with the controller's link events."""

from __future__ import annotations

import threading

from coflowbed.emulation.executor import DagExecutor
from coflowbed.emulation.faults.injector import FaultInjector, check_supported
from coflowbed.emulation.faults.ovs import link_devices
from coflowbed.experiment.faults import Fault
from controller.routing import FabricEvents, LinkEvent, SwitchEvent
from tests.fakes import FakeBackend, cf
from topo.plan import FabricPlan
from workload.dag import Dag

PLAN = FabricPlan(spines=2, leaves=4, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)


class Recorder:
    """Stands for ``set_links``: notes (target, up) in the order applied."""

    def __init__(self) -> None:
        self.calls, self.lock = [], threading.Lock()

    def __call__(self, plan, fault, up):
        with self.lock:
            self.calls.append((fault.target, up))


def test_faults_fire_on_the_executors_clock_and_after_coflows():
    backend = FakeBackend(rate_bps=8e6)  # 1 MB per second
    faults = [
        Fault(0, "link", "l1-s1", 0.5, None, 1.0),
        Fault(1, "link", "l2-s2", 0.25, "a", None),  # 0.25 s after a ends (at 2 s)
        Fault(2, "link", "l3-s1", 9.0, None, 1.0),  # after the run: never applied
    ]
    rec = Recorder()
    inj = FaultInjector(faults, PLAN, apply=rec, clock=backend.clock)
    dag = Dag([cf("a", [("h11", "h21", 2_000_000)]), cf("b", [("h12", "h22", 3_000_000)])])
    ex = DagExecutor(dag, backend, clock=backend.clock, timeline=inj)
    ex.run(deadline_s=60)
    inj.close()
    # handed to the lane at the executor's times (the fake clock jumps from event to event)
    assert inj.fired == [(0.5, 0, False), (1.5, 0, True), (2.25, 1, False)]
    assert rec.calls == [("l1-s1", False), ("l1-s1", True), ("l2-s2", False)]
    assert set(inj.injected) == {0, 1} and set(inj.restored) == {0}


def test_records_merge_the_controllers_link_events():
    faults = [
        Fault(0, "link", "l1-s1", 0.5, None, 1.0),
        Fault(1, "link", "l2-s2", 0.25, "a", None),
        Fault(2, "link", "l3-s1", 9.0, None, 1.0),
    ]
    inj = FaultInjector(faults, PLAN, apply=Recorder())
    inj.close()
    inj.injected.update({0: 1000.5, 1: 1002.25})
    inj.restored.update({0: 1001.5})
    events = [
        LinkEvent("l1-s1", True, 1000.502, "l1 port 3", 1000.509, ("l1", "l2", "l3", "l4"), 6),
        LinkEvent("l2-s2", True, 1000.1, "s2 port 2", 1000.2),  # before its fault: not its own
        LinkEvent("l1-s1", False, 1001.503, "s1 port 1", 1001.510, ("l1", "l2"), 4),
        LinkEvent("l2-s2", True, 1002.252, "s2 port 2", 1002.26, ("l1",), 1, "l1: timeout"),
    ]
    r = {x.index: x for x in inj.records(FabricEvents(tuple(events)), t0=1000.0)}
    assert (r[0].injected_s, r[0].detected_s, r[0].detect_ms) == (0.5, 0.502, 2.0)
    assert (r[0].rerouted_s, r[0].reroute_ms, r[0].leaves_rerouted) == (0.509, 7.0, "l1 l2 l3 l4")
    assert (r[0].up_s, r[0].restored_s, r[0].restore_ms) == (1.5, 1.51, 7.0)
    assert (r[1].injected_s, r[1].detected_s, r[1].up_s) == (2.25, 2.252, None)
    assert "reroute failed: l1: timeout" in r[1].detail
    assert r[2].injected_s is None and "not injected" in r[2].detail
    assert inj.error() is None


def test_a_failed_injection_is_the_runs_error():
    def broken(plan, fault, up):
        raise RuntimeError("ip -batch failed")

    inj = FaultInjector([Fault(0, "link", "l1-s1", 0.0, None, None)], PLAN, apply=broken)
    inj.fire(0.0)
    inj.close()
    assert "down failed: ip -batch failed" in (inj.error() or "")
    assert inj.records(FabricEvents(), 0.0)[0].injected_s is None


def test_link_devices_are_both_veth_ends():
    assert link_devices(PLAN, Fault(0, "link", "l3-s2", 1.0)) == ["l3-eth4", "s2-eth3"]


def test_kinds_not_supported_yet_are_refused_before_anything_starts():
    """Every kind runs on OVS and BMv2; a switch kind without fault support refuses
    the first fault, naming it."""
    import pytest

    from coflowbed.core.errors import UserError

    for switch in ("ovs", "bmv2"):
        check_supported(
            [
                Fault(0, "link", "l1-s1", 1.0),
                Fault(1, "switch", "s1", 2.0, None, 1.0),
                Fault(2, "controller", "controller", 4.0),
            ],
            switch,
            "s.yaml",
        )
    with pytest.raises(
        UserError, match=r"s.yaml: faults\[0\]: a link fault is not supported on p4x"
    ):
        check_supported([Fault(0, "link", "l1-s1", 1.0)], "p4x", "s.yaml")


def test_a_spine_restart_is_recorded_from_its_session_and_its_links():
    inj = FaultInjector([Fault(0, "switch", "s2", 1.0, None, 1.0)], PLAN, apply=Recorder())
    inj.close()
    inj.injected[0], inj.restored[0] = 1001.0, 1002.0
    inj.notes[0] = ["s2 tables equal to before the restart (8 entries, 40 ms)"]
    links = tuple(
        LinkEvent(f"l{lf}-s2", True, 1001.003, "s2 disconnected", 1001.003 + lf / 1000, (f"l{lf}",))
        for lf in range(1, 5)
    ) + tuple(
        LinkEvent(f"l{lf}-s2", False, 1002.05, "s2 ready", 1002.06, (f"l{lf}",))
        for lf in range(1, 5)
    )
    switches = (
        SwitchEvent("s2", "disconnected", 1001.002),
        SwitchEvent("s2", "connected", 1002.03),
        SwitchEvent("s2", "ready", 1002.05),
    )
    (r,) = inj.records(FabricEvents(links, switches), t0=1000.0)
    assert (r.detected_s, r.detect_ms) == (1.002, 2.0)
    assert (r.rerouted_s, r.reroute_ms) == (1.007, 4.0)  # the last leaf's confirmation
    assert r.leaves_rerouted == "l1 l2 l3 l4" and r.up_s == 2.0
    assert (r.resync_ms, r.restored_s, r.restore_ms) == (50.0, 2.06, 10.0)
    assert "tables equal" in r.detail


def test_a_controller_restart_is_recorded_from_what_the_restart_took():
    from coflowbed.emulation.faults.ovs import Restart

    class Restarter(Recorder):
        restarts = {0: Restart(1001.2, 1001.7, 1002.1, 1002.15, True, "tables equal")}
        equal = {0: True}

    inj = FaultInjector([Fault(0, "controller", "controller", 1.0)], PLAN, apply=Restarter())
    inj.close()
    inj.injected[0] = 1001.0  # the dump before the kill began here
    (rec,) = inj.records(FabricEvents(), 1000.0)
    assert (rec.injected_s, rec.up_s, rec.restored_s) == (1.2, 1.7, 2.15)
    assert rec.resync_ms == 400.0 and rec.tables_equal is True
    assert rec.detected_s is None and rec.reroute_ms is None


def test_a_leaf_restart_is_recorded_from_its_session_only():
    inj = FaultInjector([Fault(0, "switch", "l1", 1.0, None, 1.0)], PLAN, apply=Recorder())
    inj.close()
    inj.injected[0], inj.restored[0] = 1001.0, 1002.0
    events = FabricEvents(
        (LinkEvent("l1-s1", True, 1001.5, "l1 port 3", 1001.6, ("l1",)),),  # not this fault's
        (SwitchEvent("l1", "disconnected", 1001.01), SwitchEvent("l1", "ready", 1002.05)),
    )
    (rec,) = inj.records(events, 1000.0)
    assert rec.detect_ms == 10.0 and rec.resync_ms == 50.0
    assert rec.rerouted_s is None and rec.leaves_rerouted == ""
