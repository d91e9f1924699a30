"""P4RuntimeDriver against fake P4Runtime switches (``tests.p4runtime_fake``: real gRPC
servers on 127.0.0.1 that record every request and answer reads like a switch)."""

from __future__ import annotations

import threading
import time

import pytest
from finsy.proto import p4r

from controller.coflow_table import FlowRate, LeafTable, TagEntry, leaf_state, rule_cookie
from controller.southbound.base import SouthboundError
from tests.p4runtime_fake import (
    ART,
    entries_of,
    fake_switches,
    needs_p4info,
    p4info_ids,
)
from topo.plan import FabricPlan


@pytest.fixture
def plan():
    return FabricPlan(spines=2, leaves=2, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)


@pytest.fixture
def switches(plan):
    yield from fake_switches(plan)


@pytest.fixture
def driver(plan, switches):
    from controller.p4runtime.driver import P4RuntimeDriver

    removed = []
    drv = P4RuntimeDriver(
        plan, ART, {n: s.port for n, s in switches.items()}, on_removed=lambda *a: removed.append(a)
    )
    drv.removed = removed
    yield drv
    drv.close()


@needs_p4info
@pytest.mark.sockets
def test_connect_becomes_primary_with_device_id_and_election(driver, switches, plan):
    driver.connect("l1", timeout=5)
    arb = switches["l1"].fake.arbitrations[0]
    assert arb.device_id == plan.switch("l1").dpid
    assert (arb.election_id.high, arb.election_id.low) == (0, 1)
    assert driver.connected() == ["l1"]


@needs_p4info
@pytest.mark.sockets
def test_connect_refused_when_another_primary_has_higher_election(plan, switches):
    from controller.p4runtime.driver import P4RuntimeDriver

    ports = {n: s.port for n, s in switches.items()}
    first = P4RuntimeDriver(plan, ART, ports, election_id=5)
    first.connect("s1", timeout=5)
    second = P4RuntimeDriver(plan, ART, ports, election_id=2)
    with pytest.raises(SouthboundError, match="not primary"):
        second.connect("s1", timeout=5)
    first.close()


@needs_p4info
@pytest.mark.sockets
def test_connect_times_out_without_server(plan):
    import socket

    from controller.p4runtime.driver import P4RuntimeDriver

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    drv = P4RuntimeDriver(plan, ART, {sw.name: dead for sw in plan.switches})
    with pytest.raises(SouthboundError, match="no P4Runtime server"):
        drv.connect("l1", timeout=0.5)


@needs_p4info
@pytest.mark.sockets
def test_install_base_pushes_pipeline_then_routes_and_ecmp_on_leaf(driver, switches, plan):
    driver.connect("l1", timeout=5)
    driver.install_base("l1", timeout=5)
    fake = switches["l1"].fake
    (pipe,) = fake.pipelines
    assert pipe.action == p4r.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    assert pipe.config.p4_device_config == ART.json.read_bytes()
    assert pipe.device_id == plan.switch("l1").dpid
    ix = p4info_ids()
    routes = entries_of(fake, "CoflowIngress.route")
    # 2 host /32s, own /24 -> drop, l2's /24 -> ECMP group 2
    by_prefix = {(r.match[0].lpm.value, r.match[0].lpm.prefix_len): r.action.action for r in routes}
    assert len(routes) == 4
    host = by_prefix[(bytes([10, 0, 1, 2]), 32)]
    assert host.action_id == ix.id("actions", "CoflowIngress.forward")
    assert host.params[0].value == (2).to_bytes(2, "big")  # bit<9> port 2
    assert by_prefix[(bytes([10, 0, 1, 0]), 24)].action_id == ix.id("actions", "CoflowIngress.drop")
    to_l2 = by_prefix[(bytes([10, 0, 2, 0]), 24)]
    assert to_l2.action_id == ix.id("actions", "CoflowIngress.to_ecmp")
    assert to_l2.params[0].value == (2).to_bytes(1, "big")  # bit<8> group 2
    members = [
        u.entity.action_profile_member
        for w in fake.writes
        for u in w.updates
        if u.entity.HasField("action_profile_member")
    ]
    assert sorted(int.from_bytes(m.action.params[0].value, "big") for m in members) == [
        plan.uplink_port(1),
        plan.uplink_port(2),
    ]
    groups = [
        u.entity.action_profile_group
        for w in fake.writes
        for u in w.updates
        if u.entity.HasField("action_profile_group")
    ]
    assert [(g.group_id, sorted(m.member_id for m in g.members)) for g in groups] == [(2, [1, 2])]
    (ecmp,) = entries_of(fake, "CoflowIngress.ecmp")
    assert ecmp.action.action_profile_group_id == 2


@needs_p4info
@pytest.mark.sockets
def test_set_groups_modifies_the_members_of_each_leafs_groups(driver, switches, plan):
    for name in ("l1", "l2"):
        driver.connect(name, timeout=5)
        driver.install_base(name, timeout=5)
    assert driver.set_groups({"l1": {2: (2,)}, "l2": {1: (2,)}}, timeout=5) == 2
    for name, d in (("l1", 2), ("l2", 1)):
        (last,) = switches[name].fake.writes[-1].updates
        assert last.type == p4r.Update.MODIFY
        g = last.entity.action_profile_group
        assert (g.group_id, [m.member_id for m in g.members]) == (d, [2])


@needs_p4info
@pytest.mark.sockets
def test_install_base_on_spine_routes_each_leaf_subnet_to_its_port(driver, switches, plan):
    driver.connect("s2", timeout=5)
    driver.install_base("s2", timeout=5)
    routes = entries_of(switches["s2"].fake, "CoflowIngress.route")
    got = sorted(
        (r.match[0].lpm.value[2], int.from_bytes(r.action.action.params[0].value, "big"))
        for r in routes
    )
    assert got == [(1, 1), (2, 2)]
    assert not entries_of(switches["s2"].fake, "CoflowIngress.ecmp")


def _apply(driver, plan, table: LeafTable, entries, epochs, leaf="l1"):
    rules, meters = leaf_state(plan, plan.switch(leaf).index, entries, epochs)
    diff, ids = table.diff(rules, meters)
    n = driver.apply({leaf: diff}, timeout=5)
    table.commit(rules, meters, ids)
    return n, diff


@needs_p4info
@pytest.mark.sockets
def test_apply_writes_meters_before_rules_with_levels_and_rates(driver, switches, plan):
    driver.connect("l1", timeout=5)
    driver.install_base("l1", timeout=5)
    fake, table = switches["l1"].fake, LeafTable()
    before = len(fake.writes)
    entries = [
        TagEntry(7, 2, rate_mbps=40.0),
        TagEntry(9, 0, flow_rates=(FlowRate("h11", "h21", 8.0),)),
    ]
    n, diff = _apply(driver, plan, table, entries, {7: 1, 9: 2})
    # tag 7: 2 host rules + 2 meters; tag 9: 2 host rules + 1 pair rule + 1 meter
    assert n == 8
    writes = fake.writes[before:]
    kinds = [{u.entity.WhichOneof("entity") for u in w.updates} for w in writes]
    assert kinds == [{"meter_entry"}, {"table_entry"}]
    meters = {k[1]: m for k, m in fake.meters.items()}
    ix = p4info_ids()
    m7 = meters[diff.meter_ids[("host", 7, "h11")]]
    assert m7.meter_id == ix.id("meters", "CoflowIngress.tag_meter")
    assert (m7.config.cir, m7.config.pir) == (5_000_000, 5_000_000)  # 40 Mbit/s in B/s
    assert m7.config.cburst == 1_250_000  # 0.25 s of the rate
    coflow = entries_of(fake, "CoflowIngress.coflow")
    assert len(coflow) == 5
    pair = [e for e in coflow if len(e.match) == 3]
    assert len(pair) == 1 and pair[0].match[2].lpm.value == bytes([10, 0, 2, 1])
    metered = ix.id("actions", "CoflowIngress.set_level_metered")
    for e in coflow:
        tag = e.match[1].exact.value[0]
        assert e.action.action.params[0].value == bytes([{7: 2, 9: 0}[tag]])
        assert (e.action.action.action_id == metered) == (tag == 7 or len(e.match) == 3)


@needs_p4info
@pytest.mark.sockets
def test_clear_reports_final_counters_then_deletes_and_resets_meters(driver, switches, plan):
    driver.connect("l1", timeout=5)
    driver.install_base("l1", timeout=5)
    fake, table = switches["l1"].fake, LeafTable()
    _apply(driver, plan, table, [TagEntry(7, 1, rate_mbps=10.0)], {7: 3})
    for key in list(fake.tables):
        if fake.tables[key].table_id == p4info_ids().id("tables", "CoflowIngress.coflow"):
            fake.direct[key] = (1000, 10)
    assert sorted(c.cookie for c in driver.rule_counters("l1", 5)) == [rule_cookie(7, 3)] * 2
    before = len(fake.writes)
    _apply(driver, plan, table, [], {})
    assert sorted(driver.removed) == [("l1", rule_cookie(7, 3), 1000, 10)] * 2
    assert not entries_of(fake, "CoflowIngress.coflow")
    kinds = [[u.type for u in w.updates] for w in fake.writes[before:]]
    assert kinds == [[p4r.Update.DELETE] * 2, [p4r.Update.MODIFY] * 2]
    assert all(not m.HasField("config") for m in fake.meters.values())
    assert driver.meter_counters("l1", 5) == []


@needs_p4info
@pytest.mark.sockets
def test_port_and_meter_counters_read_the_right_cells(driver, switches, plan):
    driver.connect("l1", timeout=5)
    driver.install_base("l1", timeout=5)
    fake, ix = switches["l1"].fake, p4info_ids()
    _, diff = _apply(driver, plan, LeafTable(), [TagEntry(5, 0, rate_mbps=1.0)], {5: 1})
    rx, tx = ix.id("counters", "CoflowIngress.port_rx"), ix.id("counters", "CoflowEgress.port_tx")
    fake.counters[(rx, 3)] = (300, 3)
    fake.counters[(tx, 3)] = (700, 7)
    mid = diff.meter_ids[("host", 5, "h12")]
    fake.counters[(ix.id("counters", "CoflowIngress.meter_in"), mid)] = (5000, 50)
    fake.counters[(ix.id("counters", "CoflowIngress.meter_drop"), mid)] = (2000, 20)
    ports = {c.port: c for c in driver.port_counters("l1", 5)}
    assert sorted(ports) == [1, 2, 3, 4]  # 2 hosts + 2 uplinks
    assert (ports[3].rx_bytes, ports[3].tx_bytes, ports[3].rx_packets, ports[3].tx_packets) == (
        300,
        700,
        3,
        7,
    )
    meters = {m.meter_id: m for m in driver.meter_counters("l1", 5)}
    assert set(meters) == set(diff.meter_ids.values())
    m = meters[mid]
    assert (m.packets_in, m.bytes_in, m.drop_packets, m.drop_bytes) == (50, 5000, 20, 2000)


@needs_p4info
@pytest.mark.sockets
def test_switch_error_becomes_southbound_error_with_message(driver, switches, plan):
    driver.connect("l1", timeout=5)
    driver.install_base("l1", timeout=5)
    from controller.p4runtime.session import INSERT, update

    sess = driver.session("l1")
    with pytest.raises(SouthboundError, match="l1: Write failed: .*entry exists"):
        sess.write([update(INSERT, table_entry=driver.build.ecmp_entry(2))], 5)


@needs_p4info
@pytest.mark.sockets
def test_lost_stream_is_reported_and_switch_leaves_connected(driver, switches, plan):
    lost = threading.Event()
    driver.connect("s1", timeout=5, on_lost=lambda n: lost.set())
    switches["s1"].stop()
    assert lost.wait(10)
    assert "s1" not in driver.connected()
    with pytest.raises(SouthboundError, match="s1: not connected"):
        driver.port_counters("s1", 1)


def test_missing_grpc_port_is_rejected(plan):
    from controller.p4runtime.driver import P4RuntimeDriver

    if not ART.exist():
        pytest.skip("p4src/compiled/ missing")
    with pytest.raises(ValueError, match="no port for switch 's2'"):
        P4RuntimeDriver(plan, ART, {"l1": 1, "l2": 2, "s1": 3})


@needs_p4info
@pytest.mark.sockets
def test_apply_gives_up_at_its_bound_without_waiting_for_a_stuck_switch(driver, monkeypatch):
    from controller.p4runtime import driver as drv_mod

    release = threading.Event()
    monkeypatch.setattr(drv_mod, "apply_bound_s", lambda timeout: 0.3)
    monkeypatch.setattr(driver, "_apply_one", lambda *a: release.wait(30))  # never confirms
    diff, _ = LeafTable().diff(*leaf_state(driver.plan, 1, [TagEntry(3, 0)], {3: 1}))
    started = time.monotonic()
    try:
        with pytest.raises(SouthboundError, match="not confirmed within"):
            driver.apply({"l1": diff}, timeout=5)
        assert time.monotonic() - started < 5  # the bound, not the stuck write, ended it
    finally:
        release.set()
