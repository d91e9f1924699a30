"""OpenFlow 1.3 messages of the pipeline: built, serialised and parsed back."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from os_ken.ofproto import ofproto_v1_3 as ofp, ofproto_v1_3_parser as parser

from controller import coflow_table as ct
from controller.southbound import of_messages as ofm
from topo.plan import FabricPlan

PLAN = FabricPlan(spines=3, leaves=2, hosts_per_leaf=2, host_bw_mbps=100, fabric_bw_mbps=100)
DP = SimpleNamespace(ofproto=ofp, ofproto_parser=parser, id=0x1001)


def _roundtrip(msg):
    """Serialise ``msg``; parse it back where os-ken has a parser for its type (flow
    mods), else return the serialised object (group/meter mods have none)."""
    msg.set_xid(1)
    msg.serialize()
    assert len(msg.buf) == msg.msg_len
    if parser._MSG_PARSERS.get(msg.msg_type) is None:
        return msg
    return parser.msg_parser(DP, ofp.OFP_VERSION, msg.msg_type, msg.msg_len, 1, msg.buf)


def _routes(msgs):
    """{(eth_type, dst): instructions} of routing-table flow mods (not the slot ones)."""
    out = {}
    for m in msgs:
        if (
            isinstance(m, parser.OFPFlowMod)
            and m.table_id == ofm.ROUTE_TABLE
            and m.priority != ofm.PRIO_SLOT
        ):
            d = dict(m.match.items())
            out[(d["eth_type"], d.get("ipv4_dst", d.get("arp_tpa")))] = m.instructions
    return out


def test_leaf_base_pipeline_routes_local_hosts_and_hashes_the_rest():
    msgs = ofm.base_msgs(DP, PLAN, PLAN.switch("l2"))
    for m in msgs:
        _roundtrip(m)  # every message serialises and parses
    groups = [m for m in msgs if isinstance(m, parser.OFPGroupMod) and m.command == ofp.OFPGC_ADD]
    assert groups[0].group_id == 1  # one per other leaf: l1, then its 16 slot groups
    assert [g.group_id for g in groups[1:]] == [ofm.slot_group(1, k) for k in range(16)]
    assert {g.type for g in groups} == {ofp.OFPGT_SELECT}
    assert [b.actions[0].port for b in groups[0].buckets] == [3, 4, 5]
    # slot k's group: spine k % 3 + 1 of the three, whose uplink is port 2 + that
    assert [[b.actions[0].port for b in g.buckets] for g in groups[1:]] == [
        [3 + k % 3] for k in range(16)
    ]
    routes = _routes(msgs)
    assert routes[(0x0800, "10.0.2.1")][0].actions[0].port == 1
    assert routes[(0x0806, "10.0.2.2")][0].actions[0].port == 2
    assert routes[(0x0800, ("10.0.2.0", "255.255.255.0"))] == []  # no loop via spines
    assert routes[(0x0800, ("10.0.1.0", "255.255.255.0"))][0].actions[0].group_id == 1
    assert (0x0800, ("10.0.0.0", "255.255.0.0")) not in routes
    assert msgs[0].command == ofp.OFPFC_DELETE and msgs[0].table_id == ofp.OFPTT_ALL


def test_spine_routes_each_leaf_subnet_to_its_port():
    routes = _routes(ofm.base_msgs(DP, PLAN, PLAN.switch("s3")))
    assert routes[(0x0800, ("10.0.1.0", "255.255.255.0"))][0].actions[0].port == 1
    assert routes[(0x0806, ("10.0.2.0", "255.255.255.0"))][0].actions[0].port == 2


def test_tag_rule_meters_rewrites_dscp_and_continues_to_routing():
    rule = ct.TagRule(9, 2, "10.0.2.1", 3, ("pair", 9, "h12", "h21"), ct.rule_cookie(9, 5))
    m = _roundtrip(ofm.tag_rule_msg(DP, rule, 4, "modify"))
    assert m.command == ofp.OFPFC_MODIFY_STRICT and m.cookie == ct.rule_cookie(9, 5)
    assert dict(m.match.items()) == {
        "in_port": 2,
        "eth_type": 0x0800,
        "ip_dscp": 9,
        "ipv4_dst": "10.0.2.1",
    }
    meter, actions, goto = m.instructions
    assert meter.meter_id == 4
    assert actions.actions[0].value == 59  # level code 56 + 3
    assert goto.table_id == ofm.ROUTE_TABLE
    assert m.flags & ofp.OFPFF_SEND_FLOW_REM and m.priority == ofm.PRIO_PAIR


def test_a_tag_above_55_matches_its_dscp_and_reads_back_from_the_cookie():
    """Tag 64 = 55 + 9 goes on the wire as DSCP 9 (its own); a remapped rule of tag 64
    matches the DSCP it was given (31).  The cookie keeps 64; what a switch reports
    reads back as (tag, port, dst, level, meter, DSCP)."""
    rule = ct.TagRule(64, 2, None, 1, None, ct.rule_cookie(64, 5))
    m = _roundtrip(ofm.tag_rule_msg(DP, rule, None, "add"))
    assert dict(m.match.items())["ip_dscp"] == 9
    assert ofm.parse_tag_rule(DP, m) == (64, 2, None, 1, None, 9)
    remapped = _roundtrip(ofm.tag_rule_msg(DP, replace(rule, dscp=31), None, "add"))
    assert dict(remapped.match.items())["ip_dscp"] == 31
    assert ofm.parse_tag_rule(DP, remapped) == (64, 2, None, 1, None, 31)


def test_meter_mod_is_kbps_drop_band_with_burst():
    m = _roundtrip(ofm.meter_msg(DP, 7, ct.MeterSpec(("host", 1, "h11"), 20000, 5000), "add"))
    assert m.meter_id == 7 and m.flags & ofp.OFPMF_KBPS and m.flags & ofp.OFPMF_BURST
    (band,) = m.bands
    assert (band.type, band.rate, band.burst_size) == (ofp.OFPMBT_DROP, 20000, 5000)


def test_diff_messages_come_in_safe_order():
    d = ct.LeafDiff(
        meters_add=[(2, ct.MeterSpec(("host", 1, "h11"), 1, 1))],
        rules_add=[ct.TagRule(1, 1, None, 0, ("host", 1, "h11"), 257)],
        rules_del=[ct.TagRule(2, 1, None, 0, None, 258)],
        meters_del=[(1, ct.MeterSpec(("host", 2, "h11"), 1, 1))],
        meter_ids={("host", 1, "h11"): 2},
    )
    kinds = [(type(m).__name__, m.command) for m in ofm.diff_msgs(DP, d)]
    assert kinds == [
        ("OFPMeterMod", ofp.OFPMC_ADD),
        ("OFPFlowMod", ofp.OFPFC_ADD),
        ("OFPFlowMod", ofp.OFPFC_DELETE_STRICT),
        ("OFPMeterMod", ofp.OFPMC_DELETE),
    ]


def test_leaf_sends_tcp_to_another_leaf_by_the_slot_of_its_source_port():
    """One entry per ECMP slot: TCP to l1's /24 whose source port's bits 1-4 are k ->
    slot group (1, k), above the hashed route; ARP and other IP keep the hashed one."""
    msgs = ofm.base_msgs(DP, PLAN, PLAN.switch("l2"))
    slot_routes = [
        _roundtrip(m)
        for m in msgs
        if isinstance(m, parser.OFPFlowMod) and m.priority == ofm.PRIO_SLOT
    ]
    assert len(slot_routes) == 16 and ofm.PRIO_FABRIC < ofm.PRIO_SLOT < ofm.PRIO_OWN_SUBNET
    for k, m in enumerate(slot_routes):
        assert dict(m.match.items()) == {
            "eth_type": 0x0800,
            "ip_proto": 6,
            "ipv4_dst": ("10.0.1.0", "255.255.255.0"),
            "tcp_src": (2 * k, 30),  # the slot is bits 1-4 of the port
        }
        assert m.instructions[0].actions[0].group_id == ofm.slot_group(1, k)


def test_reroute_modifies_groups_in_place_over_the_remaining_uplinks():
    msgs = ofm.groups_msgs(DP, PLAN, {1: (1, 3)})
    assert len(msgs) == 17 and {m.command for m in msgs} == {ofp.OFPGC_MODIFY}
    assert msgs[0].group_id == 1
    assert [b.actions[0].port for b in msgs[0].buckets] == [3, 5]  # spine 2's uplink gone
    # every slot moves to the k-th of the two spines left: 1, 3, 1, 3, ...
    assert [(m.group_id, [b.actions[0].port for b in m.buckets]) for m in msgs[1:]] == [
        (ofm.slot_group(1, k), [3 if k % 2 == 0 else 5]) for k in range(16)
    ]
    for m in msgs:
        _roundtrip(m)


def test_a_leaf_with_no_spine_left_gets_empty_slot_groups():
    msgs = ofm.groups_msgs(DP, PLAN, {1: ()})
    assert [len(m.buckets) for m in msgs] == [0] * 17


def test_slot_groups_read_back_are_checked_against_their_leaf_group():
    """``split_groups``: the per-leaf groups pass through; slot groups must be exactly
    the derived ones (a slot on a dead spine, or one missing, is reported)."""
    good = {1: (1, 3), **ofm.slot_groups(PLAN, {1: (1, 3)})}
    assert ofm.split_groups(PLAN, good) == ({1: (1, 3)}, "")
    stale = {**good, ofm.slot_group(1, 1): (2,)}  # not rewritten when spine 2 went down
    assert ofm.split_groups(PLAN, stale)[1] == (
        "slot groups: 1 missing or not their leaf group's spine"
    )
    missing = {g: sp for g, sp in good.items() if g != ofm.slot_group(1, 5)}
    assert "1 missing" in ofm.split_groups(PLAN, missing)[1]
