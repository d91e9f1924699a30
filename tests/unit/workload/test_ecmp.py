"""ECMP slots (workload.ecmp): one placement for the simulator, the agents' source ports
and the OVS leaves' rules."""

from __future__ import annotations

import zlib
from types import SimpleNamespace

import numpy as np
import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp, ofproto_v1_3_parser as parser

from coflowbed.emulation.connections import flow_slots
from coflowbed.sim.fabric import LeafSpine
from controller.routing import leaf_groups
from controller.southbound import of_messages as ofm
from topo.plan import FabricPlan
from workload import ecmp
from workload.agent.send import SLOT_PORTS
from workload.dag import Coflow, Flow

DP = SimpleNamespace(ofproto=ofp, ofproto_parser=parser, id=0x1001)


@pytest.mark.parametrize(("spines", "slots"), [(1, 16), (3, 16), (16, 16), (17, 32), (64, 64)])
def test_slot_count_is_a_power_of_two_covering_every_spine(spines, slots):
    assert ecmp.slot_count(spines) == slots


def test_a_power_of_two_spine_count_keeps_the_plain_crc_placement():
    """slot % spines == crc32 % spines when the spines divide the slots: the simulator's
    placement before slots, so no simulated figure moved."""
    for i in range(500):
        key = ("h11", "h21", f"c{i}.F0")
        crc = zlib.crc32(">".join(key).encode())
        for spines in (1, 2, 4, 8, 32):
            slot = ecmp.flow_slot(*key, ecmp.slot_count(spines))
            assert ecmp.slot_spine(range(spines), slot) == crc % spines


def test_slot_ports_are_odd_ports_of_their_slot_in_the_range():
    for slot, slots in ((0, 16), (5, 16), (15, 16), (31, 32)):
        ports = ecmp.slot_ports(slot, slots, *SLOT_PORTS)
        assert len(ports) >= (SLOT_PORTS[1] - SLOT_PORTS[0]) // (2 * slots)
        assert all(p % 2 == 1 and SLOT_PORTS[0] <= p < SLOT_PORTS[1] for p in ports)
        assert {ecmp.port_slot(p, slots) for p in ports} == {slot}
        value, mask = ecmp.slot_match(slot, slots)
        assert all(p & mask == value for p in ports)
    # the kernel's even ports of one run (consecutive) spread over every slot
    assert {ecmp.port_slot(p, 16) for p in range(40000, 40064, 2)} == set(range(16))


def _switch_spine(msgs, plan: FabricPlan, dst_leaf: int, port: int) -> int:
    """The spine (1-based) the leaf whose messages are ``msgs`` sends TCP from source
    port ``port`` to leaf ``dst_leaf`` through: its slot entry, then the group's bucket."""
    subnet = (f"10.0.{dst_leaf}.0", "255.255.255.0")
    rules = [
        m
        for m in msgs
        if isinstance(m, parser.OFPFlowMod)
        and m.priority == ofm.PRIO_SLOT
        and dict(m.match.items())["ipv4_dst"] == subnet
        and port & dict(m.match.items())["tcp_src"][1] == dict(m.match.items())["tcp_src"][0]
    ]
    assert len(rules) == 1
    group = rules[0].instructions[0].actions[0].group_id
    (mod,) = [m for m in msgs if isinstance(m, parser.OFPGroupMod) and m.group_id == group]
    (bucket,) = mod.buckets
    return bucket.actions[0].port - plan.hosts_per_leaf


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("down", [frozenset(), frozenset({(0, 1)}), frozenset({(1, 0), (0, 2)})])
def test_the_simulator_and_the_leaf_rules_put_every_flow_on_one_spine(down, seed):
    """For 200 flows l1 -> l2 on 3 spines (links down: 0-based (leaf, spine)), the spine
    of the simulator's path is the spine l1's rules send a source port of the slot the
    agents get for the flow (``flow_slots``) to (base pipeline, or the groups the
    controller rewrites around the links), with the plain placement and a seeded one."""
    plan = FabricPlan(3, 2, 2, 100, 100, ecmp_seed=seed)
    fab = LeafSpine.from_plan(plan)
    ids = [f"c{i}.F{i % 3}" for i in range(200)]
    src, dst = ["h11"] * 200, ["h22"] * 200
    sim_spine = fab.paths(src, dst, ids, down)[:, 1] - 2 * len(fab.hosts) + 1  # 1-based
    msgs = ofm.base_msgs(DP, plan, plan.switch("l1"))
    if down:
        dead = {(leaf + 1, spine + 1) for leaf, spine in down}
        msgs += ofm.groups_msgs(DP, plan, leaf_groups(plan, 1, dead))
        msgs = [m for m in msgs if not _replaced(m, msgs)]
    n = ecmp.slot_count(plan.spines)
    flows = [Flow(f, s, d, 1) for s, d, f in zip(src, dst, ids)]
    slots = flow_slots([Coflow("c", tuple(flows))], plan)
    switch = [
        _switch_spine(msgs, plan, 2, ecmp.slot_ports(slots[f], n, 10000, 20000)[0]) for f in ids
    ]
    assert np.array_equal(sim_spine, switch)
    assert len(set(switch)) == 3 - len({sp for _, sp in down})  # every live spine is used


def _replaced(m, msgs) -> bool:
    """A group add that a later modify of the same group replaces."""
    if not isinstance(m, parser.OFPGroupMod) or m.command != ofp.OFPGC_ADD:
        return False
    return any(
        isinstance(o, parser.OFPGroupMod)
        and o.command == ofp.OFPGC_MODIFY
        and o.group_id == m.group_id
        for o in msgs
    )
