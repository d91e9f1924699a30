"""The committed P4Info has every object the P4Runtime driver names, with the widths
the driver encodes; entities built by the driver have exactly those widths."""

from __future__ import annotations

import dataclasses

import pytest
from finsy.proto import p4i

from controller.coflow_table import MeterSpec, TagRule
from controller.p4runtime import artifacts
from controller.p4runtime.entities import EntityBuilder, N, Names, rule_key_of
from controller.p4runtime.p4info import P4InfoIndex, decode_uint, encode_uint
from topo.plan import FabricPlan

ART = artifacts.committed()
pytestmark = pytest.mark.skipif(
    not ART.exist(),
    reason="p4src/compiled/ missing: p4c has not compiled the pipeline yet (make p4)",
)

KINDS = {
    "coflow": "tables",
    "route": "tables",
    "ecmp": "tables",
    "set_level": "actions",
    "set_level_metered": "actions",
    "forward": "actions",
    "to_ecmp": "actions",
    "drop": "actions",
    "ecmp_selector": "action_profiles",
    "tag_meter": "meters",
    "meter_in": "counters",
    "meter_drop": "counters",
    "tag_counter": "counters",
    "port_rx": "counters",
    "port_tx": "counters",
    "coflow_counter": "direct_counters",
}


@pytest.fixture(scope="module")
def ix() -> P4InfoIndex:
    return P4InfoIndex.from_file(ART.p4info)


def test_every_name_the_driver_uses_exists_in_p4info(ix):
    for f in dataclasses.fields(Names):
        assert ix.id(KINDS[f.name], getattr(N, f.name)) > 0, f.name


def test_match_fields_have_the_widths_and_kinds_the_driver_assumes(ix):
    mt = p4i.MatchField
    want = {
        ("coflow", "in_port"): (9, mt.EXACT),
        ("coflow", "tag"): (6, mt.EXACT),
        ("coflow", "dst"): (32, mt.LPM),
        ("route", "dst"): (32, mt.LPM),
        ("ecmp", "group"): (8, mt.EXACT),
    }
    for (table, field), (width, kind) in want.items():
        f = ix.match_field(getattr(N, table), field)
        assert (f.bitwidth, f.match_type) == (width, kind), (table, field)


def test_action_params_have_the_expected_widths(ix):
    want = {
        ("set_level", "level"): 3,
        ("set_level_metered", "level"): 3,
        ("set_level_metered", "meter_idx"): 32,
        ("forward", "port"): 9,
        ("to_ecmp", "group"): 8,
    }
    for (action, param), width in want.items():
        assert ix.param(getattr(N, action), param).bitwidth == width


def test_meter_and_counters_cover_every_meter_id_and_port(ix):
    # meter ids are allocated 1.. per leaf: 9 hosts x 55 tags + pairs must fit
    assert ix.size("meters", N.tag_meter) >= 4096
    for c in (N.meter_in, N.meter_drop):
        assert ix.size("counters", c) == ix.size("meters", N.tag_meter)
    assert ix.size("counters", N.tag_counter) == 64
    assert ix.size("counters", N.port_rx) >= 18 and ix.size("counters", N.port_tx) >= 18
    table = next(t for t in ix.info.tables if t.preamble.name == N.coflow)
    assert ix.id("direct_counters", N.coflow_counter) in table.direct_resource_ids


def test_unknown_names_are_refused_with_the_name(ix):
    with pytest.raises(KeyError, match="no table named 'nope'"):
        ix.id("tables", "nope")
    with pytest.raises(KeyError, match="no match field 'vlan'"):
        ix.match_field(N.coflow, "vlan")


def test_coflow_entry_fields_are_exactly_their_width(ix):
    b = EntityBuilder(ix)
    rule = TagRule(tag=55, in_port=9, dst_ip="10.0.3.4", level=7, meter=("pair",), cookie=1)
    e = b.coflow_entry(rule, meter_id=4095)
    port, tag, dst = e.match
    assert port.exact.value == b"\x00\x09" and tag.exact.value == b"\x37"
    assert (dst.lpm.value, dst.lpm.prefix_len) == (bytes([10, 0, 3, 4]), 32)
    level, idx = e.action.action.params
    assert level.value == b"\x07" and idx.value == (4095).to_bytes(4, "big")
    assert rule_key_of(b, e) == (55, 9, "10.0.3.4")


def test_wildcard_destination_is_an_omitted_field(ix):
    b = EntityBuilder(ix)
    e = b.coflow_entry(TagRule(3, 1, None, 0, None, 1), meter_id=None)
    assert len(e.match) == 2
    assert e.action.action.action_id == ix.id("actions", N.set_level)
    assert rule_key_of(b, e) == (3, 1, None)


def test_values_that_do_not_fit_are_refused(ix):
    b = EntityBuilder(ix)
    with pytest.raises(ValueError, match="does not fit in 3 bits"):
        b.coflow_entry(TagRule(3, 1, None, 8, None, 1), meter_id=None)
    with pytest.raises(ValueError, match="does not fit in 6 bits"):
        b.coflow_entry(TagRule(64, 1, None, 0, None, 1), meter_id=None)
    with pytest.raises(ValueError, match="meter index 8192 outside"):
        b.meter_entry(ix.size("meters", N.tag_meter), MeterSpec(("h",), 1000, 250))


def test_lpm_zeroes_host_bits_and_meter_rates_are_bytes_per_second(ix):
    b = EntityBuilder(ix)
    m = b.lpm(N.route, "dst", "10.0.2.7", 24)
    assert m.lpm.value == bytes([10, 0, 2, 0])
    entry = b.meter_entry(3, MeterSpec(("host", 1, "h11"), rate_kbps=8000, burst_kbit=2000))
    assert entry.index.index == 3
    assert (entry.config.cir, entry.config.pir) == (1_000_000, 1_000_000)
    assert (entry.config.cburst, entry.config.pburst) == (250_000, 250_000)


def test_encode_uint_round_trips_and_pads():
    assert encode_uint(1, 9) == b"\x00\x01"
    assert decode_uint(encode_uint(511, 9)) == 511
    with pytest.raises(ValueError):
        encode_uint(512, 9)
    with pytest.raises(ValueError):
        encode_uint(True, 9)


def test_routes_of_a_larger_fabric(ix):
    plan = FabricPlan(spines=3, leaves=4, hosts_per_leaf=3, host_bw_mbps=10, fabric_bw_mbps=10)
    b = EntityBuilder(ix)
    leaf = b.route_entries(plan, plan.switch("l4"))
    assert len(leaf) == 3 + 1 + 3  # host /32s, own /24, one /24 per other leaf
    groups = [decode_uint(e.action.action.params[0].value) for e in leaf[4:]]
    assert groups == [1, 2, 3]
    spine = b.route_entries(plan, plan.switch("s3"))
    assert [e.match[0].lpm.value[2] for e in spine] == [1, 2, 3, 4]
    assert [m.member_id for m in b.ecmp_members(plan)] == [1, 2, 3]
    assert [decode_uint(m.action.params[0].value) for m in b.ecmp_members(plan)] == [4, 5, 6]
