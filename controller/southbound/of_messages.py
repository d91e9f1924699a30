"""OpenFlow 1.3 messages of the coflowbed pipeline, built from the fabric plan and the
coflow-table rules (pure: a datapath object is only used for its ofproto modules).

Pipeline (docs/fabric.md):

- table 0, the coflow table.  Leaves: per coflow rule, match ``in_port`` + IPv4 DSCP
  its sender marks the tag with (``TagRule.wire_dscp``; the tag id is in the cookie) (+ ``ipv4_dst``
  for pair rules) -> [meter] -> set DSCP to the level code ->
  goto 1.  Everything else (level codes, DSCP 0, unmapped tags, non-IP, spines) ->
  goto 1 unchanged (priority 0).
- table 1, routing.  Leaf l: own host /32 -> its port; the rest of its own /24 -> drop
  (no loop through the spines); another leaf d's /24 -> select group d over the uplinks
  to the spines both can use (OVS hashes per 5-tuple; ``controller.routing``).  TCP to
  another leaf goes by its source port's ECMP slot instead (``workload.ecmp``, shared
  with the agents and the simulator): one entry per slot k (``tcp_src`` masked to the
  slot's bits, ``ecmp.slot_match``) -> group ``slot_group(d, k)``, a select group of
  one bucket, the slot's spine among group d's (``slot_spine``); rewritten with group d.
  Spine: 10.0.l.0/24 -> port l.  ARP is routed the same way on the target address
  (hosts use static ARP; this is a safety net).
"""

from __future__ import annotations

from controller.coflow_table import MeterSpec, TagRule, cookie_tag
from controller.routing import Groups, leaf_groups
from topo.plan import (
    LEAF_PREFIX_LEN,
    FabricPlan,
    SwitchPlan,
    leaf_subnet,
    prefix_mask,
)
from workload import ecmp
from workload.marking import LEVEL_CODE_BASE, TAG_ID_MAX, TAG_MAX, TAG_MIN, level_dscp

ETH_IP = 0x0800
ETH_ARP = 0x0806
TAG_TABLE = 0
ROUTE_TABLE = 1
PRIO_DEFAULT = 0
PRIO_TAG = 100
PRIO_PAIR = 200  # pair rules are more specific than per-host rules of the same tag
PRIO_HOST = 100
PRIO_OWN_SUBNET = 50
PRIO_FABRIC = 10
PRIO_SLOT = 20  # TCP to another leaf by its ECMP slot: above the hashed route
SLOT_GROUP_STEP = 1 << 16  # group id of (leaf d, slot k): SLOT_GROUP_STEP * (k + 1) + d
IP_TCP = 6
LEAF_NET_MASK = prefix_mask(LEAF_PREFIX_LEN)


def flow_mod(
    dp, table: int, priority: int, match, insts, command=None, cookie: int = 0, flags: int = 0
):
    """An OFPFlowMod with the fields this pipeline uses."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    return parser.OFPFlowMod(
        dp,
        cookie=cookie,
        cookie_mask=0,
        table_id=table,
        command=ofp.OFPFC_ADD if command is None else command,
        idle_timeout=0,
        hard_timeout=0,
        priority=priority,
        buffer_id=ofp.OFP_NO_BUFFER,
        out_port=ofp.OFPP_ANY,
        out_group=ofp.OFPG_ANY,
        flags=flags,
        match=match,
        instructions=insts,
    )


def _goto(dp, table: int):
    """Goto-table instruction."""
    return dp.ofproto_parser.OFPInstructionGotoTable(table)


def _apply(dp, actions):
    """Apply-actions instruction."""
    return dp.ofproto_parser.OFPInstructionActions(dp.ofproto.OFPIT_APPLY_ACTIONS, actions)


def wipe_msgs(dp) -> list:
    """Delete every flow, group and meter (start from a known state on (re)connect)."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    return [
        flow_mod(dp, ofp.OFPTT_ALL, 0, parser.OFPMatch(), [], command=ofp.OFPFC_DELETE),
        parser.OFPGroupMod(dp, ofp.OFPGC_DELETE, 0, ofp.OFPG_ALL),
        parser.OFPMeterMod(dp, ofp.OFPMC_DELETE, 0, ofp.OFPM_ALL),
    ]


def _route_pair(dp, priority: int, dst, out_insts) -> list:
    """IPv4 (ipv4_dst) and ARP (arp_tpa) routing entries with the same target."""
    parser = dp.ofproto_parser
    return [
        flow_mod(
            dp, ROUTE_TABLE, priority, parser.OFPMatch(eth_type=ETH_IP, ipv4_dst=dst), out_insts
        ),
        flow_mod(
            dp, ROUTE_TABLE, priority, parser.OFPMatch(eth_type=ETH_ARP, arp_tpa=dst), out_insts
        ),
    ]


def _output(dp, port: int) -> list:
    """Instructions that output to ``port``."""
    return [_apply(dp, [dp.ofproto_parser.OFPActionOutput(port)])]


def group_mod(dp, plan: FabricPlan, group_id: int, spines: tuple[int, ...], add: bool = False):
    """Select group ``group_id`` over the uplinks to ``spines`` (equal weights; no
    bucket drops); ``add`` creates it, else it is modified in place."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    buckets = [
        parser.OFPBucket(
            weight=1,
            watch_port=ofp.OFPP_ANY,
            watch_group=ofp.OFPG_ANY,
            actions=[parser.OFPActionOutput(plan.uplink_port(s))],
        )
        for s in spines
    ]
    cmd = ofp.OFPGC_ADD if add else ofp.OFPGC_MODIFY
    return parser.OFPGroupMod(dp, cmd, ofp.OFPGT_SELECT, group_id, buckets)


def slot_group(d: int, slot: int) -> int:
    """Group id of ECMP slot ``slot``'s traffic to leaf ``d``."""
    return SLOT_GROUP_STEP * (slot + 1) + d


def slot_groups(plan: FabricPlan, groups: Groups) -> dict[int, tuple[int, ...]]:
    """The slot groups that go with ``groups`` (destination leaf -> spines): each one
    the slot's spine among its leaf's (none if that leaf has none)."""
    n = ecmp.slot_count(plan.spines)
    return {
        slot_group(d, k): (ecmp.slot_spine(sp, k),) if sp else ()
        for d, sp in sorted(groups.items())
        for k in range(n)
    }


def _with_slots(plan: FabricPlan, groups: Groups) -> dict[int, tuple[int, ...]]:
    """``groups`` and their slot groups, by group id."""
    return {**dict(sorted(groups.items())), **slot_groups(plan, groups)}


def groups_msgs(dp, plan: FabricPlan, groups: Groups) -> list:
    """Modify the given groups (destination leaf -> spines) of a leaf, and their slot
    groups."""
    return [group_mod(dp, plan, g, sp) for g, sp in _with_slots(plan, groups).items()]


def split_groups(
    plan: FabricPlan, reported: dict[int, tuple[int, ...]]
) -> tuple[dict[int, tuple[int, ...]], str]:
    """A leaf's groups as a switch reports them (id -> spines) split into the groups per
    destination leaf and what is wrong with their slot groups ('' if they are exactly
    those ``slot_groups`` derives)."""
    per_leaf = {g: sp for g, sp in reported.items() if g < SLOT_GROUP_STEP}
    slots = {g: sp for g, sp in reported.items() if g >= SLOT_GROUP_STEP}
    want = slot_groups(plan, per_leaf)
    if slots == want:
        return per_leaf, ""
    wrong = sum(slots.get(g) != sp for g, sp in want.items()) + len(set(slots) - set(want))
    return per_leaf, f"slot groups: {wrong} missing or not their leaf group's spine"


def _slot_routes(dp, plan: FabricPlan, d: int) -> list:
    """TCP to leaf ``d``'s /24 by its source port's ECMP slot, to the slot's group."""
    parser, n = dp.ofproto_parser, ecmp.slot_count(plan.spines)
    dst = (leaf_subnet(d), LEAF_NET_MASK)
    return [
        flow_mod(
            dp,
            ROUTE_TABLE,
            PRIO_SLOT,
            parser.OFPMatch(
                eth_type=ETH_IP, ip_proto=IP_TCP, ipv4_dst=dst, tcp_src=ecmp.slot_match(k, n)
            ),
            [_apply(dp, [parser.OFPActionGroup(slot_group(d, k))])],
        )
        for k in range(n)
    ]


def leaf_route_msgs(dp, plan: FabricPlan, leaf: int) -> list:
    """Groups (one per other leaf, over every spine, and its slot groups) and routing
    table of leaf ``leaf``."""
    parser = dp.ofproto_parser
    groups = _with_slots(plan, leaf_groups(plan, leaf))
    msgs = [group_mod(dp, plan, g, sp, add=True) for g, sp in groups.items()]
    for h in plan.hosts:
        if h.leaf == leaf:
            msgs += _route_pair(dp, PRIO_HOST, h.ip, _output(dp, h.leaf_port))
    msgs += _route_pair(dp, PRIO_OWN_SUBNET, (leaf_subnet(leaf), LEAF_NET_MASK), [])
    for d in range(1, plan.leaves + 1):
        if d != leaf:
            to_group = [_apply(dp, [parser.OFPActionGroup(d)])]
            msgs += _route_pair(dp, PRIO_FABRIC, (leaf_subnet(d), LEAF_NET_MASK), to_group)
            msgs += _slot_routes(dp, plan, d)
    return msgs


def spine_route_msgs(dp, plan: FabricPlan) -> list:
    """Routing table of a spine: each leaf's /24 out of the port facing it."""
    msgs = []
    for leaf in range(1, plan.leaves + 1):
        msgs += _route_pair(dp, PRIO_HOST, (leaf_subnet(leaf), LEAF_NET_MASK), _output(dp, leaf))
    return msgs


def base_msgs(dp, plan: FabricPlan, sw: SwitchPlan) -> list:
    """Everything a freshly connected switch needs, wipe included, in order."""
    parser = dp.ofproto_parser
    msgs = wipe_msgs(dp)
    msgs.append(flow_mod(dp, TAG_TABLE, PRIO_DEFAULT, parser.OFPMatch(), [_goto(dp, ROUTE_TABLE)]))
    if sw.role == "leaf":
        msgs += leaf_route_msgs(dp, plan, sw.index)
    else:
        msgs += spine_route_msgs(dp, plan)
    return msgs


def tag_match(dp, rule: TagRule):
    """Match of a coflow-table rule."""
    fields: dict[str, int | str] = {
        "in_port": rule.in_port,
        "eth_type": ETH_IP,
        "ip_dscp": rule.wire_dscp,
    }
    if rule.dst_ip is not None:
        fields["ipv4_dst"] = rule.dst_ip
    return dp.ofproto_parser.OFPMatch(**fields)


def tag_rule_msg(dp, rule: TagRule, meter_id: int | None, command: str):
    """Flow mod for ``rule``; command 'add', 'modify' (keeps counters) or 'delete'."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    cmd = {
        "add": ofp.OFPFC_ADD,
        "modify": ofp.OFPFC_MODIFY_STRICT,
        "delete": ofp.OFPFC_DELETE_STRICT,
    }[command]
    insts = []
    if meter_id is not None:
        insts.append(parser.OFPInstructionMeter(meter_id, ofp.OFPIT_METER))
    insts += [
        _apply(dp, [parser.OFPActionSetField(ip_dscp=level_dscp(rule.level))]),
        _goto(dp, ROUTE_TABLE),
    ]
    prio = PRIO_TAG if rule.dst_ip is None else PRIO_PAIR
    # Removal reports (counters) let the control plane keep a tag's byte count.
    return flow_mod(
        dp,
        TAG_TABLE,
        prio,
        tag_match(dp, rule),
        [] if command == "delete" else insts,
        command=cmd,
        cookie=rule.cookie,
        flags=ofp.OFPFF_SEND_FLOW_REM,
    )


def meter_msg(dp, meter_id: int, spec: MeterSpec | None, command: str):
    """Meter mod: 'add', 'modify' or 'delete' of a drop-band meter."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    cmd = {"add": ofp.OFPMC_ADD, "modify": ofp.OFPMC_MODIFY, "delete": ofp.OFPMC_DELETE}[command]
    if command == "delete":
        return parser.OFPMeterMod(dp, cmd, 0, meter_id)
    if spec is None:
        raise ValueError(f"meter {meter_id}: {command} needs a MeterSpec")
    band = parser.OFPMeterBandDrop(rate=spec.rate_kbps, burst_size=spec.burst_kbit)
    flags = ofp.OFPMF_KBPS | ofp.OFPMF_BURST | ofp.OFPMF_STATS
    return parser.OFPMeterMod(dp, cmd, flags, meter_id, [band])


def diff_msgs(dp, diff) -> list:
    """Messages of a LeafDiff in the order it must be applied."""
    ids = diff.meter_ids
    msgs = [meter_msg(dp, mid, m, "add") for mid, m in diff.meters_add]
    msgs += [meter_msg(dp, mid, m, "modify") for mid, m in diff.meters_mod]
    msgs += [tag_rule_msg(dp, r, ids.get(r.meter), "add") for r in diff.rules_add]
    msgs += [tag_rule_msg(dp, r, ids.get(r.meter), "modify") for r in diff.rules_mod]
    msgs += [tag_rule_msg(dp, r, None, "delete") for r in diff.rules_del]
    msgs += [meter_msg(dp, mid, None, "delete") for mid, _m in diff.meters_del]
    return msgs


def flow_stats_request(dp, table: int = TAG_TABLE):
    """Flow stats of one table."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    return parser.OFPFlowStatsRequest(
        dp, 0, table, ofp.OFPP_ANY, ofp.OFPG_ANY, 0, 0, parser.OFPMatch()
    )


def port_stats_request(dp):
    """Stats of all ports."""
    return dp.ofproto_parser.OFPPortStatsRequest(dp, 0, dp.ofproto.OFPP_ANY)


def meter_stats_request(dp):
    """Stats of all meters."""
    return dp.ofproto_parser.OFPMeterStatsRequest(dp, 0, dp.ofproto.OFPM_ALL)


def group_desc_request(dp):
    """Descriptions (type, buckets) of every group."""
    return dp.ofproto_parser.OFPGroupDescStatsRequest(dp, 0)


def meter_config_request(dp):
    """Configurations (flags, bands) of every meter."""
    return dp.ofproto_parser.OFPMeterConfigStatsRequest(dp, 0, dp.ofproto.OFPM_ALL)


def _serialized(items) -> bytes:
    """Instructions (or buckets) as the bytes they go on the wire as: one canonical form
    for what we build and what a switch reports."""
    out = b""
    for it in items:
        buf = bytearray()
        it.serialize(buf, 0)
        out += bytes(buf)
    return out


def flow_key(table: int, priority: int, cookie: int, match, insts) -> tuple:
    """A flow's identity and content in one comparable value."""
    return (table, priority, cookie, tuple(sorted(match.items())), _serialized(insts))


def base_flow_keys(dp, plan: FabricPlan, sw: SwitchPlan) -> set[tuple]:
    """``flow_key`` of every flow of ``sw``'s static pipeline (``base_msgs``, no wipe)."""
    mods = base_msgs(dp, plan, sw)[len(wipe_msgs(dp)) :]
    flows = [m for m in mods if isinstance(m, dp.ofproto_parser.OFPFlowMod)]
    return {flow_key(m.table_id, m.priority, m.cookie, m.match, m.instructions) for m in flows}


def stats_flow_key(s) -> tuple:
    """``flow_key`` of one OFPFlowStats."""
    return flow_key(s.table_id, s.priority, s.cookie, s.match, s.instructions)


def parse_tag_rule(dp, s) -> tuple[int, int, str | None, int, int | None, int] | None:
    """(tag, in_port, dst_ip, level, meter id, DSCP) of a coflow rule as a switch reports
    it (OFPFlowStats of table 0 with a cookie: the tag is the cookie's, the DSCP the
    match's); None if it is not one ``tag_rule_msg`` writes."""
    parser = dp.ofproto_parser
    fields = dict(s.match.items())
    if s.table_id != TAG_TABLE or not {"in_port", "eth_type", "ip_dscp"} <= set(fields):
        return None
    meter, level = None, None
    for inst in s.instructions:
        if isinstance(inst, parser.OFPInstructionMeter):
            meter = inst.meter_id
        elif isinstance(inst, parser.OFPInstructionActions):
            for act in inst.actions:
                if isinstance(act, parser.OFPActionSetField) and act.key == "ip_dscp":
                    level = act.value - LEVEL_CODE_BASE
    tag = cookie_tag(s.cookie)
    dscp = fields["ip_dscp"]
    if level is None or not TAG_MIN <= tag <= TAG_ID_MAX or not TAG_MIN <= dscp <= TAG_MAX:
        return None
    return (tag, fields["in_port"], fields.get("ipv4_dst"), level, meter, dscp)


def group_spines(dp, plan: FabricPlan, g) -> tuple[int, ...] | None:
    """The spines (1-based) of a select group as a switch reports it (OFPGroupDescStats);
    None if its buckets are not the uplink outputs ``group_mod`` writes."""
    parser = dp.ofproto_parser
    spines = []
    for b in g.buckets:
        outs = [a.port for a in b.actions if isinstance(a, parser.OFPActionOutput)]
        if len(outs) != 1 or len(b.actions) != 1:
            return None
        spines.append(outs[0] - plan.hosts_per_leaf)
    if not all(1 <= s <= plan.spines for s in spines):
        return None
    return tuple(spines)
