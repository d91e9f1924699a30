"""Port states of BMv2 switches from their interfaces (``topo.bmv2_ports``): the
parse of ``ip -o link``/``ip -o monitor link`` lines and the watcher's change
reports (no namespace, no process: ``seen`` is fed directly)."""

from __future__ import annotations

from topo.bmv2_ports import PortEvent, PortWatcher, parse_link_line

UP = (
    "7: l1-eth3@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc htb state UP "
    "mode DEFAULT group default qlen 1000\\    link/ether 2a:1b:00:00:00:01"
)
ADMIN_DOWN = "7: l1-eth3@if6: <BROADCAST,MULTICAST> mtu 9000 qdisc htb state DOWN group default"
PEER_DOWN = (
    "6: s1-eth1@if7: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 9000 qdisc htb "
    "state LOWERLAYERDOWN group default"
)


def test_an_interface_with_carrier_is_up():
    assert parse_link_line(UP, "l1") == (3, False)


def test_an_end_set_down_and_its_peer_without_carrier_are_down():
    assert parse_link_line(ADMIN_DOWN, "l1") == (3, True)
    assert parse_link_line(PEER_DOWN, "s1") == (1, True)


def test_a_deleted_interface_is_down():
    assert parse_link_line("Deleted " + UP, "l1") == (3, True)


def test_other_interfaces_and_lines_are_ignored():
    """Another switch's name, a prefix clash (l11 vs l1), loopback, continuation lines."""
    assert parse_link_line(UP, "s1") is None
    assert parse_link_line(UP.replace("l1-eth3", "l11-eth3"), "l1") is None
    assert parse_link_line("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536", "l1") is None
    assert parse_link_line("    link/ether 2a:1b:00:00:00:01 brd ff:ff:ff:ff:ff:ff", "l1") is None


def test_the_watcher_reports_each_change_once():
    """Up (first seen), up again (no change), down, down again, up: 3 events."""
    got: list[PortEvent] = []
    w = PortWatcher({"l1": 1}, got.append)
    for t, down in enumerate([False, False, True, True, False]):
        w.seen("l1", 3, down, float(t))
    assert got == [
        PortEvent("l1", 3, False, 0.0),
        PortEvent("l1", 3, True, 2.0),
        PortEvent("l1", 3, False, 4.0),
    ]


def test_snapshot_is_every_port_now():
    w = PortWatcher({"l1": 1, "s1": 2}, lambda e: None, clock=lambda: 9.0)
    w.seen("s1", 1, True, 1.0)
    w.seen("l1", 3, False, 2.0)
    assert w.snapshot() == [PortEvent("l1", 3, False, 9.0), PortEvent("s1", 1, True, 9.0)]
