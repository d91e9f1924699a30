"""Faults on a BMv2 fabric (``coflowbed.emulation.faults.bmv2``) without root: switches are
fake P4Runtime servers, the port watcher and the control API are stand-ins."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from coflowbed.emulation.faults import bmv2 as fib
from coflowbed.emulation.faults.injector import faults_for
from coflowbed.emulation.faults.ovs import OvsFaults
from coflowbed.experiment.faults import Fault
from controller.coflow_table import LeafTable, TagEntry, leaf_state
from tests.p4runtime_fake import ART, fake_switches, needs_p4info
from topo.bmv2_ports import PortEvent
from topo.plan import FabricPlan

PLAN = FabricPlan(spines=2, leaves=2, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)


class FakeWatcher:
    """Stands for ``PortWatcher``: no namespace, a fixed snapshot."""

    def __init__(self, namespaces, on_event) -> None:
        self.namespaces, self.on_event, self.started, self.stopped = namespaces, on_event, 0, 0

    def start(self) -> None:
        self.started += 1

    def stop(self) -> None:
        self.stopped += 1

    def snapshot(self):
        return [PortEvent("l1", 3, True, 7.0), PortEvent("s1", 1, True, 7.0)]


class FakeApi:
    """Stands for ``ControllerClient``: records calls; ``down`` makes them fail."""

    def __init__(self, path) -> None:
        self.calls, self.down, self.closed = [], False, False

    def call(self, req):
        if self.down:
            raise ConnectionRefusedError("controller away")
        self.calls.append(req)
        return {"ok": True}

    def close(self) -> None:
        self.closed = True


@dataclass
class FakeFabric:
    plan: FabricPlan
    grpc_addrs: dict
    pids: dict = field(default_factory=dict)

    def namespaces(self):
        return dict(self.pids)


@dataclass
class FakeController:
    api: str = "/nonexistent.sock"


@pytest.fixture
def switches():
    yield from fake_switches(PLAN)


@pytest.fixture
def faults(switches, monkeypatch):
    monkeypatch.setattr(fib, "PortWatcher", FakeWatcher)
    monkeypatch.setattr(fib, "ControllerClient", FakeApi)
    addrs = {n: f"127.0.0.1:{s.port}" for n, s in switches.items()}
    pids = {sw.name: 1000 + i for i, sw in enumerate(PLAN.switches)}
    f = fib.Bmv2Faults(FakeFabric(PLAN, addrs, pids), FakeController())
    yield f
    f.close()


def test_a_fabric_of_p4runtime_switches_gets_the_bmv2_faults():
    assert faults_for(FakeFabric(PLAN, {})) is fib.Bmv2Faults
    assert faults_for(object()) is OvsFaults


def test_the_watcher_starts_with_the_faults_and_stops_at_close(faults):
    assert faults.watcher.started == 1 and faults.watcher.namespaces == faults.fabric.pids
    faults.close()
    assert faults.watcher.stopped == 1 and faults._api.closed


def test_a_port_change_goes_to_the_controller_with_the_time_it_was_seen(faults):
    faults.report(PortEvent("l2", 4, True, 12.5))
    assert faults._api.calls == [
        {"op": "port_status", "switch": "l2", "port": 4, "down": True, "t_s": 12.5}
    ]


def test_changes_while_the_controller_is_away_are_resent_as_a_snapshot(faults):
    faults._api.down = True
    faults.report(PortEvent("l1", 3, True, 1.0))
    assert faults.unsent == [PortEvent("l1", 3, True, 1.0)] and faults._api.calls == []
    faults._api.down = False
    faults.controller_started()
    assert faults.unsent == []
    assert [(c["switch"], c["port"], c["down"], c["t_s"]) for c in faults._api.calls] == [
        ("l1", 3, True, 7.0),
        ("s1", 1, True, 7.0),
    ]


def test_a_link_goes_down_at_both_ends_each_in_its_switchs_namespace(faults, monkeypatch):
    """l1-s2: l1's uplink to s2 is port hosts_per_leaf + 2 = 4; s2's port to l1 is 1."""
    calls = []
    monkeypatch.setattr(fib, "run_ip_batch", lambda lines, what, pid: calls.append((lines, pid)))
    faults.set_links(PLAN, Fault(0, "link", "l1-s2", 1.0), up=False)
    pids = faults.fabric.pids
    assert calls == [
        (["link set dev l1-eth4 down"], pids["l1"]),
        (["link set dev s2-eth1 down"], pids["s2"]),
    ]


@needs_p4info
@pytest.mark.sockets
def test_tables_are_read_over_p4runtime_and_a_leafs_base_leaves_coflow_state_out(faults, switches):
    """A leaf with tag 5 metered (2 host rules, 2 meters): its dump has them, its base
    does not; the base is the static pipeline and the groups only."""
    from controller.p4runtime.driver import P4RuntimeDriver

    drv = P4RuntimeDriver(PLAN, ART, {n: s.port for n, s in switches.items()})
    drv.connect("l1", 5)
    drv.install_base("l1", 5)
    base_only = faults.tables("l1")
    rules, meters = leaf_state(PLAN, 1, [TagEntry(5, 1, rate_mbps=10.0)], {5: 1})
    diff, _ = LeafTable().diff(rules, meters)
    drv.apply({"l1": diff}, 5)
    full = faults.tables("l1")
    assert len(full) == len(base_only) + 4
    assert faults.base("l1") == base_only
    drv.close()


class Events:
    """``fabric_events`` answers: the reroute of ``link`` confirmed after ``polls`` calls."""

    def __init__(self, link: str, polls: int) -> None:
        self.link, self.polls, self.calls = link, polls, 0

    def __call__(self):
        from controller.routing import FabricEvents, LinkEvent

        self.calls += 1
        if self.calls < self.polls:
            return FabricEvents()
        return FabricEvents((LinkEvent(self.link, True, 1e12, "l1 port 3", 1e12 + 0.004),))


@needs_p4info
@pytest.mark.sockets
def test_a_link_down_waits_for_the_reroute_then_notes_what_was_sent_into_it(
    faults, switches, monkeypatch
):
    """l1-s1 (l1 port 3, s1 port 1): egress counters 10 and 20 packets at the reroute,
    13 and 20 before the link comes back: the note says +3 and +0."""
    from tests.p4runtime_fake import p4info_ids

    monkeypatch.setattr(faults, "set_links", lambda plan, fault, up: None)
    faults._api.fabric_events = Events("l1-s1", polls=3)
    tx = p4info_ids().id("counters", "CoflowEgress.port_tx")
    switches["l1"].fake.counters[(tx, 3)] = (0, 10)
    switches["s1"].fake.counters[(tx, 1)] = (0, 20)
    fault = Fault(0, "link", "l1-s1", 1.0, None, 1.0)
    assert faults(PLAN, fault, up=False) is None
    assert faults._api.fabric_events.calls == 3
    assert faults.egress[0] == {"l1-eth3": 10, "s1-eth1": 20}
    switches["l1"].fake.counters[(tx, 3)] = (0, 13)
    note = faults(PLAN, fault, up=True)
    assert note == "sent into the dead link after the reroute: l1-eth3 +3, s1-eth1 +0 packets"


def test_a_link_down_without_a_reroute_in_time_fails_the_fault(faults, monkeypatch):
    monkeypatch.setattr(fib, "REROUTE_WAIT_S", 0.1)
    monkeypatch.setattr(faults, "set_links", lambda plan, fault, up: None)
    faults._api.fabric_events = Events("l2-s2", polls=1)  # another link's reroute only
    with pytest.raises(RuntimeError, match="l1-s1: no reroute confirmed within 0.1 s"):
        faults(PLAN, Fault(0, "link", "l1-s1", 1.0, None, 1.0), up=False)
