"""Reading a switch back over P4Runtime (``controller.p4runtime.readback``, through
``P4RuntimeDriver.read_state``) against the fake P4Runtime switch: what ``install_base``
and ``apply`` wrote comes back as the ``SwitchState`` a restarted controller adopts."""

from __future__ import annotations

import pytest
from finsy.proto import p4r

from controller.coflow_table import FlowRate, LeafTable, TagEntry, leaf_state, rule_cookie
from controller.p4runtime.p4info import encode_uint
from controller.southbound.base import InstalledMeter
from controller.takeover import adopted_table
from tests.p4runtime_fake import ART, FakeSwitch, fake_switches, needs_p4info, p4info_ids
from topo.plan import FabricPlan

pytestmark = [needs_p4info, pytest.mark.sockets]


@pytest.fixture
def plan():
    return FabricPlan(spines=2, leaves=3, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)


@pytest.fixture
def switches(plan):
    yield from fake_switches(plan)


@pytest.fixture
def driver(plan, switches):
    from controller.p4runtime.driver import P4RuntimeDriver

    drv = P4RuntimeDriver(plan, ART, {n: s.port for n, s in switches.items()})
    for name in switches:
        drv.connect(name, timeout=5)
        drv.install_base(name, timeout=5)
    yield drv
    drv.close()


def _apply(driver, plan, entries, epochs, leaf="l1"):
    rules, meters = leaf_state(plan, plan.switch(leaf).index, entries, epochs)
    diff, _ids = LeafTable().diff(rules, meters)
    driver.apply({leaf: diff}, timeout=5)
    return rules, meters


def test_fresh_leaf_reads_back_intact_with_every_group_over_both_spines(driver):
    """A leaf of 3 holds one group per other leaf (2, 3), each over spines (1, 2)."""
    st = driver.read_state("l1", 5)
    assert st.base_ok and st.foreign == ""
    assert st.groups == {2: (1, 2), 3: (1, 2)}
    assert st.rules == () and st.meters == ()


def test_spine_reads_back_intact_without_groups(driver):
    st = driver.read_state("s2", 5)
    assert st.base_ok and st.groups == {}


def test_rules_come_back_with_cookies_levels_and_meters(driver, plan):
    """Tag 7 at level 2 metered 40 Mbit/s per sender: 2 host rules (ports 1, 2) with
    cookie rule_cookie(7, 3), each with a meter of 40_000 kbit/s; tag 9 unmetered at 0
    plus one pair rule h11->h21 metered 8 Mbit/s (8000 kbit/s)."""
    entries = [
        TagEntry(7, 2, rate_mbps=40.0),
        TagEntry(9, 0, flow_rates=(FlowRate("h11", "h21", 8.0),)),
    ]
    _apply(driver, plan, entries, {7: 3, 9: 1})
    st = driver.read_state("l1", 5)
    got = sorted((r.tag, r.in_port, r.dst_ip or "", r.level, r.cookie) for r in st.rules)
    assert got == [
        (7, 1, "", 2, rule_cookie(7, 3)),
        (7, 2, "", 2, rule_cookie(7, 3)),
        (9, 1, "", 0, rule_cookie(9, 1)),
        (9, 1, "10.0.2.1", 0, rule_cookie(9, 1)),
        (9, 2, "", 0, rule_cookie(9, 1)),
    ]
    metered = {(r.tag, r.in_port, r.dst_ip): r.meter_id for r in st.rules if r.meter_id is not None}
    assert set(metered) == {(7, 1, None), (7, 2, None), (9, 1, "10.0.2.1")}
    rates = sorted(m.rate_kbps for m in st.meters)
    assert rates == [8_000, 40_000, 40_000]
    assert {m.meter_id for m in st.meters} == set(metered.values())


def test_adopting_what_was_read_needs_no_write(driver, plan):
    """The table rebuilt from the read equals the desired state: diff is empty."""
    entries = [TagEntry(7, 2, rate_mbps=40.0), TagEntry(9, 1)]
    rules, meters = _apply(driver, plan, entries, {7: 3, 9: 1})
    table = adopted_table(plan, "l1", driver.read_state("l1", 5))
    diff, _ = table.diff(rules, meters)
    assert diff.count() == 0


def test_a_reset_meter_cell_is_not_read_as_a_meter(driver, plan):
    _apply(driver, plan, [TagEntry(7, 2, rate_mbps=40.0)], {7: 1})
    rules, meters = leaf_state(plan, 1, [TagEntry(7, 2, rate_mbps=40.0)], {7: 1})
    table = LeafTable()
    diff, ids = table.diff(rules, meters)
    table.commit(rules, meters, ids)
    diff, _ = table.diff({}, {})
    driver.apply({"l1": diff}, timeout=5)
    st = driver.read_state("l1", 5)
    assert st.rules == () and st.meters == ()


def test_rewritten_groups_come_back_as_written(driver):
    driver.set_groups({"l1": {2: (2,)}}, timeout=5)
    assert driver.read_state("l1", 5).groups == {2: (2,), 3: (1, 2)}


def test_a_foreign_route_entry_makes_the_base_not_intact(driver, switches):
    """One extra route entry (10.9.0.0/16 -> drop) written behind the driver's back."""
    b = driver.build
    extra = b.table_entry(
        "CoflowIngress.route",
        [b.lpm("CoflowIngress.route", "dst", "10.9.0.0", 16)],
        b.action("CoflowIngress.drop"),
    )
    driver.session("l2").write(
        [p4r.Update(type=p4r.Update.INSERT, entity=p4r.Entity(table_entry=extra))], 5
    )
    st = driver.read_state("l2", 5)
    assert not st.base_ok and st.foreign == "static entries differ: 0 missing, 1 extra"


def test_a_missing_route_entry_makes_the_base_not_intact(driver, switches):
    fake = switches["s1"].fake
    route = p4info_ids().id("tables", "CoflowIngress.route")
    key = next(k for k, te in fake.tables.items() if te.table_id == route)
    del fake.tables[key]
    st = driver.read_state("s1", 5)
    assert not st.base_ok and "1 missing, 0 extra" in st.foreign


def test_values_read_back_in_canonical_bytes_compare_equal(driver, switches):
    """A server may return 0x0001 (port 1 padded to 9 bits) as 0x01: still intact."""
    from controller.p4runtime.readback import entry_text

    fake = switches["s1"].fake
    te = next(iter(fake.tables.values()))
    padded = entry_text(te)
    for p in te.action.action.params:
        p.value = p.value.lstrip(b"\0") or b"\0"
    assert entry_text(te) == padded
    assert encode_uint(1, 9) == b"\0\x01"
    assert driver.read_state("s1", 5).base_ok


def test_meter_rate_inverts_the_written_byte_rate():
    """40 Mbit/s = 40_000 kbit/s is written as 5_000_000 B/s; read back: 40_000."""
    from controller.p4runtime.readback import installed_meter

    m = p4r.MeterEntry(index=p4r.Index(index=4))
    m.config.cir, m.config.cburst = 5_000_000, 1_250_000
    assert installed_meter(m) == InstalledMeter(4, 40_000, 10_000)
    m.config.cir = 416_624  # 3_333 kbit/s = 416_625 B/s, come back a byte/s short
    assert installed_meter(m).rate_kbps == 3_333


def test_reader_dump_has_pipeline_digest_and_leaves_counters_out(driver, switches, plan):
    """The orchestrator's read (no arbitration) sees the pipeline and every entry: a
    leaf of 3 leaves/2 hosts/2 spines: 2 host /32 + own /24 + 2 other /24 routes, 2
    ECMP entries, 2 members, 2 groups = 11 lines + the digest."""
    from controller.p4runtime.reader import SwitchReader

    r = SwitchReader(f"127.0.0.1:{switches['l1'].port}", plan.switch("l1").dpid)
    before = r.dump(5)
    assert len(before) == 12 and before[0].startswith("pipeline ") and before[0] != "pipeline none"
    key = next(iter(switches["l1"].fake.tables))
    switches["l1"].fake.direct[key] = (999, 9)  # traffic changes counters only
    assert r.dump(5) == before
    assert driver.read_state("l1", 5).base_ok


def test_reader_dump_of_a_switch_without_pipeline_is_one_line(plan):
    """A restarted BMv2 before the controller pushed its pipeline: FAILED_PRECONDITION
    from GetForwardingPipelineConfig -> just NO_PIPELINE (not an error)."""
    from controller.p4runtime.reader import NO_PIPELINE, SwitchReader

    fresh = FakeSwitch()
    try:
        assert SwitchReader(f"127.0.0.1:{fresh.port}", 1).dump(5) == [NO_PIPELINE]
    finally:
        fresh.stop()
