"""ECMP groups under link faults (controller.routing)."""

from __future__ import annotations

from controller import routing
from topo.plan import FabricPlan

PLAN = FabricPlan(spines=2, leaves=4, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)


def test_ports_map_to_leaf_spine_links():
    assert routing.link_of_port(PLAN, "l1", 3) == (1, 1)
    assert routing.link_of_port(PLAN, "l3", 4) == (3, 2)
    assert routing.link_of_port(PLAN, "l1", 2) is None  # a host port
    assert routing.link_of_port(PLAN, "s2", 4) == (4, 2)
    assert routing.link_of_port(PLAN, "s2", 5) is None
    assert routing.link_name((4, 2)) == "l4-s2"


def test_a_dead_link_changes_every_group_of_its_leaf_and_its_group_elsewhere():
    installed = {lf: routing.leaf_groups(PLAN, lf) for lf in range(1, 5)}
    assert installed[1] == {2: (1, 2), 3: (1, 2), 4: (1, 2)}
    changed = routing.changed_groups(PLAN, installed, [(1, 1)])
    assert changed == {
        1: {2: (2,), 3: (2,), 4: (2,)},  # l1 stops hashing onto its dead uplink
        2: {1: (2,)},  # the others stop sending l1's traffic through s1
        3: {1: (2,)},
        4: {1: (2,)},
    }
    installed = {lf: {**installed[lf], **changed.get(lf, {})} for lf in installed}
    assert routing.changed_groups(PLAN, installed, [(1, 1)]) == {}
    back = routing.changed_groups(PLAN, installed, [])
    assert back[1] == {2: (1, 2), 3: (1, 2), 4: (1, 2)} and back[3] == {1: (1, 2)}


def test_control_plane_reroutes_every_leaf_concerned_and_records_it():
    from tests.fakes import ready_plane

    plane, drv = ready_plane(PLAN)
    assert plane.groups["l1"] == {2: (1, 2), 3: (1, 2), 4: (1, 2)}
    plane.port_status("l1", 3, True, t=100.0)  # l1's uplink to s1
    assert drv.groups_set == [
        {"l1": {2: (2,), 3: (2,), 4: (2,)}, "l2": {1: (2,)}, "l3": {1: (2,)}, "l4": {1: (2,)}}
    ]
    plane.port_status("s1", 1, True)  # the other end: same link, nothing more to do
    assert len(drv.groups_set) == 1
    plane.port_status("l1", 3, False)  # one end up, the other still down: still down
    assert len(drv.groups_set) == 1
    plane.port_status("s1", 1, False, t=200.0)
    assert drv.groups_set[1]["l1"] == {2: (1, 2), 3: (1, 2), 4: (1, 2)}
    back = routing.FabricEvents.from_wire(plane.handle({"op": "fabric_events"})).links
    assert [(e.link, e.down, e.reported_by) for e in back] == [
        ("l1-s1", True, "l1 port 3"),
        ("l1-s1", False, "s1 port 1"),
    ]
    assert back[0].detected_s == 100.0 and back[0].rerouted_s > 100.0
    assert back[0].leaves == ("l1", "l2", "l3", "l4") and back[0].writes == 6
    plane.port_status("l1", 1, True)  # a host port: no link of the fabric
    assert len(drv.groups_set) == 2


def test_a_leaf_installed_while_a_link_is_down_gets_groups_around_it():
    from tests.fakes import ready_plane

    plane, drv = ready_plane(PLAN)
    plane.port_states("s2", {3: True, 1: False})  # l3-s2 down, seen at s2's handshake
    drv.groups_set.clear()
    plane.switch_connected("l3")  # l3 restarts: its base install has every spine
    assert drv.groups_set == [{"l3": {1: (1,), 2: (1,), 4: (1,)}}]
    assert plane.groups["l3"] == {1: (1,), 2: (1,), 4: (1,)}


def test_a_spine_that_disconnects_is_routed_around_until_it_is_ready_again():
    from tests.fakes import ready_plane

    plane, drv = ready_plane(PLAN)
    drv.groups_set.clear()
    plane.switch_disconnected("s1")
    merged: dict = {}
    for call in drv.groups_set:
        for leaf, g in call.items():
            merged.setdefault(leaf, {}).update(g)
    assert merged == {f"l{a}": {b: (2,) for b in range(1, 5) if b != a} for a in range(1, 5)}
    assert plane.set_entries([]) == 0  # scheduling goes on without a spine
    drv.groups_set.clear()
    plane.switch_connected("s1")  # reinstalled inline, then the leaves use it again
    assert drv.base[-1] == "s1"
    assert all(g == routing.leaf_groups(PLAN, int(n[1:])) for n, g in plane.groups.items())
    ev = routing.FabricEvents.from_wire(plane.handle({"op": "fabric_events"}))
    assert [e.event for e in ev.switches if e.switch == "s1"][-3:] == [
        "disconnected",
        "connected",
        "ready",
    ]
    assert {e.reported_by for e in ev.links} == {"s1 disconnected", "s1 ready"}
